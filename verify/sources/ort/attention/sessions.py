"""`ort.gqa` and `ort.paged_attention`: ONNX Runtime Web's attention, end to end, on Dawn.

Each case becomes the feeds of a one-node com.microsoft.GroupQueryAttention or PagedAttention
model (verify.sources.ort.attention.models) run by ORT's own WebGPU execution provider
(verify.sources.ort.runtime) with its cache bound to its output, as an application binds its
KV cache: GroupQueryAttention then writes the new keys and values into past_key/past_value
(ORT's static cache) and PagedAttention into the blocks of key_cache/value_cache. Nothing of ORT
is re-implemented: it rotates, copies, picks its programs and dispatches them itself.

The outputs are compared with float64 references (references.group_query: causal mask, local
window, GQA head mapping, rotary from the model's cos/sin tables) under the budgets of
verify.budgets.ort_attention, whose derivation follows what each of ORT's paths rounds where.
Which path a case takes is ORT's dispatch rule (docs/ort-attention.md §2); `launch` checks ORT
dispatched what the rule says, so a change of the rule cannot pass under the wrong budget.
The cache outputs are compared whole: rows (blocks) the run must not touch are poisoned with
NaN and must come back bit for bit, the new rows are the (rotated) new keys and values.
"""

from __future__ import annotations

import hashlib
import re
import time
from typing import TYPE_CHECKING, Protocol

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.ort_attention import output_budget, rotation_error, score_errors, softcap_errors
from verify.cases import Case
from verify.checks.finding_cases import first_drawn
from verify.errors import SetupError, UsageError
from verify.gpu.device import Timing
from verify.kernels.contract import ConfigKey, Kernel, Launched, Upstream
from verify.profiles import get_profile
from verify.references.group_query import attend, rotate_with_tables, visible_keys
from verify.results.record import KnownFinding
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.attention.cases import (
    ATTENTION_PROGRAMS,
    BUDGET_PATH,
    GQA_PROGRAMS,
    MAX_FLASH_TOKENS,
    PAGED_PROGRAMS,
    Q_SPREADS,
    OrtDispatchRuleError,
    gqa_cases,
    paged_cases,
    paged_path,
    with_large_scores,
    with_sharp_queries,
)
from verify.sources.ort.attention.models import BIAS_SHAPES, GroupQueryAttentionModel, PagedAttentionModel
from verify.sources.ort.cache import (
    Capture,
    Provenance,
    cache_root,
    cached_capture,
    cached_elsewhere,
    vendor_folder,
    with_run,
)
from verify.sources.ort.launch import SESSION_LEAVES_OUT, DerivedConfig, header
from verify.sources.ort.runtime import require_pinned_ort

# -- config keys -----------------------------------------------------------------------------------
DTYPE = ConfigKey("dtype", "f16", ("f16", "f32"), "type of query, key, value, caches, cos/sin tables and output")
HEAD_SIZE = ConfigKey("head_size", 64, (64, 80, 96, 128, 256), "channels per head (H)")
NUM_HEADS = ConfigKey("num_heads", 8, doc="query heads (N)", bounds=(1, 64))
KV_NUM_HEADS = ConfigKey("kv_num_heads", 2, doc="key/value heads (Nkv); N / Nkv is GQA's ratio", bounds=(1, 64))
PHASE = ConfigKey("phase", "decode", ("decode", "prefill", "flash"),
                  "new tokens per sequence: decode 1 (a batch of unequal lengths), prefill 2-31 (ORT's split-reduce "
                  "programs), flash 32 or more (its FlashAttention programs)")
DO_ROTARY = ConfigKey("do_rotary", 0, (0, 1), "rotate q and the new keys with the model's cos/sin tables")
INTERLEAVED = ConfigKey("rotary_interleaved", 0, (0, 1), "GPT-J pairs (2i, 2i+1) instead of NeoX (d, d + R/2)")
ROTARY_DIM = ConfigKey("rotary_dim", 0, doc="channels rotated, R (cos/sin caches are [rows, R/2]; the rest are "
                       "copied): 0 means all of head_size", bounds=(0, 256))
ATTENTION_BIAS = ConfigKey("attention_bias", "none", BIAS_SHAPES,
                           "input attention_bias added to the scores: none, full ([B, N, S, total]) or shared "
                           "([1, 1, S, total]); drawn N(0, 2²) or as a mask of 0 and -10000")
PACKED_QKV = ConfigKey("packed_qkv", 0, (0, 1), "query carries q, k and v of each token packed ([B, S, (N + 2 Nkv) H]; "
                       "inputs key and value absent)")
