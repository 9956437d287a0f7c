"""References of cases that several jobs draw, computed once per worker.

The gate runs some checks of a kernel config more than once on the same cases: `reference` at
each subgroup width the profile emulates (and natively), and on each implementation, every run
drawing from the same seed (verify.plan). Their float64 references and budgets are the same, as
`Kernel.expected` reads the config and the case and never the device; for the nightly's largest
kernel (llama.cpp's `flash_attn_tile`, its six width runs) they were most of each run's time.

The plan marks such jobs (`Job.shares_cases`, `mark_shared_cases`) and the gate hands a family's
jobs to one worker, one after another (verify.session). The worker keeps the references it
computes for them by the case's content (every array's bytes, dtype and shape, and the
parameters), so a later job of the family that draws the same case reads it instead of computing
it again; a case that differs in anything is computed afresh. Unmarked jobs hash nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import replace

import numpy as np

#: The most bytes of kept references a worker holds: a nightly family's 212 cases of
#: `flash_attn_tile` at head dim 256 hold under 1 MB each.
MAX_BYTES = 512 << 20


def family(job) -> tuple:
    """What the jobs drawing the same cases share: all but the subgroup width and the
    implementation (and the job's number)."""
    return (job.kernel_ref, json.dumps(job.config, sort_keys=True, default=str), job.check, job.examples,
            job.seed, job.slice, job.part, job.profile, job.profile_data, job.wgsl)


def mark_shared_cases(jobs: list) -> list:
    """`jobs`, those of a family with more than one job marked (Job.shares_cases)."""
    families = [family(job) for job in jobs]
    counts = Counter(families)
    return [replace(job, shares_cases=True) if counts[key] > 1 else job for job, key in zip(jobs, families)]


def case_key(kernel, config: dict, case) -> bytes:
    """A digest of everything `kernel.expected(config, case)` reads."""
    digest = hashlib.blake2b(digest_size=32)
    kind = type(kernel)
    digest.update(json.dumps([f"{kind.__module__}.{kind.__qualname__}", kernel.name, config, case.params],
                             sort_keys=True, default=_whole).encode())
    for name in sorted(case.arrays):
        array = np.ascontiguousarray(case.arrays[name])
        digest.update(json.dumps([name, array.dtype.str, array.shape]).encode())
        digest.update(array.reshape(-1).view(np.uint8).data)
    return digest.digest()


def _whole(value):
    """A parameter JSON cannot write, written whole: numpy's repr of a long array elides its middle."""
    if isinstance(value, np.ndarray):
        return [value.dtype.str, value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


class ReferenceMemo:
    """Expected outputs by case_key, for one family of jobs at a time, up to `max_bytes`.

    A family's jobs draw their cases in the same order, so once the memory is full the cases kept
    are the first ones and later ones are computed each time: dropping the oldest instead would
    drop, in every job, each case just before it comes round again."""

    def __init__(self, max_bytes: int = MAX_BYTES):
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: dict = {}
        self._family: tuple | None = None
        self.hits = 0

    def serve(self, job_family: tuple) -> ReferenceMemo:
        """This memo for a job of `job_family`, emptied if it held another family's references."""
        if job_family != self._family:
            self._entries.clear()
            self._bytes = 0
            self._family = job_family
        return self

    def expected(self, kernel, config: dict, case) -> list:
        """kernel.expected(config, case), computed once per distinct case while there is room."""
        key = case_key(kernel, config, case)
        if key in self._entries:
            self.hits += 1
            return self._entries[key]
        expected = kernel.expected(config, case)
        size = _frozen_bytes(expected)
        if self._bytes + size <= self._max_bytes:
            self._entries[key] = expected
            self._bytes += size
        return expected


def _frozen_bytes(expected: list) -> int:
    """The bytes of the Expecteds' arrays (each counted once: lo is often hi), made read-only: a
    kept reference is read by later jobs."""
    arrays = {id(value): value for item in expected for value in vars(item).values()
              if isinstance(value, np.ndarray)}
    for array in arrays.values():
        array.flags.writeable = False
    return sum(array.nbytes for array in arrays.values())
