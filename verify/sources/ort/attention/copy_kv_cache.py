"""`ort.attention.copy_kv_cache`: ORT's CopyKVCache, as GroupQueryAttention dispatches it when
past and present are not one buffer.

An application that binds past_key/past_value to present_key/present_value (ORT's static cache,
what `ort.gqa` does) makes CopyKVCache write only the new rows in place. Without that binding
GroupQueryAttention copies the whole cache into a present of max(past buffer, total) rows first
(flash_attention.cc, CopyKVCache with has_past and past_present_share_buffer false): one lane per
(sequence, KV head, row below the batch's largest total T, vec4 of the head), copying past row r
where r < past_b and new token r - past_b of `key`/`value` otherwise, past_b = seqlens_k[b] + 1 - S
per sequence. verify launches that program from the WGSL ORT generated (captured from a
GroupQueryAttention session with past and present apart) with the uniforms and workgroup count of
`CopyLaunch` (tests/sources/ort/test_ort_attention_kernels.py holds them to ORT's own dispatch, field
for field), so `sanitize` instruments it.

The contract, per sequence b of total_b = past_b + S: present rows 0..past_b-1 are its past rows,
past_b..total_b-1 its new keys and values, bit for bit. Rows from total_b up to T are written
(ORT's program fills every row below T) but hold nothing the contract can name: the attention
programs read a sequence's keys below its own total only (seqlens_k), so those rows are never
attended; the check asks only that they be written (not NaN). Rows at or past T (a past buffer
longer than the total) are not dispatched and stay as they were (poison, bit for bit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.budgets.expected import Expected
from verify.budgets.roundoff import numpy_dtype
from verify.cases import Case
from verify.errors import FailureKind, UsageError
from verify.gpu import Output
from verify.kernels.contract import ConfigKey, Launched
from verify.results.record import KnownFinding
from verify.sources.ort.attention.cases import _past_lengths, gqa_cases
from verify.sources.ort.attention.launch import KEY_TILE, SPLIT_REDUCE_BELOW, DecodeSplit
from verify.sources.ort.attention.programs import OrtDecodeProgram
from verify.sources.ort.attention.sessions import DTYPE, HEAD_SIZE, KV_NUM_HEADS, MAX_PAST, NUM_HEADS, OrtGqa
from verify.sources.ort.launch import bind, header, ort_grid

COPY = "CopyKVCache"
#: Lanes of a CopyKVCache workgroup (SetWorkgroupSize(64)); one lane per vec4 of the copy.
COPY_WORKGROUP = 64
PHASE = ConfigKey("phase", "decode", ("decode", "prefill"),
                  "new tokens per sequence: decode 1 (a batch of 1-3 unequal lengths), prefill 2-31 (one sequence: "
                  "ORT takes a batch > 1 with a past only for one new token)")

COPY_READS_PAST_END = (
    "CopyKVCache (past and present not shared) reads key and value past their end for a sequence shorter than "
    "the batch's longest.\n"
    "GroupQueryAttention without a shared cache copies every present row below the batch's largest total T; for "
    "a sequence of total_b < T the rows total_b..T-1 copy new token row - past_b >= S of `key`/`value`, which the "
    "last sequence does not have: with totals 8 and 3 and one new token, 160 out-of-bounds reads of key and of "
    "value (rows 3..7 of sequence 1). The rows are never attended (the attention reads keys below each "
    "sequence's own total), so the outputs are right; robust buffer access keeps the reads in the buffer, a "
    "runtime without it (Dawn's disable_robustness, which ORT enables natively) reads past the allocation. "
    "Evidence: tests/sources/ort/test_ort_attention.py::test_copy_kv_cache_reads_only_the_new_tokens_it_was_given "
    "(strict xfail), tests/sources/ort/test_ort_attention_kernels.py (the program guarded to rows below the total "
    "passes sanitize); docs/findings.md §18.5.")


@dataclass(frozen=True)
class CopyLaunch:
    """One CopyKVCache launch as GroupQueryAttention passes it with past and present apart: a batch
    of B sequences of S new tokens each, a past buffer of P rows, the batch's largest total T
    (input total_sequence_length); present has max(P, T) rows. The head is copied in vec4s."""

    batch: int
    num_heads: int
    kv_num_heads: int
    head_size: int
    new_sequence_length: int
    total_sequence_length: int
    past_buffer_length: int

    def __post_init__(self):
        if self.head_size % 4:
            raise UsageError(f"head_size={self.head_size}: ORT copies the cache in vec4s, a multiple of 4")
        if self.past_buffer_length < 1:
            raise UsageError("CopyKVCache with a past needs a past buffer of at least one row")

    @property
    def present_sequence_length(self) -> int:
        return max(self.past_buffer_length, self.total_sequence_length)

    @property
    def present_shape(self) -> tuple[int, ...]:
        return (self.batch, self.kv_num_heads, self.present_sequence_length, self.head_size)

    @property
    def copy_size(self) -> int:
        """Lanes that copy: B · Nkv · T · H/4 (copy_kv_shape, the present rows below T)."""
        return self.batch * self.kv_num_heads * self.total_sequence_length * self.head_size // 4

    def uniforms(self) -> dict:
        """CopyKVCache's uniforms: the shapes and strides of key (reshaped to [B, S, Nkv, H/4]),
        past_key, present_key and the copy (in vec4s), then copy_size, T, S and the fields ORT's
        host code adds for its indirect dispatch (tile_size, num_heads, batch_size, num_q_tiles:
        declared, unread without it)."""
        h4 = self.head_size // 4

        def shape_and_stride(name, dims):
            strides = [int(np.prod(dims[i + 1:])) for i in range(3)]
            return {f"{name}_shape": list(dims), f"{name}_stride": strides}

        split = DecodeSplit(self.batch, self.num_heads, self.kv_num_heads, self.head_size, self.new_sequence_length,
                            self.total_sequence_length, self.present_sequence_length, max_workgroup_storage=1 << 30)
        return {**shape_and_stride("key", (self.batch, self.new_sequence_length, self.kv_num_heads, h4)),
                **shape_and_stride("past_key", (self.batch, self.kv_num_heads, self.past_buffer_length, h4)),
                **shape_and_stride("present_key", (self.batch, self.kv_num_heads, self.present_sequence_length, h4)),
                **shape_and_stride("copy_kv_shape", (self.batch, self.kv_num_heads, self.total_sequence_length, h4)),
                "copy_size": self.copy_size, "total_sequence_length": self.total_sequence_length,
                "kv_sequence_length": self.new_sequence_length, "tile_size": KEY_TILE, "num_heads": self.num_heads,
                "batch_size": self.batch, "num_q_tiles": split.token_blocks,
                # onnxruntime-web 1.31.1 (PR #32623) clamps each sequence's total to the present's capacity
                "present_sequence_length": self.present_sequence_length}

    def grid(self) -> tuple[int, int, int]:
        return ort_grid(-(-self.copy_size // COPY_WORKGROUP))


#: The first onnxruntime-web whose CopyKVCache copies each sequence's rows below its own total only.
GUARDED_SINCE = (1, 31, 1)


def copies_below_each_total() -> bool:
    """Whether the selected onnxruntime-web's CopyKVCache returns past each sequence's own total
    (`if (sequence_id >= total_seq_length) { return; }`, ORT PR #32623: docs/findings.md §18.5)."""
    from verify.sources.ort.runtime import selected_version

    return tuple(int(p) for p in selected_version().split(".")[:3] if p.isdigit()) >= GUARDED_SINCE

class _CopyCapture(OrtGqa):
    """ort.gqa's capture of one small decode case with past and present apart."""

    name = "ort.attention.copy_kv_cache"

    def capture_key(self, config):
        return "decode, past and present apart"

    def capture_aliases(self, model):
        return None

    def capture_case(self, config):
        from hypothesis import find, settings

        return find(gqa_cases(config, new_tokens=st.just(1)), lambda case: True,
                    settings=settings(database=None, max_examples=10))


def copy_case(config: dict, past: list[int], new: int, spare: int = 0, seed: int = 0) -> Case:
    """Sequence b with past[b] cached rows and `new` new tokens: a past buffer of max(past) + spare
    rows (at least one) whose rows at or past each sequence's own past are NaN, N(0, 1) keys and
    values, seqlens_k and total_sequence_length as GroupQueryAttention takes them."""
    t = numpy_dtype(config["dtype"])
    rng = np.random.default_rng(seed)
    nkv, h = config["kv_num_heads"], config["head_size"]
    batch, rows = len(past), max(max(past) + spare, 1)
    past_key, past_value = (rng.standard_normal((batch, nkv, rows, h)).astype(t) for _ in range(2))
    for b, length in enumerate(past):
        past_key[b, :, length:], past_value[b, :, length:] = np.nan, np.nan
    arrays = {"key": rng.standard_normal((batch, new, nkv * h)).astype(t),
              "value": rng.standard_normal((batch, new, nkv * h)).astype(t),
              "past_key": past_key, "past_value": past_value,
              "seqlens_k": np.asarray(past, np.int32) + new - 1,
              "total_sequence_length": np.asarray(max(past) + new, np.int32)}
    return Case(arrays, {"batch": batch, "new": new, "past": list(past), "past_rows": rows, "seed": seed})


@st.composite
def copy_cases(draw, config: dict) -> Case:
    """A batch of 1-3 sequences of unequal cached lengths with one new token (decode), or one
    sequence of 2-31 (prefill); the past buffer 0-2 rows longer than the longest past."""
    new = 1 if config["phase"] == "decode" else draw(st.integers(2, SPLIT_REDUCE_BELOW - 1))
    batch = draw(st.integers(1, 3)) if new == 1 else 1
    past = [draw(_past_lengths(config["max_past"])) for _ in range(batch)]
    return copy_case(config, past, new, spare=draw(st.integers(0, 2)), seed=draw(st.integers(0, 2**32 - 1)))


class OrtCopyKvCache(OrtDecodeProgram):
    """ORT's CopyKVCache with past and present apart: the past rows and the new tokens into present."""

    name = "ort.attention.copy_kv_cache"
    summary = ("ONNX Runtime Web 1.30's CopyKVCache (GroupQueryAttention, past and present not shared): each "
               "sequence's past rows and new keys/values copied into present_key/present_value")
    reference = "each sequence's past rows, then its new tokens (GroupQueryAttention's concatenation), exact"
    program = COPY
    config_keys = (DTYPE, HEAD_SIZE, NUM_HEADS, KV_NUM_HEADS, PHASE, MAX_PAST)
    output_axes = {"present_key": ("row", "channel"), "present_value": ("row", "channel")}
    budget_function = None
    gate_shapes = {
        "quick": (dict(dtype="f32"),),
        "ci": (dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2),
               dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=1, phase="prefill")),
        "nightly": (dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2, max_past=4096),
                    dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=1, phase="prefill", max_past=1024)),
    }

    def budget_doc(self) -> str:
        return ("None: a copy. Every row of the contract must match the reference bit for bit; rows from a "
                "sequence's own total up to the batch's largest are only required to be written (any value but "
                "NaN), rows past that to stay poison, bit for bit.")

    def known_finding(self, check, config):
        """§18.5 under `sanitize`: the out-of-bounds reads of `key` (and `value`) by the rows past a
        shorter last sequence's total. Only a batch of sequences of unequal totals makes them, so a
        decode config's drawn cases show it where the last sequence is shorter than the longest,
        and its `finding_examples` always."""
        if check == "sanitize" and config["phase"] == "decode":
            return [KnownFinding(COPY_READS_PAST_END, kinds=(FailureKind.SANITIZER,),
                                 reasons=(f"out-of-bounds read of storage buffer {buffer}:",),
                                 finding_id="ort-copy-kv-cache-reads-past-end") for buffer in ("key", "value")]
        return None

    def finding_examples(self, check, config):
        """§18.5's documented case: totals 8 and 3 (past 7 and 2), one new token."""
        if check != "sanitize" or config["phase"] != "decode":
            return []
        return [copy_case(config, [7, 2], 1, seed=5)]

    def wgsl(self, config):
        data = _CopyCapture().captured(OrtGqa().config(
            {k: config[k] for k in ("dtype", "head_size", "num_heads", "kv_num_heads", "max_past")}
            | {"phase": "decode"}))
        provenance = f"{data.line} (past_key/past_value not bound to present_key/present_value)"
        return f"{header(self.name, config)}{provenance}\n{data.program(self.program)}"

    def cases(self, config, profile):
        return copy_cases(config)

    def copy(self, config, case) -> CopyLaunch:
        return CopyLaunch(case.params["batch"], config["num_heads"], config["kv_num_heads"], config["head_size"],
                          case.params["new"], int(case["total_sequence_length"]), case.params["past_rows"])

    def launch(self, device, wgsl, config, case):
        copy = self.copy(config, case)
        t = numpy_dtype(config["dtype"])
        pipeline = device.pipeline(wgsl)
        resources = bind(pipeline, {
            "key": case["key"], "value": case["value"], "seqlen_k": case["seqlens_k"], "past_key": case["past_key"],
            "past_value": case["past_value"], "present_key": Output(t, copy.present_shape),
            "present_value": Output(t, copy.present_shape)}, copy.uniforms())
        run = device.run(pipeline, resources, copy.grid())
        return Launched(dict(run.outputs), dict(run.guard_intact), run.timing)

    def expected(self, config, case):
        """Per sequence, its past rows then its new tokens, bit for bit; rows from its total up to
        the batch's largest T any value but NaN (lo -inf, hi +inf, budget 0: written, never
        attended) by onnxruntime-web 1.30.0, left as they were (poison, bit for bit) by 1.31.1,
        whose program returns past each sequence's own total (ORT PR #32623); rows at or past T
        poison, bit for bit."""
        guarded = copies_below_each_total()
        copy = self.copy(config, case)
        nkv, h, new = config["kv_num_heads"], config["head_size"], case.params["new"]
        total = copy.total_sequence_length
        out = []
        for name in ("key", "value"):
            present = np.full(copy.present_shape, np.nan)
            exact = np.ones(copy.present_shape, bool)
            for b, past in enumerate(case.params["past"]):
                present[b, :, :past] = case[f"past_{name}"][b, :, :past]
                present[b, :, past:past + new] = case[name][b].reshape(new, nkv, h).transpose(1, 0, 2)
                exact[b, :, past + new:total] = guarded
            lo = np.where(exact, present, -np.inf)
            hi = np.where(exact, present, np.inf)
            out.append(Expected(f"present_{name}", lo, hi, np.zeros(copy.present_shape), config["dtype"], exact=exact))
        return out

    def features(self, case):
        return {"context": max(case.params["past"]) + case.params["new"], "new_tokens": case.params["new"]}
