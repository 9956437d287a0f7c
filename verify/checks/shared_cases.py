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
from collections import OrderedDict
from dataclasses import replace

import numpy as np

#: The most bytes of kept references a worker holds: a nightly family's 212 cases of
#: `flash_attn_tile` at head dim 256 hold about 1 MB each.
MAX_BYTES = 1 << 30


def family(job) -> tuple:
    """What the jobs drawing the same cases share: all but the subgroup width and the
    implementation (and the job's number)."""
    return (job.kernel_ref, json.dumps(job.config, sort_keys=True, default=str), job.check, job.examples,
            job.seed, job.slice, job.part, job.profile, job.profile_data, job.wgsl)


def mark_shared_cases(jobs: list) -> list:
    """`jobs`, those of a family with more than one job marked (Job.shares_cases)."""
    counts: dict = {}
    for job in jobs:
        counts[family(job)] = counts.get(family(job), 0) + 1
    return [replace(job, shares_cases=True) if counts[family(job)] > 1 else job for job in jobs]


def case_key(kernel, config: dict, case) -> bytes:
    """A digest of everything `kernel.expected(config, case)` reads."""
    digest = hashlib.blake2b(digest_size=32)
    kind = type(kernel)
    digest.update(json.dumps([f"{kind.__module__}.{kind.__qualname__}", kernel.name, config, case.params],
                             sort_keys=True, default=repr).encode())
    for name in sorted(case.arrays):
        array = np.ascontiguousarray(case.arrays[name])
        digest.update(json.dumps([name, array.dtype.str, array.shape]).encode())
        digest.update(array.reshape(-1).view(np.uint8).data)
    return digest.digest()


class ReferenceMemo:
    """Expected outputs by case_key, the most recently used kept up to `max_bytes`."""

    def __init__(self, max_bytes: int = MAX_BYTES):
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: OrderedDict = OrderedDict()
        self.hits = 0

    def expected(self, kernel, config: dict, case) -> list:
        """kernel.expected(config, case), computed once per distinct case."""
        key = case_key(kernel, config, case)
        if key in self._entries:
            self._entries.move_to_end(key)
            self.hits += 1
            return self._entries[key][0]
        expected = kernel.expected(config, case)
        size = sum(_frozen_bytes(item) for item in expected)
        self._entries[key] = (expected, size)
        self._bytes += size
        while self._bytes > self._max_bytes and len(self._entries) > 1:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= dropped
        return expected


def _frozen_bytes(item) -> int:
    """The bytes of an Expected's arrays, made read-only: a kept reference is read by later jobs."""
    size = 0
    for value in vars(item).values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
            size += value.nbytes
    return size
