"""Reusing passing records: a check whose inputs are all unchanged need not run again.

A job's inputs are everything its verdict depends on: verify's version; the job's identity
(kernel import path, check, config, implementation, subgroup width, examples, seed, profile); the
sha256 of the WGSL it runs, and of the other kernels' WGSL the check launches beside it
(Check.other_wgsl: a differential partner, split_merge's merge); the adapter and driver it runs on; and the code it runs, which is the
Python source of every module the kernel's and the check's modules import, transitively, within
verify, references and the kernel's own package (its references, budgets, strategies, fast paths,
launch code). `inputs_digest` hashes all of it; `verify gate --reuse` (and `check`) looks the
digest up among the PASS records of an earlier run and copies such a record instead of running
the job, saying where it came from. Anything changed, or a verdict other than PASS, runs again.

The closure of imports is read from the source (ast), not from what happens to be imported in
this process, so two runs compute the same digest for the same files.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import sys
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from verify._version import __version__
from verify.results.record import CheckResult, Verdict

#: Top-level packages whose modules are followed (the kernel's own package is added per kernel).
_FOLLOWED = ("verify",)


@lru_cache(maxsize=None)
def _module_file(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) if spec is not None else None
    return Path(origin) if origin and origin.endswith(".py") else None


@lru_cache(maxsize=None)
def _imports(name: str) -> tuple[str, ...]:
    """The modules `name`'s source imports (any level, relative ones resolved), and its packages.

    Looked up by the sha256 of the name and the source in a file kept in verify's cache, as the
    source alone decides the answer: parsing the few hundred modules a gate's kernels and checks
    import took a second of every gate's planning."""
    path = _module_file(name)
    if path is None:
        return ()
    try:
        source = path.read_bytes()
    except OSError:
        return ()
    key = hashlib.sha256(name.encode() + b"\0" + source).hexdigest()
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
        return ()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = {name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)}  # parent packages run too
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
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
        from verify.results.atomic import write_atomic

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


@lru_cache(maxsize=None)
def code_digest(*modules: str) -> str:
    """sha256 of the source of `modules` and of everything they import within verify, references
    and their own top-level packages, transitively. Kept per process: a gate plans hundreds of
    jobs over a few dozen (kernel, check) modules, and the source does not change under it."""
    followed = set(_FOLLOWED) | {m.split(".")[0] for m in modules}
    seen, todo = set(), list(modules)
    while todo:
        name = todo.pop()
        if name in seen or name.split(".")[0] not in followed:
            continue
        seen.add(name)
        todo.extend(_imports(name))
    digest = hashlib.sha256()
    for name in sorted(seen):
        path = _module_file(name)
        if path is not None:
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    _known_imports().save()
    return digest.hexdigest()


def inputs_digest(job, wgsl_sha256: str, adapter: dict, check_modules: tuple) -> str:
    """The digest of everything a job's verdict depends on (the module docstring lists it)."""
    kernel_module = job.kernel_ref.partition(":")[0]
    identity = {"verify": __version__, "kernel_ref": job.kernel_ref, "check": job.check, "config": job.config,
                "implementation": job.implementation, "subgroup_width": job.subgroup_width,
                "examples": job.examples, "seed": job.seed, "profile": job.profile, "profile_data": job.profile_data,
                "wgsl": wgsl_sha256, "adapter": adapter, "code": code_digest(kernel_module, *check_modules),
                "python": sys.version_info[:2]}
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def reusable(documents) -> dict[str, tuple[CheckResult, str]]:
    """Passing records of earlier runs by their inputs digest, with where each came from."""
    found = {}
    for document in documents:
        for record in document.records:
            if record.verdict is Verdict.PASS and record.inputs_sha256:
                found[record.inputs_sha256] = (record, f"{document.path} ({document.started})")
    return found


def reused(record: CheckResult, origin: str, job_id: int) -> CheckResult:
    """`record`, copied into this run as the record of job `job_id`, saying where it came from."""
    return replace(record, job_id=job_id, reused_from=record.reused_from or origin)
