"""Reproduce the kernel's failure with wgpu-py (pip install wgpu numpy): python repro.py

Reads repro.json beside this file: the kernel's WGSL, every buffer's bytes, the dispatches, and
each output's acceptable values. Creates the buffers, dispatches, reads the outputs back and
compares. Prints PASS or FAIL with the worst elements; exit 0 PASS, 1 FAIL or ERROR (the WGSL
does not compile, the dispatch is refused), 2 when it cannot run here (no adapter, a missing
feature, wgpu or numpy not installed, repro.json missing or damaged: one line saying what is
missing and what to install). Only exit 1 means the bug reproduces, so nothing that keeps the
reproduction from running may end in a traceback (which Python exits 1 with).
"""

import base64
import binascii
import gzip
import json
import re
import sys
import zlib
from pathlib import Path
from typing import NoReturn

#: What to run when a package is missing (the only two this script imports).
INSTALL = "pip install wgpu numpy"


def cannot_run(reason: str) -> NoReturn:
    """Exit 2 ("cannot run here") with one line: never exit 1, which would say the bug reproduces."""
    print(f"SKIP  cannot run here: {reason}", file=sys.stderr)
    sys.exit(2)


try:
    import numpy as np
    import wgpu
except ImportError as missing:  # numpy, wgpu, or what wgpu needs (cffi)
    cannot_run(f"Python ({sys.executable}) cannot import {missing.name or missing}; {INSTALL}")
if not hasattr(wgpu, "gpu") or not hasattr(wgpu.gpu, "request_adapter_sync"):
    cannot_run(f"wgpu {getattr(wgpu, '__version__', '?')} is too old for this script (it has no "
               f"wgpu.gpu.request_adapter_sync); pip install --upgrade wgpu")

HERE = Path(__file__).resolve().parent
DTYPES = {"f16": "<f2", "f32": "<f4", "i8": "i1", "u8": "u1", "i16": "<i2", "u16": "<u2", "i32": "<i4",
          "u32": "<u4"}
#: What a Linux machine without a GPU installs for wgpu to find an adapter (Mesa's CPU Vulkan driver).
NO_ADAPTER = ("no WebGPU adapter: wgpu found no Vulkan, Metal or D3D12 driver; on Linux without a GPU install "
              "Mesa's lavapipe (Debian/Ubuntu: apt install mesa-vulkan-drivers)")
#: The format repro.json declares, which this script reads.
FORMAT = "webgpu-kernel-repro/1"
#: The buffer usages repro.json names, as WebGPU's binding types.
USAGES = ("storage", "read-only-storage", "uniform")
#: WebGPU's feature names -> wgpu-native's, where they differ.
FEATURES = {"subgroups": "subgroup"}
SUBGROUP_PROBE = """
@group(0) @binding(0) var<storage, read_write> size_out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32, @builtin(subgroup_size) n: u32) {
  if (i == 0u) { size_out[0] = n; }
}
"""


def unpack(text: str) -> bytes:
    """Bytes of a blob: base64 of gzip."""
    return gzip.decompress(base64.b64decode(text))


def load(path: Path) -> dict:
    """repro.json, checked through before anything runs: a missing, truncated or edited file is
    one line and exit 2, never a KeyError half way through that would exit 1."""
    again = "copy the reproduction's folder again (repro.json comes with repro.py)"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        cannot_run(f"{path.name} is missing beside {Path(__file__).name}; {again}")
    except (OSError, UnicodeDecodeError) as error:
        cannot_run(f"{path} cannot be read ({error}); {again}")
    try:
        repro = json.loads(text)
    except ValueError as error:
        cannot_run(f"{path.name} is not valid JSON (truncated or edited: {error}); {again}")
    problem = damage(repro)
    if problem:
        cannot_run(f"{path.name} is damaged ({problem}); {again}")
    return repro


