"""Contracts of the kernels Apache TVM 0.27 generates for WebGPU: paged decode (plain and
sliding window) and the in-place merge of attention states.

They reuse ours (decode_common.DecodeKernel, merge_state.MergeState): the same cases, float64
references, budgets and checks. What differs is the WGSL (tvm_build: TVM's own factories, built
for webgpu) and how it is bound and launched, which follows TVM's web runtime
(docs/tvm.md §7, `web/src/webgpu.ts`):

- a buffer parameter P is bound as `P_ptr`, in the order `split_host_device.cc` sorts the
  parameters; the order and names are read from the WGSL, not assumed;
- scalars travel in one uniform struct, PODArgs: shape variables (B; N, H, D), every
  `*_elem_offset` (0 here: one buffer per array), the kernel's scalar arguments, packGridDimX;
- the grid is the host code's (x, y) with blockIdx.z reserved: an x of 65536 or more is halved
  (rounding up) while z doubles, and packGridDimX carries the original x.

TVM's -inf is -5e4: its running max starts there and tile padding gets that logit, so an empty
context stores output 0 and lse = -5e4 + log2(k) for the k initial states (m = -5e4, d = 1) its
workgroup summed (docs/tvm.md §3), and a merge gives such a state weight 2^(-5e4 - M) = 0.
The contracts state and check that convention instead of ours. It also bounds TVM's domain:
a context whose every base-2 logit lies below -5e4 comes back as an empty state, although its
attention is defined (softmax is shift-invariant). The regular checks draw cases inside that
domain; `below_floor` draws cases outside it, and `infinite_empty` feeds TVM's merge the -inf
states our kernels write. Both fail on TVM 0.27, as does the merge's `reference` check by a
race: real findings, stated with their evidence by `known_finding` (BELOW_FLOOR, MERGE_RACE,
INFINITE_EMPTY), so the gate runs every check and reports them as verdict "known".
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from verify.budgets.expected import Expected
from verify.budgets.roundoff import gamma, ulp, unit_roundoff
from verify.checks.finding_cases import first_drawn
from verify.errors import FailureKind, UsageError
from verify.gpu import InOut, Output
from verify.gpu.uniforms import pack_struct
from verify.kernels.attention.cases import explicit_decode_case, merge_cases, merge_corners
from verify.kernels.attention.common import (
    DTYPE,
    HEAD_DIM,
    KV_HEADS,
    MAX_HEADS,
    PAGE_SIZE,
    QO_HEADS,
    STORAGE,
)
from verify.kernels.attention.decode_common import DecodeKernel
from verify.kernels.attention.fastpath import key_ranges, leading_rows
from verify.kernels.attention.merge_state import MergeState
from verify.kernels.attention.rope_variant import (
    LLAMA_3_1,
    LLAMA_3_2,
    SCALING_KEYS,
    RopeVariant,
)
from verify.kernels.contract import ConfigKey, Launched, Upstream
from verify.kernels.specialize import config_line
from verify.profiles import get_profile
from verify.references.decode import LOG2E
from verify.references.paged_kv import attended_length
from verify.results.record import KnownFinding
from verify.sources.tvm.build import decode_build, load, merge_build, provenance
from verify.sources.tvm.layout import ArgumentLayout, layouts

#: TVM's webgpu target: max_num_threads (Target("webgpu").attrs).
MAX_THREADS = 256
#: Elements one lane loads: VEC_SIZE = min(max(8 // 2, D // 32), 4) = 4 for every head dim,
#: the factories hard-coding a 2-byte element (_decode_kernels.py L182, L488).
VEC_SIZE = 4
#: The initial running max of TVM's online softmax (`st_m[0] = -5e4`, _decode_kernels.py L292).
EMPTY_MAX = -5e4
#: An empty state's lse, EMPTY_MAX + log2(k) for a count k < 2^32 of initial states (summed in
#: one workgroup or merged later), rounded to f32: one ulp below EMPTY_MAX to 32 above.
EMPTY_LSE_BAND = (EMPTY_MAX - float(ulp(np.float64(EMPTY_MAX), "f32")), EMPTY_MAX + 32.0)
#: TVM's domain: with a largest base-2 logit m above EMPTY_MAX + 150, every -5e4 stand-in weighs
#: 2^(EMPTY_MAX - m) < 2^-150, below f32's smallest subnormal: exactly 0, as -inf would.
FLOOR_MARGIN = 150.0


# -- TVM's schedules and web runtime -------------------------------------------------------------
def decode_schedule(head_dim: int, group: int) -> tuple[int, int, int, int]:
    """(bdx, bdy, bdz, gdz) of `_attention_decode` for webgpu (_decode_kernels.py L181-207):
    bdx lanes of VEC_SIZE dims; bdy heads of the GQA group, halved while bdx*bdy > 256;
    gdz = group // bdy head slices across the grid; bdz = 256 // (bdx*bdy) KV-row slices."""
    bdx = head_dim // VEC_SIZE
    bdy = group
    while bdx * bdy > MAX_THREADS and bdy > 1:
        bdy //= 2
    return bdx, bdy, max(MAX_THREADS, bdx * bdy) // (bdx * bdy), group // bdy


