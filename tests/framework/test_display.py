"""What the console says at the end of a run: each skip reason once, however many checks it cost."""

from __future__ import annotations

from verify.display import SKIP_REASONS_SHOWN, skip_summary
from verify.results.record import CheckResult, Verdict

HINT = "TVM kernels need apache-tvm>=0.27,<0.28, which is not installed; install it with: pip install 'webgpu-verify[tvm]'"


def skip(kernel: str, reason: str) -> CheckResult:
    return CheckResult(kernel=kernel, check="reference", config={}, verdict=Verdict.SKIP, reason=reason)


def test_a_reason_shared_by_many_checks_is_said_once_with_its_count_and_kernels():
    skips = [skip(f"tvm.k{i % 9}", HINT) for i in range(21)] + [skip("rope", "adapter lacks shader-f16")]
    text = skip_summary(skips, 300)
    assert text.count(HINT) == 1 and "22 of 300 checks were SKIPPED" in text
    assert "  21 (tvm.k0, tvm.k1, tvm.k2, tvm.k3 and 5 more): " + HINT in text
    assert "  1 (rope): adapter lacks shader-f16" in text
    assert len(text) < 600 and text.rstrip().endswith("or pass --allow-skip.")


def test_many_distinct_reasons_are_bounded_and_counted():
    skips = [skip("k", f"reason {i}") for i in range(SKIP_REASONS_SHOWN + 3)]
    text = skip_summary(skips, 50)
    assert sum(f"reason {i}" in text for i in range(SKIP_REASONS_SHOWN + 3)) == SKIP_REASONS_SHOWN
    assert "3 more for 3 other reasons" in text
