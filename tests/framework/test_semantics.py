"""The WGSL semantics probes: each names its clause and answers from evidence; a deviating
implementation is told from a conforming one; answers are kept per implementation and adapter."""

from __future__ import annotations

import numpy as np
import pytest

from verify.gpu.device import Launched, ShaderCompileError
from verify.gpu.semantics import (
    PROBE_IDS,
    PROBES,
    Conformance,
    Semantics,
    measured_semantics,
    run_probes,
)


class Tampering:
    """A device that runs everything on `inner` but changes what one probe's pipeline reads back:
    a fake implementation that deviates exactly where it is told to."""

    def __init__(self, inner, marker: str, tamper):
        self.inner, self.marker, self.tamper = inner, marker, tamper
        self.info, self.features, self.limits = inner.info, inner.features, inner.limits
        self.runs = 0

    def missing(self, features):
        return self.inner.missing(features)

    def pipeline(self, wgsl, entry_point=None):
        return (self.inner.pipeline(wgsl, entry_point), self.marker in wgsl)

    def run(self, pipeline, resources, workgroups, **options):
        real, tampered = pipeline
        self.runs += 1
        launched = self.inner.run(real, resources, workgroups, **options)
        if tampered:
            return Launched({k: self.tamper(k, v) for k, v in launched.outputs.items()}, launched.guard_intact,
                            launched.timing)
        return launched


def test_every_probe_names_the_clause_it_tests():
    assert len(set(PROBE_IDS)) == len(PROBES)
    for probe in PROBES:
        assert probe.clause.startswith("WGSL §") and probe.title


@pytest.mark.webgpu
def test_each_probe_answers_on_a_real_device_and_the_unambiguous_ones_conform_where_they_must(webgpu_device):
    semantics = run_probes(webgpu_device)
    assert [r.probe for r in semantics.results] == list(PROBE_IDS)
    for result in semantics.results:
        assert result.observed, result
        assert result.verdict is not Conformance.NOT_RUN or "lacks" in result.observed, result
    # What every adapter verify has met does: a broken one of these would be news, not a probe bug.
    assert semantics.of("select-evaluates-both").verdict is Conformance.CONFORMS
    assert semantics.of("barrier-visibility").verdict is Conformance.CONFORMS
    assert semantics.of("out-of-bounds-read").verdict is Conformance.ALLOWED


@pytest.mark.webgpu
def test_an_implementation_that_does_not_rezero_a_loop_var_deviates(webgpu_device):
    counting = Tampering(webgpu_device, "var x: u32;", lambda name, out: np.where(
        np.arange(out.size) < 12, np.tile(np.arange(1, 5, dtype=out.dtype), 4)[:out.size], out))
    result = run_probes(counting, only=("var-zero-init",)).of("var-zero-init")
    assert result.verdict is Conformance.DEVIATES and "[1, 2, 3, 4]" in result.observed
    honest = Tampering(webgpu_device, "var x: u32;", lambda name, out: np.where(
        np.arange(out.size) < 12, np.ones_like(out), out))
    assert run_probes(honest, only=("var-zero-init",)).of("var-zero-init").verdict is Conformance.CONFORMS


@pytest.mark.webgpu
def test_workgroup_memory_that_is_fresh_once_and_stale_after_deviates(webgpu_device):
    """One dispatch of memory nothing used yet reads as zero whether or not anything zeroes it;
    the probe runs each reader twice, after a kernel that filled the memory, so a second dispatch
    that finds markers is a deviation."""
    state = {"reads": 0}

    def stale_after_first(name, out):
        state["reads"] += 1
        return out if state["reads"] == 1 else out + 3

    zeroing = Tampering(webgpu_device, "nonzero", lambda name, out: np.zeros_like(out))
    assert run_probes(zeroing, only=("workgroup-zero-init",)).of("workgroup-zero-init").verdict is Conformance.CONFORMS
    stale = Tampering(webgpu_device, "nonzero", stale_after_first)
    result = run_probes(stale, only=("workgroup-zero-init",)).of("workgroup-zero-init")
    assert result.verdict is Conformance.DEVIATES and "stale words" in result.observed


@pytest.mark.webgpu
def test_a_probe_the_implementation_cannot_compile_is_not_run_and_says_why(webgpu_device):
    class Refusing(Tampering):
        def pipeline(self, wgsl, entry_point=None):
            if "subgroupAdd" in wgsl:
                raise ShaderCompileError("subgroups are not supported", "Fake")
            return super().pipeline(wgsl, entry_point)

    device = Refusing(webgpu_device, "never", lambda name, out: out)
    result = run_probes(device, only=("subgroup-size",)).of("subgroup-size")
    if "subgroup" in webgpu_device.features:
        assert result.verdict is Conformance.NOT_RUN and "does not compile" in result.observed


@pytest.mark.webgpu
def test_answers_are_kept_per_implementation_and_adapter_and_read_back(webgpu_device, tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path))
    counting = Tampering(webgpu_device, "never", lambda name, out: out)
    first = measured_semantics(counting)
    runs = counting.runs
    assert runs > 0 and list((tmp_path / "semantics").glob("*.json"))
    again = measured_semantics(counting)
    assert counting.runs == runs, "the kept answers were measured again"
    assert again == first and Semantics.from_record(first.as_record()) == first