def damage(repro) -> str:
    """What makes `repro` unusable ("" if nothing): a missing or mistyped field, a blob that is
    not base64 of gzip or not as long as its shape says, an index to no buffer or pipeline."""
    if not isinstance(repro, dict) or repro.get("format") != FORMAT:
        return f"not a {FORMAT} document"
    fields = {"title": str, "expect": dict, "features": list, "limits": dict, "pipelines": list, "buffers": list,
              "dispatches": list, "outputs": list}
    for name, kind in fields.items():
        if not isinstance(repro.get(name), kind):
            return f"{name!r} is missing or not a {kind.__name__}"
    buffers, pipelines = repro["buffers"], repro["pipelines"]
    try:
        for p in pipelines:
            if not (isinstance(p["wgsl"], str) and isinstance(p["entryPoint"], str)
                    and all(isinstance(b, int) and isinstance(kind, str) for b, kind in p["bindings"])):
                return "a pipeline without its WGSL, entry point or bindings"
        sizes = []
        for b in buffers:
            if b["usage"] not in USAGES:
                return f"buffer {b.get('name')!r} has the usage {b['usage']!r}"
            sizes.append(len(unpack(b["data"])))
            if b["guard"] and b["guard"][0] + b["guard"][1] > sizes[-1]:
                return f"buffer {b['name']!r} is shorter than its guard's end"
        for d in repro["dispatches"]:
            if not 0 <= d["pipeline"] < len(pipelines) or any(not 0 <= i < len(buffers) for _, i in d["bindings"]):
                return "a dispatch names a pipeline or buffer that is not there"
            if len(d["workgroups"]) != 3 or any(not isinstance(n, int) or n < 0 for n in d["workgroups"]):
                return "a dispatch's workgroup counts are not three counts"
        for o in repro["outputs"]:
            count = 1
            for n in o["shape"]:
                if not isinstance(n, int) or n < 0:
                    return f"output {o.get('name')!r} has the shape {o['shape']}"
                count *= n
            if o["dtype"] not in DTYPES or not 0 <= o["buffer"] < len(buffers):
                return f"output {o['name']!r} is {o['dtype']!r} in buffer {o['buffer']}"
            if sizes[o["buffer"]] < count * np.dtype(DTYPES[o["dtype"]]).itemsize:
                return f"output {o['name']!r} does not fit its buffer"
            for key in ("lo", "hi", "budget", "exact"):
                if o[key] is None and key in ("lo", "budget"):
                    return f"output {o['name']!r} has no {key}"
                width = 1 if key == "exact" else 8
                if o[key] is not None and len(unpack(o[key])) != count * width:
                    return f"output {o['name']!r}: {key} does not hold {count} elements"
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as error:
        return f"{type(error).__name__}: {error}"
    except (binascii.Error, zlib.error, EOFError, OSError) as error:  # a blob that is not base64 of gzip
        return f"a blob is not base64 of gzip ({error})"
    return ""


def for_naga(wgsl: str) -> str:
    """WGSL requires `enable subgroups;` before subgroup built-ins; Naga (wgpu) rejects the
    directive and provides the built-ins without it, so it becomes a comment (same line)."""
    return re.sub(r"^[ \t]*enable[ \t]+subgroups[ \t]*;", "// enable subgroups;", wgsl, flags=re.M)


def kebab(name: str) -> str:
    return re.sub(r"[A-Z]", lambda m: "-" + m[0].lower(), name)


