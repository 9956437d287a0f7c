"""`verify sources refresh`: make the shipped WGSL of TVM, ORT and llama.cpp again, and compare or rewrite it.

The shipped copies (verify.sources.shipped) stand in for apache-tvm builds, ONNX Runtime Web
captures and ggml-webgpu's programs instantiated from llama.cpp's extracted release, so they must
be exactly what the pinned releases make for the configs verify plans. A refresh finds those
configs the way a gate does: every TVM, ORT and llama.cpp kernel's gate configs in every profile
(quick, ci, nightly), the kernel's WGSL for each, and the WGSL each of its checks launches beside
it (Check.other_wgsl: split_merge's merge, prefill_vs_decode's decode). It makes them all in
empty caches of its own, with the shipped copies hidden, so every file is built or captured now,
never read back; what those caches then hold is what must be shipped. llama.cpp's programs are
made from the extracted release as they are asked for (verify.sources.llamacpp.programs.made_afresh:
neither its cache nor the shipped copies are read), and shipped with llama.cpp's licence beside them.

`--check` compares that with the shipped folders and lists each file that differs (changed,
missing, or shipped but no longer made) without writing; a plain refresh writes the files that
differ, removes those no longer made and rewrites each manifest. Two captures are the same when
their programs and their provenance are, whatever adapter description the capturing machine's
driver printed (an LLVM update on lavapipe changes that line and nothing ORT generates).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from verify._files import write_atomic
from verify.errors import SetupError, UsageError
from verify.sources import shipped
from verify.sources.llamacpp import programs as llamacpp_programs
from verify.sources.llamacpp import source as llamacpp_source
from verify.sources.ort import cache as ort_cache
from verify.sources.shipped import Shipped, ShippedFile, file_sha256, manifest_text
from verify.sources.tvm import build as tvm_build

#: The profiles whose gate configs are shipped.
PROFILES = ("quick", "ci", "nightly")
#: The kernel sources whose WGSL is shipped, and each one's shipped folder and cache setting.
SOURCES = ("tvm", "ort", "llamacpp")
ABOUT = {
    "tvm": "apache-tvm's WGSL for every gate config of verify's tvm.* kernels (and what their checks launch "
           "beside them), as verify.sources.tvm.build caches it; made by `verify sources refresh`",
    "ort": "onnxruntime-web's programs captured for every gate config of verify's ort.* kernels, as "
           "verify.sources.ort.cache caches them (captured on lavapipe); made by `verify sources refresh`",
    "llamacpp": "llama.cpp's ggml-webgpu programs (llama-cpp-python 0.3.36 sdist) instantiated for every gate config "
                "of verify's llamacpp.* kernels, as verify.sources.llamacpp.programs caches them, with llama.cpp's "
                "MIT licence; made by `verify sources refresh`",
}
#: What makes each source's files, for the lines a refresh prints.
MAKERS = {"tvm": "apache-tvm", "ort": "onnxruntime-web", "llamacpp": "llama.cpp's release"}


def shipped_folder(source: str) -> Shipped:
    return {"tvm": tvm_build.SHIPPED, "ort": ort_cache.SHIPPED, "llamacpp": llamacpp_programs.SHIPPED}[source]


@dataclass(frozen=True)
class Made:
    """One file a refresh made: its source, its name in the cache's layout, its text and what it
    was made for."""

    source: str
    name: str
    text: str
    made_for: str


@dataclass(frozen=True)
class Difference:
    """A shipped file that is not what the refresh made: `how` says in what way."""

    source: str
    name: str
    how: str
    made: Made | None  # None: shipped, but no longer made

    @property
    def line(self) -> str:
        return f"{self.source} {self.name}: {self.how}"


def shipped_kernels(sources: tuple[str, ...] = SOURCES) -> list[str]:
    """verify's own kernels whose WGSL TVM builds, ORT captures or llama.cpp's release instantiates
    (those of `sources`)."""
    from verify.kernels.registry import get_kernel, kernel_names, spec_of

    return [name for name in kernel_names()
            if spec_of(name).origin == "built in" and getattr(get_kernel(name), "source", "") in sources]


def make_every(kernels: list[str], say: Callable[[str], None] = lambda line: None) -> None:
    """Make the WGSL a gate plans for `kernels` in every profile: each gate config's, and what each
    of its checks launches beside it. What cannot be made (no apache-tvm, no ORT, a config refused)
    is a UsageError naming the kernel and config."""
    from verify.checks import get_check
    from verify.kernels.registry import get_kernel
    from verify.profiles import get_profile

    for name in kernels:
        kernel, started, done = get_kernel(name), time.monotonic(), set()
        for profile in PROFILES:
            for config in kernel.gate_configs(get_profile(profile)):
                key = json.dumps(config, sort_keys=True, default=str)
                if key in done:
                    continue
                done.add(key)
                try:
                    kernel.wgsl(config)
                    for check in kernel.checks:
                        get_check(check).other_wgsl(kernel, config)
                except UsageError as exc:
                    raise type(exc)(f"{name} {_config_text(config)}: {exc}") from None
        say(f"verify: {name}: {len(done)} configs in {time.monotonic() - started:.1f} s")


def remake(kernels: list[str] | None = None, say: Callable[[str], None] = lambda line: None) -> list[Made]:
    """Every file the gate configs of `kernels` (default: every TVM, ORT and llama.cpp kernel) need,
    built by apache-tvm, captured by ORT and instantiated from llama.cpp's release now, in empty
    caches, the shipped copies hidden."""
    kernels = shipped_kernels() if kernels is None else kernels
    _require_makers(kernels)
    with (tempfile.TemporaryDirectory(prefix="verify-refresh-") as tmp, shipped.ignored(),
          llamacpp_programs.made_afresh() as instantiated):
        roots = {"tvm": Path(tmp) / "tvm", "ort": Path(tmp) / "ort"}
        with _caches(roots):
            make_every(kernels, say)
        made = [made for source, root in roots.items() for made in _collected(source, root)]
    if any(_source_of(name) == "llamacpp" for name in kernels):
        made += _llamacpp_made(instantiated)
    return made


def _source_of(kernel: str) -> str:
    from verify.kernels.registry import get_kernel

    return getattr(get_kernel(kernel), "source", "")


def _llamacpp_made(instantiated: dict) -> list[Made]:
    """The programs llama.cpp's release made (file name -> (instance, text)), in the cache's layout
    (`<version>/<template>-<digest>.wgsl`), and llama.cpp's licence, which they are shipped under."""
    version = llamacpp_source.VERSION
    made = [Made("llamacpp", f"{version}/{name}", text, llamacpp_programs.describe(instance))
            for name, (instance, text) in sorted(instantiated.items())]
    licence = (llamacpp_source.require_extracted() / "LICENSE").read_text()
    return made + [Made("llamacpp", f"{version}/{llamacpp_programs.LICENCE}", licence,
                        f"llama.cpp's LICENSE (MIT), from {llamacpp_source.SDIST}")]


