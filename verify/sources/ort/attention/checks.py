"""Checks of ORT's attention kernels over cases drawn apart from their own (verify.checks.CaseFamilyCheck)."""

from __future__ import annotations

from verify.checks.case_family import CaseFamilyCheck

LARGE_SCORES = CaseFamilyCheck(
    "large_scores", "attention whose q.k partial sums pass f16's range (65504) while every score is small: queries "
    "of about 130 and one key of +c on half its channels and -c on the other (q.k = 0 exactly), judged by the same "
    "reference and budget", lambda kernel, config, profile: kernel.large_score_cases(config, profile))