def compile_pipeline(device, wgsl: str, entry_point: str, bindings):
    """A compute pipeline whose bind group layout lists every binding the WGSL declares."""
    layout = device.create_bind_group_layout(entries=[
        {"binding": b, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": kind}} for b, kind in bindings])
    module = device.create_shader_module(code=for_naga(wgsl))
    pipeline = device.create_compute_pipeline(layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
                                              compute={"module": module, "entry_point": entry_point})
    return pipeline, layout


def submit(device, pipelines, buffers, dispatches) -> list:
    """One submission: a compute pass per dispatch; the bytes of every buffer read back (else None)."""
    encoder = device.create_command_encoder()
    for d in dispatches:
        pipeline, layout = pipelines[d["pipeline"]]
        group = device.create_bind_group(layout=layout, entries=[
            {"binding": binding, "resource": {"buffer": buffers[index][0]}} for binding, index in d["bindings"]])
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(*d["workgroups"])
        compute.end()
    staging = []
    for gpu, readback in buffers:
        target = None
        if readback:
            target = device.create_buffer(size=gpu.size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
            encoder.copy_buffer_to_buffer(gpu, 0, target, 0, gpu.size)
        staging.append(target)
    device.queue.submit([encoder.finish()])
    out = []
    for target in staging:
        if target is None:
            out.append(None)
            continue
        target.map_sync("READ")
        out.append(bytes(target.read_mapped()))
        target.unmap()
    return out


def judge(output: dict, data: bytes) -> dict:
    """One output against its acceptable values: an element v passes where lo - budget <= v <=
    hi + budget (err/budget <= 1); NaN never passes where a number is expected, nor anything where
    the budget is NaN; where `exact` is set it must equal the reference bit for bit (NaN matching NaN)."""
    shape = tuple(output["shape"])
    count = int(np.prod(shape, dtype=np.int64))
    got = np.frombuffer(data, DTYPES[output["dtype"]], count).astype(np.float64)
    lo = np.frombuffer(unpack(output["lo"]), "<f8")
    hi = np.frombuffer(unpack(output["hi"]), "<f8") if output["hi"] else lo
    budget = np.frombuffer(unpack(output["budget"]), "<f8")
    reference = (lo + hi) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        error = np.maximum(np.maximum(lo - got, got - hi), 0.0)
        error[np.isinf(got) & ((got == lo) | (got == hi))] = 0.0  # the expected infinity
        error[np.isnan(error)] = np.inf
        ratio = np.where(error == 0, 0.0, error / budget)
    ratio[np.isnan(ratio) | np.isnan(budget)] = np.inf  # a NaN budget never licenses anything
    mismatches = 0
    if output["exact"]:
        exact = np.frombuffer(unpack(output["exact"]), np.uint8).astype(bool)
        same = (got == reference) | (np.isnan(got) & np.isnan(reference))
        mismatches = int((exact & ~same).sum())
        ratio = np.where(exact, np.where(same, 0.0, np.inf), ratio)
    order = sorted(range(count), key=lambda i: (-ratio[i], i))[:8]
    worst = [{"index": list(np.unravel_index(i, shape)), "got": got[i], "lo": lo[i], "hi": hi[i],
              "budget": budget[i], "ratio": ratio[i]} for i in order if ratio[i] > 0]
    return {"name": output["name"], "elements": count, "failing": int((ratio > 1).sum()),
            "nan": int((np.isnan(got) & ~np.isnan(reference)).sum()), "exact_mismatches": mismatches,
            "max_ratio": float(ratio.max(initial=0.0)), "worst": worst}


def reproduce(repro: dict) -> dict:
    result = {"verdict": "SKIP", "reason": "", "adapter": None, "subgroup_size": None, "outputs": [], "guards": []}
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as error:  # wgpu-native missing for this platform, or no driver it can load
        first = (str(error).strip().splitlines() or [""])[0]
        result["reason"] = f"{NO_ADAPTER} (wgpu: {type(error).__name__}: {first})"
        return result
    if adapter is None:
        result["reason"] = NO_ADAPTER
        return result
    info = adapter.info
    result["adapter"] = " / ".join(str(info.get(k)) for k in ("vendor", "device", "description", "backend_type")
                                   if info.get(k))
    wanted = [FEATURES.get(f, f) if f not in adapter.features else f for f in repro["features"]]
    lacking = [f for f in wanted if f not in adapter.features]
    if lacking:
        result["reason"] = f"the adapter lacks {', '.join(lacking)}, which the kernel needs"
        return result
    features = set(wanted) | ({"subgroup"} & set(adapter.features))
    limits = {kebab(k): min(v, adapter.limits[kebab(k)]) for k, v in repro["limits"].items()
              if kebab(k) in adapter.limits}
    try:
        device = adapter.request_device_sync(required_features=sorted(features), required_limits=limits)
    except Exception as error:  # wgpu raises plain RuntimeErrors for device requests
        result["reason"] = f"the adapter refused a device: {error}"
        return result
    if "subgroup" in device.features:  # the subgroup size this adapter runs a 64-wide workgroup with
        probe = compile_pipeline(device, SUBGROUP_PROBE, "main", [(0, "storage")])
        size = device.create_buffer(size=16, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
        [data] = submit(device, [probe], [(size, True)],
                        [{"pipeline": 0, "bindings": [[0, 0]], "workgroups": [1, 1, 1]}])
        result["subgroup_size"] = int(np.frombuffer(data, "<u4")[0])

    # The kernel: compile, create every buffer from its recorded bytes, dispatch as recorded.
    try:
        pipelines = [compile_pipeline(device, p["wgsl"], p["entryPoint"], p["bindings"]) for p in repro["pipelines"]]
    except wgpu.GPUError as error:
        result["verdict"], result["reason"] = "ERROR", f"the WGSL does not compile:\n{error}"
        return result
    usages = dict(zip(USAGES, (wgpu.BufferUsage.STORAGE, wgpu.BufferUsage.STORAGE, wgpu.BufferUsage.UNIFORM)))
    initial = [unpack(b["data"]) for b in repro["buffers"]]
    buffers = [(device.create_buffer_with_data(data=data, usage=usages[b["usage"]] | wgpu.BufferUsage.COPY_SRC),
                b["readback"]) for b, data in zip(repro["buffers"], initial)]
    try:
        read = submit(device, pipelines, buffers, repro["dispatches"])
    except wgpu.GPUError as error:
        result["verdict"], result["reason"] = "ERROR", f"the dispatch was refused: {error}"
        return result

    # Compare: every judged output, and the guard bytes past the end of every buffer read back.
    result["outputs"] = [judge(output, read[output["buffer"]]) for output in repro["outputs"]]
    for index, b in enumerate(repro["buffers"]):
        if b["guard"]:
            offset, length = b["guard"]
            named = [o["name"] for o in repro["outputs"] if o["buffer"] == index]
            result["guards"].append({"buffer": b["name"], "output": named[0] if named else b["name"],
                                     "intact": (read[index][offset:offset + length]
                                                == initial[index][offset:offset + length])})
    failed = [o for o in result["outputs"] if o["failing"] or o["nan"] or o["exact_mismatches"]]
    overrun = [g for g in result["guards"] if not g["intact"]]
    result["verdict"] = "FAIL" if failed or overrun else "PASS"
    reasons = [f"{g['output']}: wrote past the end of the buffer" for g in overrun]
    reasons += [f"{o['name']}: {o['failing']}/{o['elements']} elements over budget"
                + (f"; {o['nan']} NaN" if o["nan"] else "")
                + (f"; {o['exact_mismatches']} not bit-exact where required" if o["exact_mismatches"] else "")
                for o in failed]
    result["reason"] = "; ".join(reasons) or "every output within its budget"
    return result


def fmt(x) -> str:
    x = float(x)
    return f"{x:.5g}" if np.isfinite(x) else str(x)


def main() -> int:
    repro = load(HERE / "repro.json")
    print(repro["title"])
    result = reproduce(repro)
    print(f"{result['verdict']}  {result['reason']}")
    if result["adapter"]:
        print(f"adapter: {result['adapter']}; subgroup size {result['subgroup_size'] or 'n/a'}")
    for o in result["outputs"]:
        print(f"  {o['name']}: {o['failing']}/{o['elements']} over budget, {o['nan']} NaN, "
              f"max err/budget {fmt(o['max_ratio'])}")
        for w in o["worst"][:5]:
            expected = fmt(w["lo"]) if w["lo"] == w["hi"] else f"[{fmt(w['lo'])}, {fmt(w['hi'])}]"
            print(f"    {o['name']}[{', '.join(map(str, w['index']))}] = {fmt(w['got'])}, expected {expected} "
                  f"± {fmt(w['budget'])} (err/budget {fmt(w['ratio'])})")
    shown = repro["expect"].get(result["verdict"].lower())
    if shown:
        print(shown)
    return {"PASS": 0, "FAIL": 1, "ERROR": 1}.get(result["verdict"], 2)


if __name__ == "__main__":
    sys.exit(main())