LOCAL_WINDOW = ConfigKey("local_window_size", -1, doc="attend only the last W keys (-1: all)", bounds=(-1, 8192))
SOFTCAP = ConfigKey("softcap", 0.0, doc="softcap c: scores c·tanh(s/c) (0: none)", bounds=(0.0, 1000.0))
HEAD_SINK = ConfigKey("head_sink", 0, (0, 1), "an attention sink logit per head (input head_sink), drawn N(0, 2²)")
SMOOTH_SOFTMAX = ConfigKey("smooth_softmax", 0, (0, 1), "a sink of 0 for every head (attribute smooth_softmax)")
MAX_PAST = ConfigKey("max_past", 160, doc="largest cached length a case draws", bounds=(0, 8192))
BLOCK_SIZE = ConfigKey("block_size", 16, (16, 32), "tokens per block of the paged cache")
PAGED_DTYPE = ConfigKey("dtype", "f16", ("f16",), "PagedAttention's type constraint allows f16 (and bf16) only")

# -- findings ----------------------------------------------------------------------------------------
#: Cached tokens of each sequence in ort.gqa's softcap case (OrtGqa.finding_examples): keys enough
#: for the cap to reweigh them.
GQA_SOFTCAP_PAST = 16
SOFTCAP_IGNORED = (
    "GroupQueryAttention ignores softcap on WebGPU: the output is the uncapped attention.\n"
    "onnxruntime-web 1.30 accepts the softcap attribute but none of the programs it dispatches for "
    "GroupQueryAttention takes a softcap: with softcap = 2 the decode output differs from the softcapped "
    "reference by about 1.8 and equals the uncapped one to 1e-6. Evidence: tests/sources/ort/test_ort_attention.py::"
    "test_gqa_applies_its_softcap (strict xfail), ::test_with_softcap_gqa_computes_the_uncapped_attention; "
    "tests/sources/ort/test_ort_attention_softcap_copy.py (FlashAttentionDecodeQKV as shipped, a strict xfail; "
    "each score capped, the control); docs/findings.md §18.1.")
FLASH_LOOP_VAR = (
    "ORT's FlashAttention program relies on a loop-body `var` being re-zeroed every iteration; Dawn does not: "
    "scores carry the previous key step's.\n"
    "The score accumulators qk_1..qk_4 are declared without initializer inside the key-step loop; WGSL gives them "
    "their zero value per iteration, Tint (npm webgpu 0.6.2) and Naga zero them once, so queries past the first key "
    "step get errors of 0.1-0.5. It shows wherever ORT dispatches FlashAttention: GroupQueryAttention with 32 new "
    "tokens or more, PagedAttention with a local window or (16-token blocks) 32 new tokens or more. Evidence: "
    "tests/sources/ort/test_ort_attention.py::test_gqa_prefill_with_flash_attention_matches_the_reference, "
    "::test_dawn_zeroes_a_loop_bodys_var_at_every_iteration (strict xfails), "
    "::test_zeroing_orts_prefill_accumulators_explicitly_makes_it_match_the_reference (the control); "
    "docs/findings.md §18.2.")
PAGED_PREFILL_F16_SCORES = (
    "FlashAttentionPagedPrefill sums q.k in f16: a partial sum past 65504 is Inf and the sequence's outputs NaN.\n"
    "PagedAttention's prefill program for 32 new tokens or more in 32-token blocks accumulates the scores in the "
    "model's type; with queries of 130 and a key of +130 on half its channels and -130 on the other (q.k = 0, a "
    "running sum of 67600), 2560 of 2560 outputs are NaN where the attention is finite (max |output| 3.6) and the "
    "split path computes it to 1e-3. Evidence: tests/sources/ort/test_ort_attention.py::"
    "test_paged_attention_prefill_keeps_large_partial_scores_finite (strict xfail), "
    "::test_paged_attention_split_path_keeps_large_partial_scores_finite (the control); docs/findings.md §18.4.")


