"""`ort.attention.decode_qkv`, `ort.attention.decode_reduce` and `ort.attention.flash`: ORT's
GroupQueryAttention programs, one at a time.

GroupQueryAttention's split-reduce pair (docs/ort-attention.md §2), launched by verify from the
WGSL onnxruntime-web generated (captured from an `ort.gqa` session, verify.sources.ort
.attention_kernels), with the uniforms, bindings and workgroup counts of
verify.sources.ort.attention.launch (tests/sources/ort/test_ort_attention.py holds those launches to
ORT's own bit for bit). Because verify launches them, `verify show` prints the program, `--wgsl`
checks an edit under the same contract, and `sanitize` instruments it.

The split/merge contract, one program each:

- FlashAttentionDecodeQKV writes, per (sequence, query head, new token, 64-key tile t), the
  tile's softmax state: metadata (m_t, l_t) = (max_j s_j, Σ_j exp(s_j - m_t)) over the tile's
  visible keys, natural base, and the tile's normalised partial output o_t = Σ_j exp(s_j - m_t)
  v_j / l_t. A tile with no visible key has (-FLT_MAX, 0) and o_t = 0; a tile at or past the
  sequence's total is not written (its output rows stay poison).
- FlashAttentionDecodeVxReduce merges them: the output is Σ_t o_t l_t exp(m_t - M) / L with
  M = max m_t, L = Σ l_t exp(m_t - M), which is references.softmax.merge_many_outputs of the
  states (o_t, lse_t = m_t + ln l_t); tests/sources/ort/test_ort_attention_kernels.py proves the tile
  states of the reference merge to references.group_query.attend of the whole.
"""

from __future__ import annotations

import re

import numpy as np
from hypothesis import strategies as st

from verify.budgets.expected import Expected
from verify.budgets.ort_attention import (
    output_budget,
    reduce_budget,
    score_errors,
    softcap_errors,
    tile_state_budget,
)
from verify.budgets.roundoff import numpy_dtype
from verify.cases import Case
from verify.checks.finding_cases import first_drawn
from verify.errors import FailureKind, UsageError
from verify.gpu import Output
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.profiles import get_profile
from verify.references.group_query import attend, softcapped, visible_keys
from verify.references.softmax import merge_many_outputs
from verify.results.record import KnownFinding
from verify.sources.ort.attention.cases import Q_SPREADS, gqa_cases, with_large_scores
from verify.sources.ort.attention.launch import KEY_TILE, SPLIT_REDUCE_BELOW, DecodeSplit, FlashPrefill
from verify.sources.ort.attention.sessions import (
    DTYPE,
    FLASH_LOOP_VAR,
    HEAD_SIZE,
    KV_NUM_HEADS,
    MAX_PAST,
    NUM_HEADS,
    SOFTCAP,
    SOFTCAP_IGNORED,
    OrtGqa,
    attention_upstream,
)
from verify.sources.ort.launch import GRIDS, DerivedConfig, bind, header, with_grids

QKV, REDUCE = "FlashAttentionDecodeQKV", "FlashAttentionDecodeVxReduce"
#: WGSL's -FLT_MAX, ORT's "no key" tile maximum.
NO_KEY_MAX = -3.4028234663852886e38
M_TILE = ConfigKey("m_tile", 1, (1, 2, 4), "new tokens per QKV workgroup, fixed in the WGSL: 1 for decode (one new "
                   "token), 2 for 2-3 new tokens, 4 for 4-31 (ORT's SelectDecodeMTile)")
#: New tokens a case draws for each m_tile.
TOKENS = {1: (1, 1), 2: (2, 3), 4: (4, 31)}

UNINITIALISED_PARTIALS = (
    "ORT's FlashAttentionDecodeQKV sums workgroup memory it never wrote: score columns past the head (inner_qk_values) "
    "and the tile output it adds onto (tile_output).\n"
    "Neither is zeroed by the program; it relies on WGSL's zero-initialisation of workgroup memory. sanitize reports "
    "the uninitialised reads; where an implementation does not zero workgroup memory (Mesa 22.3 lavapipe under wgpu) "
    "the decode output is wrong by more than 0.1, and zeroing both first makes it right. Evidence: "
    "tests/sources/ort/test_ort_attention.py::test_orts_decode_partials_rest_on_zero_initialised_workgroup_memory; "
    "docs/findings.md §18.6.")


class _QkvCapture(OrtGqa):
    """ort.gqa's capture of one small case whose new tokens select the wanted m_tile."""

    def __init__(self, m_tile: int):
        self.m_tile = m_tile

    name = "ort.attention.decode_qkv"

    def capture_key(self, config):
        return f"{config['phase']} m_tile={self.m_tile}"

    def capture_case(self, config):
        from hypothesis import find, settings

        return find(gqa_cases(config, new_tokens=st.just(TOKENS[self.m_tile][0])), lambda case: True,
                    settings=settings(database=None, max_examples=10))