def merge_schedule(heads: int, head_dim: int) -> tuple[int, int, int]:
    """(bdx, bdy, gdy) of `_merge_state_inplace` (L476-487): bdy heads, halved while
    bdx*bdy > 256, and gdy = heads // bdy head groups across the grid."""
    bdx = head_dim // VEC_SIZE
    bdy = heads
    while bdx * bdy > MAX_THREADS and bdy > 1:
        bdy //= 2
    return bdx, bdy, heads // bdy


#: x at or above which TVM's web runtime packs the grid (webgpu.ts L771).
PACK_LIMIT = 1 << 16


def web_runtime_grid(x: int, y: int, limit: int = PACK_LIMIT) -> tuple[tuple[int, int, int], int]:
    """Workgroups TVM's web runtime dispatches for a host grid (x, y), and its packGridDimX
    (webgpu.ts L767-789): WebGPU caps a dimension at 65535, so x is halved (rounding up) while
    z doubles; the kernel rebuilds blockIdx.z * gridDim.x + blockIdx.x and compares it with
    packGridDimX. `limit` (>= 2) is the runtime's 65536, lowered by cases that want small
    grids to take the packed path."""
    if limit < 2:
        raise ValueError(f"grid limit {limit}: halving never brings x below 2")
    pack_x, z = x, 1
    while x >= limit:
        x = (x + 1) // 2
        z *= 2
    return (x, y, z), pack_x


def bind(interface, inputs: dict, outputs: dict, pod: dict, offsets: dict | None = None) -> dict:
    """Resources by WGSL binding name: TVM binds parameter P as `P_ptr` and its scalars as the
    uniform PODArgs. `inputs` and `outputs` are keyed by TVM's parameter names; `offsets` are the
    PODArgs element offsets of inputs bound as views (verify.sources.tvm.layout)."""
    resources = {}
    for binding in interface.bindings:
        if binding.address_space == "uniform":
            resources[binding.name] = pod_args(interface.struct_of(binding), pod, offsets)
            continue
        param = binding.name.removesuffix("_ptr")
        source = outputs if param in outputs else inputs
        if param not in source:
            raise UsageError(f"binding {binding.name!r} is not a parameter of the TVM kernel "
                             f"({', '.join(sorted({**inputs, **outputs}))})")
        resources[binding.name] = source[param]
    return resources


def pod_args(struct, pod: dict, offsets: dict | None = None) -> bytes:
    """PODArgs as the web runtime packs it: every field 4 bytes in order; element offsets from
    `offsets` (by field name), else 0."""
    if struct is None:
        raise UsageError("the WGSL's uniform is not a struct it declares (TVM's is `struct PODArgs`)")
    values = {}
    for name, _ in struct.members:
        if name.endswith("_elem_offset"):
            values[name] = (offsets or {}).get(name, 0)
        elif name in pod:
            values[name] = pod[name]
        else:
            raise UsageError(f"PODArgs field {name!r} is none the TVM launch supplies "
                             f"({', '.join(pod)}, *_elem_offset)")
    return pack_struct(struct, values)


def _by_param(results: dict, names: dict) -> dict:
    """Read-back results keyed by binding name, renamed to the contract's output names."""
    return {names[binding.removesuffix("_ptr")]: value for binding, value in results.items()}


def _header(kernel: str, config: dict) -> str:
    return f"// verify kernel: {kernel}\n{config_line(config)}\n"


