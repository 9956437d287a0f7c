"""ggml-webgpu's SET_ROWS into block-quantized tables: `llamacpp.ops.set_rows_quant`.

set_rows_quant.wgsl (chosen for a q8_0 or q4_0 destination, S L1387-1450) quantizes f32 source
rows block by block into the destination's rows named by i32 or i64 indices: one invocation per
32-value block, or per pair of blocks where a row has an even number of them (PAIR_BLOCKS, S
L1394). Blocks of 34 (q8_0) or 18 (q4_0) bytes start at either half of a u32 word, so a block
shares words with its neighbours: the one-block program merges its partial words with
atomicCompareExchangeWeak loops, the pair program (two blocks: a whole number of words) with
plain read-modify-write. With i64 indices a non-zero high word sets the error word and writes
nothing, as set_rows.wgsl.

verify binds the destination as a view (an offset and padded rows, in blocks) holding random
blocks, the error word zeroed, and judges three things: every byte of the buffer no index names
(other rows, the padding, the bytes before and after, the neighbours sharing a word) comes back
bit for bit; each written block's scale and 32 codes lie in their legal intervals
(verify.budgets.llamacpp_rows_quant.set_rows_quant_legal: ggml's CPU quantizer in WGSL's f32,
either rounding at ties and neighbours); the error word is set exactly when an index's high word
is. ggml's CPU bytes (references.ggml_quants.quantize) are always legal (the tests check it).
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.llamacpp_rows_quant import quant_domain_error, set_rows_quant_legal
from verify.errors import UsageError
from verify.gpu import InOut
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.references import ggml_quants as gq
from verify.sources.llamacpp import programs, selection
from verify.sources.llamacpp.launch import Program, adapter_of, bind, header, upstream
from verify.sources.llamacpp.ops.rows import IDX_TYPE, WG_SIZE, _flat
from verify.sources.llamacpp.ops.rows_quant_cases import set_rows_quant_case, set_rows_quant_cases

QUANT_TYPE = ConfigKey("dst_type", "q8_0", ("q8_0", "q4_0"), "the destination's block type (DST_Q8_0, DST_Q4_0); "
                       "the source is f32")
PAIR = ConfigKey("pair_blocks", False, (False, True), "the pair path (PAIR_BLOCKS): rows of an even number of "
                 "blocks, two a invocation with plain stores (S L1394); else one a invocation, atomic merges")
CODE_DTYPE = {"q8_0": "i8", "q4_0": "u8"}


def table_view(blocks: np.ndarray, offset: int, pad: int) -> tuple[np.ndarray, int]:
    """The table's blocks [B, R, nb, bytes] laid as a view (rows.py's _flat, in blocks): its flat
    bytes rounded up to a word, as ggml-webgpu sizes a binding (C L403-406), and the row stride in
    blocks."""
    flat, stride = _flat(blocks, offset, pad, 1)
    data = np.zeros(-(-flat.size // 4) * 4, np.uint8)
    data[:flat.size] = flat
    return data, stride


def read_view(data: np.ndarray, shape, offset: int, stride: int) -> np.ndarray:
    """The table's blocks [B, R, nb, bytes] read back from the flat bytes of `table_view`."""
    batches, rows, nb, size = shape
    start = offset * size
    body = data[start:start + batches * rows * stride * size].reshape(batches, rows, stride, size)
    return body[:, :, :nb]


