"""`python -m verify.sources.llamacpp.ship [--check]`: `verify sources refresh --sources llamacpp`.

The shipped folder (verify.sources.llamacpp.programs.SHIPPED) holds, for every gate config of
every `llamacpp.*` kernel in every profile, each program its WGSL is made of, instantiated from
the extracted release (never read back from the folder itself), laid out as the cache is
(`<version>/<template>-<digest>.wgsl`), with llama.cpp's MIT licence (`<version>/LICENSE.llama.cpp`)
and a MANIFEST.json of sha256s (verify.sources.shipped). verify.sources.refresh makes and
compares them beside TVM's and ORT's; this module is kept as a short name for llama.cpp's part.
`--check` lists what differs and exits 1 without writing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys


def main(argv: list[str] | None = None) -> int:
    """`verify sources refresh --sources llamacpp [--check]` in a process of its own: refresh sits
    above every vendor's folder, so this one does not import it (no folder loop)."""
    parser = argparse.ArgumentParser(prog="python -m verify.sources.llamacpp.ship",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="list what differs, write nothing; exit 1 if anything does")
    args = parser.parse_args(argv)
    command = [sys.executable, "-m", "verify", "sources", "refresh", "--sources", "llamacpp"]
    return subprocess.run(command + (["--check"] if args.check else [])).returncode


if __name__ == "__main__":
    sys.exit(main())
