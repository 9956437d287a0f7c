"""ggml-webgpu's programs as WGSL text: instantiated once per (template, defines) and kept on disk.

An `Instance` (verify.sources.llamacpp.selection) names an embedded template and the defines the
shader library chose; its text is what ggml-webgpu hands Dawn: the template with its includes
expanded as embed_wgsl.py embeds it, preprocessed with those defines as pre_wgsl.hpp does
(verify.sources.llamacpp.preprocess). The first line of every text says which release, template,
defines and pipeline it is (`provenance_line`), so an edited or mislabelled file is never taken
for another.

Texts are read from the cache (`<cache>/<version>/programs/`), else from the copies shipped with
verify (`shipped/`, verify.sources.shipped: the programs of every gate config, with llama.cpp's
MIT licence beside them), and only then instantiated from the extracted release
(verify.sources.llamacpp.source), which `source.obtain()` puts there. A shipped copy is used
only while its first line names this release and this instance.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from verify._files import made_once
from verify.errors import SetupError
from verify.sources.llamacpp import source
from verify.sources.llamacpp.preprocess import Preprocessor, expand_includes
from verify.sources.llamacpp.selection import Instance
from verify.sources.shipped import Shipped

#: The instantiated programs shipped with verify, in the cache's layout (<version>/<file>).
SHIPPED = Shipped(Path(__file__).resolve().parent / "shipped", "llama.cpp's instantiated WGSL")
#: The shipped copy of llama.cpp's licence (MIT), which the shipped programs are distributed under.
LICENCE = "LICENSE.llama.cpp"
SHADERS = "wgsl-shaders"


def describe(instance: Instance) -> str:
    return f"wgsl_{instance.template} [{' '.join(instance.defines)}] -> {instance.variant}"


def filename(instance: Instance) -> str:
    digest = hashlib.sha256(describe(instance).encode()).hexdigest()[:16]
    return f"{instance.template}-{digest}.wgsl"


def provenance_line(instance: Instance) -> str:
    """The first line of every program text: the release, the template, the defines and the variant."""
    return (f"// llama.cpp ggml-webgpu ({source.DISTRIBUTION} {source.VERSION} sdist, sha256 "
            f"{source.SDIST_SHA256[:16]}): {describe(instance)}")


def embedded(template: str, root: Path | None = None) -> str:
    """`wgsl_<template>` as embed_wgsl.py embeds it: the template with its includes expanded."""
    folder = source.require_extracted(root) / source.BACKEND / SHADERS

    def read(name: str) -> str:
        path = folder / name
        if not path.is_file():
            raise FileNotFoundError(f"Included file not found: {path}")
        return path.read_text()

    return expand_includes(read(f"{template}.wgsl"), read)


def instantiate(instance: Instance, root: Path | None = None) -> str:
    """The program text ggml-webgpu makes for `instance`, from the extracted release."""
    return Preprocessor().preprocess(embedded(instance.template, root), instance.defines)


def shipped_text(instance: Instance) -> str | None:
    """The shipped copy of `instance`, when its first line is this release's and this instance's."""
    path = SHIPPED.path(f"{source.VERSION}/{filename(instance)}")
    if path is None:
        return None
    text = path.read_text()
    return text if text.split("\n", 1)[0] == provenance_line(instance) else None


#: Within made_afresh(): every program asked for, by file name, as it was made then.
_afresh: dict[str, tuple[Instance, str]] | None = None


@contextmanager
def made_afresh() -> Iterator[dict[str, tuple[Instance, str]]]:
    """Within it, `load` makes every program from the extracted release (neither the cache nor the
    shipped copies are read or written) and records it: the dict yielded fills with file name ->
    (instance, text). `verify sources refresh` compares what it holds with the shipped copies."""
    global _afresh
    before, _afresh = _afresh, {}
    try:
        yield _afresh
    finally:
        _afresh = before


def load(instance: Instance, root: Path | None = None) -> str:
    """The WGSL of `instance` (provenance line, then the program): cached, shipped, or made now."""
    if _afresh is not None:
        source.require_extracted(root)
        text = provenance_line(instance) + "\n" + instantiate(instance, root)
        _afresh[filename(instance)] = (instance, text)
        return text
    folder = source.release_folder(root)
    path = folder / "programs" / filename(instance)
    if not path.is_file():
        shipped = shipped_text(instance)
        if shipped is not None:
            return shipped
        if source.extracted(root) is None:
            raise SetupError(f"llama.cpp's program {instance.variant} is neither shipped with verify nor in the cache, "
                             f"and the ggml-webgpu sources are not in {folder}; obtain them with: {source.INSTALL}")
    return made_once(path, lambda: provenance_line(instance) + "\n" + instantiate(instance, root))


def provenance(wgsl: str) -> str | None:
    """The provenance line of a program text, or None for a text without one (an edited file)."""
    for line in wgsl.splitlines():
        if line.startswith("// llama.cpp ggml-webgpu ("):
            return line
    return None