def gqa_config(config: dict) -> dict:
    """The ort.gqa config whose session dispatches the pair for this config (with its softcap,
    where the program's config has one: ort.attention.decode_qkv's)."""
    phase = "decode" if config["m_tile"] == 1 else "prefill"
    return OrtGqa().config({k: config[k] for k in ("dtype", "head_size", "num_heads", "kv_num_heads", "max_past")}
                           | {"phase": phase, "softcap": config.get("softcap", 0.0)})


def wgsl_m_tile(wgsl: str) -> int | None:
    """The m_tile the QKV program was generated for (its `num_q_tiles` divisor)."""
    match = re.search(r"num_q_tiles = \(uniforms\.new_sequence_length \+ (\d+) - 1\) / (\d+);", wgsl)
    return int(match[2]) if match else None


class OrtDecodeProgram(DerivedConfig, Kernel):
    """What ORT's attention programs share: GQA's config keys, the checks, the capture and the launch sizes."""

    family = "attention"
    source = "ort"
    #: Every program of ORT's is held to its reference, run twice, sanitized and compiled by both
    #: WebGPU implementations (Naga accepts them; a refusal would be a reported divergence).
    checks: tuple[str, ...] = ("reference", "implementations")
    #: `sanitize` judges the instrumented program's access log, which no compiler changes; Tint's
    #: first compile of an instrumented program of ORT's on lavapipe can take longer than the check's
    #: time limit (the paged prefill's did not finish in 40 minutes), Naga's takes seconds. So where
    #: the run has wgpu, sanitize runs there; the other checks stay on Dawn.
    check_implementations = {"sanitize": "wgpu"}
    config_keys: tuple[ConfigKey, ...] = (DTYPE, HEAD_SIZE, NUM_HEADS, KV_NUM_HEADS, M_TILE, MAX_PAST)
    program = ""
    gate_shapes = {
        "quick": (dict(dtype="f32"),),
        "ci": (dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2),
               dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=1, m_tile=4)),
        "nightly": (dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2, max_past=4096),
                    dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=1, m_tile=4, max_past=1024),
                    dict(dtype="f16", head_size=96, num_heads=6, kv_num_heads=2, m_tile=2)),
    }

    def validate(self, config):
        if config["num_heads"] % config["kv_num_heads"]:
            raise UsageError(f"num_heads={config['num_heads']} must be a multiple of "
                             f"kv_num_heads={config['kv_num_heads']}")

    def requirements(self, config):
        return frozenset({"subgroup", "shader-f16"} if config["dtype"] == "f16" else {"subgroup"})

    def gate_configs(self, profile):
        """Each scale's configs (a profile of one's own at scale ci plans what ci does)."""
        scale = get_profile(profile).scale
        return [self.config(c) for c in self.gate_shapes.get(scale, self.gate_shapes["ci"])]

    def upstream(self, config, wgsl):
        return attention_upstream(wgsl, f"program `{self.program}` as a GroupQueryAttention session dispatches it")

    def wgsl(self, config):
        data = _QkvCapture(config["m_tile"]).captured(gqa_config(config))
        wgsl = data.program(self.program)
        if self.program == QKV and wgsl_m_tile(wgsl) != config["m_tile"]:
            raise UsageError(f"m_tile={config['m_tile']}: ORT generated its QKV program with m_tile "
                             f"{wgsl_m_tile(wgsl)} for this head size and type (workgroup memory)")
        return f"{header(self.name, config)}{data.line}\n{wgsl}"

    def cases(self, config, profile):
        """ort.gqa's cases with the new tokens of the config's m_tile, each dispatched on a drawn
        grid (verify.sources.ort.launch.GRIDS: flat, or packed as ORT packs grids past 65535
        workgroups, under a lowered limit)."""
        low, high = TOKENS[config["m_tile"]]
        gqa = gqa_config(config)
        return with_grids(st.integers(low, high).flatmap(lambda new: gqa_cases(gqa, new_tokens=st.just(new))))

    def corners(self, config):
        """The split decode programs' corners: their simplest case dispatched on each packed grid
        (a square and a cube under a lowered maxComputeWorkgroupsPerDimension, as ORT packs grids
        past 65535 workgroups), so a program that reads a raw workgroup_id.x is caught on every
        seed. Only the four split decode programs draw grids (GRIDS); others have no corners."""
        if not self.packs_grids:
            return []
        from hypothesis import find, settings

        case = find(self.cases(config, "quick"), lambda case: True, settings=settings(database=None, max_examples=10))
        return [case.replace(grid=grid) for grid in GRIDS if grid != "flat"]

    #: Whether the launch dispatches by the case's `grid` (the split decode pairs, paged and not).
    packs_grids = False

    def launch_paths(self, config, case):
        return (f"grid {case.params['grid']}",) if "grid" in case.params else ()

    def split(self, config, case) -> DecodeSplit:
        return DecodeSplit(case.params["batch"], config["num_heads"], config["kv_num_heads"], config["head_size"],
                           case.params["new"], int(case["total_sequence_length"]), case.params["capacity"],
                           element_size=np.dtype(numpy_dtype(config["dtype"])).itemsize, max_workgroup_storage=1 << 30)