def _require_makers(kernels: list[str]) -> None:
    """SetupError (one line) where what makes the files is missing: a refresh never falls back on
    a copy, so a TVM kernel needs apache-tvm and an ORT kernel ORT's runtime."""
    from verify.kernels.registry import get_kernel

    sources = {getattr(get_kernel(name), "source", "") for name in kernels}
    if "llamacpp" in sources and llamacpp_source.extracted() is None:
        raise SetupError(f"verify sources refresh instantiates llama.cpp's programs from its pinned release, whose "
                         f"ggml-webgpu sources are not in {llamacpp_source.release_folder()}; obtain them with: "
                         f"{llamacpp_source.INSTALL}")
    if "tvm" in sources and tvm_build.installed_version() is None:
        raise SetupError(f"verify sources refresh builds TVM's WGSL with {tvm_build.REQUIREMENT}, which is not "
                         f"installed; install it with: {tvm_build.INSTALL}")
    if "ort" in sources:
        from verify.sources.ort import runtime as ort_runtime

        try:
            ort_runtime.shared_runtime()
        except SetupError as exc:
            raise SetupError(f"verify sources refresh captures ORT's programs with ONNX Runtime Web, which cannot "
                             f"run here: {exc}") from None


@contextmanager
def _caches(roots: dict):
    """VERIFY_TVM_CACHE and VERIFY_ORT_CACHE pointed at `roots` for the block."""
    names = {"tvm": tvm_build.CACHE_ENV, "ort": ort_cache.CACHE_ENV}
    before = {name: os.environ.get(name) for name in names.values()}
    try:
        for source, root in roots.items():
            os.environ[names[source]] = str(root)
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _collected(source: str, root: Path) -> list[Made]:
    """The files a cache folder holds (its lock files apart), as shipped files."""
    pattern = "*/*.wgsl" if source == "tvm" else "*/*/*.json"
    found = []
    for path in sorted(root.glob(pattern)):
        if path.name.startswith("."):
            continue
        text = path.read_text()
        found.append(Made(source, path.relative_to(root).as_posix(), text, _made_for(source, path, text)))
    return found


