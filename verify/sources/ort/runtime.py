"""ONNX Runtime Web (npm onnxruntime-web, pinned in verify/gpu/dawn/package.json) run in Node on Dawn.

Several versions are installed side by side (package.json pins each: `onnxruntime-web` itself and
the others under an alias, `"onnxruntime-web-1.31": "npm:onnxruntime-web@1.31.1"`); one of them is
the version a run checks: `--ort-version` (the commands that run kernels), else
`$VERIFY_ORT_VERSION`, else `DEFAULT_VERSION` (selected_version; docs/ort-dp4a.md §10.3 says why
that one). Its captures live in the version's own folder of the ORT WGSL cache and of the shipped
copies (verify.sources.ort.cache), and a session runs on that version's package.

`OrtRuntime` owns one Node process running runner.mjs beside this file: ORT's own WebGPU
execution provider (its C++ provider compiled to wasm) on a Dawn instance, with the Vulkan
driver and adapter verify's dawn implementation uses, so ORT's kernels run on the same implementation
and adapter as the toolkit's own launches. It talks the dawn implementation's binary frames
(verify.gpu.dawn.process). Sessions are created once per model and kept; a run returns the
outputs and what ORT dispatched (verify.sources.ort.capture).

The process is started with V8's `--liftoff-only`: ORT's wasm is 27 MB, and while V8's
optimizing compiler works through it in the background (35-55 s on two cores), Dawn's
asynchronous pipeline creations do not complete; the baseline compiler alone takes well under a
second and ORT's host code is not where the time goes.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np

from verify.errors import FeatureMissing, KernelError, SetupError, UsageError
from verify.gpu.dawn import environment
from verify.gpu.dawn.process import NodeProcess, NodeProcessDied
from verify.sources.ort.capture import OrtRun, parse_run

RUNNER = Path(__file__).resolve().parent / "runner.mjs"
PACKAGE = "onnxruntime-web"
#: The environment variable that selects the onnxruntime-web version a run checks (an exact
#: version pinned in package.json, or its release line, e.g. 1.31); `--ort-version` sets it.
VERSION_ENV = "VERIFY_ORT_VERSION"
#: The version checked when none is selected (docs/ort-dp4a.md §10.3: why this one).
DEFAULT_VERSION = "1.30.0"
#: Sessions kept open per runtime (one per model: dtype, bits, block size, K, N, options).
MAX_SESSIONS = 16
SETUP_HINT = ("run `verify setup --dawn` (it installs the pinned Node packages, onnxruntime-web among them, "
              "and a Vulkan driver Dawn accepts; in a checkout, scripts/setup.sh)")
#: What to run when another onnxruntime-web than the pinned one is installed (format: the pin).
REINSTALL = "run `verify setup --dawn` (in a checkout: scripts/setup_dawn.sh) to install {}"


def pinned_versions() -> dict[str, str]:
    """Every onnxruntime-web version verify/gpu/dawn/package.json pins -> the folder of
    node_modules it is installed in (`onnxruntime-web`, or its alias, `onnxruntime-web-1.31`), in
    the order of the versions."""
    from verify.gpu.dawn.install import aliases, pinned_packages

    renamed = aliases()
    found = {version: name for name, version in pinned_packages().items() if renamed.get(name, name) == PACKAGE}
    return dict(sorted(found.items(), key=lambda item: _version_key(item[0])))


def _version_key(version: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


#: The first onnxruntime-web with the session option enableMatmulFp32Accumulation (ORT PR #29599).
FP32_ACCUMULATION_SINCE = "1.31.1"


#: The first onnxruntime-web whose GroupQueryAttention keeps a local window on its fused programs
#: (FlashAttention and the split decode gained local-window masking); 1.30.0 sends a window shorter
#: than the total to the unfused AttentionProbs/InPlaceSoftmax/VxAttentionScore programs.
FUSED_LOCAL_WINDOW_SINCE = "1.31.1"


def fuses_local_window(version: str | None = None) -> bool:
    """Whether onnxruntime-web `version` (default: the selected one) runs a GroupQueryAttention
    local window on its fused programs (verify.sources.ort.attention.cases.gqa_path)."""
    return _version_key(selected_version() if version is None else version) >= _version_key(FUSED_LOCAL_WINDOW_SINCE)


def has_fp32_accumulation_option(version: str | None = None) -> bool:
    """Whether onnxruntime-web `version` (default: the selected one) takes the session option
    ep.webgpuexecutionprovider.enableMatmulFp32Accumulation (1.30.0 ignores it silently)."""
    return _version_key(selected_version() if version is None else version) >= _version_key(FP32_ACCUMULATION_SINCE)


def resolve_version(given: str, *, source: str = "--ort-version") -> str:
    """The pinned version `given` names: exactly, or by its release line (`1.31` -> 1.31.1);
    UsageError (one line, exit 2) naming the pinned ones where it names none of them."""
    pinned = pinned_versions()
    given = given.strip()
    if given in pinned:
        return given
    matches = [version for version in pinned if version.startswith(given + ".")]
    if given and len(matches) == 1:
        return matches[0]
    raise UsageError(f"{source} {given!r}: onnxruntime-web {given or '(empty)'} is not among the versions verify "
                     f"installs ({', '.join(pinned)}; verify/gpu/dawn/package.json)")


def selected_version() -> str:
    """The onnxruntime-web version this run checks: $VERIFY_ORT_VERSION (which `--ort-version`
    sets), else DEFAULT_VERSION."""
    given = os.environ.get(VERSION_ENV)
    return resolve_version(given, source=VERSION_ENV) if given else DEFAULT_VERSION


def pinned_version() -> str:
    """The onnxruntime-web version this run checks (selected_version): one of those
    verify/gpu/dawn/package.json pins, exactly."""
    return selected_version()


@contextmanager
def using_version(version: str) -> Iterator[str]:
    """Select onnxruntime-web `version` (resolved as --ort-version is) while the block runs, for
    this process and the workers it starts (`verify findings status` runs each version in turn)."""
    version = resolve_version(version)
    before = os.environ.get(VERSION_ENV)
    os.environ[VERSION_ENV] = version
    try:
        yield version
    finally:
        if before is None:
            os.environ.pop(VERSION_ENV, None)
        else:
            os.environ[VERSION_ENV] = before


def find_ort_dist(version: str | None = None) -> Path:
    """The `dist` folder of onnxruntime-web `version` (default: the selected one), from the
    folders the dawn implementation searches; SetupError (one line) where none holds it, naming the
    versions found instead."""
    want = selected_version() if version is None else version
    name = pinned_versions().get(want, PACKAGE)
    seen = []
    for folder in environment.node_modules_candidates():
        manifest = folder / name / "package.json"
        if not manifest.is_file():
            continue
        try:
            version = json.loads(manifest.read_text()).get("version")
        except (OSError, ValueError, AttributeError):
            version = "an unreadable version"
        if version == want:
            return folder / name / "dist"
        seen.append(f"{version} in {folder / name}")
    if seen:
        raise SetupError(f"npm {PACKAGE} {'; '.join(seen)} is installed where verify pins {want}: "
                         f"{REINSTALL.format(want)}")
    searched = ", ".join(str(f) for f in environment.node_modules_candidates())
    raise SetupError(f"ORT kernels need npm {PACKAGE} {want} ({name}), not found in {searched}; {SETUP_HINT}")


def require_pinned_ort() -> Path:
    """find_ort_dist, for what needs ORT itself rather than its cached WGSL (a session run):
    the check of the installed version against the selected one, without starting Node."""
    return find_ort_dist()


class OrtModel(Protocol):
    """What a run needs of a model: its serialized ONNX and a description that names it (the
    session cache's key). verify.sources.ort.dp4a.model and .attention_models build them. A model
    may also have `ep_options`, the WebGPU execution provider's options its session is created
    with (e.g. enableMatmulFp32Accumulation), which its description must then name."""

    @property
    def onnx_bytes(self) -> bytes: ...

    def describe(self) -> str: ...


class OrtRuntime:
    """ONNX Runtime Web in a Node process on Dawn.

    `driver` is the Vulkan driver (verify.gpu.dawn.environment) and `adapter` the adapter name
    to run on; by default the first driver on which Dawn offers an adapter, as DawnDevice does.
    """

    def __init__(self, driver: environment.VulkanDriver | None = None, adapter: str | None = None,
                 version: str | None = None):
        want = selected_version() if version is None else version
        dist = find_ort_dist(want)
        env_base = {"VERIFY_WEBGPU_MODULE": str(environment.find_webgpu_module()), "VERIFY_ORT_DIST": str(dist)}
        node = environment.find_node()
        refusals = []
        for candidate in [driver] if driver is not None else environment.vulkan_drivers():
            process = NodeProcess(node, str(RUNNER), dict(candidate.env, **env_base), node_options=("--liftoff-only",))
            try:
                reply, _ = process.request({"op": "open", "adapter": adapter})
            except NodeProcessDied as exc:
                raise SetupError(f"ONNX Runtime Web could not start on the {candidate.name} Vulkan driver: "
                                 f"{exc}") from None
            if "error" in reply:
                process.close()
                raise SetupError(f"ONNX Runtime Web could not load: {reply['error']['message'].splitlines()[0]}")
            if reply.get("adapter"):
                break
            process.close()
            refusals.append(candidate.name)
        else:
            raise SetupError(f"no Dawn adapter for ONNX Runtime Web (tried {', '.join(refusals)}); {SETUP_HINT}")
        self._process = process
        self.driver = candidate
        self.version: str = reply["ort_version"]
        if self.version != want:  # the package.json found and the ORT loaded disagree
            process.close()
            raise SetupError(f"npm {PACKAGE} {self.version} was loaded from {dist} where verify pins "
                             f"{want}: {REINSTALL.format(want)}")
        self.adapter: dict = reply["adapter"]
        #: ORT's WebGPU device as its first session created it: features and the limits ORT
        #: requested (device_features, device_limits); empty until a session exists.
        self.device: dict = {}
        self._sessions: OrderedDict[str, int] = OrderedDict()
        self._next_session = 1

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        """Whether its Node process still runs (shared_runtime replaces a dead one)."""
        return self._process.alive

    def close(self) -> None:
        self._process.close()

    def _request(self, header: dict, blobs=()) -> tuple[dict, list[bytes]]:
        try:
            reply, blobs_in = self._process.request(header, list(blobs))
        except NodeProcessDied:
            raise self._died(header.get("op")) from None
        if "error" in reply:
            error = reply["error"]
            if error.get("kind") == "ort":
                raise KernelError(f"ONNX Runtime failed: {error['message']}")
            raise OrtRunnerError(f"the ONNX Runtime runner failed: {error['message']}")
        return reply, blobs_in

    def _session(self, model: OrtModel) -> int:
        key = model.describe()
        if key in self._sessions:
            self._sessions.move_to_end(key)
            return self._sessions[key]
        if len(self._sessions) >= MAX_SESSIONS:
            _, oldest = self._sessions.popitem(last=False)
            self._request({"op": "release", "session": oldest})
        handle = self._next_session
        self._next_session += 1
        options = getattr(model, "ep_options", None) or {}
        reply, _ = self._request({"op": "session", "id": handle, **({"options": options} if options else {})},
                                 [model.onnx_bytes])
        self.device = reply.get("adapter") or self.device
        self._sessions[key] = handle
        return handle

    def run(self, model: OrtModel, feeds: dict[str, np.ndarray], *, snapshots: bool = False,
            aliases: dict[str, str] | None = None) -> OrtRun:
        """Run `model` on `feeds` (name -> array); with `snapshots`, every dispatch's bound bytes too.

        `aliases` maps an input to an output that is to be the same GPU buffer (ORT's I/O binding
        of a pre-allocated output): GroupQueryAttention then updates past_key in place as
        present_key (its static KV cache), PagedAttention its key_cache as key_cache_out, as an
        application that binds its cache does. The output comes back with the input's shape.
        """
        session = self._session(model)
        aliases = dict(aliases or {})
        unknown = sorted(set(aliases) - set(feeds))
        if unknown:
            raise ValueError(f"aliased input(s) {', '.join(unknown)} are not among the feeds ({', '.join(feeds)})")
        specs, blobs = [], []
        for name, array in feeds.items():
            array = np.ascontiguousarray(array)
            spec = {"name": name, "type": array.dtype.name, "dims": list(array.shape)}
            if name in aliases:
                spec["alias"] = aliases[name]
            specs.append(spec)
            blobs.append(array.tobytes())
        reply, blobs_in = self._request({"op": "run", "session": session, "feeds": specs, "snapshots": snapshots},
                                        blobs)
        return parse_run(reply, blobs_in)

    def _died(self, op) -> OrtProcessDied:
        """The error of a request its Node process did not live to answer; the runtime leaves
        the shared ones, so the next check starts another."""
        _forget(self)
        code = self._process.proc.returncode
        how = f"exit code {code}"
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        tail = "\n".join(self._process.stderr_tail) or "(nothing on stderr)"
        return OrtProcessDied(f"ONNX Runtime's Node process (pid {self.pid}, {RUNNER.name}) died ({how}), found "
                              f"at its {op!r} request; its last lines on stderr:\n{tail}")


class OrtProcessDied(NodeProcessDied):
    """ONNX Runtime's Node process died under a request (killed, a crash of Node, ORT's wasm or
    the driver): ORT's infrastructure, not a verdict on its kernels (an ERROR record naming it)."""


