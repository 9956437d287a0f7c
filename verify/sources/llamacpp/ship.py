"""Make the shipped copies of ggml-webgpu's programs again: `python -m verify.sources.llamacpp.ship [--check]`.

The shipped folder (verify.sources.llamacpp.programs.SHIPPED) holds, for every gate config of
every `llamacpp.*` kernel in every profile, each program its WGSL is made of, instantiated from
the extracted release (never read back from the folder itself), laid out as the cache is
(`<version>/<template>-<digest>.wgsl`), with llama.cpp's MIT licence (`<version>/LICENSE.llama.cpp`)
and a MANIFEST.json of sha256s (verify.sources.shipped). `--check` lists what differs and exits 1
without writing.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager

from verify._files import write_atomic
from verify.sources import shipped
from verify.sources.llamacpp import programs, source
from verify.sources.shipped import ShippedFile, file_sha256, manifest_text

ABOUT = ("llama.cpp's ggml-webgpu programs (llama-cpp-python 0.3.36 sdist) instantiated for every gate config of "
         "verify's llamacpp.* kernels, as verify.sources.llamacpp.programs caches them, with llama.cpp's MIT licence; "
         "made by `python -m verify.sources.llamacpp.ship`")
PROFILES = ("quick", "ci", "nightly")


@contextmanager
def _recording(found: dict):
    """programs.load records every instance it is asked for, and makes each afresh from the release."""
    before = programs.load

    def load(instance, root=None):
        text = programs.provenance_line(instance) + "\n" + programs.instantiate(instance, root)
        found[programs.filename(instance)] = (instance, text)
        return text

    programs.load = load
    try:
        yield
    finally:
        programs.load = before


def made() -> dict[str, tuple[str, str]]:
    """Every shipped file's name -> (text, what it was made for)."""
    from verify.kernels.registry import get_kernel, kernel_names
    from verify.profiles import get_profile

    source.require_extracted()
    found: dict = {}
    with shipped.ignored(), _recording(found):
        for name in kernel_names():
            if not name.startswith("llamacpp."):
                continue
            kernel = get_kernel(name)
            for profile in PROFILES:
                for config in kernel.gate_configs(get_profile(profile)):
                    kernel.wgsl(config)
    files = {f"{source.VERSION}/{name}": (text, programs.describe(instance))
             for name, (instance, text) in found.items()}
    licence = (source.require_extracted() / "LICENSE").read_text()
    files[f"{source.VERSION}/{programs.LICENCE}"] = (licence, f"llama.cpp's LICENSE (MIT), from {source.SDIST}")
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.sources.llamacpp.ship",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="list what differs, write nothing; exit 1 if anything does")
    args = parser.parse_args(argv)
    files = made()
    folder = programs.SHIPPED
    differ = [name for name, (text, _) in files.items()
              if name not in folder.files or (folder.folder / name).read_text() != text]
    stale = [name for name in folder.files if name not in files]
    for name in differ + stale:
        print(f"llamacpp {name}: {'shipped, no longer made' if name in stale else 'differs or is not shipped'}")
    if args.check:
        return 1 if differ or stale else 0
    for name in stale:
        (folder.folder / name).unlink(missing_ok=True)
    entries = []
    for name, (text, made_for) in sorted(files.items()):
        write_atomic(folder.folder / name, text)
        data = text.encode()
        entries.append(ShippedFile(name, file_sha256(data), len(data), made_for))
    write_atomic(folder.folder / shipped.MANIFEST, manifest_text(entries, ABOUT))
    folder.forget()
    print(f"verify: {len(files)} llama.cpp files shipped in {folder.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
