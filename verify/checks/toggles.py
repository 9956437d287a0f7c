"""Whether a kernel's outputs depend on guarantees Dawn can be told to skip: an
implementation-sensitive kernel, reported as a robustness note, never as a failure.

WGSL zero-initialises workgroup memory (§7.3) and keeps out-of-bounds accesses inside their
buffer (§14.5.2). Dawn can skip both with device toggles, `disable_workgroup_init` and
`disable_robustness`, and native deployments do (ONNX Runtime's WebGPU provider has enabled both;
docs/findings.md §13.3, §13.4). A kernel whose outputs change when one is on is still valid WGSL,
right on every conforming implementation: the verdict on it stays PASS, and the record carries a
note saying which guarantee it rests on, with how far off its outputs then are, for its authors
(clear the memory first; keep accesses in bounds). A FAIL would blame the kernel for what is the
deployment's choice, and a finding of verify's (KNOWN) needs a layer to blame, which the valid
program is not. The other verdicts keep their meaning: SKIP where Dawn cannot run here, ERROR
where what runs it breaks.

Each example runs the case on Dawn as shipped (the baseline) and once per toggle, on the same Dawn
release and adapter (verify.gpu.dawn.toggled: in this process where wgpudawn is installed, else in
Node), and compares the outputs bit for bit; where they differ, the toggled run is also judged
against the reference. Whether a toggle can show anything on this adapter is measured too, with the
semantics probes (verify.gpu.semantics) on the toggled device: a driver that zeroes workgroup
memory itself, or bounds-checks every access (lavapipe does), hides what the toggle would expose,
and the note says so rather than vouching for the kernel.

Cost: every config compiles the kernel three more times (the baseline and two toggled devices),
and a case is launched three times, so the check draws at most MAX_EXAMPLES of the smallest cases
(the quick profile's sizes): the reliance shows on small cases as on big ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verify.budgets.metrics import compare
from verify.checks.base import Check, Preflight, bitwise_differences
from verify.checks.outcome import Outcome
from verify.errors import SetupError
from verify.gpu.device import ShaderCompileError
from verify.profiles import get_profile
from verify.results.record import Verdict
from verify.results.thoroughness import Thoroughness

#: Examples per config, whatever the run asks for.
MAX_EXAMPLES = 8


@dataclass(frozen=True)
class Toggle:
    """A Dawn toggle, the guarantee it drops, the probe that shows whether it drops it here, and
    what a kernel's authors can do. `dirty_first`: fill workgroup memory with markers on the
    toggled device before each launch (see FILL)."""

    name: str
    drops: str
    clause: str
    probe: str
    advice: str
    dirty_first: bool = False


TOGGLES = (
    Toggle("disable_workgroup_init", "workgroup memory is not zeroed", "WGSL §7.3 zero-initialises it",
           "workgroup-zero-init", "clear the workgroup memory before reading it", dirty_first=True),
    Toggle("disable_robustness", "out-of-bounds accesses are not kept inside their buffer",
           "WGSL §14.5.2 keeps them inside", "out-of-bounds-read", "keep every access in bounds"),
)

#: Fills every word of the device's workgroup storage with markers, in many workgroups: what other
#: kernels leave behind in a deployment. Without it, what an unzeroed kernel reads depends on the
#: driver: NVIDIA's clears a workgroup's memory when another device's work ran in between (the
#: check's three devices take turns), so a kernel read zeros there by luck (seen on an H100, where
#: the workgroup-zero-init probe, which fills the memory first on the same device, deviates).
FILL = """
var<workgroup> dirt: array<u32, WORDS>;
@group(0) @binding(0) var<storage, read_write> sink: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  for (var k = lane; k < WORDSu; k += 64u) { dirt[k] = 0x7fc0dead ^ (k << 8u) ^ group.x; }
  workgroupBarrier();
  if (lane == 0u) { sink[group.x] = dirt[(group.x * 7u) % WORDSu]; }
}
"""
#: Workgroups of FILL per launch: many more than a GPU runs at once.
FILL_WORKGROUPS = 1024


@dataclass
class Tally:
    """What one toggle did over the examples so far."""

    toggle: Toggle
    examples: int = 0
    changed: int = 0
    over_budget: int = 0
    worst: float = 0.0
    outputs: dict = field(default_factory=dict)  # output name -> examples where it changed
    hidden: str = ""  # why this adapter cannot show the toggle's effect, if it cannot

    def note(self, dawn: str) -> str:
        toggle = self.toggle
        if self.changed:
            names = ", ".join(f"{name} on {n}" for name, n in sorted(self.outputs.items()))
            budget = (f", over its budget on {self.over_budget} (err/budget up to {self.worst:.3g})"
                      if self.over_budget else ", within its budget on all of them")
            after = ", after a kernel filled it with markers" if toggle.dirty_first else ""
            return (f"implementation-sensitive: with Dawn's {toggle.name} ({toggle.drops}{after}; {toggle.clause}) the "
                    f"outputs differ from Dawn's own run on {self.changed} of {self.examples} examples ({names})"
                    f"{budget}. The WGSL is valid, so this is no failure of the kernel; robustness note: "
                    f"{toggle.advice} to be right where a deployment sets the toggle ({dawn})")
        if self.hidden:
            return (f"{toggle.name}: outputs bit-identical on {self.examples} examples, but this adapter hides what "
                    f"the toggle drops ({self.hidden}), so a reliance on it cannot show here ({dawn})")
        return (f"not sensitive to {toggle.name}: outputs bit-identical with and without it on {self.examples} "
                f"examples; the toggle shows on this adapter (its {toggle.probe} probe changes) ({dawn})")


class ToggledDevices:
    """The baseline Dawn device and one per toggle, with the same adapter and limits as the check's
    device, and the tallies whose notes the record carries."""

    def __init__(self, ctx):
        from verify.gpu.dawn.toggled import dawn_device, route_name

        adapter, limits = ctx.device.info.name, dict(ctx.device.limits)
        self.baseline = dawn_device(adapter, limits)
        self.toggled = [(toggle, dawn_device(adapter, limits, (toggle.name,))) for toggle in TOGGLES]
        info = self.baseline.info
        self.dawn = f"Dawn {route_name()}: {info.implementation_version} on {info.name}"
        self.tallies = [Tally(toggle) for toggle, _ in self.toggled]
        self._notes_at: int | None = None

    def dirty(self, device) -> None:
        """Fill `device`'s workgroup memory (all the storage it grants a workgroup) with markers."""
        import numpy as np

        from verify.gpu.buffers import Output

        words = int(device.limits.get("max-compute-workgroup-storage-size", 16384)) // 4
        fill = device.pipeline(FILL.replace("WORDS", str(words)))
        device.run(fill, {"sink": Output(np.uint32, (FILL_WORKGROUPS,))}, FILL_WORKGROUPS)

    def measure_adapter(self) -> None:
        """Whether each toggle changes what its semantics probe sees here (verify.gpu.semantics)."""
        base = self.baseline.semantics
        for tally, (toggle, device) in zip(self.tallies, self.toggled):
            before, after = base.of(toggle.probe), device.semantics.of(toggle.probe)
            if before is None or after is None or (before.verdict, before.observed) == (after.verdict, after.observed):
                seen = after.observed if after is not None else "not measured"
                tally.hidden = f"its {toggle.probe} probe answers the same with the toggle: {seen}"

    def write_notes(self, ctx) -> None:
        """The tallies' notes in the record's, replacing those of the previous example."""
        notes = [tally.note(self.dawn) for tally in self.tallies]
        if self._notes_at is None:
            self._notes_at = len(ctx.notes)
            ctx.notes.extend(notes)
        else:
            ctx.notes[self._notes_at:self._notes_at + len(notes)] = notes


