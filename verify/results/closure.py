"""The code a job runs: the modules its kernel's, check's and implementation's modules import,
transitively, and what each counts as in the job's inputs digest (verify.results.reuse).

The closure is read from the source (ast), never by importing: two runs compute the same answer
for the same files, and a package is not run (nor its import paid for: TVM's takes 2 s) to
digest it. Each imported name counts as one of:
  - source: a module found on sys.path that no installed distribution owns (verify's own, the
    kernel's package, a sibling package its reference lives in, an editable install, a local
    folder), by the sha256 of its file; its imports are followed too;
  - a distribution: a module whose file an installed distribution's RECORD lists (numpy,
    hypothesis, wgpu, ...), by that distribution's name and version, with the names and versions
    of the distributions it requires (not its extras'), transitively; its imports are not read;
  - the standard library: by the Python version (in every digest: reuse.runtime_versions);
  - absent: imported but not importable here (an optional dependency), by its name, so that
    installing it changes the digest.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path


@dataclass(frozen=True)
class CodeInputs:
    """The code a set of modules runs: source modules by the sha256 of their file, installed
    distributions by version, and imported names not importable here."""

    sources: dict[str, str] = field(default_factory=dict)
    distributions: dict[str, str] = field(default_factory=dict)
    absent: tuple[str, ...] = ()

    def digest(self) -> str:
        return hashlib.sha256(json.dumps([sorted(self.sources.items()), sorted(self.distributions.items()),
                                          sorted(self.absent)]).encode()).hexdigest()


@dataclass(frozen=True)
class _Module:
    """What one imported name is: "source" (a file, by its sha256, whose imports are followed),
    "distribution" (dist-info folders), "stdlib", "namespace" (a package without a file),
    "absent" (not importable here), or "attribute" (`from module import name` of a non-module)."""

    kind: str
    sha256: str = ""
    distributions: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()


@cache
def code_inputs(*modules: str) -> CodeInputs:
    """The code `modules` run, following their imports transitively (the module docstring says
    how each kind of module counts). Kept per process: a gate plans hundreds of jobs over a few
    dozen (kernel, check) module sets, and the source does not change under it."""
    sources: dict[str, str] = {}
    distributions: set[str] = set()
    absent: set[str] = set()
    seen, todo = set(), list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found = _module(name)
        if found.kind == "source":
            sources[name] = found.sha256
        elif found.kind == "distribution":
            distributions.update(found.distributions)
        elif found.kind == "absent":
            absent.add(name)
        todo.extend(found.imports)
    _known_imports().save()
    return CodeInputs(sources, _with_requirements(distributions), tuple(sorted(absent)))


def code_digest(*modules: str) -> str:
    """sha256 of `code_inputs(*modules)`."""
    return _code_digest(modules)


@cache
def _code_digest(modules: tuple) -> str:
    return code_inputs(*modules).digest()


def _parents(name: str) -> tuple[str, ...]:
    return tuple(name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1))


@cache
def _module(name: str) -> _Module:
    top_name = name.partition(".")[0]
    top = _top_level(top_name)
    if top.kind in ("stdlib", "distribution"):
        return top
    if top.kind == "absent":  # the top-level name stands for all of it
        return top if name == top_name else _Module("attribute", imports=(top_name,))
    if "." in name:
        parent = _spec(name.rpartition(".")[0])
        if parent is None or not parent.submodule_search_locations:
            return _Module("attribute")  # a name from a module, not a module: that module decides
    spec = _spec(name)
    if spec is None:
        return _Module("absent", imports=_parents(name))
    if not spec.has_location or not spec.origin:
        return _Module("namespace", imports=_parents(name))
    path = Path(spec.origin)
    try:
        source = path.read_bytes()
    except OSError:
        return _Module("absent", imports=_parents(name))
    sha256 = hashlib.sha256(source).hexdigest()
    imports = _imports(name, path, source, sha256) if path.suffix == ".py" else _parents(name)
    return _Module("source", sha256, imports=imports)


@cache
def _top_level(top: str) -> _Module:
    """What a top-level module is here. Looked up without importing anything (find_spec of a
    top-level name imports nothing; a submodule's spec is found on its parent's path)."""
    spec = _spec(top)
    stdlib = top in sys.stdlib_module_names or top in sys.builtin_module_names
    if spec is None:
        return _Module("stdlib" if stdlib else "absent")
    locations = [spec.origin] if spec.has_location and spec.origin else list(spec.submodule_search_locations or ())
    if stdlib and (not locations or all(_in_stdlib(location) for location in locations)):
        return _Module("stdlib")
    folders = {Path(location).parent.parent if Path(location).name == "__init__.py" else Path(location).parent
               for location in locations}
    owners = tuple(sorted({info for folder in folders for info in _installed_tops(str(folder)).get(top, ())}))
    if owners:
        return _Module("distribution", distributions=owners)
    return _Module("source")


def _in_stdlib(location: str) -> bool:
    real = os.path.realpath(location)
    return any(real.startswith(os.path.realpath(prefix) + os.sep) for prefix in {sys.base_prefix, sys.base_exec_prefix})


@cache
def _spec(name: str):
    """The spec of `name`, found without importing: a top-level name by importlib's finders, a
    submodule on its parent package's path (find_spec would import the parent)."""
    parent, _, _ = name.rpartition(".")
    try:
        if not parent:
            return importlib.util.find_spec(name)
        above = _spec(parent)
        if above is None or not above.submodule_search_locations:
            return None
        return importlib.machinery.PathFinder.find_spec(name, list(above.submodule_search_locations))
    except (ImportError, ValueError, AttributeError):
        return None


