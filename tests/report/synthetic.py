"""Results documents for the report tests, built from the recorded fixtures in tests/fixtures/results.

`load_fixture` reads a real run; `synthetic_document` multiplies real records into a large run
(a nightly gate's size) with a known mix of verdicts, kernels and configs, so the size and
render time of a big report can be measured without running the kernels.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "results"
PASSING = FIXTURES / "merge_state_pass.json"
FAILING = FIXTURES / "merge_state_empty_as_zero.json"
KERNELS = ("decode.tiled", "decode.sharded", "merge_state", "rope", "dp4a.quantize", "dp4a.matmul")
GPU = {"name": "NVIDIA H200", "vendor": "nvidia", "backend": "Vulkan", "type": "DiscreteGPU",
       "driver": "NVIDIA 570.86", "subgroup_size": 32}


def load_fixture(path: Path) -> dict:
    return json.loads(path.read_text())


def on_adapter(document: dict, adapter: dict, host: str) -> dict:
    """The same run as if made on another machine: every record's adapter replaced."""
    moved = copy.deepcopy(document)
    moved["host"] = host
    for record in moved["records"]:
        record["adapter"] = dict(adapter)
    return moved


def record(document: dict, check: str, verdict: str) -> dict:
    return copy.deepcopy(next(r for r in document["records"] if r["check"] == check and r["verdict"] == verdict))


def skipped(template: dict, reason: str = "adapter lacks shader-f16") -> dict:
    keep = ("kernel", "family", "source", "config", "check", "profile", "seed", "budget", "verify_version", "adapter")
    return dict({k: copy.deepcopy(template[k]) for k in keep if k in template}, verdict="skip", reason=reason, examples=0)


def errored(template: dict) -> dict:
    return dict(skipped(template), verdict="error", reason="internal error in verify: ZeroDivisionError: float division by zero",
                traceback='Traceback (most recent call last):\n  File "verify/checks/runner.py", line 98, in run_check\n'
                          "ZeroDivisionError: float division by zero\n")


def known(template: dict, finding: str) -> dict:
    """A failing record as the worker writes it for a kernel documented to fail that check."""
    return dict(copy.deepcopy(template), verdict="known", finding=finding, finding_reproduced=True)


def synthetic_document(records: int) -> dict:
    """`records` records over six kernels: every 20th fails, every 20th (offset 1) is skipped,
    one is an internal error; the rest pass, alternating a budget check and a bitwise one."""
    passing, failing = load_fixture(PASSING), load_fixture(FAILING)
    document = copy.deepcopy(passing)
    templates = [record(passing, "reference", "pass"), record(passing, "determinism", "pass")]
    fail = record(failing, "reference", "fail")
    document["records"] = []
    for i in range(records):
        if i % 20 == 0:
            item = copy.deepcopy(fail)
        elif i % 20 == 1:
            item = skipped(templates[0])
        elif i == 2:
            item = errored(templates[0])
        else:
            item = copy.deepcopy(templates[i % 2])
        item["kernel"] = KERNELS[i % len(KERNELS)]
        item["config"] = dict(item["config"], head_dim=64 * (1 + i % 4), variant=i)
        document["records"].append(item)
    return document


#: Configs as long as ORT's programs' are in a real gate's report (the longest rows of a page).
ORT_CONFIG = {"dtype": "f16", "bits": 4, "block_size": 32, "has_zero_points": 1, "has_bias": 0, "m": 0, "n": 0, "k": 0,
              "program": "DP4AMatMulNBits", "tile": "64x64", "acc": "f16", "mul": "f16", "accuracy_level": 4}
#: The adapters of a gate merged from four machines: long names and drivers, two implementations.
WIDE_ADAPTERS = (
    {"name": "llvmpipe (LLVM 15.0.6, 256 bits)", "vendor": "llvmpipe", "backend": "Vulkan", "type": "CPU",
     "driver": "Mesa 22.3.6 (LLVM 15.0.6)", "subgroup_size": 8, "implementation": "wgpu"},
    {"name": "llvmpipe (LLVM 19.1.7, 256 bits)", "vendor": "llvmpipe", "backend": "Vulkan", "type": "CPU",
     "driver": "Mesa 25.0.7-2 (LLVM 19.1.7)", "subgroup_size": 8, "implementation": "dawn"},
    dict(GPU, implementation="wgpu"),
    {"name": "Intel(R) Iris(R) Xe Graphics (ADL GT2)", "vendor": "intel", "backend": "Vulkan", "type": "IntegratedGPU",
     "driver": "Intel open-source Mesa driver: Mesa 24.2.8-1ubuntu1~24.04.1", "subgroup_size": 32,
     "implementation": "dawn"},
)
LONG_FINDING = ("ORT's FlashAttentionDecodeQKV sums workgroup memory it never wrote: score columns past the head "
                "(inner_qk_values) and the tile output it adds onto (tile_output).\nNeither is zeroed by the program.")


def wide_documents() -> list[dict]:
    """A gate's report at its widest, as four machines' results merged: long kernel names, ORT's
    long configs in failure cards, known findings (with their long headlines), skips and pass
    tables, long skip reasons and commands, four adapter columns."""
    failing, passing = load_fixture(FAILING), load_fixture(PASSING)
    documents = []
    for i, adapter in enumerate(WIDE_ADAPTERS):
        document = on_adapter(copy.deepcopy(passing), adapter, host=f"runner-{i}.ci.example.org")
        document["argv"] = ["gate", "--profile", "nightly", "--kernels", ",".join(KERNELS) + ",ort.attention.paged_decode_qkv",
                            "--out", "reports/nightly/" + "x" * 40, "--junit", "reports/nightly/junit.xml"]
        records = []
        for kernel in ("ort.dp4a.matmul_small_m", "ort.attention.paged_decode_qkv", *KERNELS):
            for template in document["records"]:
                records.append(dict(copy.deepcopy(template), kernel=kernel, config=dict(ORT_CONFIG)))
        fail = dict(record(failing, "reference", "fail"), kernel="ort.attention.paged_decode_qkv",
                    config=dict(ORT_CONFIG), adapter=dict(adapter))
        records.append(fail)
        records.append(dict(known(fail, LONG_FINDING), kernel="ort.attention.decode_qkv"))
        records.append(dict(skipped(fail, reason="adapter lacks shader-f16, which this config's dtype=f16 needs; "
                                                 "run on an adapter with the shader-f16 feature (verify adapters)"),
                            kernel="ort.dp4a.matmul_small_m"))
        document["records"] = records
        documents.append(document)
    return documents