class SetRowsQuant(Kernel):
    """SET_ROWS into q8_0 or q4_0: dst[b, idx[b, i]] = quantize(src[b, i]); every other byte untouched."""

    name = "llamacpp.ops.set_rows_quant"
    family = "llamacpp.ops"
    source = "llamacpp"
    summary = ("llama.cpp ggml-webgpu's set_rows into q8_0 or q4_0 tables: f32 rows quantized block by block "
               "into the rows i32 or i64 indices name (the quantized KV cache's write), out-of-range i64 "
               "indices flagged")
    reference = "verify.references.ggml_quants.quantize"
    checks = ("reference",)
    config_keys = (QUANT_TYPE, IDX_TYPE, PAIR, WG_SIZE)
    output_axes = {"bytes": ("byte",), "d": ("batch", "row", "block"), "codes": ("batch", "row", "block", "value"),
                   "error": ("word",)}
    budget_function = staticmethod(set_rows_quant_legal)

    def _adapter(self, config) -> selection.Adapter:
        return adapter_of({"subgroup_min": 4, "subgroup_max": 128}, max_invocations=config["wg_size"])

    def instance(self, config) -> selection.Instance:
        return selection.set_rows_instance(self._adapter(config), config["dst_type"], False,
                                           config["idx_type"] == "i64", config["pair_blocks"])

    def wgsl(self, config):
        return header(self.name, config) + programs.load(self.instance(config))

    def gate_configs(self, profile):
        return [self.config({}), self.config({"dst_type": "q4_0", "pair_blocks": True}),
                self.config({"idx_type": "i64", "pair_blocks": True}),
                self.config({"dst_type": "q4_0", "idx_type": "i64", "wg_size": 64})]

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, ("wgsl-shaders/set_rows_quant.wgsl",))])

    def cases(self, config, profile):
        return set_rows_quant_cases(profile, config["dst_type"], config["idx_type"] == "i64", config["pair_blocks"])

    def corners(self, config):
        """One block (a pair) into a one-row table at the buffer's start; a few rows of rows of
        blocks past a workgroup's lanes, with ties; every row of a table, shuffled, in two
        batches, a third of the blocks zero (i64: with indices whose high word is set)."""
        t, i64, pair = config["dst_type"], config["idx_type"] == "i64", config["pair_blocks"]
        lanes = config["wg_size"]
        return [set_rows_quant_case(t, i64, pair, 1, 1, 1, 1, "normal", "in_range", 111, offset=0, pad=0),
                set_rows_quant_case(t, i64, pair, 1, 5, 3, lanes + 3, "ties", "in_range", 112),
                set_rows_quant_case(t, i64, pair, 2, 17, 17, 3, "zero_blocks", "high_word", 113)]

    def launch(self, device, wgsl, config, case):
        t, p = config["dst_type"], case.params
        b, r, count, nb = p["batches"], p["rows"], p["count"], p["blocks"]
        if config["pair_blocks"] != (nb % 2 == 0):
            raise UsageError(f"rows of {nb} blocks take the {'pair' if nb % 2 == 0 else 'one-block'} program, "
                             "not this one")
        if case["dst"].shape != (b, r, nb, gq.block_bytes(t)):
            raise UsageError(f"the case's table is not [{b}, {r}, {nb}] {t} blocks")
        data, stride = table_view(case["dst"], p["offset"], p["pad"])
        n = 32 * nb
        idx = np.ascontiguousarray(case["idx"], np.int64 if config["idx_type"] == "i64" else np.int32).reshape(-1)
        arrays = {"src": np.ascontiguousarray(case["src"], np.float32).reshape(-1),
                  "idx": idx.view(np.uint32),  # i64: (low, high) words, little-endian, as the program reads them
                  "dst": InOut(data)}
        if config["idx_type"] == "i64":
            arrays["error"] = InOut(np.zeros(1, np.uint32))
        params = {"offset_src": 0, "offset_idx": 0, "offset_dst": p["offset"],
                  "stride_src1": n, "stride_src2": count * n, "stride_src3": b * count * n,
                  "stride_idx0": 1, "stride_idx1": count, "stride_idx2": b * count,
                  "stride_dst1": stride, "stride_dst2": r * stride, "stride_dst3": b * r * stride,
                  "ne0": n, "n_rows": count, "ne2": b, "ne3": 1, "idx1": b, "idx2": 1}
        pipeline = device.pipeline(wgsl)
        grid = selection.set_rows_grid(self._adapter(config), t, False, config["pair_blocks"], n, b * count)
        run = device.run(pipeline, bind(pipeline, arrays, params), grid + (1,))
        after = np.asarray(run.outputs["dst"]).view(np.uint8).reshape(-1)
        table = read_view(after, case["dst"].shape, p["offset"], stride)
        guard = run.guard_intact["dst"]
        outputs = {"bytes": after.astype(np.float64), "d": gq.f16_field(table, 0),
                   "codes": gq.codes(t, table).astype(np.float64)}
        guards = {"bytes": guard, "d": guard, "codes": guard}
        if "error" in arrays:
            outputs["error"], guards["error"] = run.outputs["error"].reshape(1), run.guard_intact["error"]
        return Launched(outputs, guards, run.timing)

    def _written(self, case) -> np.ndarray:
        """[B, N] which source rows are written: an index whose high word is not zero is flagged, not written."""
        idx = np.asarray(case["idx"], np.int64)
        rows = case["dst"].shape[1]
        in_range = (idx >= 0) & (idx < 2**32)
        if (idx[in_range] >= rows).any():
            raise UsageError("an index past the destination's rows (the program would write past the tensor)")
        for batch in range(idx.shape[0]):
            named = idx[batch][in_range[batch]].tolist()
            if len(set(named)) != len(named):
                raise UsageError("an index repeated within a batch leaves the row to whichever write lands last")
        return in_range

    def expected(self, config, case):
        t, p = config["dst_type"], case.params
        src = np.asarray(case["src"], np.float32)
        why = quant_domain_error(t, src)
        if why:
            raise UsageError(f"outside set_rows_quant's contract: {why}")
        written = self._written(case)
        before = np.asarray(case["dst"], np.uint8)
        (d_lo, d_hi), (q_lo, q_hi) = set_rows_quant_legal(t, src)  # [B, N, nb], [B, N, nb, 32]
        d_before, q_before = gq.f16_field(before, 0), gq.codes(t, before).astype(np.float64)
        lo_d, hi_d, lo_q, hi_q = d_before.copy(), d_before.copy(), q_before.copy(), q_before.copy()
        changed = np.zeros(before.shape[:2], bool)
        for batch, i in zip(*np.nonzero(written)):
            row = int(case["idx"][batch, i])
            lo_d[batch, row], hi_d[batch, row] = d_lo[batch, i], d_hi[batch, i]
            lo_q[batch, row], hi_q[batch, row] = q_lo[batch, i], q_hi[batch, i]
            changed[batch, row] = True
        data, stride = table_view(before, p["offset"], p["pad"])
        free = np.zeros(data.shape, bool)  # bytes the program may change: those of the written blocks
        free_view = read_view(free, before.shape, p["offset"], stride)
        free_view[...] = changed[:, :, None, None]
        bytes_lo = np.where(free, 0.0, data)
        bytes_hi = np.where(free, 255.0, data)
        out = [Expected("bytes", bytes_lo, bytes_hi, np.zeros(data.shape), "u8", exact=~free),
               Expected("d", lo_d, hi_d, np.zeros(lo_d.shape), "f16", exact=~changed[..., None]),
               Expected("codes", lo_q, hi_q, np.zeros(lo_q.shape), CODE_DTYPE[t], exact=~changed[..., None, None])]
        if config["idx_type"] == "i64":
            flag = np.array([0.0 if written.all() else 1.0])
            out.append(Expected.around("error", flag, np.zeros(1), "u32", exact=np.ones(1, bool)))
        return out

    def features(self, case):
        p = case.params
        return {"blocks": p["blocks"], "values": p["values"], "indices": p["indices"], "offset": p["offset"]}
