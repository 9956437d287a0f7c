"""The contract every paged decode kernel of ours shares: bindings, uniforms, reference, budget.

Bindings (TVM's argument names, one buffer each):
  0 q [B, Hq, D]            qkv_t   read
  1 pages [P, 2, Hkv, PAGE_SIZE, D] qkv_t read (dim 1: 0 = K, 1 = V)
  2 page_indptr [B+1]       i32     read
  3 page_values [nnz]       i32     read
  4 length_info [B] | [3,B] i32     read (last_page_len | + sliding_window_offset, sink_size)
  5 k_rope_pos_offset [B]   i32     read
  6 q_rope_position [B]     i32     read
  7 output [B, Hq, D]       qkv_t   read_write
  8 lse [B, Hq]             f32     read_write (base 2; -inf for an empty context)
  9 params                  uniform DecodeParams {batch, rotary_mode, rope_scale, rope_theta, sm_scale}
Semantics: references.decode.decode_attention (TVM's _attention_decode), rotated q/k rounded to
the storage type as TVM's cast_qkv does. Empty contexts: output 0 and lse -inf, bit-exact.
With rotary_mode 1 the rotation is NeoX's (TVM's decode pairs d with d +- D/2 whatever the
rope_type), with the frequency scaling of the config's rope_scaling (rope_variant.py).
"""

from __future__ import annotations

import numpy as np

from verify.budgets.attention import decode_budget
from verify.budgets.expected import Expected
from verify.errors import UsageError
from verify.gpu import Output
from verify.gpu.uniforms import pack_struct
from verify.kernels.attention.cases import decode_cases, decode_corners
from verify.kernels.attention.common import (
    DTYPE,
    HEAD_DIM,
    KV_HEADS,
    PAGE_SIZE,
    QO_HEADS,
    STORAGE,
    dtype_enables,
    dtype_features,
)
from verify.kernels.attention.fastpath import DecodeEvaluation, DecodeInputs, remember_split, remembered
from verify.kernels.attention.rope_variant import (
    LLAMA_3_2,
    SCALING_KEYS,
    RopeVariant,
    trim_config,
    validate_variant,
)
from verify.kernels.contract import ConfigKey, Kernel
from verify.kernels.specialize import specialize

SLIDING_WINDOW = ConfigKey("sliding_window", 0, (0, 1), "1: length_info is [3, B] with window offset and sinks")