@cache
def _installed_tops(folder: str) -> dict[str, tuple[str, ...]]:
    """Top-level module -> the dist-info folders in `folder` whose RECORD lists its files: what
    pip installed there. An editable install's RECORD lists only its finder, so its source, found
    elsewhere, counts as source. (Reading every RECORD of a site-packages: about 10 ms.)"""
    found: dict[str, set] = {}
    try:
        entries = [entry.path for entry in os.scandir(folder) if entry.name.endswith(".dist-info")]
    except OSError:
        return {}
    for info in entries:
        try:
            with open(os.path.join(info, "RECORD"), newline="", encoding="utf-8") as handle:
                rows = list(csv.reader(handle))
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
        for row in rows:
            first = row[0].split("/", 1)[0] if row else ""
            if first and first not in ("..", "__pycache__") and not first.endswith((".dist-info", ".data")):
                found.setdefault(first.split(".", 1)[0], set()).add(info)
    return {top: tuple(sorted(infos)) for top, infos in found.items()}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class _Distribution:
    name: str
    version: str
    requires: tuple[str, ...]


@cache
def _distribution(info: str) -> _Distribution:
    """A dist-info folder's name, version and the distributions it requires (those of extras
    left out: what installing it pulls in)."""
    found = metadata.PathDistribution(Path(info))
    try:
        name, version, requirements = found.metadata["Name"], found.version, found.requires or ()
    except Exception:  # noqa: BLE001 - a broken dist-info: known by its folder's name alone
        return _Distribution(Path(info).name, "", ())
    requires = []
    for requirement in requirements:
        marker = requirement.partition(";")[2]
        named = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        if named and "extra" not in marker:
            requires.append(_normalized(named[1]))
    return _Distribution(name or Path(info).name, version or "", tuple(requires))


def _with_requirements(infos) -> dict[str, str]:
    """Distribution name -> version for the dist-info folders `infos` and, transitively, the
    installed distributions they require (looked for beside each, then anywhere on sys.path)."""
    versions: dict[str, str] = {}
    todo = list(infos)
    while todo:
        info = todo.pop()
        found = _distribution(info)
        if found.name in versions:
            continue
        versions[found.name] = found.version
        for name in found.requires:
            if name not in {_normalized(known) for known in versions}:
                todo.extend(_installed_named(name, str(Path(info).parent)))
    return versions


@cache
def _installed_named(name: str, near: str) -> tuple[str, ...]:
    """The dist-info folder of the installed distribution `name` (normalized), in `near` else on sys.path."""
    for folder in (near, *sys.path):
        try:
            entries = os.listdir(folder or ".")
        except OSError:
            continue
        for entry in entries:
            if entry.endswith(".dist-info") and _normalized(entry[: -len(".dist-info")].split("-", 1)[0]) == name:
                return (os.path.join(folder or ".", entry),)
    return ()


def _imports(name: str, path: Path, source: bytes, sha256: str) -> tuple[str, ...]:
    """The modules `name`'s source imports (any level, relative ones resolved), and its packages.

    Looked up by the sha256 of the name and the source in a file kept in verify's cache, as the
    source alone decides the answer: parsing the few hundred modules a gate's kernels and checks
    import took a second of every gate's planning."""
    key = hashlib.sha256(name.encode() + b"\0" + sha256.encode()).hexdigest()
    known = _known_imports()
    if key not in known.entries:
        known.entries[key] = _parsed_imports(name, path, source)
        known.added = True
    known.used.add(key)
    return tuple(known.entries[key])


def _parsed_imports(name: str, path: Path, source: bytes) -> tuple[str, ...]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _parents(name)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set(_parents(name))  # parent packages run too
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    found.discard("")
    return tuple(sorted(found))


#: The file of module imports by source digest, in verify's cache folder.
_IMPORTS_FILE = "module-imports.json"
#: The most entries the file keeps; past it, a save keeps only those this process used. Enough for
#: several checkouts' worth of edits, small enough to read in milliseconds.
_IMPORTS_KEPT = 4096


class _KnownImports:
    """The imports file as read, what this process used of it, and whether it added any."""

    def __init__(self, entries: dict):
        self.entries = entries
        self.used: set[str] = set()
        self.added = False

    def save(self) -> None:
        """Write what was added (a full cache folder, or one that cannot be written, only costs speed)."""
        from verify._cache import cache_dir
        from verify._files import write_atomic

        if not self.added:
            return
        path = cache_dir() / _IMPORTS_FILE
        entries = dict(_read_imports(path), **self.entries)
        if len(entries) > _IMPORTS_KEPT:
            entries = {key: entries[key] for key in self.used}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(entries, separators=(",", ":")))
        except OSError:
            return
        self.added = False


@lru_cache(maxsize=1)
def _known_imports() -> _KnownImports:
    from verify._cache import cache_dir

    return _KnownImports(_read_imports(cache_dir() / _IMPORTS_FILE))


def _read_imports(path: Path) -> dict:
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}
