"""Checks of ORT's DP4A kernels over cases drawn apart from their own (verify.checks.CaseFamilyCheck)."""

from __future__ import annotations

from verify.checks.case_family import CaseFamilyCheck

ZERO_BLOCKS = CaseFamilyCheck(
    "zero_blocks", "A with all-zero 128-value blocks: their codes are 0 and their scale 0 (no 0/0 in the quantizer), "
    "every other block within its legal codes",
    lambda kernel, config, profile: kernel.zero_blocks_cases(config, profile))
