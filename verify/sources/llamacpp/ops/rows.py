"""ggml-webgpu's GET_ROWS and SET_ROWS: `llamacpp.ops.get_rows`, `llamacpp.ops.set_rows`.

get_rows.wgsl gathers rows of a table by an i32 index tensor into f32 rows (i32 rows for an i32
table): f32, f16 and i32 tables one invocation per element (FLOAT_PARALLEL; an f32 table whose
view is vec4-aligned one per vec4), block-quantized tables one invocation per row, dequantizing
each block. verify instantiates it as the shader library does (selection.get_rows_instance,
S L1561-1686), lays the table in its binding as a view (an element offset, rows longer than
their values: the strides ggml passes in elements, C L1516-1553), dispatches it as the host does
(selection.get_rows_grid, C L1556-1561) and judges it against references.ggml_rows.get_rows
within verify.budgets.llamacpp_ops.get_rows_budget: bit for bit wherever the arithmetic is exact.

set_rows.wgsl scatters f32 source rows into an f32 or f16 destination at i32 or i64 row indices,
one invocation per element (per vec4 for rows of a multiple of 4); with i64 indices it reads each
index's two words and, where the high word is not zero, sets an error word and writes nothing
(the host reads that word back only under GGML_WEBGPU_CHECK_SET_ROWS, C L3491-3510). verify binds
the destination with what it held before (rows no index names must come back bit for bit) and
the error word zeroed, and judges both against references.ggml_rows.set_rows within
verify.budgets.llamacpp_ops.set_rows_budget.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.llamacpp_ops import flush_f16_fields, get_rows_budget, set_rows_budget
from verify.errors import FailureKind, UsageError
from verify.gpu import InOut, Output
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.references import ggml_quants as gq
from verify.references.ggml_rows import get_rows, get_rows_blocks, set_rows
from verify.results.record import KnownFinding
from verify.sources.llamacpp import programs, selection
from verify.sources.llamacpp.findings import GET_ROWS_READS_PAST_TABLE
from verify.sources.llamacpp.launch import Program, adapter_of, bind, header, upstream
from verify.sources.llamacpp.ops.rows_cases import (
    F16_FIELDS,
    get_rows_case,
    get_rows_cases,
    set_rows_case,
    set_rows_cases,
)

SRC_TYPE = ConfigKey("src_type", "f32", selection.GET_ROWS_TYPES,
                     "the table's type: f32, f16, i32, or a block type dequantized to f32")
VEC4 = ConfigKey("vec4", False, (False, True), "the vec4 path (F32_VEC): an f32 table whose row length, "
                 "offset and strides are multiples of 4 (S L1562, C L1527-1528)")
WG_SIZE = ConfigKey("wg_size", 256, (64, 128, 256),
                    "the adapter's maxComputeInvocationsPerWorkgroup, which ggml-webgpu takes as WG_SIZE")
NUMPY = {"f32": np.float32, "f16": np.float16, "i32": np.int32}


def _flat(values: np.ndarray, offset: int, pad: int, multiple: int) -> tuple[np.ndarray, int]:
    """A table [B, R, n, ...] laid out as a view: `offset` units before it, each row `pad` units
    longer (units: elements, or blocks for a block type's [B, R, nb, bytes]); the buffer's length
    rounded up to `multiple` units. Returns (flat array, row stride in units)."""
    batches, rows, n = values.shape[:3]
    tail = values.shape[3:]
    stride = n + pad
    body = np.zeros((batches, rows, stride) + tail, values.dtype)
    body[:, :, :n] = values
    units = offset + body.shape[0] * rows * stride
    flat = np.zeros((-(-units // multiple) * multiple,) + tail, values.dtype)
    flat[offset:units] = body.reshape((-1,) + tail)
    return flat.reshape(-1), stride


class GetRows(Kernel):
    """GET_ROWS: dst[b, i] = table[b, idx[b, i]] (dequantized to f32 for a block type)."""

    name = "llamacpp.ops.get_rows"
    family = "llamacpp.ops"
    source = "llamacpp"
    summary = ("llama.cpp ggml-webgpu's get_rows: rows of an f32, f16, i32 or block-quantized table gathered by "
               "index (dequantized to f32)")
    reference = "verify.references.ggml_rows.get_rows"
    checks = ("reference",)
    config_keys = (SRC_TYPE, VEC4, WG_SIZE)
    output_axes = {"dst": ("batch", "row", "column")}
    budget_function = staticmethod(get_rows_budget)

    def validate(self, config):
        if config["vec4"] and config["src_type"] != "f32":
            raise UsageError("get_rows takes the vec4 path for an f32 table only (S L1562): vec4=true needs "
                             "src_type=f32")

    def requirements(self, config):
        return frozenset({"shader-f16"})  # get_rows.wgsl starts with `enable f16;`

    def instance(self, config) -> selection.Instance:
        adapter = adapter_of({"subgroup_min": 4, "subgroup_max": 128}, max_invocations=config["wg_size"])
        return selection.get_rows_instance(adapter, config["src_type"], config["vec4"])

    def wgsl(self, config):
        return header(self.name, config) + programs.load(self.instance(config))

    def gate_configs(self, profile):
        configs = [self.config({"vec4": True}), self.config({"wg_size": 64})]
        configs += [self.config({"src_type": t}) for t in selection.GET_ROWS_TYPES if t != "f32"]
        return configs

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, ("wgsl-shaders/get_rows.wgsl",
                                                                 "wgsl-shaders/common_decls.tmpl"))])

    def known_finding(self, check, config):
        """§19.6 under `sanitize` for the block types read as u32 words (q4_0, q8_0): their
        2-byte-offset blocks reach load_u32_at_src, which loads the next word on every load."""
        if check == "sanitize" and config["src_type"] in ("q4_0", "q8_0"):
            return KnownFinding(GET_ROWS_READS_PAST_TABLE, kinds=(FailureKind.SANITIZER,),
                                reasons=("out-of-bounds read of storage buffer src:",), on_this_adapter=False,
                                finding_id="llamacpp-get-rows-reads-past-table")
        return None

    def finding_examples(self, check, config):
        """§19.6's case, run first under `sanitize` whatever the seed draws: a two-row table of two
        blocks a row, nothing past it in its buffer, its last row gathered, so the last block's
        last load reads the word past the binding."""
        if check != "sanitize" or config["src_type"] not in ("q4_0", "q8_0"):
            return []
        case = get_rows_case(config["src_type"], False, 1, 2, 1, 64, "random", "shuffled", 84)
        return [case.replace({"idx": np.ones_like(case["idx"])}, offset=0, pad=0)]

    def cases(self, config, profile):
        return get_rows_cases(profile, config["src_type"], config["vec4"])

    def corners(self, config):
        """One row of one value (block); a table's last row gathered past a workgroup's lanes;
        every row of a larger table, shuffled, in two batches."""
        t, vec4 = config["src_type"], config["vec4"]
        lanes = config["wg_size"]
        values = "random" if t in F16_FIELDS else ("normal" if t == "i32" else "subnormal")
        return [get_rows_case(t, vec4, 1, 1, 1, 1, values, "shuffled", 81),
                get_rows_case(t, vec4, 1, 5, 3, lanes + 4, values, "ends", 82),
                get_rows_case(t, vec4, 2, 17, 17, 64, values, "shuffled", 83)]

    def _params(self, case, stride: int) -> dict:
        p = case.params
        b, r, count, n = p["batches"], p["rows"], p["count"], p["n"]
        return {"offset_src": p["offset"], "offset_idx": 0, "offset_dst": 0,
                "stride_src1": stride, "stride_src2": r * stride, "stride_src3": b * r * stride,
                "stride_idx0": 1, "stride_idx1": count, "stride_idx2": b * count,
                "stride_dst1": n, "stride_dst2": count * n, "stride_dst3": b * count * n,
                "ne0": n, "n_rows": count, "ne2": b, "ne3": 1, "idx1": b, "idx2": 1}

    def launch(self, device, wgsl, config, case):
        t, p = config["src_type"], case.params
        n, count, batches = p["n"], p["count"], p["batches"]
        if t in F16_FIELDS:
            if case["src"].shape[-1] != gq.block_bytes(t):
                raise UsageError(f"the case's blocks are not {t} blocks")
            flat, stride = _flat(case["src"], p["offset"], p["pad"], 1)
            src = np.zeros(-(-flat.size // 4) * 4, np.uint8)  # the tensor's bytes rounded up to 4, as
            src[:flat.size] = flat                            # ggml-webgpu sizes a binding (C L403-406)
        else:
            if config["vec4"] and (n % 4 or p["offset"] % 4 or p["pad"] % 4):
                raise UsageError("this case's view is not vec4-aligned; the vec4 program would not be chosen")
            # the tensor's bytes rounded up to 4 (f16: an even count); vec4 views are whole vec4s already
            src, stride = _flat(np.asarray(case["src"], NUMPY[t]), p["offset"], p["pad"], 2 if t == "f16" else 1)
        out_type = np.int32 if t == "i32" else np.float32
        pipeline = device.pipeline(wgsl)
        resources = bind(pipeline, {"src": src, "idx": np.ascontiguousarray(case["idx"], np.int32).reshape(-1),
                                    "dst": Output(out_type, (batches * count * n,))}, self._params(case, stride))
        grid = selection.get_rows_grid(adapter_of({"subgroup_min": 4, "subgroup_max": 128},
                                                  max_invocations=config["wg_size"]),
                                       t, config["vec4"], n, count * batches)
        run = device.run(pipeline, resources, grid + (1,))
        return Launched({"dst": run.outputs["dst"].reshape(batches, count, n)}, {"dst": run.guard_intact["dst"]},
                        run.timing)

    def expected(self, config, case):
        t = config["src_type"]
        if t in F16_FIELDS:
            exact = get_rows_blocks(t, case["src"], case["idx"])
            flushed = get_rows_blocks(t, flush_f16_fields(t, case["src"]), case["idx"])
            budget, mask = get_rows_budget(t, exact, flushed)
        else:
            exact = get_rows(case["src"], case["idx"])
            budget, mask = get_rows_budget(t, exact)
        return [Expected.around("dst", exact, budget, "i32" if t == "i32" else "f32", exact=mask)]

    def features(self, case):
        return {"n": case.params["n"], "indices": case.params["indices"], "values": case.params["values"]}


DST_TYPE = ConfigKey("dst_type", "f32", ("f32", "f16"), "the destination's type (DST_F32, DST_F16); the source is f32")
IDX_TYPE = ConfigKey("idx_type", "i32", ("i32", "i64"), "the index tensor's type: i64 (I64_IDX) reads two words per "
                     "index and flags a non-zero high word in the error word")
SET_VEC4 = ConfigKey("vec4", False, (False, True), "the vec4 path (VEC4): rows of a multiple of 4 (S L1391-1392)")


class SetRows(Kernel):
    """SET_ROWS: dst[b, idx[b, i]] = DST_TYPE(src[b, i]); every other row of dst untouched."""

    name = "llamacpp.ops.set_rows"
    family = "llamacpp.ops"
    source = "llamacpp"
    summary = ("llama.cpp ggml-webgpu's set_rows: f32 rows scattered into an f32 or f16 table at i32 or i64 "
               "indices (the KV cache's write), out-of-range i64 indices flagged")
    reference = "verify.references.ggml_rows.set_rows"
    checks = ("reference",)
    config_keys = (DST_TYPE, IDX_TYPE, SET_VEC4, WG_SIZE)
    output_axes = {"dst": ("batch", "row", "column"), "error": ("word",)}
    budget_function = staticmethod(set_rows_budget)

    def requirements(self, config):
        return frozenset({"shader-f16"})  # set_rows.wgsl starts with `enable f16;`

    def _adapter(self, config) -> selection.Adapter:
        return adapter_of({"subgroup_min": 4, "subgroup_max": 128}, max_invocations=config["wg_size"])

    def instance(self, config) -> selection.Instance:
        return selection.set_rows_instance(self._adapter(config), config["dst_type"], config["vec4"],
                                           config["idx_type"] == "i64")

    def wgsl(self, config):
        return header(self.name, config) + programs.load(self.instance(config))

    def gate_configs(self, profile):
        return [self.config({}), self.config({"dst_type": "f16", "vec4": True}),
                self.config({"idx_type": "i64", "vec4": True}), self.config({"dst_type": "f16", "idx_type": "i64",
                                                                             "wg_size": 64})]

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, ("wgsl-shaders/set_rows.wgsl",))])

    def cases(self, config, profile):
        return set_rows_cases(profile, config["dst_type"], config["vec4"], config["idx_type"] == "i64")

    def corners(self, config):
        """One row of one (four) values into a one-row table; a few rows of a table past a
        workgroup's lanes; every row of a table, shuffled, in two batches (i64: with indices whose
        high word is set)."""
        t, vec4, i64 = config["dst_type"], config["vec4"], config["idx_type"] == "i64"
        lanes = config["wg_size"]
        return [set_rows_case(t, vec4, i64, 1, 1, 1, 1, "normal", "in_range", 101),
                set_rows_case(t, vec4, i64, 1, 9, 3, lanes + 4, "subnormal", "in_range", 102),
                set_rows_case(t, vec4, i64, 2, 17, 17, 64, "spiky", "high_word", 103)]

    def launch(self, device, wgsl, config, case):
        p = case.params
        b, r, count, n = p["batches"], p["rows"], p["count"], p["n"]
        if config["vec4"] != selection.set_rows_vec4(config["dst_type"], n):
            raise UsageError(f"rows of {n} values take the {'vec4' if n % 4 == 0 else 'scalar'} program, not this one")
        idx = np.ascontiguousarray(case["idx"], np.int64 if config["idx_type"] == "i64" else np.int32).reshape(-1)
        arrays = {"src": np.ascontiguousarray(case["src"], np.float32).reshape(-1),
                  "idx": idx.view(np.uint32),  # i64: (low, high) words, little-endian, as the program reads them
                  "dst": InOut(np.ascontiguousarray(case["dst"], NUMPY[config["dst_type"]]).reshape(-1))}
        if config["idx_type"] == "i64":
            arrays["error"] = InOut(np.zeros(1, np.uint32))
        params = {"offset_src": 0, "offset_idx": 0, "offset_dst": 0,
                  "stride_src1": n, "stride_src2": count * n, "stride_src3": b * count * n,
                  "stride_idx0": 1, "stride_idx1": count, "stride_idx2": b * count,
                  "stride_dst1": n, "stride_dst2": r * n, "stride_dst3": b * r * n,
                  "ne0": n, "n_rows": count, "ne2": b, "ne3": 1, "idx1": b, "idx2": 1}
        pipeline = device.pipeline(wgsl)
        grid = selection.set_rows_grid(self._adapter(config), config["dst_type"], config["vec4"], False, n, b * count)
        run = device.run(pipeline, bind(pipeline, arrays, params), grid + (1,))
        outputs = {"dst": run.outputs["dst"].reshape(b, r, n)}
        guards = {"dst": run.guard_intact["dst"]}
        if "error" in arrays:
            outputs["error"], guards["error"] = run.outputs["error"].reshape(1), run.guard_intact["error"]
        return Launched(outputs, guards, run.timing)

    def expected(self, config, case):
        idx = np.asarray(case["idx"], np.int64)
        rows = case["dst"].shape[1]
        in_range = (idx >= 0) & (idx < 2**32)  # a non-zero high word: flagged, not written
        written = np.zeros(case["dst"].shape[:2], bool)
        after = np.asarray(case["dst"], np.float64)
        for batch in range(idx.shape[0]):
            keep = in_range[batch]
            after[batch] = set_rows(after[batch:batch + 1], np.asarray(case["src"], np.float64)[batch:batch + 1, keep],
                                    idx[batch:batch + 1, keep])[0]
            written[batch, idx[batch, keep]] = True
        if (idx[in_range] >= rows).any():
            raise UsageError("an index past the destination's rows (the program would write past the tensor)")
        budget, exact = set_rows_budget(config["dst_type"], after, written[..., None])
        out = [Expected.around("dst", after, budget, config["dst_type"], exact=exact)]
        if config["idx_type"] == "i64":
            flag = np.array([0.0 if in_range.all() else 1.0])
            out.append(Expected.around("error", flag, np.zeros(1), "u32", exact=np.ones(1, bool)))
        return out

    def features(self, case):
        return {"n": case.params["n"], "indices": case.params["indices"], "values": case.params["values"]}