#: TVM's web runtime: how it binds (`P_ptr`, PODArgs) and packs the grid (packGridDimX).
WEB_RUNTIME = "web/src/webgpu.ts"


def tvm_upstream(wgsl: str) -> Upstream | None:
    """The factory call that made `wgsl` (its first line, verify.sources.tvm.build), in apache/tvm."""
    found = provenance(wgsl)
    if found is None:
        return None
    version, call, path = found
    return Upstream("Apache TVM (apache/tvm; PyPI apache-tvm)", version,
                    f"`{call}` in `{path}`, lowered with `tvm.build(..., target=\"webgpu\")` and launched as "
                    f"TVM's web runtime launches it (`{WEB_RUNTIME}`)", (path, WEB_RUNTIME))


# -- decode ----------------------------------------------------------------------------------------
#: Our case arrays under TVM's parameter names (`batch_decode_paged_kv`'s signature).
DECODE_INPUTS = {"Q": "q", "pages": "pages", "page_table_indptr": "page_indptr", "page_table_values": "page_values",
                 "length_info": "length_info", "k_rope_pos_offset": "k_rope_pos_offset",
                 "q_rope_position": "q_rope_position"}


#: Known finding of both decode kernels under `below_floor` (Kernel.known_finding).
BELOW_FLOOR = (
    "TVM's -inf is -5e4: a context whose every base-2 logit lies below it comes back as an empty state.\n"
    "The online softmax's running max starts at -5e4 (_decode_kernels.py L292) and tile padding gets that logit, "
    "so with every logit below it the max stays there, every weight 2^(s - m) underflows to 0, and the kernel "
    "stores lse = -5e4 + log2 k (k stand-in states) and output 0, where the reference is a weighted mean of V "
    "(softmax is shift-invariant). Observed on TVM 0.27: lse -49998 where the reference is -62298.9 +- 0.985 "
    "(err/budget 1.25e4). Evidence: tests/sources/tvm/test_tvm.py::test_tvm_decode_attends_logits_below_its_floor "
    "(strict xfail); docs/findings.md §4.")


#: Known finding of both decode kernels under `packed_grid` (Kernel.known_finding).
PACKED_GRID = (
    "TVM's packed grid runs one workgroup too many: the kernel returns early only where its flat index is "
    "> packGridDimX, not >=.\n"
    "When the web runtime packs a grid (x at or past its limit is halved, rounding up, while z doubles; "
    "webgpu.ts L771-789), an odd x leaves one workgroup whose flat index equals packGridDimX, and it runs "
    "(codegen_webgpu.cc L330-332): the decode reads page_indptr[B + 1] and writes sequence B's output and lse, "
    "one past the end. The check lowers the runtime's packing threshold (65536) so that batches of 2 or 3 take "
    "the packed path; a batch of 3 shows it. Evidence: tests/sources/tvm/test_tvm.py::"
    "test_packed_grid_runs_no_workgroup_past_x (strict xfail, at the real threshold with 65537 rows); "
    "docs/findings.md §6.")