# -- the reference ---------------------------------------------------------------------------------
def _rotated(x, case, positions, config):
    """(x rotated at positions [S] as float64, its error bound in the model's type) or (x, None)."""
    x = np.asarray(x, np.float64)
    if not config["do_rotary"]:
        return x, None
    cos, sin = case["cos_cache"], case["sin_cache"]
    interleaved = bool(config["rotary_interleaved"])
    pos = np.broadcast_to(np.asarray(positions)[:, None], x.shape[:-1])
    rotated = rotate_with_tables(x, cos, sin, pos, interleaved)
    half = cos.shape[-1]
    c, s = np.asarray(cos, np.float64)[pos], np.asarray(sin, np.float64)[pos]
    head = x[..., :2 * half]  # the rotated channels (rotary_dim); the rest are copied
    if interleaved:
        partner = np.empty_like(head)
        partner[..., 0::2], partner[..., 1::2] = head[..., 1::2], head[..., 0::2]
        c, s = np.repeat(c, 2, axis=-1), np.repeat(s, 2, axis=-1)
    else:
        partner = np.concatenate([head[..., half:], head[..., :half]], axis=-1)
        c, s = np.concatenate([c, c], axis=-1), np.concatenate([s, s], axis=-1)
    rest = x.shape[-1] - 2 * half  # copied channels: cos 1, sin 0 (rotation_error's docstring)
    partner = np.concatenate([partner, np.zeros((*x.shape[:-1], rest))], axis=-1)
    c = np.concatenate([c, np.ones((*x.shape[:-1], rest))], axis=-1)
    s = np.concatenate([s, np.zeros((*x.shape[:-1], rest))], axis=-1)
    return rotated, rotation_error(x, partner, c, s, config["dtype"])


def sequence_expected(q, k_new, v_new, k_past, v_past, past: int, case, config, path: str, bias=None):
    """(o [S, N, H], its budget, rotated new keys [S, Nkv, H], their budget) of one sequence:
    q, k_new, v_new [S, heads, H] as fed, k_past, v_past [Nkv, past, H]; bias [S, N or 1, past +
    S] the sequence's attention_bias, or None."""
    new = q.shape[0]
    positions = past + np.arange(new)
    q_rot, e_q = _rotated(q, case, positions, config)
    k_rot, e_k = _rotated(k_new, case, positions, config)
    keys = np.concatenate([np.asarray(k_past, np.float64), k_rot.transpose(1, 0, 2)], axis=1)
    values = np.concatenate([np.asarray(v_past, np.float64), np.asarray(v_new, np.float64).transpose(1, 0, 2)], axis=1)
    scale = config["head_size"] ** -0.5
    visible = visible_keys(past + new, new, config["local_window_size"])
    sink = None
    if config.get("smooth_softmax"):
        sink = np.zeros(q.shape[1])
    elif config.get("head_sink"):
        sink = np.asarray(case["head_sink"], np.float64)
    o, logits2 = attend(q_rot, keys, values, visible, scale=scale, softcap=config.get("softcap", 0.0), sink=sink,
                        bias=bias)
    e_keys = None
    if e_k is not None:
        e_keys = np.concatenate([np.zeros(k_past.shape), e_k.transpose(1, 0, 2)], axis=1)
    delta = score_errors(q_rot, keys, scale=scale, dtype=config["dtype"], path=BUDGET_PATH[path], e_q=e_q, e_k=e_keys,
                         bias=bias)
    delta = softcap_errors(q_rot, keys, delta, scale=scale, softcap=config.get("softcap", 0.0))
    if sink is not None:  # the sink's logit is an input, exact; its value column is 0
        delta = np.concatenate([delta, np.zeros((*delta.shape[:-1], 1))], axis=-1)
        values = np.concatenate([values, np.zeros((values.shape[0], 1, values.shape[-1]))], axis=1)
    budget = output_budget(values, logits2, delta, dtype=config["dtype"], path=BUDGET_PATH[path])
    return o, budget, k_rot, (np.zeros(k_rot.shape) if e_k is None else e_k)


def _cache_expected(name, reference, budget, exact, dtype) -> Expected:
    return Expected.around(name, reference, np.where(exact, 0.0, budget), dtype, exact=exact)


# -- the kernels -----------------------------------------------------------------------------------
def _capture_cache_name(kernel: str, model, phase: str) -> str:
    """The file a capture is cached in: by kernel, model and what else selects the programs."""
    return f"attention-{hashlib.sha256(f'{kernel} {model.describe()} {phase}'.encode()).hexdigest()[:16]}.json"


def attention_upstream(wgsl: str, origin: str) -> Upstream | None:
    """ORT's project and version from the provenance line of `wgsl` (None for an edited text
    without one), the programs' host code in microsoft/onnxruntime."""
    found = re.search(r"^// onnxruntime-web (\S+) on ", wgsl, re.M)
    if found is None:
        return None
    return Upstream("ONNX Runtime Web (microsoft/onnxruntime; npm onnxruntime-web), WebGPU execution provider",
                    found[1], f"{origin} (flash_attention.cc, group_query_attention.cc, paged_attention.cc in "
                    "onnxruntime/contrib_ops/webgpu/bert)", ("onnxruntime/contrib_ops/webgpu/bert/flash_attention.cc",))


class SessionModel(Protocol):
    """What the session kernels read of their op's model (GroupQueryAttentionModel,
    PagedAttentionModel, MultiHeadAttentionModel): an OrtModel with its op and shared cache."""

    @property
    def op(self) -> str: ...

    @property
    def shared_cache(self) -> dict: ...

    @property
    def onnx_bytes(self) -> bytes: ...

    def describe(self) -> str: ...


