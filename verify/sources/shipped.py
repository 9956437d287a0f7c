"""Kernels' WGSL shipped with verify: read-only copies of what a source's cache would hold.

On a fresh machine the first gate used to spend minutes making the WGSL of TVM's and ORT's
kernels before it ran anything (apache-tvm builds, ORT sessions captured on Dawn, minutes each for
the flash-attention programs on lavapipe), and a machine without apache-tvm or Node (a GPU box)
could not plan those kernels at all. Their WGSL depends only on the pinned upstream release and
the config, so verify ships it: one folder per source (`verify/sources/tvm/shipped`,
`verify/sources/ort/shipped`) laid out as that source's cache is, with a MANIFEST.json naming
every file, what it was made for and its sha256. `verify sources refresh` makes them again and
rewrites them (verify.sources.refresh); nothing else writes them.

A source reads its user's cache first, then the shipped copy, and only then builds or captures,
and it takes a shipped copy only as what that copy's provenance says it is (the same test as its
cache). A shipped file is used only while its bytes hash to the manifest's sha256: an installed
package edited by hand is not taken for the one that was released.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: The manifest's name in a shipped folder, and the layout it is written in.
MANIFEST = "MANIFEST.json"
FORMAT = 1

_ignored = False


@contextmanager
def ignored():
    """Within it, no shipped copy is found: `verify sources refresh` makes every file afresh,
    never reading the copies it is about to compare."""
    global _ignored
    before, _ignored = _ignored, True
    try:
        yield
    finally:
        _ignored = before


@dataclass(frozen=True)
class ShippedFile:
    """One file of a shipped folder as its manifest lists it: its path in the folder (in the
    cache's layout, e.g. `0.27.0.post1/attention_decode-....wgsl`), the sha256 of its bytes, its
    size and what it was made for (a TVM factory call, an ORT capture's config)."""

    name: str
    sha256: str
    size: int
    made_for: str

    def to_json(self) -> dict:
        return {"sha256": self.sha256, "bytes": self.size, "made_for": self.made_for}


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Shipped:
    """A source's shipped folder: the files its manifest lists, each used only while its bytes
    match the manifest's sha256."""

    def __init__(self, folder: Path, what: str):
        self.folder = Path(folder)
        self.what = what  # "TVM's WGSL", "ORT's captures": for the lines it prints
        self._files: dict[str, ShippedFile] | None = None
        self._checked: dict[str, bool] = {}

    @property
    def files(self) -> dict[str, ShippedFile]:
        """The manifest's files by name; none where the folder or its manifest is missing (a
        source shipped without copies), and none, with a line on stderr, where it is damaged."""
        if self._files is None:
            self._files = self._read_manifest()
        return self._files

    def _read_manifest(self) -> dict[str, ShippedFile]:
        path = self.folder / MANIFEST
        try:
            data = json.loads(path.read_text())
            if data.get("format") != FORMAT:
                raise ValueError(f"not of format {FORMAT}")
            return {name: ShippedFile(name, str(entry["sha256"]), int(entry["bytes"]), str(entry["made_for"]))
                    for name, entry in data["files"].items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            print(f"verify: the manifest of the shipped copies of {self.what}, {path}, cannot be read ({exc}); "
                  "none is used", file=sys.stderr)
            return {}

    def path(self, name: str) -> Path | None:
        """The shipped file `name` (in the cache's layout), if the manifest lists it and its bytes
        are the ones listed; None otherwise (and within `ignored()`)."""
        if _ignored or name not in self.files:
            return None
        if name not in self._checked:
            path = self.folder / name
            try:
                same = file_sha256(path.read_bytes()) == self.files[name].sha256
            except OSError:
                same = False
            if not same:
                print(f"verify: the shipped copy {path} is missing or not the file its manifest lists (sha256 "
                      f"{self.files[name].sha256[:16]}...): the installed package was changed; not used",
                      file=sys.stderr)
            self._checked[name] = same
        return self.folder / name if self._checked[name] else None

    def matching(self, pattern: str) -> list[Path]:
        """The usable shipped files whose names match the glob `pattern`, in name order."""
        found = (self.path(name) for name in sorted(self.files) if fnmatch.fnmatchcase(name, pattern))
        return [path for path in found if path is not None]

    def folders(self) -> list[str]:
        """The first parts of the names listed (the upstream versions shipped)."""
        return sorted({name.split("/", 1)[0] for name in self.files})

    def forget(self) -> None:
        """Read the manifest and the files' hashes again at the next use (after a refresh)."""
        self._files, self._checked = None, {}


def manifest_text(files: list[ShippedFile], about: str) -> str:
    """A manifest listing `files`, sorted by name, so a refresh that changes nothing rewrites
    the same bytes."""
    return json.dumps({"format": FORMAT, "about": about,
                       "files": {f.name: f.to_json() for f in sorted(files, key=lambda f: f.name)}},
                      indent=1, sort_keys=False) + "\n"
