"""`ort.attention.paged_decode_qkv` and `ort.attention.paged_decode_reduce`: ORT's PagedAttention
split decode pair, one program at a time.

PagedAttention with fewer than 32 new tokens per sequence and no local window
(docs/ort-attention.md §2) dispatches FlashAttentionPagedDecodeQKV and
FlashAttentionPagedDecodeVxReduce: GroupQueryAttention's split-reduce pair
(verify.sources.ort.attention.programs) with the keys and values read through the block table.
verify launches them from the WGSL onnxruntime-web generated (captured from an
`ort.paged_attention` session) with the uniforms, bindings and workgroup counts of
`PagedDecodeSplit`, which follows ORT's host code (paged_attention.cc, flash_attention.cc):

- the query is [B, S_max, N, H], S_max the batch's most new tokens: the packed [tokens, N·H]
  query viewed so when every sequence has S_max new tokens, else ORT's PagedAttentionUnpackQuery
  copy with each sequence's tokens first and zero rows after them (PagedAttentionRepackOutput
  drops those rows' outputs afterwards);
- present_key/present_value are the whole block caches [blocks, block_size, Nkv, H] after
  ScatterKVToPagedCache wrote the new tokens' rows; row j of sequence b lives in block
  block_table[b, j / block_size], slot j % block_size;
- seqlens_k[b] = past_b + new_b - 1 and seqlens_q[b] = new_b (ORT computes both on the host);
  total_sequence_length and present_sequence_length are both the batch's longest total, so
  the tile count P = ceil(max total / 64) is the dispatched one and the intermediates' extent.

tests/sources/ort/test_ort_paged_programs.py holds these launches to ORT's own recorded dispatches,
field for field and output bit for bit.

The split/merge contract, one program each:

- FlashAttentionPagedDecodeQKV writes, per (sequence, query head, new token i < S_max, 64-key
  tile t below the sequence's own total), the tile's softmax state over the keys token i sees
  (c < min(total_b, past_b + i + 1)): (m_t, l_t) = (max_j s_j, Σ_j exp(s_j - m_t)), natural
  base, and the normalised partial output o_t = Σ_j exp(s_j - m_t) v_j / l_t. A tile where the
  token sees no key has (-FLT_MAX, 0) and o_t = 0; a tile at or past the sequence's total gets
  metadata (-FLT_MAX, 0) and no output (its rows stay poison). A padding token (i >= new_b: a
  zero query row) sees every key of its sequence; its states are held like any other.
- FlashAttentionPagedDecodeVxReduce merges them, with the head's sink logit when the model has
  one: the output is references.softmax.merge_many_outputs of the states (o_t, m_t + ln l_t)
  and the sink as a state of output 0 and log-sum-exp sink. tests/sources/ort/test_ort_paged_programs.py
  proves the reference tile states merge to references.group_query.attend of the whole.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.budgets.expected import Expected
from verify.budgets.ort_attention import reduce_budget, tile_state_budget
from verify.cases import Case
from verify.errors import UsageError
from verify.gpu import Output
from verify.kernels.contract import ConfigKey, Launched
from verify.profiles import get_profile
from verify.references.group_query import visible_keys
from verify.sources.ort.attention.cases import paged_cases, with_large_scores
from verify.sources.ort.attention.launch import KEY_TILE, DecodeSplit, decode_workgroup_storage
from verify.sources.ort.attention.programs import (
    M_TILE,
    NO_KEY_MAX,
    TOKENS,
    OrtDecodeProgram,
    partials_zero_init,
    reduce_cases,
    reduce_expected,
    sequence_tile_states,
    wgsl_m_tile,
)
from verify.sources.ort.attention.sessions import (
    BLOCK_SIZE,
    HEAD_SINK,
    HEAD_SIZE,
    KV_NUM_HEADS,
    MAX_PAST,
    NUM_HEADS,
    PAGED_DTYPE,
    OrtPagedAttention,
    attention_upstream,
)
from verify.sources.ort.launch import bind, header, with_grids

PAGED_QKV, PAGED_REDUCE = "FlashAttentionPagedDecodeQKV", "FlashAttentionPagedDecodeVxReduce"
#: Most new tokens a sequence draws under the quick profile (OrtPagedDecodeProgram.cases).
QUICK_TOKENS = 8
#: Workgroup memory the paged QKV program declares beyond the unpaged one: tile_row_base, one u32
#: cache offset per key of the tile (DecodeWorkgroupStorageBytes with a paged cache).
ROW_BASE_BYTES = KEY_TILE * 4

UNINITIALISED_PAGED_PARTIALS = (
    "ORT's FlashAttentionPagedDecodeQKV sums workgroup memory it never wrote: score columns past the head "
    "(inner_qk_values) and the tile output it adds onto (tile_output).\n"
    "The paged program keeps the unpaged one's accumulation (docs/findings.md §18.6): neither array is zeroed, it "
    "relies on WGSL's zero-initialisation of workgroup memory. sanitize reports the uninitialised reads; where an "
    "implementation does not zero workgroup memory (Mesa 22.3 lavapipe under wgpu) the tile states are wrong, and "
    "zeroing both first makes them right. Evidence: tests/sources/ort/test_ort_paged_programs.py::"
    "test_where_workgroup_memory_is_not_zeroed_the_paged_qkv_is_right_once_it_zeroes_its_sums (strict xfail), "
    "::test_the_paged_qkv_edited_to_zero_its_workgroup_memory_passes_on_wgpu (the control); docs/findings.md §18.6.")


@dataclass(frozen=True)
class PagedDecodeSplit(DecodeSplit):
    """One launch of the paged split-reduce pair, as PagedAttention passes it to
    ApplyFlashAttention (paged_attention.cc; ComputeFlashAttentionPagedDecodeQKV and
    ComputeFlashAttentionPagedDecodeVxReduce in flash_attention.cc).

    new_sequence_length is the batch's most new tokens (S_max); total_sequence_length and
    present_sequence_length are both the batch's longest total (ORT's max_kv_len: a paged cache
    has no present length of its own). block_size and max_num_blocks_per_seq are the cache's
    block size and the block table's width, which is also its row stride.
    """

    block_size: int = 16
    max_num_blocks_per_seq: int = 1

    def __post_init__(self):
        super().__post_init__()
        if self.present_sequence_length != self.total_sequence_length:
            raise UsageError("a paged cache's present length is the batch's longest total")
        if self.max_num_blocks_per_seq * self.block_size < self.total_sequence_length:
            raise UsageError(f"{self.max_num_blocks_per_seq} blocks of {self.block_size} cannot hold "
                             f"{self.total_sequence_length} keys")

    @property
    def m_tile(self) -> int:
        """SelectDecodeMTile with the paged program's workgroup memory (tile_row_base on top)."""
        tile = 4 if self.new_sequence_length >= 4 else 2 if self.new_sequence_length >= 2 else 1
        while tile > 1 and (decode_workgroup_storage(tile, self.head_size_vec, self.element_size) + ROW_BASE_BYTES
                            > self.max_workgroup_storage):
            tile //= 2
        return tile

    @property
    def query_shape(self) -> tuple[int, ...]:
        """q: [B, S_max, N·H] in the model's type (BSNH)."""
        return (self.batch, self.new_sequence_length, self.num_heads * self.head_size)

    def qkv_uniforms(self) -> dict:
        """FlashAttentionPagedDecodeQKV's uniforms: the unpaged program's, then block_size,
        max_num_blocks_per_seq and kv_num_heads; block_table's shape and stride come first (the
        input is declared with UseUniform)."""
        return {"block_table_shape": (self.batch, self.max_num_blocks_per_seq),
                "block_table_stride": self.max_num_blocks_per_seq, **super().qkv_uniforms(),
                "block_size": self.block_size, "max_num_blocks_per_seq": self.max_num_blocks_per_seq,
                "kv_num_heads": self.kv_num_heads}