class OrtAttentionKernel(DerivedConfig, Kernel):
    """What ort.gqa and ort.paged_attention share: ORT's session on a case, judged against the
    float64 reference under verify.budgets.ort_attention."""

    family = "attention"
    source = "ort"
    reference = "verify.references.group_query.attend (rotate_with_tables, visible_keys)"
    checks: tuple[str, ...] = ("reference",)
    leaves_out = SESSION_LEAVES_OUT
    output_axes = {"output": ("token", "channel")}
    budget_function = staticmethod(output_budget)
    programs: dict = {}
    #: The session's outputs, every one judged unless output_names_of leaves some out (each op names its own).
    output_names: tuple[str, ...]

    if TYPE_CHECKING:  # each op's kernel builds its model and binds a case to it

        def model(self, config: dict) -> SessionModel: ...

        def feeds(self, model, case: Case) -> dict[str, np.ndarray]: ...

    def budget_doc(self) -> str:
        import inspect

        return "\n\n".join(inspect.getdoc(f) or ""
                           for f in (score_errors, softcap_errors, output_budget, rotation_error))

    def validate(self, config):
        if config["num_heads"] % config["kv_num_heads"]:
            raise UsageError(f"num_heads={config['num_heads']} must be a multiple of "
                             f"kv_num_heads={config['kv_num_heads']}")
        if config["rotary_interleaved"] and not config["do_rotary"]:
            raise UsageError("rotary_interleaved=1 needs do_rotary=1")
        if config["local_window_size"] >= 0 and config["local_window_size"] >= config["max_past"] + MAX_FLASH_TOKENS:
            raise UsageError(f"local_window_size={config['local_window_size']} is past every total a case draws "
                             f"(max_past={config['max_past']})")

    def requirements(self, config):
        return frozenset({"shader-f16"}) if config["dtype"] == "f16" else frozenset()

    def gate_configs(self, profile):
        """Each profile's configs (GATE_CONFIGS). The gate captures their programs while it plans,
        so a machine without ORT skips the kernel (SetupError). By the profile's scale: a profile of
        one's own at scale ci plans what ci does."""
        scale = get_profile(profile).scale
        return [self.config(c) for c in self.gate_shapes.get(scale, self.gate_shapes["ci"])]

    def known_finding(self, check, config):
        """Each finding under every check that compares with the reference (`reference`, and
        `large_scores` where the kernel has it), the output its signature."""
        findings = []
        if check not in ("reference", "large_scores"):
            return None
        if config.get("softcap"):
            findings.append(KnownFinding(SOFTCAP_IGNORED, outputs=("output",), finding_id="ort-gqa-softcap-ignored"))
        if self.takes_flash(config):
            findings.append(KnownFinding(FLASH_LOOP_VAR, outputs=("output",), finding_id="ort-flash-carried-scores"))
        if check == "large_scores" and self.takes_paged_prefill(config):
            findings.append(KnownFinding(PAGED_PREFILL_F16_SCORES, outputs=("output",),
                                         finding_id="ort-paged-prefill-f16-scores"))
        return findings or None

    def takes_paged_prefill(self, config) -> bool:
        return False

    def upstream(self, config, wgsl):
        return attention_upstream(wgsl, f"the {self.model(config).op} contrib op's WebGPU programs")

    def modules(self, wgsl):
        """None: ORT compiles its programs in its own session; the check's device compiles nothing."""
        return []

    def capture_request(self, config, ort_version: str) -> tuple[str, Provenance]:
        """(the name of this config's capture file, the provenance a capture of it by
        onnxruntime-web `ort_version` must carry). The capture's case is drawn by Hypothesis, so
        its input shapes are recorded in the file, not drawn again to compare."""
        model = self.model(config)
        key = self.capture_key(config)
        return (_capture_cache_name(self.name, model, key),
                Provenance.wanted(f"{self.name} {model.describe()} {key}", model, ort_version))

    def captured(self, config) -> Capture:
        """The programs ORT dispatches for one small case of this config, in dispatch order, and
        their provenance: cached on disk as ORT's DP4A programs are (verify.sources.ort.cache:
        a file whose provenance is another capture's, stale or damaged is captured again), captured
        by a run of ORT's session otherwise. On a machine without ORT's runtime (no Node, no
        Dawn), a capture cached for any adapter, so the programs verify launches itself run there
        from a VERIFY_ORT_CACHE filled elsewhere, as ORT's DP4A programs do; neither: SetupError."""
        try:
            runtime = ort_runtime.shared_runtime()
        except SetupError as missing:
            version = ort_runtime.pinned_version()
            name, want = self.capture_request(config, version)
            return cached_elsewhere(cache_root(), version, name, want, missing)
        name, want = self.capture_request(config, runtime.version)

        def capture() -> Capture:
            model = self.model(config)
            ort_runtime.require_features(runtime, config.get("dtype", ""), f"{self.name} {model.describe()}")
            case = self.capture_case(config)
            feeds = self.feeds(model, case)
            run = runtime.run(model, feeds, aliases=self.capture_aliases(model))
            return Capture(with_run(want, feeds, runtime.adapter.get("description") or "?",
                                    f"{model.describe()}, {case.summary()}"),
                           {d.program.label: d.program.wgsl for d in run.dispatches})

        # Two processes wanting one capture (a planning pool, two workers): one captures, the other waits.
        return cached_capture(cache_root() / runtime.version / vendor_folder(runtime.adapter) / name, want, capture)

    def wgsl(self, config):
        """Every program ORT dispatches for one small case of this config, in order, after its
        provenance line. For reading and for the record's hash: ORT compiles them itself. The
        session runs in the pinned onnxruntime-web, so a machine without it (or with another
        version) is refused here, while planning (SetupError), whatever the cache holds."""
        require_pinned_ort()
        data = self.captured(config)
        parts = [header(self.name, config), data.line]
        parts += [f"// ---- program {label} ----\n{wgsl}" for label, wgsl in data.programs.items()]
        return "\n".join(parts)

    def capture_aliases(self, model) -> dict | None:
        """The inputs a capture run binds to outputs: the model's shared cache, as an application
        binds its KV cache (None: past and present apart, which makes GroupQueryAttention copy
        the whole cache, ort.attention.copy_kv_cache)."""
        return model.shared_cache

    def capture_key(self, config) -> str:
        """What besides the model selects the programs a capture run dispatches."""
        return config["phase"]

    def capture_case(self, config) -> Case:
        """The simplest case of the config (Hypothesis' minimal example): one run that takes its path."""
        from hypothesis import find, settings

        return find(self.cases(config, get_profile("quick")), lambda case: True,
                    settings=settings(database=None, max_examples=10))

    def launch(self, device, wgsl, config, case):
        """One run of ORT's session on the case (Timing.dispatch is its wall time); ORT runs on
        the Vulkan driver of the check's dawn device."""
        runtime = ort_runtime.shared_runtime(getattr(device, "driver", None))
        model = self.model(config)
        started = time.perf_counter()
        run = runtime.run(model, self.feeds(model, case), aliases=model.shared_cache)
        elapsed = time.perf_counter() - started
        ran = tuple(label for label in run.labels if label in ATTENTION_PROGRAMS)
        want = self.programs[case.params["path"]]
        if ran != want:
            raise OrtDispatchRuleError(f"ORT dispatched {', '.join(run.labels) or 'nothing'} for {case.summary()}, "
                                       f"where the rule verify judges by gives {', '.join(want)}")
        outputs = {name: run.outputs[name] for name in self.output_names_of(config)}
        return Launched(outputs, {}, Timing(dispatch=elapsed))

    def launch_paths(self, config, case):
        return (case.params["path"],)

    def output_names_of(self, config) -> tuple[str, ...]:
        """The session outputs judged for `config` (every one of `output_names` unless a config
        leaves some out of the model)."""
        return self.output_names


