"""Checks of TVM's kernels over the cases where its conventions meet ours (docs/tvm.md §3, §6):
each is the reference check over cases the kernel draws apart (verify.checks.CaseFamilyCheck)."""

from __future__ import annotations

from verify.checks.case_family import CaseFamilyCheck

BELOW_FLOOR = CaseFamilyCheck(
    "below_floor", "contexts whose every base-2 logit lies below -5e4 (TVM's -inf) are still attended (softmax is "
    "shift-invariant)", lambda kernel, config, profile: kernel.below_floor_cases(config, profile))
PACKED_GRID = CaseFamilyCheck(
    "packed_grid", "small grids packed as the web runtime packs grids past 65535 workgroups (its threshold lowered): "
    "every workgroup still maps to a row", lambda kernel, config, profile: kernel.packed_grid_cases(config, profile))
INFINITE_EMPTY = CaseFamilyCheck(
    "infinite_empty", "merges states whose empty side has lse -inf (our convention, not TVM's) within budget, no NaN",
    lambda kernel, config, profile: kernel.infinite_empty_cases(config, profile))
