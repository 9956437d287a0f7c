"""Case files: a failing case's inputs (.npz) with a JSON sidecar saying how to replay it.

The sidecar carries the kernel, config, check, seed, adapter and the WGSL itself, so a case
replays on another machine even when the user's .wgsl file has moved or changed since.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from verify.cases import Case
from verify.errors import UsageError
from verify.gpu.wgsl import sha256
from verify.results.atomic import write_atomic


def save_case(directory: Path, stem: str, case: Case, meta: dict, wgsl: str) -> Path:
    """Write STEM.npz and STEM.json under `directory`; returns the .npz path."""
    directory.mkdir(parents=True, exist_ok=True)
    npz = directory / f"{stem}.npz"
    tmp = npz.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **case.arrays)
    os.replace(tmp, npz)
    sidecar = dict(meta, params=case.params, wgsl=wgsl, wgsl_sha256=sha256(wgsl), arrays=sorted(case.arrays))
    write_atomic(npz.with_suffix(".json"), json.dumps(sidecar, indent=1, default=_plain))
    return npz


def load_case(path: str | Path) -> tuple[Case, dict]:
    """(case, sidecar) from a .npz or .json path; UsageError naming the file if unreadable."""
    path = Path(path)
    npz, sidecar_path = path.with_suffix(".npz"), path.with_suffix(".json")
    for p in (npz, sidecar_path):
        if not p.is_file():
            raise UsageError(f"{p}: no such case file (a case is a .npz with a .json beside it)")
    try:
        meta = json.loads(sidecar_path.read_text())
        with np.load(npz, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not a readable case file ({exc})") from None
    for key in ("kernel", "config", "wgsl", "params"):
        if key not in meta:
            raise UsageError(f"{sidecar_path}: missing {key!r}; not a case file written by verify")
    if sorted(arrays) != sorted(meta.get("arrays", arrays)):
        raise UsageError(f"{npz}: arrays {sorted(arrays)} do not match its sidecar {meta['arrays']}")
    return Case(arrays, meta["params"]), meta


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")