class OrtGqa(OrtAttentionKernel):
    """ORT's GroupQueryAttention session: output and the static cache it updates."""

    name = "ort.gqa"
    summary = ("ONNX Runtime Web 1.30 (WebGPU provider on Dawn) running one com.microsoft.GroupQueryAttention node "
               "with a static KV cache: output and present_key/present_value")
    config_keys = (DTYPE, HEAD_SIZE, NUM_HEADS, KV_NUM_HEADS, PHASE, DO_ROTARY, INTERLEAVED, ROTARY_DIM, PACKED_QKV,
                   ATTENTION_BIAS, LOCAL_WINDOW, SOFTCAP, HEAD_SINK, SMOOTH_SOFTMAX, MAX_PAST)
    output_names = ("output", "present_key", "present_value")
    programs = GQA_PROGRAMS
    gate_shapes = {
        "quick": (dict(dtype="f32", phase="decode", softcap=2.0),),
        "ci": (dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2, phase="decode", do_rotary=1, head_sink=1),
               dict(dtype="f32", head_size=64, num_heads=8, kv_num_heads=1, phase="prefill", do_rotary=1,
                    rotary_interleaved=1),
               dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=4, phase="decode", local_window_size=32,
                    smooth_softmax=1),
               dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2, phase="decode", softcap=2.0),
               dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2, phase="flash"),
               dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2, phase="prefill", do_rotary=1,
                    rotary_dim=64, packed_qkv=1),
               dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2, phase="decode", attention_bias="full")),
        "nightly": (dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2, phase="decode", do_rotary=1,
                         max_past=8192),
                    dict(dtype="f16", head_size=128, num_heads=32, kv_num_heads=8, phase="decode", do_rotary=1,
                         rotary_interleaved=1, rotary_dim=32, packed_qkv=1, max_past=8192),
                    dict(dtype="f16", head_size=64, num_heads=8, kv_num_heads=2, phase="prefill",
                         attention_bias="shared", max_past=1024),
                    dict(dtype="f32", head_size=128, num_heads=16, kv_num_heads=2, phase="decode", head_sink=1,
                         max_past=8192),
                    dict(dtype="f16", head_size=64, num_heads=8, kv_num_heads=2, phase="prefill", smooth_softmax=1,
                         max_past=1024),
                    dict(dtype="f16", head_size=64, num_heads=8, kv_num_heads=1, phase="prefill", do_rotary=1,
                         rotary_interleaved=1, max_past=1024),
                    dict(dtype="f16", head_size=96, num_heads=6, kv_num_heads=2, phase="decode", local_window_size=128,
                         max_past=2048),
                    dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2, phase="decode", softcap=2.0),
                    dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2, phase="flash")),
    }

    def derive(self, config):
        return {}

    def takes_flash(self, config) -> bool:
        """Whether ORT runs the config's flash phase on its FlashAttention program (gqa_path): not
        with smooth_softmax, and with a local window only from onnxruntime-web 1.31.1 on."""
        windowed = config["local_window_size"] >= 0 and not ort_runtime.fuses_local_window()
        return config["phase"] == "flash" and not windowed and not config["smooth_softmax"]

    def model(self, config) -> GroupQueryAttentionModel:
        return GroupQueryAttentionModel(config["dtype"], config["num_heads"], config["kv_num_heads"],
                                        config["head_size"], do_rotary=bool(config["do_rotary"]),
                                        rotary_interleaved=bool(config["rotary_interleaved"]),
                                        local_window_size=config["local_window_size"], softcap=config["softcap"],
                                        has_head_sink=bool(config["head_sink"]),
                                        smooth_softmax=bool(config["smooth_softmax"]),
                                        rotary_dim=config["rotary_dim"], packed_qkv=bool(config["packed_qkv"]),
                                        attention_bias=config["attention_bias"])

    def feeds(self, model, case):
        """The case's query, key and value as the model takes them: packed, each token's q, k and
        v side by side in `query` (the layout ORT splits in SplitPackedQKVWithRotaryEmbeddingAndCopyKV)."""
        a = case.arrays
        query, key, value = a["query"], a["key"], a["value"]
        if model.packed_qkv:
            query, key, value = np.concatenate([query, key, value], axis=-1), None, None
        return model.feeds(query, a["past_key"], a["past_value"], a["seqlens_k"], a["total_sequence_length"],
                           key=key, value=value, cos_cache=a.get("cos_cache"), sin_cache=a.get("sin_cache"),
                           head_sink=a.get("head_sink"), attention_bias=a.get("attention_bias"))

    def validate(self, config):
        super().validate(config)
        if config["attention_bias"] != "none" and config["softcap"]:
            raise UsageError("attention_bias with softcap: the order ORT applies them in is not pinned here "
                             "(and 1.30 ignores softcap, docs/findings.md §18.1)")
        if config["head_sink"] and config["smooth_softmax"]:
            raise UsageError("head_sink=1 and smooth_softmax=1: choose one sink")
        if config["rotary_dim"] and not config["do_rotary"]:
            raise UsageError("rotary_dim needs do_rotary=1")
        if config["rotary_dim"] % 2 or config["rotary_dim"] > config["head_size"]:
            raise UsageError(f"rotary_dim={config['rotary_dim']} must be even and at most "
                             f"head_size={config['head_size']}")

    def cases(self, config, profile):
        return gqa_cases(config)

    def finding_examples(self, check, config):
        """Where ORT takes FlashAttention (§18.2), the check's simplest case: every case of 32 new
        tokens or more carries scores over. With a softcap (§18.1), the simplest case whose every
        sequence has GQA_SOFTCAP_PAST cached tokens and the sharpest queries: scores spread well past
        the cap, where one key alone (no past) is weighed 1 with the cap or without."""
        if check not in ("reference", "large_scores"):
            return []
        if self.takes_flash(config):
            return [first_drawn(self, check, config)]
        if config.get("softcap"):
            return [first_drawn(self, check, config, lambda case: min(case.params["past"]) >= GQA_SOFTCAP_PAST
                                and case.params["q_spread"] == max(Q_SPREADS))]
        return []

    def expected(self, config, case):
        """Per sequence, references.group_query over its cached rows and its new tokens; the new
        cache rows are the (rotated) new keys and values, every other row comes back bit for bit."""
        n, nkv, h = config["num_heads"], config["kv_num_heads"], config["head_size"]
        batch, new = case.params["batch"], case.params["new"]
        out, out_budget = np.zeros((batch, new, n * h)), np.zeros((batch, new, n * h))
        present_key = case["past_key"].astype(np.float64)
        present_value = case["past_value"].astype(np.float64)
        key_budget = np.zeros(present_key.shape)
        changed = np.zeros(present_key.shape, bool)
        for b, past in enumerate(case.params["past"]):
            q = case["query"][b].reshape(new, n, h)
            k_new, v_new = case["key"][b].reshape(new, nkv, h), case["value"][b].reshape(new, nkv, h)
            bias = None
            if "attention_bias" in case.arrays:  # [B or 1, N or 1, S, T] -> this sequence's [S, N or 1, total]
                bias = case["attention_bias"][min(b, len(case["attention_bias"]) - 1)]
                bias = bias.transpose(1, 0, 2)[:, :, :past + new].astype(np.float64)
            o, budget, k_rot, e_k = sequence_expected(q, k_new, v_new, case["past_key"][b, :, :past],
                                                      case["past_value"][b, :, :past], past, case, config,
                                                      case.params["path"], bias=bias)
            out[b], out_budget[b] = o.reshape(new, -1), budget.reshape(new, -1)
            present_key[b, :, past:past + new] = k_rot.transpose(1, 0, 2)
            present_value[b, :, past:past + new] = np.asarray(v_new, np.float64).transpose(1, 0, 2)
            key_budget[b, :, past:past + new] = e_k.transpose(1, 0, 2)
            changed[b, :, past:past + new] = bool(config["do_rotary"])
        t = config["dtype"]
        return [Expected.around("output", out, out_budget, t),
                _cache_expected("present_key", present_key, key_budget, ~changed, t),
                _cache_expected("present_value", present_value, 0.0, np.ones(present_value.shape, bool), t)]

    def features(self, case):
        return {"context": max(case.params["past"]) + case.params["new"], "new_tokens": case.params["new"]}