class OrtRunnerError(RuntimeError):
    """runner.mjs failed in a way that is a bug of verify, not of ONNX Runtime's kernels."""


_SHARED: dict[tuple, OrtRuntime] = {}


def require_features(runtime: OrtRuntime, dtype: str, what: str) -> None:
    """FeatureMissing unless the adapter onnxruntime-web runs on offers what a model of `dtype`
    needs: ORT refuses to generate an f16 program on an adapter without shader-f16 ("requires f16
    but the device does not support it"), which is the adapter's limit, not the kernel's. Dawn's
    Vulkan backend offers no shader-f16 on NVIDIA's drivers, so this is where an f16 config of an
    ORT kernel stops on an NVIDIA GPU."""
    offered = runtime.adapter.get("features")
    if offered is None:  # an adapter that does not say: ORT itself refuses what it cannot run
        return
    needed = {"shader-f16"} if dtype == "f16" else set()
    missing = sorted(needed - set(offered))
    if missing:
        raise FeatureMissing(f"{what} needs {', '.join(missing)}, which the adapter onnxruntime-web runs on "
                             f"({runtime.adapter.get('description') or '?'}, through Dawn) does not offer: "
                             "this config cannot run here")


def shared_runtime(driver: environment.VulkanDriver | None = None, adapter: str | None = None) -> OrtRuntime:
    """One OrtRuntime per (driver, adapter, selected onnxruntime-web version) for the life of this
    process (closed at exit). With no driver, any one of the selected version already running (else
    one on the first driver Dawn accepts); with a driver and no adapter, any one already running on
    that driver."""
    version = selected_version()
    for dead in [r for r in _SHARED.values() if not r.alive]:  # killed between two checks: start another
        _forget(dead)
    for running in _SHARED.values():
        if running.version == version and adapter is None and (driver is None or running.driver.name == driver.name):
            return running
    key = (driver.name if driver else None, adapter, version)
    if key not in _SHARED:
        _SHARED[key] = OrtRuntime(driver, adapter, version)
    return _SHARED[key]


def _forget(runtime: OrtRuntime) -> None:
    """Take `runtime` (dead) out of the shared ones, its process reaped and its pipes closed."""
    for key in [k for k, r in _SHARED.items() if r is runtime]:
        del _SHARED[key]
    runtime.close()


def close_shared() -> None:
    while _SHARED:
        _SHARED.popitem()[1].close()


atexit.register(close_shared)