def present_cache(case: Case, name: str, config: dict) -> np.ndarray:
    """past_key/past_value with each sequence's new rows written, as CopyKVCache leaves them."""
    cache = case[f"past_{name}"].copy()
    nkv, h = config["kv_num_heads"], config["head_size"]
    new = case.params["new"]
    for b, past in enumerate(case.params["past"]):
        cache[b, :, past:past + new] = case[name][b].reshape(new, nkv, h).transpose(1, 0, 2)
    return cache


def tile_states(case: Case, config: dict):
    """The reference tile states (o [B, N, S, P, H], m [B, N, S, P], l [B, N, S, P], and per tile
    whether it is written, whether it sees a key), and each tile's score logits for the budget.
    With a softcap t > 0 (ort.attention.decode_qkv's `softcap`) the scores are capped as
    GroupQueryAttention's attribute asks, references.group_query.softcapped: t·tanh(s/t)."""
    n, nkv, h = config["num_heads"], config["kv_num_heads"], config["head_size"]
    batch, new, capacity = case.params["batch"], case.params["new"], case.params["capacity"]
    tiles = -(-capacity // KEY_TILE)
    keys, values = present_cache(case, "key", config), present_cache(case, "value", config)
    o = np.zeros((batch, n, new, tiles, h))
    m = np.full((batch, n, new, tiles), NO_KEY_MAX)
    lsum = np.zeros((batch, n, new, tiles))
    written = np.zeros((batch, tiles), bool)
    per_tile: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # (b, tile, q, k, v, scores)
    scale = h ** -0.5
    for b, past in enumerate(case.params["past"]):
        total = past + new
        q = case["query"][b].reshape(new, n, h).astype(np.float64)
        visible = visible_keys(total, new)
        k = keys[b, :, :total].astype(np.float64)
        v = values[b, :, :total].astype(np.float64)
        scores = scale * (q.reshape(new, nkv, n // nkv, h) @ k.transpose(0, 2, 1)).reshape(new, n, total)
        scores = softcapped(scores, config.get("softcap", 0.0))
        sequence_tile_states(b, q, k, v, scores, visible, (o, m, lsum, written, per_tile))
    return o, m, lsum, written, per_tile


def sequence_tile_states(b: int, q, k, v, scores, visible, into) -> None:
    """Sequence b's 64-key tile states written into `into` = (o, m, l, written, per_tile): q [S, N,
    H], k and v [Nkv, total, H], its natural scores [S, N, total] and visible [S, total]. A tile's
    max and exp-sum are over its visible keys; a row that sees none of them keeps (-FLT_MAX, 0) and
    a zero output, as the QKV programs write it."""
    o, m, lsum, written, per_tile = into
    rows, n, h = q.shape
    nkv, total = k.shape[0], k.shape[1]
    for t in range(-(-total // KEY_TILE)):
        written[b, t] = True
        cols = slice(t * KEY_TILE, min((t + 1) * KEY_TILE, total))
        seen = visible[:, cols]  # [S, keys]
        s = np.where(seen[:, None, :], scores[:, :, cols], -np.inf)
        top = s.max(axis=-1, initial=-np.inf)  # [S, N]
        has = np.isfinite(top)
        w = np.where(seen[:, None, :], np.exp(s - np.where(has, top, 0.0)[..., None]), 0.0)
        total_w = w.sum(-1)
        part = (w.reshape(rows, nkv, n // nkv, -1) @ v[:, cols]).reshape(rows, n, h)
        o[b, :, :, t] = np.where(has[..., None], part / np.where(has, total_w, 1.0)[..., None], 0.0).transpose(1, 0, 2)
        m[b, :, :, t] = np.where(has, top, NO_KEY_MAX).T
        lsum[b, :, :, t] = total_w.T
        per_tile.append((b, t, q, k[:, cols], v[:, cols], s))


def partials_zero_init(check: str, evidence: str) -> KnownFinding | None:
    """§18.6 (ort-decode-partials-zero-init) as each check of a split decode's QKV program states
    it, the paged and the unpaged alike: `sanitize` names the uninitialised reads of the workgroup
    array wherever it runs; `implementations` compares two implementations, and the one that
    deviates may be the other, so it is not tied to this adapter; `reference` and `determinism`
    see wrong (and run-to-run different) tile states where workgroup memory is not zeroed, on wgpu.
    `evidence` is the program's own statement of the finding."""
    outputs = ("out_split_vx", "metadata")
    finding = "ort-decode-partials-zero-init"
    if check == "sanitize":
        return KnownFinding(evidence, kinds=(FailureKind.SANITIZER,),
                            reasons=("uninitialised read of workgroup array",),
                            finding_id=finding, on_this_adapter=False)
    if check == "implementations":
        return KnownFinding(evidence, outputs=outputs, finding_id=finding, on_this_adapter=False)
    if check in ("reference", "determinism", "large_scores"):
        return KnownFinding(evidence, outputs=outputs, implementations=("wgpu",), finding_id=finding)
    return None


class OrtDecodeQkv(OrtDecodeProgram):
    """ORT's FlashAttentionDecodeQKV: each 64-key tile's softmax state and normalised partial output."""

    name = "ort.attention.decode_qkv"
    summary = ("ONNX Runtime Web 1.30's FlashAttentionDecodeQKV (GroupQueryAttention, < 32 new tokens): per 64-key "
               "tile, the scores' max and exp-sum and the tile's normalised partial output")
    reference = "verify.references.group_query (per 64-key tile), merging to verify.references.group_query.attend"
    program = QKV
    packs_grids = True
    config_keys = OrtDecodeProgram.config_keys + (SOFTCAP,)
    #: and `toggles`: its sums start from WGSL's zeroed workgroup memory (docs/findings.md §18.6);
    #: and `large_scores`: q.k partial sums past f16's range (large_score_cases).
    checks = OrtDecodeProgram.checks + ("toggles", "large_scores")
    #: The shared configs, and in ci and nightly one with a softcap (§18.1, KNOWN under `reference`).
    gate_shapes = {**OrtDecodeProgram.gate_shapes,
                   **{name: OrtDecodeProgram.gate_shapes[name]
                      + (dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2, softcap=2.0),)
                      for name in ("ci", "nightly")}}
    output_axes = {"out_split_vx": ("tile", "channel"), "metadata": ("tile", "state")}
    budget_function = staticmethod(tile_state_budget)

    def budget_doc(self) -> str:
        import inspect

        return "\n\n".join(inspect.getdoc(f) or "" for f in (tile_state_budget, softcap_errors))

    def known_finding(self, check, config):
        """§18.6 as sanitize names it (the uninitialised reads), and as wrong tile states where
        workgroup memory is not zeroed: on wgpu (Mesa 22.3's lavapipe), under `implementations`,
        and under `reference` and `determinism` run there (two runs find different leftovers: the
        tile states differ bit for bit). With a softcap, §18.1 under `reference` everywhere: the
        program ORT generates for a softcapped session is the one without (no line applies the
        cap), so every tile's state is the uncapped one; it is stated first, so the record names
        it, and on wgpu §18.6 comes on top. `large_scores` compares with the same reference, so
        both show there as under `reference`."""
        if check in ("reference", "large_scores") and config.get("softcap"):
            return [KnownFinding(SOFTCAP_IGNORED, outputs=("out_split_vx", "metadata"),
                                 finding_id="ort-gqa-softcap-ignored"),
                    partials_zero_init(check, UNINITIALISED_PARTIALS)]
        return partials_zero_init(check, UNINITIALISED_PARTIALS)

    def finding_examples(self, check, config):
        """With a softcap, large_scores' simplest case of two sequences: §18.1 on every seed (the
        first sequence's one score is q.k = 0 exactly, which the cap leaves as it is; the second's
        are not, and its tile states come back uncapped)."""
        if check != "large_scores" or not config.get("softcap"):
            return []
        return [first_drawn(self, check, config, lambda case: case.params["batch"] >= 2)]

    def large_score_cases(self, config, profile):
        """The `large_scores` check's cases: the program's own cases with sequence 0's queries all
        c and its new key (the first new one, at m_tile > 1) +c on the first half of each KV head's
        channels and -c on the other, c the smallest whole number whose half-head partial sum of
        the alpha-scaled q (H/2 · c · alpha · c) passes 1.1 · 65504 (with_large_scores, as
        ort.attention.paged_prefill's): that key's score is 0 exactly, and a q.k summed in f16
        overflows on its way there. Judged by the same reference and budget (ORT sums q.k in f32)."""
        return self.cases(config, profile).map(lambda case: with_large_scores(case, config))

    def launch(self, device, wgsl, config, case):
        split = self.split(config, case)
        t = numpy_dtype(config["dtype"])
        pipeline = device.pipeline(wgsl)
        resources = bind(pipeline, {
            "q": case["query"], "present_key": present_cache(case, "key", config),
            "present_value": present_cache(case, "value", config), "seqlens_k": case["seqlens_k"],
            "out_split_vx": Output(t, split.out_split_shape), "metadata": Output(np.float32, split.metadata_shape)},
            split.qkv_uniforms())
        run = device.run(pipeline, resources, split.qkv_grid(case.params.get("grid", "flat")))
        return Launched(dict(run.outputs), dict(run.guard_intact), run.timing)

    def expected(self, config, case):
        """Per tile, the reference state (its scores capped where `softcap` > 0) under
        verify.budgets.ort_attention.tile_state_budget;
        tiles a sequence never reaches must stay poison (NaN, bit for bit), and a tile without a
        visible key must be exactly (-FLT_MAX, 0) with a zero output."""
        o, m, lsum, written, per_tile = tile_states(case, config)
        o_budget, m_budget, l_budget = tile_state_budget(per_tile, o.shape, config["dtype"],
                                                         scale=config["head_size"] ** -0.5,
                                                         softcap=config["softcap"])
        # Tiles up to the batch's longest total are dispatched: those at or past a sequence's own
        # total write (-FLT_MAX, 0) and no output; tiles past the batch's longest stay poison.
        dispatched = np.arange(o.shape[3]) < -(-int(case["total_sequence_length"]) // KEY_TILE)
        unwritten = np.broadcast_to(~written[:, None, None, :], m.shape)
        untouched = np.broadcast_to(~dispatched, m.shape)
        empty = (m == NO_KEY_MAX) & ~untouched  # no visible key, or past the sequence: (-FLT_MAX, 0)
        o_ref = np.where(unwritten[..., None], np.nan, o)
        o_exact = np.broadcast_to((unwritten | empty)[..., None], o.shape)
        metadata = np.stack([np.where(untouched, np.nan, m), np.where(untouched, np.nan, lsum)], axis=-1)
        meta_budget = np.stack([m_budget, l_budget], axis=-1)
        meta_exact = np.broadcast_to((empty | untouched)[..., None], metadata.shape)
        return [Expected.around("out_split_vx", o_ref, np.where(o_exact, 0.0, o_budget), config["dtype"],
                                exact=o_exact),
                Expected.around("metadata", metadata, np.where(meta_exact, 0.0, meta_budget), "f32", exact=meta_exact)]

    def features(self, case):
        return {"context": max(case.params["past"]) + case.params["new"], "new_tokens": case.params["new"]}


@st.composite
def reduce_cases(draw, config: dict) -> Case:
    """Tile states for the reduce: a batch of 1-3 sequences of unequal totals (so unequal tile
    counts), tiles' maxima spread flat to sharp, sums 1-64, normalised outputs of unit scale;
    tiles past a sequence's total poisoned (metadata and outputs NaN)."""
    t = numpy_dtype(config["dtype"])
    low, high = TOKENS[config["m_tile"]]
    new = draw(st.integers(low, high))
    batch = draw(st.integers(1, 3)) if new == 1 else 1
    totals = [draw(st.integers(new, config["max_past"] + new)) for _ in range(batch)]
    spare = draw(st.integers(0, 2))
    tiles = -(-max(totals) // KEY_TILE) + spare
    spread = draw(st.sampled_from(Q_SPREADS))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n, h = config["num_heads"], config["head_size"]
    shape = (batch, n, new, tiles)
    m = (rng.standard_normal(shape) * 4 * spread).astype(np.float32)
    lsum = rng.uniform(1.0, 64.0, shape).astype(np.float32)
    o = rng.standard_normal((*shape, h)).astype(t)
    for b, total in enumerate(totals):
        used = -(-total // KEY_TILE)
        m[b, :, :, used:], lsum[b, :, :, used:], o[b, :, :, used:] = np.nan, np.nan, np.nan
    return Case({"out_split_vx": o, "metadata": np.stack([m, lsum], axis=-1),
                 "seqlens_k": np.asarray(totals, np.int32) - 1},
                {"batch": batch, "new": new, "totals": totals, "tiles": tiles, "spread": spread, "seed": seed})


class OrtDecodeReduce(OrtDecodeProgram):
    """ORT's FlashAttentionDecodeVxReduce: the tiles' states merged into the attention output.
    It takes no softcap: it merges states whatever scores they came from (a softcap changes
    only the QKV's scores, ort.attention.decode_qkv's `softcap`)."""

    name = "ort.attention.decode_reduce"
    summary = ("ONNX Runtime Web 1.30's FlashAttentionDecodeVxReduce (GroupQueryAttention, < 32 new tokens): the "
               "64-key tiles' softmax states merged into the output")
    reference = "verify.references.softmax.merge_many_outputs (base e)"
    program = REDUCE
    packs_grids = True
    output_axes = {"output": ("token", "channel")}
    budget_function = staticmethod(reduce_budget)

    def cases(self, config, profile):
        """reduce_cases, each dispatched on a drawn grid (GRIDS, as the QKV's)."""
        return with_grids(reduce_cases(config))

    def launch(self, device, wgsl, config, case):
        batch, n, new, tiles, h = case["out_split_vx"].shape
        split = DecodeSplit(batch, n, config["kv_num_heads"], h, new, max(case.params["totals"]), tiles * KEY_TILE,
                            element_size=np.dtype(numpy_dtype(config["dtype"])).itemsize, max_workgroup_storage=1 << 30)
        t = numpy_dtype(config["dtype"])
        pipeline = device.pipeline(wgsl)
        resources = bind(pipeline, {"input": case["out_split_vx"], "metadata": case["metadata"],
                                    "seqlens_k": case["seqlens_k"], "output": Output(t, (batch, new, n * h))},
                         split.reduce_uniforms())
        run = device.run(pipeline, resources, split.reduce_grid(case.params.get("grid", "flat")))
        return Launched(dict(run.outputs), dict(run.guard_intact), run.timing)

    def expected(self, config, case):
        """merge_many_outputs of each sequence's tiles (lse_t = m_t + ln l_t, base e) under
        verify.budgets.ort_attention.reduce_budget."""
        return reduce_expected(config, case)

    def features(self, case):
        return {"context": max(case.params["totals"]), "tiles": case.params["tiles"]}


def reduce_expected(config: dict, case: Case, sink: np.ndarray | None = None) -> list[Expected]:
    """What a split decode's reduce program must write: per sequence, merge_many_outputs of its
    tiles' states (lse_t = m_t + ln l_t, base e) under verify.budgets.ort_attention.reduce_budget,
    the paged and the unpaged pair alike. A `sink` [N] (PagedAttention's head_sink) is one state
    more per row, (o = 0, m = sink, l = 1), as the paged program enters it."""
    o_all, meta = case["out_split_vx"], case["metadata"]
    batch, n, new, _, h = o_all.shape
    out, budget = np.zeros((batch, new, n, h)), np.zeros((batch, new, n, h))
    for b, total in enumerate(case.params["totals"]):
        used = -(-total // KEY_TILE)
        o = o_all[b, :, :, :used].astype(np.float64)
        m, lsum = meta[b, :, :, :used, 0].astype(np.float64), meta[b, :, :, :used, 1].astype(np.float64)
        if sink is not None:
            sinks = np.broadcast_to(sink.astype(np.float64)[:, None, None], (n, new, 1))
            o = np.concatenate([o, np.zeros((n, new, 1, h))], axis=2)
            m, lsum = np.concatenate([m, sinks], axis=2), np.concatenate([lsum, np.ones((n, new, 1))], axis=2)
        merged, _ = merge_many_outputs(o, m + np.log(lsum), axis=2, base="e")
        out[b] = merged.transpose(1, 0, 2)
        budget[b] = reduce_budget(o, m, lsum, config["dtype"]).transpose(1, 0, 2)
    return [Expected.around("output", out.reshape(batch, new, n * h), budget.reshape(batch, new, n * h),
                            config["dtype"])]


FLASH = "FlashAttention"
#: Most new tokens a flash case draws: past 64, a second query tile (workgroup) per head.
FLASH_MAX_TOKENS = 80

FLASH_SUBGROUP_4 = (
    "ORT's FlashAttention assumes subgroups of at least 8 lanes: with 4 its `sg_size <= 8` branch scores 8 keys a "
    "step from 4 loaded ones.\n"
    "At 4 lanes the key loop advances by 4 keys and loads 4 rows of K and V, but the branch scores keys "
    "k_start+4..7 through subgroupShuffle from lanes 4..7, which a 4-lane subgroup does not have, and weights "
    "V rows it never loaded; it shows on top of §18.2, and with the accumulators zeroed the error is still 1.1 "
    "for every query past key 3 (SwiftShader's 4-lane subgroups under ORT, and verify's 4-lane emulation). "
    "Evidence: tests/sources/ort/test_ort_attention.py::"
    "test_orts_prefill_is_right_on_4_lane_subgroups_once_its_accumulators_are_zeroed (strict xfail), "
    "::test_on_4_lane_subgroups_orts_prefill_is_right_when_it_scores_4_keys_a_step (the control); "
    "tests/sources/ort/test_ort_attention_kernels.py (the zeroed program at width 4); docs/findings.md §18.3.")

FLASH_READS_PAST_CACHE = (
    "ORT's FlashAttention reads present_key and present_value past their end where the cache buffer ends within "
    "the last key step.\n"
    "The key loop loads a step of min(subgroup size, 16) K and V rows with `select(q_value_t(0), "
    "present_key[offset + idx], k_start + slot < total_seq)`, and WGSL evaluates both operands of select: the last "
    "step loads every row up to the step's end, and for the last sequence's last KV head the rows past the total "
    "lie past the buffer wherever it ends within that step. It does wherever past and present are not one buffer "
    "(ORT allocates present [B, Nkv, max(past, total), H]) and the total is not a multiple of the step, or a static "
    "cache's capacity is not: with a total of 33 in a buffer of 33 rows (one cached token, 32 new), 448 "
    "out-of-bounds reads of each at 8 lanes (f16, H = 64, 8/2 heads). The select discards the rows, so the outputs "
    "are right; robust buffer access keeps the reads in the buffer, a runtime without it (Dawn's "
    "disable_robustness, which ORT enables natively) reads past the allocation. Evidence: "
    "tests/sources/ort/test_ort_attention_kernels.py::test_orts_flash_program_reads_only_the_cache_rows_it_has "
    "(strict xfail), ::test_orts_flash_program_loading_its_rows_under_an_if_passes_sanitize (the control); "
    "docs/findings.md §18.7.")


def flash_prefill_case(config: dict, new: int, past: int = 0, seed: int = 5, spread: float = 1.0) -> Case:
    """One sequence of `new` new tokens after `past` cached ones in a cache of exactly past + new
    rows (present as ORT allocates it with past and present not shared, no spare row), N(0, 1)
    keys and values, queries of `spread`, each rounded to a multiple of 1/4 (a reproduction
    folder's files compress): the case gqa_cases draws for the flash phase, fixed."""
    t = numpy_dtype(config["dtype"])
    rng = np.random.default_rng(seed)
    n, nkv, h = config["num_heads"], config["kv_num_heads"], config["head_size"]
    capacity = past + new
    past_key, past_value = ((np.round(rng.standard_normal((1, nkv, capacity, h)) * 4) / 4).astype(t) for _ in range(2))
    past_key[:, :, past:], past_value[:, :, past:] = np.nan, np.nan
    arrays = {"query": (np.round(rng.standard_normal((1, new, n * h)) * spread * 4) / 4).astype(t),
              "key": (np.round(rng.standard_normal((1, new, nkv * h)) * 4) / 4).astype(t),
              "value": (np.round(rng.standard_normal((1, new, nkv * h)) * 4) / 4).astype(t),
              "past_key": past_key, "past_value": past_value, "seqlens_k": np.asarray([past + new - 1], np.int32),
              "total_sequence_length": np.asarray(capacity, np.int32)}
    return Case(arrays, {"batch": 1, "new": new, "past": [past], "capacity": capacity, "q_spread": spread,
                         "seed": seed, "path": "flash"})


class OrtFlashPrefill(OrtDecodeProgram):
    """ORT's FlashAttention program: GroupQueryAttention's prefill of 32 new tokens or more."""

    name = "ort.attention.flash"
    summary = ("ONNX Runtime Web 1.30's FlashAttention (GroupQueryAttention, 32 or more new tokens): one lane per "
               "new token, an online softmax over key steps of min(subgroup size, 16)")
    reference = "verify.references.group_query.attend"
    config_keys = (DTYPE, HEAD_SIZE, NUM_HEADS, KV_NUM_HEADS, MAX_PAST)
    program = FLASH
    output_axes = {"output": ("token", "channel")}
    budget_function = staticmethod(output_budget)
    # Each program's first compile on lavapipe takes minutes (Mesa caches it), and every emulated
    # width is a program of its own: so quick leaves this program to ort.gqa's flash phase, which
    # runs it end to end; ci runs the nightly's f32 config (ort.gqa's ci flash config: its capture
    # ships) at one emulated width, 32 (gate_subgroup_widths); the nightly at every width.
    gate_shapes = {
        "quick": (),
        "ci": (dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2),),
        "nightly": (dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2),
                    dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2, max_past=1024)),
    }

    #: The emulated width runs on wgpu where the run has it: Tint's program for lavapipe (Mesa 25)
    #: took 662 s to compile cold at width 32 on the 2-core machine, Naga's for Mesa 22.3 seconds
    #: (docs/ort-attention.md §5); the 16-key branch it checks is the same program text under either.
    emulated_implementation = "wgpu"

    def gate_subgroup_widths(self, profile):
        """At the ci scale only 32 lanes: the first width past the program's 16-key step
        (max_k_step), where a subgroup loads min(width, 16) keys a step while its lanes past 16
        hold none, the branch a bug of wide subgroups lives in (a mutant that scores 8 of the 16
        keys a step there passes at 8 and 16 lanes and fails at 32: tests/fixtures/mutants). Each
        emulated width is a first compile of minutes on lavapipe through Dawn, so ci takes this
        one; the nightly takes every width (4 shows docs/findings.md §18.3)."""
        chosen = get_profile(profile)
        return (32,) if chosen.scale == "ci" and 32 in chosen.subgroup_widths else chosen.subgroup_widths

    def budget_doc(self) -> str:
        import inspect

        return "\n\n".join(inspect.getdoc(f) or "" for f in (score_errors, output_budget))

    def known_finding(self, check, config):
        """§18.2 wherever the output is compared with the reference (`reference`, at every
        subgroup width): Tint and Naga zero the loop body's score accumulators once, so every
        key step after the first carries the previous step's probabilities, and every case (32
        new tokens or more, so queries past the first 16-key step) shows it. At an emulated width
        of 4 lanes §18.3 comes on top (the `sg_size <= 8` branch scores keys it never loaded):
        that finding is stated for width 4 alone, and first, so the record names it there.
        §18.7 under `sanitize`: the last key step's select loads K and V rows past the cache
        buffer where it ends within the step (its `finding_examples` always, drawn cases where
        their spare rows end there); the signature is the out-of-bounds read of present_key."""
        if check == "reference":
            return [KnownFinding(FLASH_SUBGROUP_4, outputs=("output",), subgroup_widths=(4,),
                                 finding_id="ort-flash-subgroups-of-4"),
                    KnownFinding(FLASH_LOOP_VAR, outputs=("output",), finding_id="ort-flash-carried-scores")]
        if check == "sanitize":
            return [KnownFinding(FLASH_READS_PAST_CACHE, kinds=(FailureKind.SANITIZER,),
                                 reasons=(f"out-of-bounds read of storage buffer {buffer}:",),
                                 finding_id="ort-flash-reads-past-cache")
                    for buffer in ("present_key", "present_value")]
        return None

    def corners(self, config):
        """FlashAttention's corners: one cached token and 32 new ones in a cache of exactly 33 rows
        (the last key step past the buffer's end at every step width, and queries past the first
        16-key step, where every key step's weights and a wide subgroup's 16-key branch show), and
        65 new tokens over none (a second query workgroup per head, its first query at row 64)."""
        return [flash_prefill_case(config, 32, past=1), flash_prefill_case(config, 65, seed=6)]

    def finding_examples(self, check, config):
        """§18.7's documented case under `sanitize`: a total of 33 (one cached token, 32 new) in a
        cache of exactly 33 rows. 33 is one past a multiple of 16, so the last key step runs past
        the buffer at every step width (4, 8 or 16 lanes); drawn cases show it only where their
        spare rows end within the last step."""
        if check != "sanitize":
            return []
        return [flash_prefill_case(config, 32, past=1)]

    def wgsl(self, config):
        data = OrtGqa().captured(flash_gqa_config(config))
        return f"{header(self.name, config)}{data.line}\n{data.program(self.program)}"

    def cases(self, config, profile):
        """ort.gqa's flash cases (one sequence, a shared static cache with NaN-poisoned spare
        rows, flat to sharp queries), 32-80 new tokens: one or two query tiles per head."""
        return gqa_cases(flash_gqa_config(config), new_tokens=st.integers(SPLIT_REDUCE_BELOW, FLASH_MAX_TOKENS))

    def flash(self, config, case) -> FlashPrefill:
        return FlashPrefill(case.params["batch"], config["num_heads"], config["kv_num_heads"], config["head_size"],
                            case.params["new"], int(case["total_sequence_length"]), case.params["capacity"])

    def launch(self, device, wgsl, config, case):
        flash = self.flash(config, case)
        pipeline = device.pipeline(wgsl)
        resources = bind(pipeline, {
            "q": case["query"], "present_key": present_cache(case, "key", config),
            "present_value": present_cache(case, "value", config), "seqlens_k": case["seqlens_k"],
            "output": Output(numpy_dtype(config["dtype"]), flash.output_shape)}, flash.uniforms())
        run = device.run(pipeline, resources, flash.grid())
        return Launched(dict(run.outputs), dict(run.guard_intact), run.timing)

    def expected(self, config, case):
        """Per sequence, references.group_query.attend of each new token over keys 0..its
        position, under verify.budgets.ort_attention's `flash` path (score_errors, output_budget)."""
        n, h = config["num_heads"], config["head_size"]
        new, scale = case.params["new"], config["head_size"] ** -0.5
        keys, values = present_cache(case, "key", config), present_cache(case, "value", config)
        out, budget = np.zeros((case.params["batch"], new, n * h)), np.zeros((case.params["batch"], new, n * h))
        for b, past in enumerate(case.params["past"]):
            total = past + new
            q = case["query"][b].reshape(new, n, h)
            k, v = keys[b, :, :total].astype(np.float64), values[b, :, :total].astype(np.float64)
            o, logits2 = attend(q, k, v, visible_keys(total, new), scale=scale)
            delta = score_errors(q, k, scale=scale, dtype=config["dtype"], path="flash")
            out[b] = o.reshape(new, -1)
            budget[b] = output_budget(v, logits2, delta, dtype=config["dtype"], path="flash").reshape(new, -1)
        return [Expected.around("output", out, budget, config["dtype"])]

    def features(self, case):
        return {"context": max(case.params["past"]) + case.params["new"], "new_tokens": case.params["new"]}


def flash_gqa_config(config: dict) -> dict:
    """The ort.gqa config whose session dispatches FlashAttention for this config."""
    return OrtGqa().config({k: config[k] for k in ("dtype", "head_size", "num_heads", "kv_num_heads", "max_past")}
                           | {"phase": "flash"})
