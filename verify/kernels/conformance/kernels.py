"""The conformance kernels' contracts: each output is what WGSL requires, exactly.

They are kernels like any other (the gate runs them, `verify findings export` writes their
reproductions, in the forms every other finding has), so an implementation's deviation shows as a
record of its own, attributed to the implementation by the finding it reproduces (verify.gpu.findings):
KNOWN where the adapter's semantics probe deviates, news where it conforms.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from verify.budgets.expected import Expected
from verify.cases import Case
from verify.gpu import Output
from verify.gpu.uniforms import pack_struct
from verify.kernels.contract import ConfigKey, Kernel
from verify.kernels.specialize import body, specialize
from verify.results.record import KnownFinding

#: Why a probe runs its reference alone: its verdict is the implementation's conformance, not the
#: code's (Kernel.leaves_out).
PROBE_LEAVES_OUT = {
    "determinism": "a probe of the WebGPU implementation: its one verdict is the exact reference comparison, which "
                   "names the implementation; its WGSL is the specification's example, fixed",
    "sanitize": "a probe of the WebGPU implementation: each invocation writes its own word of one output, by "
                "construction; what it judges is the implementation's initialisation, which the sanitizer does not",
}

#: Words of each workgroup array: 16 KiB, WebGPU's default limit of workgroup storage.
WORDS = 4096


def exact_budget(values):
    """Zero: the specification fixes each value exactly (a zero-initialised word reads 0, a fresh
    `var` plus 1 is 1), and integers leave no rounding to allow for."""
    return np.zeros(np.shape(values))


class WorkgroupZeroInit(Kernel):
    name = "conformance.workgroup_zero_init"
    family = "conformance"
    summary = ("workgroup memory reads 0 before any write, after another kernel filled it (WGSL zero-initialises "
               "workgroup variables)")
    reference = "0 for every word read (WGSL: workgroup variables are zero-initialised)"
    config_keys = (ConfigKey("words", WORDS, (WORDS, 1024), "u32 words of each workgroup array"),)
    checks = ("reference",)
    leaves_out = PROBE_LEAVES_OUT
    budget_function = staticmethod(exact_budget)
    output_axes = {"nonzero": ("lane",)}

    def gate_configs(self, profile):
        return [self.config({})]

    def wgsl(self, config):
        return specialize(self.name, body(__package__, "workgroup_zero_init.wgsl"), config,
                          constants={"WORDS": config["words"]})

    def cases(self, config, profile):
        return st.integers(1, 512).map(lambda groups: Case({}, {"workgroups": groups}))

    def launch(self, device, wgsl, config, case):
        """The kernel twice: a dispatch that leaves markers in workgroup memory, then the one whose
        reads are judged (one dispatch of memory nothing used yet proves nothing)."""
        pipeline = device.pipeline(wgsl)
        groups = case.params["workgroups"]
        struct = pipeline.interface.structs["Params"]
        device.run(pipeline, {"nonzero": Output(np.uint32, (groups * 64,)),
                              "params": pack_struct(struct, {"phase": 0})}, groups)
        return device.run(pipeline, {"nonzero": Output(np.uint32, (groups * 64,)),
                                     "params": pack_struct(struct, {"phase": 1})}, groups)

    def expected(self, config, case):
        zeros = np.zeros(case.params["workgroups"] * 64)
        return [Expected.around("nonzero", zeros, exact_budget(zeros), "u32", exact=np.ones(zeros.shape, bool))]

    def features(self, case):
        return {"workgroups": case.params["workgroups"]}

    def known_finding(self, check, config):
        return KnownFinding(outputs=("nonzero",), finding_id="wgpu-native-workgroup-zero-init")

    def finding_examples(self, check, config):
        return [Case({}, {"workgroups": 256})]


class LoopVarZeroInit(Kernel):
    name = "conformance.loop_var_zero_init"
    family = "conformance"
    summary = "a loop body's `var` without initializer is 0 in every iteration (WGSL zero-initialises it each time)"
    reference = "1 for every iteration's sum (WGSL: a var without initializer is zero each time its declaration runs)"
    config_keys = ()
    checks = ("reference",)
    leaves_out = PROBE_LEAVES_OUT
    budget_function = staticmethod(exact_budget)
    output_axes = {"sums": ("iteration",)}

    def gate_configs(self, profile):
        return [self.config({})]

    def wgsl(self, config):
        return specialize(self.name, body(__package__, "loop_var_zero_init.wgsl"), config)

    def cases(self, config, profile):
        return st.integers(1, 64).map(lambda n: Case({}, {"iterations": n}))

    def launch(self, device, wgsl, config, case):
        pipeline = device.pipeline(wgsl)
        n = case.params["iterations"]
        params = pack_struct(pipeline.interface.structs["Params"], {"iterations": n})
        return device.run(pipeline, {"sums": Output(np.uint32, (2 * n,)), "params": params}, 1)

    def expected(self, config, case):
        ones = np.ones(2 * case.params["iterations"])
        return [Expected.around("sums", ones, exact_budget(ones), "u32", exact=np.ones(ones.shape, bool))]

    def features(self, case):
        return {"iterations": case.params["iterations"]}

    def known_finding(self, check, config):
        return KnownFinding(outputs=("sums",), finding_id="loop-var-not-rezeroed")

    def finding_examples(self, check, config):
        return [Case({}, {"iterations": 4})]