class DecodeKernel(Kernel):
    """Base of our paged decode kernels; subclasses give the WGSL body and the dispatch rule."""

    family = "attention"
    reference = "verify.references.decode.decode_attention"
    config_keys: tuple[ConfigKey, ...] = (HEAD_DIM, QO_HEADS, KV_HEADS, DTYPE, PAGE_SIZE, SLIDING_WINDOW) + SCALING_KEYS
    checks: tuple[str, ...] = ("reference", "page_permutation", "split_merge", "implementations")
    budget_function = staticmethod(decode_budget)
    output_axes = {"output": ("head", "dim"), "lse": ("sequence", "head")}

    def config(self, overrides=None):
        return trim_config(super().config(overrides), overrides)

    def validate(self, config):
        if config["qo_heads"] <= 0 or config["kv_heads"] <= 0 or config["qo_heads"] % config["kv_heads"]:
            raise UsageError(f"qo_heads={config['qo_heads']} must be a positive multiple of "
                             f"kv_heads={config['kv_heads']}")
        validate_variant(config)

    def requirements(self, config):
        return dtype_features(config)

    def gate_configs(self, profile):
        """Llama-3.2-3B with its rope scaling (24/8 heads: a GQA group of 3), one kv head for 8
        query heads in f32, D = 256 with a sliding window, and D = 96."""
        shapes = [
            dict(head_dim=128, qo_heads=24, kv_heads=8, dtype="f16", sliding_window=0, **LLAMA_3_2),
            dict(head_dim=64, qo_heads=8, kv_heads=1, dtype="f32", sliding_window=0),
            dict(head_dim=256, qo_heads=4, kv_heads=4, dtype="f16", sliding_window=1),
            dict(head_dim=96, qo_heads=6, kv_heads=2, dtype="f16", sliding_window=0),
        ]
        return [self.config(s) for s in shapes]

    # -- WGSL ---------------------------------------------------------------------------------
    body_file: str = ""

    def layout_constants(self, config) -> dict:
        """Kernel-specific constants (workgroup shape, tiles) beyond the config's."""
        return {}

    def wgsl(self, config):
        from verify.kernels.specialize import body

        variant = RopeVariant.from_config(config)
        constants = {
            "HEAD_DIM": config["head_dim"], "QO_HEADS": config["qo_heads"], "KV_HEADS": config["kv_heads"],
            "PAGE_SIZE": config["page_size"], "SLIDING_WINDOW": bool(config["sliding_window"]),
            **self.layout_constants(config), **variant.frequency_constants(),
        }
        source = body(__package__, self.body_file) + "\n" + body(__package__, variant.frequency_file)
        return specialize(self.name, source, config, enables=dtype_enables(config),
                          aliases={"qkv_t": config["dtype"]}, constants=constants)

    def workgroups(self, config, case):
        raise NotImplementedError

    # -- running and judging --------------------------------------------------------------------
    def cases(self, config, profile, drop=None):
        """decode_cases for the config (`drop`: what a caller's filter rejects, see there)."""
        return decode_cases(config, profile, llama3=RopeVariant.from_config(config).llama3, drop=drop)

    def corners(self, config):
        return decode_corners(config)

    def launch(self, device, wgsl, config, case):
        pipeline = device.pipeline(wgsl)
        batch, qo_heads, head_dim = case["q"].shape
        p = case.params
        uniform = pack_struct(pipeline.interface.structs["DecodeParams"], {
            "batch": batch, "rotary_mode": p["rotary_mode"], "rope_scale": p["rope_scale"],
            "rope_theta": p["rope_theta"], "sm_scale": p["sm_scale"]})
        dtype = STORAGE[config["dtype"]]
        resources = {name: case[name] for name in ("q", "pages", "page_indptr", "page_values", "length_info",
                                                    "k_rope_pos_offset", "q_rope_position")}
        resources.update(output=Output(dtype, (batch, qo_heads, head_dim)), lse=Output(np.float32, (batch, qo_heads)),
                         params=uniform)
        run = device.run(pipeline, resources, self.workgroups(config, case))
        return run

    def decode_inputs(self, config, case) -> DecodeInputs:
        """What the reference and budget of `case` read, under this config."""
        p = case.params
        return DecodeInputs(
            case["q"], case["pages"], case["page_indptr"], case["page_values"], case["length_info"],
            case["k_rope_pos_offset"], case["q_rope_position"], sm_scale=p["sm_scale"], rotary_mode=p["rotary_mode"],
            rope_theta=p["rope_theta"], rope_scale=p["rope_scale"], sliding_window=bool(config["sliding_window"]),
            qkv_dtype=config["dtype"], page_size=config["page_size"], llama3=RopeVariant.from_config(config).llama3)

    def evaluation(self, config, case) -> DecodeEvaluation:
        """The case's reference outputs and budgets (verify.kernels.attention.fastpath: the numbers of
        decode_attention and decode_budget), computed once for a case however many checks ask."""
        return remembered(self.decode_inputs(config, case))

    def prepare_split(self, config, case, parts) -> None:
        """Evaluate `case` and the parts split_context cut from it ((part, first row) pairs) together,
        so that the expected() of each reads the shared evaluation (fastpath.remember_split)."""
        remember_split(self.decode_inputs(config, case),
                       [(self.decode_inputs(config, part), first) for part, first in parts])

    def expected(self, config, case):
        result = self.evaluation(config, case)
        empty = result.length == 0
        return [
            Expected.around("output", result.o, result.o_budget, config["dtype"],
                            exact=np.broadcast_to(empty[:, None, None], result.o.shape)),
            Expected.around("lse", result.lse2, result.lse_budget, "f32",
                            exact=np.broadcast_to(empty[:, None], result.lse2.shape)),
        ]

    def features(self, case):
        lengths = case.params.get("lengths", [0])
        return {"context": int(max(lengths, default=0)), "positions": int(sum(lengths)), "batch": len(lengths)}