class TvmDecode(DecodeKernel):
    """TVM's `batch_decode_paged_kv` under our decode contract, except for empty contexts."""

    name = "tvm.decode"
    source = "tvm"
    summary = "Apache TVM 0.27's generated paged decode (_attention_decode, tvm.build for webgpu)"
    config_keys: tuple[ConfigKey, ...] = (
        HEAD_DIM, QO_HEADS, KV_HEADS, DTYPE, PAGE_SIZE,
        ConfigKey("sliding_window", 0, (0,), "TVM's sliding-window decode is tvm.decode_sliding_window"),
        *SCALING_KEYS)
    checks = DecodeKernel.checks + ("differential", "below_floor", "packed_grid")
    differential_partner = "decode.tiled"
    gate_shapes: tuple[dict, ...] = (dict(head_dim=128, qo_heads=32, kv_heads=8, dtype="f16", **LLAMA_3_1),
                                     dict(head_dim=64, qo_heads=8, kv_heads=8, dtype="f32"),
                                     dict(head_dim=256, qo_heads=32, kv_heads=8, dtype="f16"),
                                     dict(head_dim=128, qo_heads=32, kv_heads=1, dtype="f16"))

    def gate_configs(self, profile):
        """Llama-3.1-8B with its rope scaling, MHA in f32 (G = 1: two rows per lane), Gemma-like
        D = 256, and G = 32 (gdz = 4 head slices). The gate builds them while it plans, so a
        machine without apache-tvm or its cached WGSL skips the kernel (SetupError)."""
        return [self.config(shape) for shape in self.gate_shapes]

    def upstream(self, config, wgsl):
        return tvm_upstream(wgsl)

    def known_finding(self, check, config):
        """Below the floor the lse (and output) is wrong; the packed grid's extra workgroup writes
        one sequence past the end of output and lse."""
        if check == "below_floor":
            return KnownFinding(BELOW_FLOOR, outputs=("output", "lse"), finding_id="tvm-decode-below-floor")
        if check == "packed_grid":
            return KnownFinding(PACKED_GRID, kinds=(FailureKind.WRITE_OUT_OF_BOUNDS,), finding_id="tvm-packed-grid")
        return None

    def finding_examples(self, check, config):
        """A batch of 3 with the packing threshold at 3, so the grid packs an odd x on every seed;
        below_floor's first case (one sequence of one token, every logit below the floor), which
        every case below the floor fails as the finding."""
        if check == "below_floor":
            return [first_drawn(self, check, config)]
        if check != "packed_grid":
            return []
        sliding = ([0, 1, 0], [0, 1, 0]) if config["sliding_window"] else None
        case = explicit_decode_case(config, [5, 17, 1], seed=3, sliding=sliding)
        return [case.replace(grid_limit=3)]

    def wgsl(self, config):
        build = decode_build(kv_heads=config["kv_heads"], qo_heads=config["qo_heads"], head_dim=config["head_dim"],
                             dtype=config["dtype"], sliding_window=bool(config["sliding_window"]),
                             page_size=config["page_size"],
                             rope_scaling=RopeVariant.from_config(config).tvm_rope_scaling())
        return _header(self.name, config) + load(build)

    def cases(self, config, profile):
        """Our decode cases inside TVM's domain (see within_floor), each bound as TVM's runtime
        binds it: the small arrays as views at drawn offsets of one buffer (verify.sources.tvm.layout)."""
        inside = super().cases(config, profile, drop=all_below_floor).filter(
            lambda case: case is not None and self.within_floor(config, case))
        return st.tuples(inside, layouts()).map(lambda pair: pair[0].replace(**pair[1]))

    def packed_grid_cases(self, config, profile):
        """The cases with the runtime's grid-packing threshold lowered (GRID_LIMITS' small ones), so
        a batch of 2 or more takes the packed path (x halved, z doubled) of the web runtime."""
        return st.tuples(self.cases(config, profile), st.sampled_from([2, 3])).map(
            lambda pair: pair[0].replace(grid_limit=pair[1]))

    def launch_paths(self, config, case):
        batch = case["q"].shape[0]
        packed = batch >= (case.params.get("grid_limit") or PACK_LIMIT)
        return ("grid packed into z" if packed else "grid direct", ArgumentLayout.of(case.params).launch_path)

    def within_floor(self, config, case) -> bool:
        """Every non-empty (sequence, head) has a base-2 logit above EMPTY_MAX + FLOOR_MARGIN.

        The cases filter on this as they are drawn, so it is first asked of each sequence's first
        page of rows (leading_floor), which settles nearly every case (a short sequence's page
        holds all its rows), then
        of a bound on every logit of a case without rotation (below_floor_bound: far_negative
        cases); only a case both leave open costs the whole reference here (remembered: the
        check reads it again)."""
        inputs = self.decode_inputs(config, case)
        settled = leading_floor(inputs)
        if settled is not None:
            return settled
        if below_floor_bound(inputs):
            return False
        largest = self.evaluation(config, case).logits2.max(axis=-1, initial=-np.inf)
        return bool(np.all(np.isneginf(largest) | (largest > EMPTY_MAX + FLOOR_MARGIN)))

    def below_floor_cases(self, config, profile):
        """Our decode cases with at least one token, moved wholly below TVM's floor (below_floor)."""
        nonempty = super().cases(config, profile).filter(lambda case: max(case.params["lengths"]) > 0)
        return st.tuples(nonempty, st.floats(FLOOR_MARGIN, -EMPTY_MAX)).map(lambda pair: below_floor(config, *pair))

    def launch(self, device, wgsl, config, case):
        pipeline = device.pipeline(wgsl)
        batch, qo_heads, head_dim = case["q"].shape
        *_, gdz = decode_schedule(config["head_dim"], config["qo_heads"] // config["kv_heads"])
        grid, pack_x = web_runtime_grid(batch, config["kv_heads"] * gdz, case.params.get("grid_limit") or PACK_LIMIT)
        p = case.params
        outputs = {"output": Output(STORAGE[config["dtype"]], (batch, qo_heads, head_dim)),
                   "lse": Output(np.float32, (batch, qo_heads))}
        small = {tvm: case[ours] for tvm, ours in DECODE_INPUTS.items() if tvm != "pages"}
        inputs, offsets = ArgumentLayout.of(p).bind(small, case["pages"])
        resources = bind(pipeline.interface, inputs, outputs, {
            "B": batch, "rotary_mode": p["rotary_mode"], "rope_scale": p["rope_scale"],
            "rope_theta": p["rope_theta"], "sm_scale": p["sm_scale"], "packGridDimX": pack_x}, offsets)
        run = device.run(pipeline, resources, grid)
        names = {"output": "output", "lse": "lse"}
        return Launched(_by_param(run.outputs, names), _by_param(run.guard_intact, names), run.timing)

    def expected(self, config, case):
        """Ours, but an empty context's lse is TVM's: within EMPTY_LSE_BAND (a convention, so
        comparisons with other runs hold it to this band); its output stays exactly 0."""
        output, lse = super().expected(config, case)
        empty = np.isneginf(lse.lo)
        lo, hi = EMPTY_LSE_BAND
        lse = Expected("lse", np.where(empty, lo, lse.lo), np.where(empty, hi, lse.hi),
                       np.where(empty, 0.0, lse.budget), lse.dtype, convention=empty)
        return [output, lse]


def all_below_floor(kind: str, lengths) -> bool:
    """True for a far_negative case with a token: within_floor rejects every such case, so its
    arrays need not be built (decode_cases' `drop`). Its keys are -A(1 + e), e in [0, 1/2), its
    query A, unrotated, so each base-2 logit is FAR_NEGATIVE_LOGIT (1 + e) / 1.25 <= -5.6e4
    (before rounding A and the keys to f16, 2^-11 each), far below EMPTY_MAX + FLOOR_MARGIN, and
    below_floor_bound says so of every one (tests/sources/tvm/test_tvm.py draws them)."""
    return kind == "far_negative" and bool(np.any(np.asarray(lengths) > 0))


def below_floor(config: dict, case, depth: float):
    """`case` with every base-2 logit at or below EMPTY_MAX - depth, rotary off: q is all A, every
    stored key element -A(1 + e) with e in [0, 1/2) (poison stays NaN), so each logit is
    -A sm_scale log2(e) sum_d |k_d| <= -A^2 D sm_scale log2(e) <= EMPTY_MAX - depth (A is rounded
    up to the storage type, and |k_d| rounds to at least A). Values and the page table are kept."""
    dtype = case["q"].dtype
    scale = config["head_dim"] * case.params["sm_scale"] * np.log2(np.e)
    exact = np.sqrt((depth - EMPTY_MAX) / scale)
    amplitude = np.asarray(exact, dtype=dtype)
    if amplitude < exact:
        amplitude = np.nextafter(amplitude, np.asarray(np.inf, dtype=dtype))
    rng = np.random.default_rng([int(case.params["seed"]), 3])
    pages = case["pages"].copy()
    keys = pages[:, 0]
    stretch = 1.0 + rng.uniform(0.0, 0.5, keys.shape)
    pages[:, 0] = np.where(np.isnan(keys), np.nan, -amplitude * stretch).astype(dtype)
    q = np.full(case["q"].shape, amplitude, dtype=dtype)
    return case.replace({"q": q, "pages": pages}, rotary_mode=0, values="below_floor", floor_depth=float(depth))


def leading_floor(inputs) -> bool | None:
    """within_floor asked of each non-empty sequence's first page of attended rows: True when
    every head already has a base-2 logit there above EMPTY_MAX + FLOOR_MARGIN (then so does the
    whole case: its largest logit is at least that one); False when a sequence that fits in
    that page (all its rows are there) has a head with every logit at or below it; None
    leaves the question to the full reference.

    Those rows' logits come from the reference itself on the rows alone (leading_rows), which
    may sum the D terms of a logit in another order than the full case's product: each sum is
    within gamma_D S of the exact one, S = sum_d |q_d k_d| over the rotated, rounded q and k the
    reference multiplies (Higham, Accuracy and Stability, (3.5)), and the scaling by
    c = sm_scale log2(e) rounds each once more, so the two logits differ by less than
    2 gamma_{D+1} c S. A logit counts only when beyond the bound by twice that (covering the
    rounding of S as computed here) plus 1 (far beyond the rounding of this comparison).
    """
    rows = leading_rows(inputs, inputs.page_size)
    result = rows.reference()
    batch, qo_heads, dim = result.q.shape
    kv_heads = result.k.shape[1]
    magnitude = np.abs(result.q).reshape(batch, kv_heads, -1, dim) @ np.abs(result.k).transpose(0, 1, 3, 2)
    slack = (4 * gamma(dim + 1, unit_roundoff("f64")) * abs(inputs.sm_scale) * LOG2E * magnitude
             ).reshape(result.logits2.shape) + 1.0
    bound = EMPTY_MAX + FLOOR_MARGIN
    with np.errstate(invalid="ignore"):
        low = np.max(result.logits2 - slack, axis=-1, initial=-np.inf)  # [B, Hq]: below every full-case max
        high = np.max(np.where(np.isneginf(result.logits2), -np.inf, result.logits2 + slack), axis=-1,
                      initial=-np.inf)
    empty = (result.length == 0)[:, None]
    if np.all(empty | (low > bound)):
        return True
    whole = (attended_length(inputs.page_indptr, inputs.length_info, inputs.page_size, inputs.sliding_window)
             <= inputs.page_size)[:, None]
    if np.any(~empty & whole & (high <= bound)):
        return False
    return None


def below_floor_bound(inputs) -> bool:
    """True when, without rotation, some non-empty (sequence, head) has every base-2 logit at or
    below EMPTY_MAX + FLOOR_MARGIN: q . k_j <= sum_d max(q_d hi_d, q_d lo_d) = U over the
    stored keys' per-dim range (key_ranges), and the reference's logit, a float64 sum of D
    products scaled by c = sm_scale log2(e), exceeds c q . k_j by at most gamma_{D+1} c S with
    S = sum_d |q_d| max(|hi_d|, |lo_d|), as does U as computed here: so c U + 2 gamma_{D+1} c S
    + 1 at or below the bound settles it. False (rotated cases included) decides nothing."""
    if inputs.rotary_mode or not inputs.sm_scale > 0:
        return False
    hi, lo = key_ranges(inputs)
    batch, qo_heads, dim = np.asarray(inputs.q).shape
    q = np.asarray(inputs.q, np.float64).reshape(batch, hi.shape[1], -1, dim)  # [B, Hkv, G, D]
    with np.errstate(invalid="ignore"):
        top = np.maximum(q * hi[:, :, None], q * lo[:, :, None]).sum(-1)
        size = (np.abs(q) * np.maximum(np.abs(hi), np.abs(lo))[:, :, None]).sum(-1)
    c = inputs.sm_scale * LOG2E
    bound = c * top + 2 * gamma(dim + 1, unit_roundoff("f64")) * c * size + 1.0
    nonempty = np.isfinite(hi).all(axis=(1, 2))
    return bool(np.any(nonempty[:, None, None] & (bound <= EMPTY_MAX + FLOOR_MARGIN)))


class TvmDecodeSlidingWindow(TvmDecode):
    name = "tvm.decode_sliding_window"
    summary = ("Apache TVM 0.27's generated paged decode with attention sinks and a sliding window "
               "(_attention_decode(sliding_window=True))")
    config_keys = tuple(ConfigKey("sliding_window", 1, (1,), "length_info is [3, B]: last_page_len, window offset, "
                                  "sink size") if key.name == "sliding_window" else key
                        for key in TvmDecode.config_keys)
    #: Llama-3.2-1B with its rope scaling, and MHA (G = 1: two rows per lane) at D = 128 in f32.
    gate_shapes = (dict(head_dim=64, qo_heads=32, kv_heads=8, dtype="f16", **LLAMA_3_2),
                   dict(head_dim=128, qo_heads=8, kv_heads=8, dtype="f32"))


# -- merge ------------------------------------------------------------------------------------------
HEADS = ConfigKey("heads", 32, (), "attention heads H (TVM specialises the merge's workgroup on it)",
                  bounds=(1, MAX_HEADS))


#: Known finding of tvm.merge_state under `reference` (Kernel.known_finding).
MERGE_RACE = (
    "TVM's merge races: the lanes of a row read S[n, h] and write it with no barrier between.\n"
    "Each of the head_dim/4 lanes of a (token, head) reads S[n, h], merges its four dims of V and writes "
    "S[n, h] (_merge_state_inplace, _decode_kernels.py L455-526); lanes that run after another lane's write "
    "merge with an S already merged. It shows where a row's lanes span subgroups that do not run in lockstep: "
    "on lavapipe (subgroups of 8, run one after another) on every config; an H200 (subgroups of 32) passed 100 "
    "examples of 5 configs. Shrunk case tokens=1 heads=32 lse_kind=close: v got 0.585, expected -0.00137 "
    "+- 2.55e-06 (err/budget 2.3e5), dims 0-31 right, 32-127 wrong; s merged 4 times. Evidence: "
    "tests/sources/tvm/test_tvm.py::test_tvm_merge_state_matches_the_reference (strict xfail) and "
    "::test_one_storage_barrier_fixes_tvms_merge (one storageBarrier() before the write of S fixes it); "
    "docs/findings.md §2.")
#: Known finding of tvm.merge_state under `infinite_empty` (Kernel.known_finding).
INFINITE_EMPTY = (
    "TVM's merge returns NaN for two empty states written with lse -inf (our kernels' convention).\n"
    "TVM writes an empty state as -5e4 and never -inf; given two -inf states it takes M = max(s, s') = -inf and "
    "weighs each side exp2(-inf - M) = exp2(NaN), so s and v come back NaN (one -inf side alone is fine: weight "
    "0). Where the race of the reference check shows (lavapipe), it adds elements over budget. Evidence: "
    "tests/sources/tvm/test_tvm.py::test_tvm_merge_state_merges_two_infinite_empty_states (strict xfail); "
    "docs/findings.md §3.")


def unmerged_heads(heads: int, head_dim: int) -> range:
    """The heads `_merge_state_inplace`'s grid never reaches: gdy = H // bdy slices of bdy heads
    cover gdy·bdy of them (merge_schedule; docs/findings.md §5)."""
    _, bdy, gdy = merge_schedule(heads, head_dim)
    return range(gdy * bdy, heads)


def dropped_heads_finding(config: dict, dropped: range) -> str:
    return (f"TVM's merge leaves heads {dropped.start}-{dropped.stop - 1} of {config['heads']} unmerged at "
            f"head_dim {config['head_dim']}, and races.\n"
            "The schedule covers the heads with gdy = H // bdy slices of bdy heads (_decode_kernels.py L463), "
            "so the heads past gdy·bdy keep their first state: s and v unchanged. The race of the other heads "
            "(docs/findings.md §2) shows too. Evidence: tests/sources/tvm/test_tvm.py::"
            "test_tvm_merge_state_merges_every_head_of_nine (strict xfail); docs/findings.md §5.\n" + MERGE_RACE)


def s_lines(wgsl: str) -> tuple[int, int]:
    """(read, write) line numbers of S in TVM's merge WGSL: the lines the race is between."""
    lines = [i for i, line in enumerate(wgsl.splitlines(), 1) if "S_ptr[" in line]
    writes = [i for i in lines if "S_ptr[" in wgsl.splitlines()[i - 1].split("=")[0]]
    reads = [i for i in lines if i not in writes]
    return (reads[0] if reads else 0), (writes[0] if writes else 0)


def tvm_empty_states(case):
    """Our merge cases write an empty state's lse as -inf; TVM's kernels write -5e4 (+ log2 k)."""
    return case.replace({n: np.where(np.isneginf(case[n]), EMPTY_MAX, case[n]).astype(np.float32)
                         for n in ("s", "s_other")})


class TvmMergeState(MergeState):
    """TVM's `merge_state_inplace` (docs/tvm.md §5) under our merge contract."""

    name = "tvm.merge_state"
    source = "tvm"
    summary = ("Apache TVM 0.27's generated in-place merge of base-2 (v, lse) states (_merge_state_inplace); "
               "empty = lse -5e4")
    config_keys = (HEADS, HEAD_DIM, DTYPE)
    checks = ("reference", "infinite_empty", "implementations")

    def validate(self, config):
        if config["heads"] <= 0:
            raise UsageError(f"heads={config['heads']} must be positive")

    def gate_configs(self, profile):
        """Three head counts the schedule covers, and two it does not (14 heads at D = 256: bdy = 3,
        gdy = 4 covers 12; 7 heads: 6), where the dropped heads are the finding."""
        return [self.config(dict(heads=h, head_dim=d, dtype=t)) for h, d, t in
                ((32, 128, "f16"), (8, 64, "f32"), (16, 256, "f16"), (14, 256, "f16"), (7, 256, "f32"))]

    def upstream(self, config, wgsl):
        return tvm_upstream(wgsl)

    def known_finding(self, check, config):
        """The race wherever the merge is compared with the reference (`determinism` compares
        two runs, which race alike on an adapter that runs subgroups in a fixed order) and where
        `sanitize` reads the merge's own access log (on every adapter: the race between the lines
        that read and write S), and the NaN of two -inf states. Where the schedule does not cover
        every head, the reference finding is the heads left unmerged (with the race), so the race
        never stands for them."""
        dropped = unmerged_heads(config["heads"], config["head_dim"])
        if check == "reference":
            if dropped:
                return KnownFinding(dropped_heads_finding(config, dropped), outputs=("s", "v"),
                                    finding_id="tvm-merge-dropped-heads")
            return KnownFinding(MERGE_RACE, outputs=("s", "v"), finding_id="tvm-merge-race")
        if check == "sanitize":
            read, write = s_lines(self.wgsl(config))
            return KnownFinding(MERGE_RACE, kinds=(FailureKind.SANITIZER,),
                                reasons=("race on storage buffer S_ptr", f"at line {write}", f"at line {read}"),
                                finding_id="tvm-merge-race")
        if check == "infinite_empty":
            return KnownFinding(INFINITE_EMPTY, outputs=("s", "v"), finding_id="tvm-merge-infinite-empty")
        return None

    def finding_examples(self, check, config):
        """infinite_empty's first case (one token, both sides' lse -inf): the NaN on every seed."""
        return [first_drawn(self, check, config)] if check == "infinite_empty" else []

    def wgsl(self, config):
        build = merge_build(heads=config["heads"], head_dim=config["head_dim"], dtype=config["dtype"])
        return _header(self.name, config) + load(build)

    def corners(self, config):
        """The merge's corners at TVM's heads, with an empty state written as TVM writes it (-5e4)."""
        return [tvm_empty_states(case) for case in merge_corners(config["head_dim"], config["dtype"], config["heads"])]

    def cases(self, config, profile):
        return merge_cases(config["head_dim"], config["dtype"], max_tokens=get_profile(profile).max_tokens,
                           heads=config["heads"]).map(tvm_empty_states)

    def infinite_empty_cases(self, config, profile):
        """Pairs where one side or both are empty, written -inf as our kernels write it."""
        return merge_cases(config["head_dim"], config["dtype"], max_tokens=get_profile(profile).max_tokens,
                           heads=config["heads"], lse_kinds=("empty",))

    def launch(self, device, wgsl, config, case):
        pipeline = device.pipeline(wgsl)
        tokens, heads, head_dim = case["v"].shape
        *_, gdy = merge_schedule(config["heads"], config["head_dim"])
        grid, pack_x = web_runtime_grid(tokens, gdy)
        resources = bind(pipeline.interface, {"S_other": case["s_other"], "V_other": case["v_other"]},
                         {"S": InOut(case["s"]), "V": InOut(case["v"])},
                         {"N": tokens, "H": heads, "D": head_dim, "packGridDimX": pack_x})
        run = device.run(pipeline, resources, grid)
        names = {"S": "s", "V": "v"}
        return Launched(_by_param(run.outputs, names), _by_param(run.guard_intact, names), run.timing)