# -- what a case holds as the programs read it --------------------------------------------------------
def padded_query(case: Case, config: dict) -> np.ndarray:
    """q [B, S_max, N·H]: each sequence's new tokens first, zero rows after them (PagedAttentionUnpackQuery;
    the packed query itself when every sequence has S_max tokens)."""
    news, cu = case.params["new"], case["cumulative_sequence_length"]
    q = np.zeros((len(news), max(news), case["query"].shape[-1]), case["query"].dtype)
    for b, new in enumerate(news):
        q[b, :new] = case["query"][int(cu[b]):int(cu[b]) + new]
    return q


def paged_present(case: Case, name: str, config: dict) -> np.ndarray:
    """key_cache/value_cache with each sequence's new rows written into its blocks, as
    ScatterKVToPagedCache leaves them (no rotary: the programs read what is stored)."""
    bs, nkv, h = config["block_size"], config["kv_num_heads"], config["head_size"]
    cache = case[f"{name}_cache"].copy()
    flat = cache.reshape(-1, nkv, h)
    cu, table = case["cumulative_sequence_length"], case["block_table"]
    for b, past in enumerate(case.params["past"]):
        new = case.params["new"][b]
        rows = np.arange(past, past + new)
        flat[table[b, rows // bs] * bs + rows % bs] = case[name][int(cu[b]):int(cu[b]) + new].reshape(new, nkv, h)
    return cache


def sequence_rows(cache: np.ndarray, table_row: np.ndarray, total: int, block_size: int) -> np.ndarray:
    """A sequence's keys (or values) [Nkv, total, H] in float64, gathered through its block table row."""
    rows = np.arange(total)
    nkv, h = cache.shape[2:]
    flat = cache.reshape(-1, nkv, h)
    return flat[table_row[rows // block_size] * block_size + rows % block_size].transpose(1, 0, 2).astype(np.float64)


def paged_visible(past: int, new: int, padded: int) -> np.ndarray:
    """[S_max, total] keys each query row sees: token i < new the causal prefix
    (visible_keys), a padding row i >= new every key of the sequence (the program's mask
    c > past + i never fires there)."""
    total = past + new
    visible = np.ones((padded, total), bool)
    visible[:new] = visible_keys(total, new)
    return visible


def paged_tile_states(case: Case, config: dict):
    """The reference tile states (o [B, N, S_max, P, H], m and l [B, N, S_max, P], per (sequence,
    tile) whether QKV writes it) and each written tile's (b, t, q, k, v, s) for the budget."""
    n, nkv, h, bs = config["num_heads"], config["kv_num_heads"], config["head_size"], config["block_size"]
    news, pasts = case.params["new"], case.params["past"]
    batch, padded = len(news), max(news)
    tiles = -(-max(p + s for p, s in zip(pasts, news)) // KEY_TILE)
    query = padded_query(case, config)
    keys, values = paged_present(case, "key", config), paged_present(case, "value", config)
    o = np.zeros((batch, n, padded, tiles, h))
    m = np.full((batch, n, padded, tiles), NO_KEY_MAX)
    lsum = np.zeros((batch, n, padded, tiles))
    written = np.zeros((batch, tiles), bool)
    per_tile: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # (b, tile, q, k, v, scores)
    scale = h ** -0.5
    for b, (past, new) in enumerate(zip(pasts, news)):
        total = past + new
        q = query[b].reshape(padded, n, h).astype(np.float64)
        k = sequence_rows(keys, case["block_table"][b], total, bs)
        v = sequence_rows(values, case["block_table"][b], total, bs)
        visible = paged_visible(past, new, padded)
        scores = scale * (q.reshape(padded, nkv, n // nkv, h) @ k.transpose(0, 2, 1)).reshape(padded, n, total)
        sequence_tile_states(b, q, k, v, scores, visible, (o, m, lsum, written, per_tile))
    return o, m, lsum, written, per_tile


# -- the kernels -------------------------------------------------------------------------------------
class _PagedCapture(OrtPagedAttention):
    """ort.paged_attention's capture of one small case whose new tokens select the wanted m_tile."""

    name = "ort.attention.paged_decode_qkv"

    def __init__(self, m_tile: int):
        self.m_tile = m_tile

    def capture_key(self, config):
        return f"{config['phase']} m_tile={self.m_tile}"

    def capture_case(self, config):
        from hypothesis import find, settings

        return find(paged_cases(config, new_tokens=st.just(TOKENS[self.m_tile][0])), lambda case: True,
                    settings=settings(database=None, max_examples=10))


class OrtPagedDecodeProgram(OrtDecodeProgram):
    """What the paged pair shares: PagedAttention's config keys (f16 only, its type constraint),
    its capture, cases and launch sizes; the checks are the unpaged pair's."""

    config_keys: tuple[ConfigKey, ...] = (PAGED_DTYPE, HEAD_SIZE, NUM_HEADS, KV_NUM_HEADS, M_TILE, BLOCK_SIZE, MAX_PAST)
    gate_shapes = {
        "quick": (dict(head_size=64, num_heads=4, kv_num_heads=1),),
        "ci": (dict(head_size=128, num_heads=8, kv_num_heads=2),
               dict(head_size=64, num_heads=4, kv_num_heads=1, m_tile=4, block_size=32)),
        "nightly": (dict(head_size=128, num_heads=8, kv_num_heads=2, max_past=8192),
                    dict(head_size=64, num_heads=4, kv_num_heads=1, m_tile=4, block_size=32, max_past=4096),
                    dict(head_size=96, num_heads=6, kv_num_heads=2, m_tile=2, max_past=1024)),
    }

    def upstream(self, config, wgsl):
        return attention_upstream(wgsl, f"program `{self.program}` as a PagedAttention session dispatches it")

    def wgsl(self, config):
        data = _PagedCapture(config["m_tile"]).captured(paged_config(config))
        wgsl = data.program(self.program)
        if wgsl_m_tile(wgsl) != config["m_tile"]:
            raise UsageError(f"m_tile={config['m_tile']}: ORT generated its paged programs with m_tile "
                             f"{wgsl_m_tile(wgsl)} for this head size")
        return f"{header(self.name, config)}{data.line}\n{wgsl}"

    def cases(self, config, profile):
        """ort.paged_attention's cases (1-3 sequences of unequal cached and new lengths in a
        shuffled block pool, spare blocks and slots NaN, past lengths at the 64-key tile edges),
        with each sequence's new tokens drawn so that the batch's most select the config's m_tile.
        The quick profile's cases, which `sanitize` draws (it logs every access: a 3-sequence case
        of 13 new tokens over 139 keys is 2.5 million), stop at QUICK_TOKENS new tokens a sequence,
        two token blocks at m_tile 4 (the second partial at 5-7); every other profile draws up to 31."""
        low, high = TOKENS[config["m_tile"]]
        if get_profile(profile).scale == "quick":
            high = min(high, QUICK_TOKENS)
        new_tokens = st.just(1) if high == 1 else st.integers(1, high)
        return with_grids(paged_cases(paged_config(config), new_tokens=new_tokens)
                          .filter(lambda c: max(c.params["new"]) >= low))

    def split(self, config, case) -> PagedDecodeSplit:
        news, pasts = case.params["new"], case.params["past"]
        longest = max(p + s for p, s in zip(pasts, news))
        return PagedDecodeSplit(len(news), config["num_heads"], config["kv_num_heads"], config["head_size"], max(news),
                                longest, longest, element_size=2, max_workgroup_storage=1 << 30,
                                block_size=config["block_size"],
                                max_num_blocks_per_seq=int(case["block_table"].shape[1]))


def paged_config(config: dict) -> dict:
    """The ort.paged_attention config whose session dispatches the pair for this config."""
    phase = "decode" if config["m_tile"] == 1 else "prefill"
    keys = ("dtype", "head_size", "num_heads", "kv_num_heads", "block_size", "max_past", "head_sink")
    return OrtPagedAttention().config({k: config[k] for k in keys if k in config} | {"phase": phase})


def sequence_lengths(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """(seqlens_k, seqlens_q) as PagedAttention computes them: past + new - 1, and new."""
    news, pasts = np.asarray(case.params["new"], np.int32), np.asarray(case.params["past"], np.int32)
    return pasts + news - 1, news


class OrtPagedDecodeQkv(OrtPagedDecodeProgram):
    """ORT's FlashAttentionPagedDecodeQKV: each 64-key tile's softmax state and normalised partial
    output, the keys and values read through the block table."""

    name = "ort.attention.paged_decode_qkv"
    summary = ("ONNX Runtime Web 1.30's FlashAttentionPagedDecodeQKV (PagedAttention, < 32 new tokens): per 64-key "
               "tile of the block-table-addressed cache, the scores' max and exp-sum and the tile's normalised "
               "partial output")
    reference = "verify.references.group_query (per 64-key tile), merging to verify.references.group_query.attend"
    program = PAGED_QKV
    packs_grids = True
    output_axes = {"out_split_vx": ("tile", "channel"), "metadata": ("tile", "state")}
    #: and `toggles`: its sums start from WGSL's zeroed workgroup memory (docs/findings.md §18.6);
    #: and `large_scores`, as the unpaged QKV's (OrtDecodeQkv.large_score_cases).
    checks = OrtPagedDecodeProgram.checks + ("toggles", "large_scores")
    budget_function = staticmethod(tile_state_budget)

    def known_finding(self, check, config):
        """§18.6 in the paged program, as the unpaged QKV states it: under `sanitize` (the
        uninitialised reads), `implementations`, and `reference` and `determinism` run on wgpu
        (neither Mesa 22.3's lavapipe nor an NVIDIA H200 through wgpu zeroes workgroup memory,
        docs/findings.md §8; on the H200 two runs find different leftovers, so the tile states
        differ bit for bit)."""
        return partials_zero_init(check, UNINITIALISED_PAGED_PARTIALS)

    def large_score_cases(self, config, profile):
        """The program's own cases with sequence 0's queries all c and its first new key +c / -c
        on each half of every KV head's channels (with_large_scores; OrtDecodeQkv.large_score_cases)."""
        return self.cases(config, profile).map(lambda case: with_large_scores(case, config))

    def launch(self, device, wgsl, config, case):
        split = self.split(config, case)
        seqlens_k, seqlens_q = sequence_lengths(case)
        pipeline = device.pipeline(wgsl)
        resources = bind(pipeline, {
            "q": padded_query(case, config), "present_key": paged_present(case, "key", config),
            "present_value": paged_present(case, "value", config), "block_table": case["block_table"],
            "seqlens_k": seqlens_k, "seqlens_q": seqlens_q,
            "out_split_vx": Output(np.float16, split.out_split_shape),
            "metadata": Output(np.float32, split.metadata_shape)}, split.qkv_uniforms())
        run = device.run(pipeline, resources, split.qkv_grid(case.params.get("grid", "flat")))
        return Launched(dict(run.outputs), dict(run.guard_intact), run.timing)

    def expected(self, config, case):
        """Per written tile, the reference state under verify.budgets.ort_attention.tile_state_budget
        (the paged program rounds as the unpaged one: q·alpha in f16, q.k and the softmax in f32,
        the probabilities rounded to f16, P.V summed in f16; only the addresses differ). A tile
        at or past its sequence's total must be exactly (-FLT_MAX, 0) with its output rows
        still poison (NaN, bit for bit); a tile without a visible key exactly (-FLT_MAX, 0) with
        a zero output."""
        o, m, lsum, written, per_tile = paged_tile_states(case, config)
        o_budget, m_budget, l_budget = tile_state_budget(per_tile, o.shape, config["dtype"],
                                                         scale=config["head_size"] ** -0.5)
        unwritten = np.broadcast_to(~written[:, None, None, :], m.shape)
        empty = m == NO_KEY_MAX  # no visible key, or past the sequence: (-FLT_MAX, 0)
        o_ref = np.where(unwritten[..., None], np.nan, o)
        o_exact = np.broadcast_to((unwritten | empty)[..., None], o.shape)
        metadata = np.stack([m, lsum], axis=-1)
        meta_budget = np.stack([m_budget, l_budget], axis=-1)
        meta_exact = np.broadcast_to(empty[..., None], metadata.shape)
        return [Expected.around("out_split_vx", o_ref, np.where(o_exact, 0.0, o_budget), config["dtype"],
                                exact=o_exact),
                Expected.around("metadata", metadata, np.where(meta_exact, 0.0, meta_budget), "f32", exact=meta_exact)]

    def features(self, case):
        return {"context": max(p + s for p, s in zip(case.params["past"], case.params["new"])),
                "new_tokens": max(case.params["new"])}


@st.composite
def paged_reduce_cases(draw, config: dict) -> Case:
    """verify.sources.ort.attention.programs.reduce_cases (1-3 sequences of unequal totals,
    tiles' maxima flat to sharp, sums 1-64, tiles past a sequence NaN) cut to the tiles the paged
    pair dispatches, ceil(longest total / 64) (a paged cache has no spare tiles), with a sink
    logit per head drawn N(0, 2²) as ort.paged_attention draws it, when the config has one."""
    case = draw(reduce_cases(config))
    tiles = -(-max(case.params["totals"]) // KEY_TILE)
    arrays = {"out_split_vx": case["out_split_vx"][:, :, :, :tiles], "metadata": case["metadata"][:, :, :, :tiles]}
    if config["head_sink"]:
        seed = draw(st.integers(0, 2**32 - 1))
        arrays["head_sink"] = (np.random.default_rng(seed).standard_normal(config["num_heads"]) * 2).astype(np.float16)
    return case.replace(arrays, tiles=tiles)


class OrtPagedDecodeReduce(OrtPagedDecodeProgram):
    """ORT's FlashAttentionPagedDecodeVxReduce: the tiles' states (and the head's sink) merged
    into the attention output."""

    name = "ort.attention.paged_decode_reduce"
    summary = ("ONNX Runtime Web 1.30's FlashAttentionPagedDecodeVxReduce (PagedAttention, < 32 new tokens): the "
               "64-key tiles' softmax states, and the head's sink logit if any, merged into the output")
    reference = "verify.references.softmax.merge_many_outputs (base e; the sink a state of output 0)"
    program = PAGED_REDUCE
    packs_grids = True
    config_keys = OrtPagedDecodeProgram.config_keys + (HEAD_SINK,)
    output_axes = {"output": ("token", "channel")}
    budget_function = staticmethod(reduce_budget)
    gate_shapes = {
        "quick": (dict(head_size=64, num_heads=4, kv_num_heads=1),),
        "ci": (dict(head_size=128, num_heads=8, kv_num_heads=2, head_sink=1),
               dict(head_size=64, num_heads=4, kv_num_heads=1, m_tile=4, block_size=32)),
        "nightly": (dict(head_size=128, num_heads=8, kv_num_heads=2, head_sink=1, max_past=8192),
                    dict(head_size=64, num_heads=4, kv_num_heads=1, m_tile=4, block_size=32, max_past=4096),
                    dict(head_size=96, num_heads=6, kv_num_heads=2, m_tile=2, head_sink=1, max_past=1024)),
    }

    def cases(self, config, profile):
        """paged_reduce_cases, each dispatched on a drawn grid (GRIDS, as the QKV's)."""
        return with_grids(paged_reduce_cases(config))

    def launch(self, device, wgsl, config, case):
        batch, n, new, tiles, h = case["out_split_vx"].shape
        longest = max(case.params["totals"])
        split = PagedDecodeSplit(batch, n, config["kv_num_heads"], h, new, longest, longest, element_size=2,
                                 max_workgroup_storage=1 << 30, block_size=config["block_size"],
                                 max_num_blocks_per_seq=-(-longest // config["block_size"]))
        arrays = {"input": case["out_split_vx"], "metadata": case["metadata"], "seqlens_k": case["seqlens_k"],
                  "output": Output(np.float16, (batch, new, n * h))}
        if config["head_sink"]:
            arrays["head_sink"] = case["head_sink"]
        pipeline = device.pipeline(wgsl)
        run = device.run(pipeline, bind(pipeline, arrays, split.reduce_uniforms()),
                         split.reduce_grid(case.params.get("grid", "flat")))
        return Launched(dict(run.outputs), dict(run.guard_intact), run.timing)

    def expected(self, config, case):
        """merge_many_outputs of each sequence's tiles (lse_t = m_t + ln l_t, base e) and, with a
        sink, one more state (o = 0, m = sink, l = 1), under verify.budgets.ort_attention.reduce_budget
        of those states. The sink enters the program as that state does: max(M, sink) and
        exp(sink - M) added to L, no term in the output sum; so reduce_budget over T + 1 states
        bounds it (its gamma_{T+1} and two flushed subnormals more are an over-estimate by one
        term, and the zero output row contributes nothing to the spread)."""
        return reduce_expected(config, case, case["head_sink"] if config["head_sink"] else None)

    def features(self, case):
        return {"context": max(case.params["totals"]), "tiles": case.params["tiles"]}