class TogglesCheck(Check):
    name = "toggles"
    #: the kernel's runs compared with each other (Dawn as shipped, and with a toggle): its PASS says
    #: nothing of the outputs' accuracy, which `reference` judges (verify.results.thoroughness).
    thoroughness = Thoroughness.RELATION
    doc = ("the kernel on Dawn with workgroup zeroing off and with robust buffer access off: outputs that change "
           "are reported as a robustness note (implementation-sensitive), not a failure")
    max_examples = MAX_EXAMPLES
    #: a case runs three times, and each config compiles on three more devices.
    example_cost = 3.0
    own_module = True
    #: its three Dawn devices (two toggled, each a Node process where wgpudawn is not installed)
    #: open in 2-3 s each on an NVIDIA machine, and stay open in the worker for its next config.
    worker_state = "Dawn's toggled devices"
    #: Not in the `quick` smoke test: on a fresh machine (Mesa's shader cache cold) the check's three
    #: compiles per config cost minutes over a gate (benchmarks/results/toggles_ci_lavapipe.json).
    gate_scales = ("ci", "nightly")

    def strategy(self, ctx):
        return ctx.kernel.cases(ctx.config, get_profile("quick"))

    def preflight(self, ctx):
        """SKIP where Dawn runs neither in this process nor in Node, lacks a feature the config needs,
        or its Tint refuses the WGSL (the implementations check reports such a divergence)."""
        try:
            devices = ctx.cached("toggled devices", lambda: ToggledDevices(ctx))
        except SetupError as exc:
            return Preflight(Verdict.SKIP, f"no Dawn to set toggles on here: {exc}")
        missing = devices.baseline.missing(ctx.kernel.requirements(ctx.config))
        if missing:
            return Preflight(Verdict.SKIP, f"Dawn here lacks {', '.join(missing)}")
        try:
            for device in [devices.baseline, *(d for _, d in devices.toggled)]:
                for module in ctx.kernel.modules(ctx.wgsl):
                    device.pipeline(module)
        except ShaderCompileError as exc:
            return Preflight(Verdict.SKIP, f"Dawn's Tint refuses the WGSL, so its toggles cannot be tried: "
                             f"{str(exc).splitlines()[0]}")
        devices.measure_adapter()
        return None

    def run_example(self, ctx, case):
        devices = ctx.cached("toggled devices", lambda: ToggledDevices(ctx))
        base = ctx.launch(case, device=devices.baseline).outputs
        expected = []
        for tally, (toggle, device) in zip(devices.tallies, devices.toggled):
            if toggle.dirty_first:
                devices.dirty(device)
            outputs = ctx.launch(case, device=device).outputs
            tally.examples += 1
            differ = bitwise_differences(base, outputs)
            if not differ:
                continue
            tally.changed += 1
            for line in differ:
                name = line.split(":")[0]
                tally.outputs[name] = tally.outputs.get(name, 0) + 1
            if not expected:
                with ctx.timer.stage("reference"):
                    expected = ctx.kernel.expected(ctx.config, case)
            with ctx.timer.stage("compare"):
                metrics = [compare(outputs[e.name], e) for e in expected if e.name in outputs]
            if not all(m.passed for m in metrics):
                tally.over_budget += 1
            tally.worst = max([tally.worst, *(m.max_err_over_budget for m in metrics)])
        devices.write_notes(ctx)
        return Outcome(True, 0.0, [], [], ctx.kernel.features(case), case)
