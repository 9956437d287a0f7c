"""Case files: a failing case's inputs (.npz) with a JSON sidecar saying how to replay it.

The sidecar carries the schema version, the kernel (name and import path), config, check, seed,
adapter, where the WGSL came from and the WGSL itself with its sha256, so a case replays on
another machine even when the user's .wgsl file has moved or changed since, and a replay can
tell when the sidecar was edited.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from verify._files import write_atomic
from verify.cases import Case
from verify.errors import UsageError
from verify.results.record import to_json_value
from verify.wgsl import sha256

#: Written into every sidecar; a newer schema is refused rather than misread. /2 adds
#: `case_sha256`, the digest of the arrays and parameters (a /1 file is read with its WGSL's).
SCHEMA = "verify.case/2"
_SUPPORTED = {"verify.case/1", SCHEMA}
#: The most elements one saved array may declare: far above any case verify draws, far below a
#: header that would exhaust memory.
MAX_ELEMENTS = 1 << 30


@dataclass(frozen=True)
class SavedCase:
    """What a case file's sidecar says the case was saved for, checked as it is read (load_case):
    the kernel (its name and import path), config, check and WGSL to run it under, and where and
    how it failed. `sidecar` keeps every field as written, for what only a report reads."""

    kernel: str
    check: str
    config: dict
    wgsl: str
    kernel_ref: str | None = None
    subgroup_width: int | None = None
    profile: str | None = None
    seed: int | None = None
    role: str | None = None
    #: The adapter it was saved on (AdapterRecord's fields: name, backend, implementation, ...).
    adapter: dict = field(default_factory=dict)
    #: Where its WGSL came from (Source's fields; kind "file" for a user's file).
    source: dict = field(default_factory=dict)
    failure_kind: str | None = None
    message: str | None = None
    sidecar: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_sidecar(cls, meta: dict) -> SavedCase:
        width = meta.get("subgroup_width")
        return cls(kernel=meta["kernel"], check=meta["check"], config=dict(meta["config"]), wgsl=meta["wgsl"],
                   kernel_ref=meta.get("kernel_ref") or None, subgroup_width=int(width) if width else None,
                   profile=meta.get("profile") or None, seed=meta.get("seed"), role=meta.get("role"),
                   adapter=dict(meta.get("adapter") or {}), source=dict(meta.get("source") or {}),
                   failure_kind=meta.get("failure_kind") or None, message=meta.get("message") or None,
                   sidecar=meta)

    @property
    def user_wgsl(self) -> bool:
        """Whether the WGSL is a user's file checked under the kernel's contract (not the kernel's own)."""
        return self.source.get("kind") == "file"


def save_case(directory: Path, stem: str, case: Case, meta: dict, wgsl: str) -> Path:
    """Write STEM.npz and STEM.json under `directory`; returns the .npz path."""
    directory.mkdir(parents=True, exist_ok=True)
    npz = directory / f"{stem}.npz"
    tmp = npz.with_suffix(".tmp.npz")
    # mypy matches **arrays against savez_compressed's allow_pickle: bool too (an array named so is no case's)
    np.savez_compressed(tmp, **case.arrays)  # type: ignore[arg-type]
    os.replace(tmp, npz)
    params = json.loads(json.dumps(case.params, default=_plain))
    sidecar = dict(meta, schema=SCHEMA, params=params, wgsl=wgsl, wgsl_sha256=sha256(wgsl),
                   case_sha256=case_digest(case.arrays, params),
                   arrays={name: {"shape": list(a.shape), "dtype": str(a.dtype)} for name, a in case.arrays.items()})
    write_atomic(npz.with_suffix(".json"), json.dumps(sidecar, indent=1, default=_plain))
    return npz


def save_check_cases(result, shrunk: Case | None, worst: Case | None, directory: Path, wgsl: str, part: str = ""):
    """`result` (a CheckResult) with its shrunk and worst cases saved under `directory`/cases
    and their files recorded in the result; `part` tells apart the slices of one check."""
    meta = {
        "kernel": result.kernel,
        "kernel_ref": result.kernel_ref,
        "config": result.config,
        "check": result.check,
        "seed": result.seed,
        "profile": result.profile,
        "subgroup_width": result.subgroup_width,
        "adapter": to_json_value(result.adapter),
        "source": to_json_value(result.source),
        "failure_kind": to_json_value(result.failure_kind),
    }
    width = f"-w{result.subgroup_width}" if result.subgroup_width else ""
    stem = f"{_safe(result.kernel)}-{result.check}-{_config_tag(result.config)}{width}{part}"
    updates = {}
    for role, case in (("shrunk", shrunk), ("worst", worst)):
        summary = getattr(result, role)
        if case is None or summary is None:
            continue
        path = save_case(Path(directory) / "cases", f"{stem}-{role}", case,
                         dict(meta, role=role, message=summary.message), wgsl)
        updates[role] = replace(summary, case_file=str(path))
    return replace(result, **updates)


def load_case(path: str | Path) -> tuple[Case, SavedCase]:
    """(case, what it was saved for) from a .npz or .json path; UsageError naming the file if
    unreadable, edited, or not written by verify."""
    path = Path(path)
    npz, sidecar_path = path.with_suffix(".npz"), path.with_suffix(".json")
    for p in (npz, sidecar_path):
        if not p.is_file():
            raise UsageError(f"{p}: no such case file (a case is a .npz with a .json beside it)")
    try:
        meta = json.loads(sidecar_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{sidecar_path}: not a readable case sidecar ({exc})") from None
    if not isinstance(meta, dict):
        raise UsageError(f"{sidecar_path}: not a case sidecar written by verify")
    schema = meta.get("schema", SCHEMA)  # files from before schemas were recorded read as the first
    if schema not in _SUPPORTED:
        raise UsageError(f"{sidecar_path}: case schema {schema!r} is newer than this verify understands "
                         f"({', '.join(sorted(_SUPPORTED))}); upgrade verify to replay it")
    for key, kind in (("kernel", str), ("check", str), ("config", dict), ("wgsl", str), ("params", dict)):
        if not isinstance(meta.get(key), kind):
            raise UsageError(f"{sidecar_path}: {key!r} is missing or not a {kind.__name__}; "
                             "not a case file written by verify")
    width = meta.get("subgroup_width")
    if width is not None and (isinstance(width, bool) or not isinstance(width, int)):
        raise UsageError(f"{sidecar_path}: 'subgroup_width' is {width!r}, not a number of lanes; "
                         "not a case file as verify writes it")
    if "wgsl_sha256" not in meta:
        raise UsageError(f"{sidecar_path}: has no wgsl_sha256, so an edit of its WGSL could not be told; "
                         "not a case file as verify writes it")
    arrays = _load_arrays(npz)
    declared = meta.get("arrays", sorted(arrays))
    if sorted(arrays) != sorted(declared):
        raise UsageError(f"{npz}: arrays {sorted(arrays)} do not match its sidecar {sorted(declared)}")
    if isinstance(declared, dict):
        for name, info in declared.items():
            shape, dtype = tuple(info.get("shape", ())), info.get("dtype")
            if arrays[name].shape != shape or str(arrays[name].dtype) != dtype:
                raise UsageError(f"{npz}: array {name!r} is {arrays[name].dtype}{list(arrays[name].shape)}, "
                                 f"its sidecar says {dtype}{list(shape)}")
    recorded = meta["wgsl_sha256"]
    if recorded != sha256(meta["wgsl"]):
        raise UsageError(f"{sidecar_path}: the WGSL's sha256 does not match the recorded {str(recorded)[:12]}...; "
                         "the sidecar was edited")
    if schema == SCHEMA:
        if "case_sha256" not in meta:
            raise UsageError(f"{sidecar_path}: has no case_sha256, so an edit of the case could not be told; "
                             "not a case file as verify writes it")
        if meta["case_sha256"] != case_digest(arrays, meta["params"]):
            raise UsageError(f"{npz}: the arrays or parameters do not match the recorded case_sha256; the case was "
                             "edited")
    return Case(arrays, meta["params"]), SavedCase.from_sidecar(meta)


def case_digest(arrays: dict, params: dict) -> str:
    """sha256 of a case: every array's name, dtype, shape and bytes, and the parameters (JSON)."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    digest.update(json.dumps(params, sort_keys=True, default=_plain).encode())
    return digest.hexdigest()


def _load_arrays(npz: Path) -> dict:
    """The arrays of a case's .npz, each header checked before its data is read: numbers only, and
    no more elements than its data holds (a doctored header must not exhaust memory)."""
    try:
        with zipfile.ZipFile(npz) as archive:
            arrays = {}
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    raise UsageError(f"{npz}: holds {info.filename!r}, which is not an array")
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read_header(member)
                    if dtype.hasobject:
                        raise UsageError(f"{npz}: array {info.filename[:-4]!r} holds Python objects; a case holds "
                                         "numbers only")
                    elements = int(np.prod(shape, dtype=np.float64))
                    if elements > MAX_ELEMENTS or elements * dtype.itemsize > info.file_size:
                        raise UsageError(f"{npz}: array {info.filename[:-4]!r} declares {elements} elements of "
                                         f"{dtype}, more than its {info.file_size} bytes hold")
                with archive.open(info) as member:
                    arrays[info.filename[:-4]] = np.lib.format.read_array(member, allow_pickle=False)
            return arrays
    except UsageError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise UsageError(f"{npz}: not a readable case file ({type(exc).__name__}: {_plain_message(exc)})") from None


def _plain_message(exc: Exception) -> str:
    """numpy's message without its advice to allow pickles, which a case file never needs."""
    return str(exc).split(" Use allow_pickle")[0].split("; allow_pickle")[0]


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def _config_tag(config: dict) -> str:
    """The config in a file name; a long one is cut and ends in a digest of the whole, so two
    configs that differ only past the cut (e.g. in rope_factor) keep apart."""
    tag = _safe("_".join(f"{k}{v}" for k, v in sorted(config.items())).replace(".", "p"))
    return tag if len(tag) <= 80 else f"{tag[:63]}-{hashlib.sha256(tag.encode()).hexdigest()[:16]}"


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")
