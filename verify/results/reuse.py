"""Reusing passing records: a check whose inputs are all unchanged need not run again.

A job's inputs are everything its verdict depends on (`inputs_digest` hashes them all):
  - verify's version and the job's identity: kernel import path, check, config, implementation,
    subgroup width, examples, seed, profile;
  - the sha256 of the WGSL it runs, and of the other kernels' WGSL the check launches beside it
    (Check.other_wgsl: a differential partner, split_merge's merge);
  - the adapter it runs on: implementation, adapter name, backend and driver (the driver's text
    names its version: "Mesa 22.3.6 (LLVM 15.0.6)", an NVIDIA driver's number), and the versions
    of the implementation's stack (`stack_versions`: wgpu-py and the wgpu-native library it
    loaded; Node for Dawn);
  - the code it runs (verify.results.closure.code_inputs): every module the kernel's, the check's
    and the implementation's modules and the verdict machinery (verify.plan.VERDICT_MACHINERY: the
    check runner and the worker) import, transitively, read from the source (ast), not imported. A
    module of an installed distribution (numpy, hypothesis, wgpu, ...: its file is listed in a
    dist-info's RECORD) counts as that distribution's name and version, with those of the
    distributions it requires; a standard-library module as the Python version; any other module
    found on sys.path (verify's own, the kernel's package, a sibling package its reference lives
    in, an editable install, a local folder) as its source, and its imports are followed too; a
    module imported but not importable here (an optional dependency) as absent;
  - `runtime_versions`: Python's implementation and full version, apache-tvm's version, the Node
    packages installed for Dawn and ORT (each folder Dawn searches: npm webgpu, onnxruntime-web,
    and the lock they were installed from), and verify's own non-Python files (`verdict_files`:
    Dawn's worker, ORT's runner, the WGSL grammar, the instrumentation WGSL, package.json and
    package-lock.json).

`verify gate --reuse` (and `check`) looks the digest up among the PASS records of an earlier run
whose authentication tag verifies (verify.results.signing: only records verify made on this
machine) and copies such a record instead of running the job, saying where it came from.
Anything changed, a verdict other than PASS, or a record verify cannot authenticate runs again.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path

from verify._version import __version__
from verify.results.closure import CodeInputs, code_digest, code_inputs
from verify.results.record import CheckResult, Verdict

__all__ = ["PACKAGE", "CodeInputs", "Earlier", "code_digest", "code_inputs", "files_digest", "inputs_digest",
           "reusable", "reused", "runtime_versions", "stack_versions", "verdict_files"]

#: verify's package folder, whose non-Python files are inputs too (verdict_files).
PACKAGE = Path(__file__).resolve().parents[1]


# -- verify's non-Python files and the versions of what runs the WGSL ----------------------------
#: Folders of the package whose files decide no verdict: the report's templates (how a report
#: looks) and `verify export`'s (the reproduction files it writes; no check runs them).
_NOT_VERDICT_FOLDERS = ("report/templates/", "export/templates/")
#: Folders never read as verify's files: installed Node packages count by their versions
#: (runtime_versions), compiled Python by its source.
_SKIPPED = {"node_modules", "__pycache__"}


def verdict_files(root: Path = PACKAGE) -> list[Path]:
    """verify's non-Python files that decide verdicts, relative to the package folder `root`:
    everything but Python, the folders in _NOT_VERDICT_FOLDERS, and the kernels' own .wgsl and
    the shipped copies of TVM's and ORT's (verify.sources.shipped), which reach a verdict only as
    the WGSL a job runs (each job's digest has its sha256, so an edit to one kernel's WGSL re-runs
    that kernel's checks, not every check)."""
    found, visited = [], set()
    for folder, folders, files in os.walk(root, followlinks=True):  # verify/references is a link
        real = os.path.realpath(folder)
        if real in visited:  # a link loop
            folders[:] = []
            continue
        visited.add(real)
        folders[:] = sorted(name for name in folders if name not in _SKIPPED and not name.startswith("."))
        relative = Path(folder).relative_to(root)
        for name in files:
            path = (relative / name).as_posix()
            if name.endswith((".py", ".pyc", ".pyo")) or name.startswith(".") or path.startswith(_NOT_VERDICT_FOLDERS):
                continue
            if path.startswith("kernels/") and name.endswith(".wgsl"):
                continue
            if "/shipped/" in f"/{path}":  # TVM's and ORT's WGSL shipped as data: in each job's WGSL sha256 too
                continue
            found.append(relative / name)
    return sorted(found)


def files_digest(root: Path = PACKAGE) -> str:
    """sha256 of verify's verdict_files (names and contents); once per process, in runtime_versions."""
    digest = hashlib.sha256()
    for relative in verdict_files(root):
        try:
            content = (root / relative).read_bytes()
        except OSError:
            content = b"unreadable"
        digest.update(relative.as_posix().encode() + b"\0" + hashlib.sha256(content).digest())
    return digest.hexdigest()


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def runtime_versions() -> dict:
    """What every job's verdict depends on besides its own code: Python, verify's non-Python files,
    apache-tvm (which builds the tvm.* kernels' WGSL; read from pip's metadata, never imported),
    and the Node packages installed in each folder Dawn and ORT search, in their order
    (verify.gpu.dawn.install: $VERIFY_NODE_MODULES, the checkout's, the user cache's), with the
    package-lock.json digest `verify setup --dawn` stamped there, and the onnxruntime-web version
    selected ($VERIFY_ORT_VERSION)."""
    from verify.gpu.dawn.install import STAMP, installed_versions, node_modules_candidates

    npm = []
    for folder in node_modules_candidates():
        versions = installed_versions(folder)
        if any(versions.values()):
            try:
                stamp = (folder / STAMP).read_text().strip()
            except OSError:
                stamp = None
            npm.append(dict(versions, **{STAMP: stamp}))
    # wgpudawn (Dawn in process, which the toggles check runs on whatever the job's implementation)
    # only where installed, so a machine without it keeps the digests it had.
    in_process = {"wgpudawn": _version("wgpudawn")} if _version("wgpudawn") else {}
    return {"python": f"{platform.python_implementation()} {platform.python_version()}", "files": files_digest(),
            "apache-tvm": _version("apache-tvm"), "npm": npm, "onnxruntime-web": _selected_ort(), **in_process}


def _selected_ort() -> str:
    """The onnxruntime-web version the ort.* kernels check in this run, as selected: the
    environment variable `--ort-version` sets (VERIFY_ORT_VERSION), else the default. A session's
    verdict depends on it and no WGSL digest says it. Read as given, not resolved against the
    installed packages (that is the ORT source's business, above this layer): `1.31` and `1.31.1`
    digest apart, which costs a reuse, never a stale one; the default itself is in the ORT
    modules' code, which every ORT job digests."""
    return os.environ.get("VERIFY_ORT_VERSION", "").strip() or "default"


@cache
def stack_versions(implementation: str) -> dict:
    """The versions of what runs the WGSL on verify's own implementations, beyond their Python:
    for wgpu, wgpu-py and the wgpu-native library it loaded (WGPU_LIB_PATH may name another than
    the one wgpu-py ships); for Dawn, Node (its npm packages are in runtime_versions). Another
    implementation's code, and its distribution's version, are in its job's code_inputs."""
    if implementation == "wgpu":
        try:
            from verify.gpu.wgpu_types import load_wgpu

            load_wgpu()  # loaded already where its adapters were listed; else with its C types kept
            from wgpu.backends.wgpu_native import _ffi

            native = ".".join(map(str, _ffi.lib_version_info))
        except Exception as exc:  # noqa: BLE001 - no library: the job's own record says why
            native = f"unavailable ({type(exc).__name__})"
        return {"wgpu": _version("wgpu"), "wgpu-native": native}
    if implementation == "dawn":
        return {"node": _node_version()}
    return {}


def _node_version() -> str | None:
    """`node --version` of the Node Dawn's worker runs in ($VERIFY_NODE, else node on PATH, else the
    `dawn` extra's: verify.gpu.dawn.install.find_node_executable)."""
    from verify.gpu.dawn.install import find_node_executable

    node = find_node_executable()
    if node is None:
        return None
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


# -- the digest and the records that may be reused -----------------------------------------------
def inputs_digest(job, wgsl_sha256: str, adapter: dict, code_modules: tuple) -> str:
    """The digest of everything a job's verdict depends on (the module docstring lists it);
    `code_modules`: the check's, the implementation's and the verdict machinery's modules (the
    kernel's is the job's)."""
    kernel_module = job.kernel_ref.partition(":")[0]
    identity = {"verify": __version__, "kernel_ref": job.kernel_ref, "check": job.check, "config": job.config,
                "implementation": job.implementation, "subgroup_width": job.subgroup_width,
                "examples": job.examples, "seed": job.seed, "profile": job.profile, "profile_data": job.profile_data,
                "wgsl": wgsl_sha256, "adapter": adapter, "code": code_digest(kernel_module, *code_modules),
                "runtime": runtime_versions()}
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class Earlier:
    """What earlier results files offer: authenticated PASS records by inputs digest, with where
    each came from, and one line per file on records that matched a job but were not taken."""

    records: dict[str, tuple[CheckResult, str]] = field(default_factory=dict)
    refusals: list[str] = field(default_factory=list)


def reusable(documents, wanted) -> Earlier:
    """PASS records of earlier runs whose inputs digest is `wanted` (a job's) and whose tag verifies
    (verify.results.signing); a later file's record wins over an earlier one's. Only records a job
    wants are authenticated: it costs a serialisation of each."""
    from verify.results.signing import key_problem, verify_tag

    earlier, refused = Earlier(), []
    for document in documents:
        why: list[tuple[str, str]] = []  # (inputs digest, why its tag does not verify)
        for record in document.records:
            if record.verdict is Verdict.PASS and record.inputs_sha256 in wanted:
                checked = verify_tag(record)
                if checked.authentic:
                    earlier.records[record.inputs_sha256] = (record, f"{document.path} ({document.started})")
                else:
                    why.append((record.inputs_sha256, checked.why))
        refused.append((document.path, why))
    for path, why in refused:  # a record another file's authentic copy stood in for was not missed
        counts: dict[str, int] = {}
        for digest, reason in why:
            if digest not in earlier.records:
                counts[reason] = counts.get(reason, 0) + 1
        count = sum(counts.values())
        if count:
            earlier.refusals.append(f"{count} record{'s' if count != 1 else ''} of {path} "
                                    f"{'were' if count != 1 else 'was'} not reused: {_why(counts, key_problem())}")
    return earlier


def _why(counts: dict[str, int], problem: str) -> str:
    """Why records were not reused, in a few words: no key here, or tags that are not this key's."""
    if counts.get("no key"):
        return f"no key to authenticate {'it' if sum(counts.values()) == 1 else 'them'} with ({problem})"
    parts = []
    if counts.get("mismatch"):
        parts.append("their tags are another key's, or they changed since")
    if counts.get("untagged"):
        parts.append("they carry no tag")
    return "not signed by verify on this machine (" + "; ".join(parts) + ")"


def reused(record: CheckResult, origin: str, job_id: int) -> CheckResult:
    """`record`, copied into this run as the record of job `job_id`, saying where it came from."""
    return replace(record, job_id=job_id, reused_from=record.reused_from or origin)