def _made_for(source: str, path: Path, text: str) -> str:
    if source == "tvm":
        found = tvm_build.provenance(text)
        return found[1] if found else ""
    return ort_cache.parse(text).provenance.capture


def differences(made: list[Made], *, whole: bool | tuple[str, ...]) -> list[Difference]:
    """How the shipped folders differ from `made`; with `whole` (True: every kernel was made; a
    tuple: every kernel of those sources), a shipped file of such a source that was not made again
    is one too."""
    found = []
    for item in made:
        how = _compared(shipped_folder(item.source), item)
        if how is not None:
            found.append(Difference(item.source, item.name, how, item))
    for source in _whole_sources(whole):
        names = {item.name for item in made if item.source == source}
        found += [Difference(source, name, "shipped, but no gate config needs it any more", None)
                  for name in sorted(shipped_folder(source).files) if name not in names]
    return found


def _whole_sources(whole: bool | tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(whole, tuple):
        return whole
    return SOURCES if whole else ()


def _compared(folder: Shipped, item: Made) -> str | None:
    """Why the shipped copy of `item` is not it; None where it is."""
    if item.name not in folder.files:
        return "not shipped"
    path = folder.folder / item.name
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"listed in the manifest but unreadable ({exc.strerror or exc})"
    if file_sha256(data) != folder.files[item.name].sha256:
        return "its bytes are not the ones its manifest lists"
    if item.source == "tvm":
        return None if data.decode() == item.text else "apache-tvm now makes other WGSL"
    if item.source == "llamacpp":
        if data.decode() == item.text:
            return None
        return ("llama.cpp's licence is not the release's" if item.name.endswith(llamacpp_programs.LICENCE)
                else "llama.cpp's release now instantiates other WGSL")
    return _capture_difference(path, item)


def _capture_difference(path: Path, item: Made) -> str | None:
    try:
        had = ort_cache.load(path)
    except ort_cache.UnusableCapture as exc:
        return f"the shipped file {exc}"
    now = ort_cache.parse(item.text)
    if replace(had.provenance, adapter="") != replace(now.provenance, adapter=""):
        return "its provenance differs"
    if list(had.programs) != list(now.programs):
        return f"ORT now dispatches {', '.join(now.programs)} (shipped: {', '.join(had.programs)})"
    changed = [label for label in now.programs if now.programs[label] != had.programs[label]]
    return f"ORT now generates other WGSL for {', '.join(changed)}" if changed else None


def rewrite(made: list[Made], found: list[Difference], *, whole: bool | tuple[str, ...]) -> None:
    """Write what differs into the shipped folders, remove what is no longer made (with `whole`),
    and rewrite their manifests. A folder that cannot be written (an installed package) is a
    SetupError naming it."""
    for source in SOURCES:
        folder = shipped_folder(source)
        mine = [d for d in found if d.source == source]
        if not mine:
            continue
        entire = source in _whole_sources(whole)
        try:
            for difference in mine:
                path = folder.folder / difference.name
                if difference.made is None:
                    path.unlink(missing_ok=True)
                else:
                    write_atomic(path, difference.made.text)
            _remove_empty_folders(folder.folder)
            kept = {} if entire else dict(folder.files)
            for name in [d.name for d in mine if d.made is None]:
                kept.pop(name, None)
            for item in (m for m in made if m.source == source):
                if entire or item.name in {d.name for d in mine}:
                    data = (folder.folder / item.name).read_bytes()
                    kept[item.name] = ShippedFile(item.name, file_sha256(data), len(data), item.made_for)
            write_atomic(folder.folder / shipped.MANIFEST, manifest_text(list(kept.values()), ABOUT[source]))
        except OSError as exc:
            raise SetupError(f"cannot write the shipped copies of {folder.what} in {folder.folder} "
                             f"({exc.strerror or exc}): refresh them in a checkout of verify") from None
        folder.forget()


def _remove_empty_folders(root: Path) -> None:
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def _config_text(config: dict) -> str:
    return "[" + " ".join(f"{key}={value}" for key, value in config.items()) + "]"


def refresh_command(kernels: list[str] | None, *, check: bool, say: Callable[[str], None],
                    tell: Callable[[str], None], sources: list[str] | None = None) -> int:
    """`verify sources refresh [--check] [--kernels ...] [--sources ...]`: 0 when the shipped copies
    are (now) what the releases make, 1 with --check when some differ (`tell` gets a line each,
    nothing is written). `say` hears progress. `sources` (tvm, ort, llamacpp) limits the refresh to
    those sources' kernels; without --kernels each of their shipped folders is compared whole."""
    from verify.kernels.registry import get_kernel

    if sources is not None:
        unknown = [name for name in sources if name not in SOURCES]
        if unknown:
            raise UsageError(f"--sources {', '.join(unknown)}: no such source of shipped WGSL (the sources: "
                             f"{', '.join(SOURCES)})")
    chosen = tuple(sources) if sources is not None else SOURCES
    if kernels is not None:
        for name in kernels:  # an unknown name is get_kernel's one-line UsageError
            if getattr(get_kernel(name), "source", "") not in chosen:
                raise UsageError(f"--kernels {name}: its WGSL is not {_names(chosen)}, so none of it is shipped "
                                 f"(the kernels whose WGSL is: {', '.join(shipped_kernels(chosen))})")
    whole = chosen if kernels is None else ()
    made = remake(kernels if kernels is not None else shipped_kernels(chosen), say)
    found = differences(made, whole=whole)
    for difference in found:
        tell(difference.line)
    if check:
        makers = [MAKERS[source] for source in chosen]
        say(f"verify: {len(found)} shipped files differ from what {', '.join(makers[:-1])}"
            f"{' and ' if len(makers) > 1 else ''}{makers[-1]} make{'s' if len(makers) == 1 else ''} now "
            f"({len(made)} made){'; `verify sources refresh` rewrites them' if found else ''}")
        return 1 if found else 0
    rewrite(made, found, whole=whole)
    say(f"verify: {len(made)} files made, {len(found)} shipped files rewritten or removed")
    return 0


def _names(sources: tuple[str, ...]) -> str:
    """`TVM's, ORT's or llama.cpp's`, for the sources given."""
    owners = [{"tvm": "TVM's", "ort": "ORT's", "llamacpp": "llama.cpp's"}[source] for source in sources]
    return owners[0] if len(owners) == 1 else f"{', '.join(owners[:-1])} or {owners[-1]}"
