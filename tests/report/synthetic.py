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