class OrtPagedAttention(OrtAttentionKernel):
    """ORT's PagedAttention session: output and the block caches it updates in place."""

    name = "ort.paged_attention"
    summary = ("ONNX Runtime Web 1.30 (WebGPU provider on Dawn) running one com.microsoft.PagedAttention node: "
               "output and key_cache/value_cache updated in their shuffled blocks")
    config_keys = (PAGED_DTYPE, HEAD_SIZE, NUM_HEADS, KV_NUM_HEADS, PHASE, BLOCK_SIZE, DO_ROTARY, INTERLEAVED,
                   LOCAL_WINDOW, HEAD_SINK, MAX_PAST)
    output_names = ("output", "key_cache_out", "value_cache_out")
    checks = ("reference", "large_scores")
    programs = PAGED_PROGRAMS
    gate_shapes = {
        "quick": (dict(phase="decode"),),
        "ci": (dict(head_size=128, num_heads=8, kv_num_heads=2, phase="decode", block_size=16, do_rotary=1,
                    head_sink=1),
               dict(head_size=64, num_heads=4, kv_num_heads=1, phase="prefill", block_size=32, do_rotary=1,
                    rotary_interleaved=1),
               dict(head_size=64, num_heads=4, kv_num_heads=1, phase="flash", block_size=32),
               dict(head_size=64, num_heads=4, kv_num_heads=2, phase="decode", block_size=16, local_window_size=32)),
        "nightly": (dict(head_size=128, num_heads=8, kv_num_heads=2, phase="decode", block_size=16, do_rotary=1,
                         max_past=8192),
                    dict(head_size=64, num_heads=4, kv_num_heads=1, phase="prefill", block_size=32, do_rotary=1,
                         rotary_interleaved=1, max_past=1024),
                    dict(head_size=64, num_heads=4, kv_num_heads=1, phase="flash", block_size=32, max_past=2048),
                    dict(head_size=64, num_heads=4, kv_num_heads=2, phase="decode", block_size=16,
                         local_window_size=32)),
    }

    def derive(self, config):
        return {}

    def _path(self, config) -> str:
        return paged_path(config["local_window_size"], MAX_FLASH_TOKENS if config["phase"] == "flash" else 1,
                          config["block_size"], bool(config["head_sink"]), ort_runtime.fuses_local_window())

    def takes_flash(self, config) -> bool:
        return self._path(config) == "flash"

    def takes_paged_prefill(self, config) -> bool:
        return self._path(config) == "paged_prefill"

    def model(self, config) -> PagedAttentionModel:
        return PagedAttentionModel(config["dtype"], config["num_heads"], config["kv_num_heads"], config["head_size"],
                                   do_rotary=bool(config["do_rotary"]),
                                   rotary_interleaved=bool(config["rotary_interleaved"]),
                                   local_window_size=config["local_window_size"], block_size=config["block_size"],
                                   has_head_sink=bool(config["head_sink"]))

    def feeds(self, model, case):
        a = case.arrays
        return model.feeds(a["query"], a["key_cache"], a["value_cache"], a["cumulative_sequence_length"],
                           a["past_seqlens"], a["block_table"], key=a["key"], value=a["value"],
                           cos_cache=a.get("cos_cache"), sin_cache=a.get("sin_cache"), head_sink=a.get("head_sink"))

    def cases(self, config, profile):
        return paged_cases(config)

    def finding_examples(self, check, config):
        """Where ORT takes FlashAttention (§18.2), a case that shows its carried-over scores above
        the f16 budget: the simplest case of the config with queries of spread 2 (measured here:
        err/budget 4.9 on the output, where the drawn cases of flat queries reach 1.2-1.5)."""
        if check == "large_scores" and self.takes_paged_prefill(config):
            # §18.4: large_scores' simplest case overflows the f16 scores (every case does).
            return [first_drawn(self, check, config)]
        if check not in ("reference", "large_scores") or not self.takes_flash(config):
            return []
        from hypothesis import find, settings

        case = find(paged_cases(config), lambda case: True, settings=settings(database=None, max_examples=10))
        return [with_sharp_queries(case)]

    def large_score_cases(self, config, profile):
        """The `large_scores` check's cases: paged_cases with the first sequence's queries all c
        and its first new key +c on the first half of each head's channels and -c on the other
        (q.k = 0 exactly before rotation), c the smallest whole number whose half-head partial
        sum of the alpha-scaled q (H/2 · c · alpha · c) passes 1.1 · 65504."""
        return paged_cases(config).map(lambda case: with_large_scores(case, config))

    def expected(self, config, case):
        """Per sequence, references.group_query over the rows its block table names; the new
        tokens' slots hold the (rotated) new keys and values, every other slot comes back bit
        for bit (spare blocks and unused slots are NaN)."""
        n, nkv, h, bs = config["num_heads"], config["kv_num_heads"], config["head_size"], config["block_size"]
        cu, table = case["cumulative_sequence_length"], case["block_table"]
        tokens = int(cu[-1])
        out, out_budget = np.zeros((tokens, n * h)), np.zeros((tokens, n * h))
        key_cache = case["key_cache"].astype(np.float64)
        value_cache = case["value_cache"].astype(np.float64)
        flat_key, flat_value = key_cache.reshape(-1, nkv, h), value_cache.reshape(-1, nkv, h)
        key_budget = np.zeros(flat_key.shape)
        changed = np.zeros(flat_key.shape, bool)
        for b, past in enumerate(case.params["past"]):
            begin, end = int(cu[b]), int(cu[b + 1])
            new = end - begin
            rows = np.arange(past + new)
            slots = table[b, rows // bs] * bs + rows % bs
            k_past = flat_key[slots[:past]].transpose(1, 0, 2)
            v_past = flat_value[slots[:past]].transpose(1, 0, 2)
            q = case["query"][begin:end].reshape(new, n, h)
            k_new, v_new = case["key"][begin:end].reshape(new, nkv, h), case["value"][begin:end].reshape(new, nkv, h)
            o, budget, k_rot, e_k = sequence_expected(q, k_new, v_new, k_past, v_past, past, case, config,
                                                      case.params["path"])
            out[begin:end], out_budget[begin:end] = o.reshape(new, -1), budget.reshape(new, -1)
            flat_key[slots[past:]] = k_rot
            flat_value[slots[past:]] = np.asarray(v_new, np.float64)
            key_budget[slots[past:]] = e_k
            changed[slots[past:]] = bool(config["do_rotary"])
        t = config["dtype"]
        shape = key_cache.shape
        return [Expected.around("output", out, out_budget, t),
                _cache_expected("key_cache_out", key_cache, key_budget.reshape(shape), ~changed.reshape(shape), t),
                _cache_expected("value_cache_out", value_cache, 0.0, np.ones(shape, bool), t)]

    def features(self, case):
        return {"context": max(p + s for p, s in zip(case.params["past"], case.params["new"])),
                "new_tokens": sum(case.params["new"])}
