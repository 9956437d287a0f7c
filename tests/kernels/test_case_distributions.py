"""The cases the strategies draw keep their corners: fast value generation (quantile tables,
values drawn only for attended rows) must not lose an edge case the checks rely on."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings

from verify.cases.values import VALUE_KINDS, make_values
from verify.kernels.attention.cases import DECODE_VALUE_KINDS, decode_cases, special_lengths
from verify.kernels.registry import get_kernel
from verify.profiles import get_profile


def drawn(strategy, count: int) -> list:
    found = []

    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seed(1)
    @given(strategy)
    def collect(case):
        found.append(case)

    collect()
    return found


def test_decode_cases_still_draw_every_corner():
    config = get_kernel("decode.tiled").config({"head_dim": 64, "qo_heads": 4, "kv_heads": 2, "dtype": "f16"})
    cases = drawn(decode_cases(config, get_profile("ci")), 400)
    lengths = {n for case in cases for n in case.params["lengths"]}
    assert 0 in lengths and 1 in lengths
    assert {15, 16, 17, 127, 128, 129, 511, 512, 513} <= lengths, sorted(lengths)
    assert set(special_lengths(16, 520)) - lengths == set() or len(set(special_lengths(16, 520)) - lengths) <= 3
    assert {case.params["values"] for case in cases} == set(DECODE_VALUE_KINDS)
    assert any(case.params["spare_pages"] for case in cases) and any(case.params["rotary_mode"] for case in cases)
    for case in cases[:40]:  # spare pages and unused slots stay poisoned
        assert np.isnan(case["pages"]).any() == (case.params["spare_pages"] > 0 or
                                                 any(n % 16 for n in case.params["lengths"]))


def test_every_value_kind_keeps_its_range_in_f16_and_f32():
    rng = np.random.default_rng(0)
    for dtype, tiny_top in (("f16", 5 * 2.0**-8), ("f32", 5 * 2.0**-115)):
        made = {kind: make_values(rng, kind, (64, 128), dtype).astype(np.float64) for kind in VALUE_KINDS}
        assert abs(made["normal"].mean()) < 0.05 and 0.95 < made["normal"].std() < 1.05
        assert made["normal"].max() > 3.0 and made["normal"].min() < -3.0
        assert np.abs(made["uniform"]).max() <= 1.0 and made["uniform"].std() > 0.5
        assert np.abs(made["large"]).max() > 2.0**9
        assert 0 < np.abs(made["tiny"][made["tiny"] != 0]).max() < tiny_top
        spikes = np.abs(made["spiky"]) > 1.0
        assert 0.001 < spikes.mean() < 0.03
