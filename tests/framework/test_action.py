"""The reusable GitHub Action (action.yml) as far as a machine without GitHub can check it: every
input and output documented in docs/ci.md §5 and used, actions pinned to a major version, and its
own shell steps run with a fake GitHub environment on a small gate (GitHub's actions it `uses:`,
the apt install of Mesa, the pip install of the action and `verify setup` are not run: they need
GitHub, root or the network; `act` needs Docker, which this machine lacks)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from verify.results.junit import write_junit
from verify.results.record import CheckResult, FailureKind, Verdict
from verify.results.step_summary import main as summary_main

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
STEPS = ACTION["runs"]["steps"]
#: Steps that need GitHub's runner, root or the network: not run here.
NOT_RUN_HERE = {"mesa", "install", "setup"}
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _ci_section() -> str:
    text = (ROOT / "docs" / "ci.md").read_text()
    return text.split("## 5.", 1)[1].split("\n## 6.", 1)[0]


def test_the_action_is_composite_and_pins_every_action_it_uses():
    assert ACTION["runs"]["using"] == "composite"
    uses = [step["uses"] for step in STEPS if "uses" in step]
    assert {u.split("@")[0] for u in uses} >= {"actions/setup-python", "actions/cache", "actions/upload-artifact",
                                               "github/codeql-action/upload-sarif"}
    assert all(re.fullmatch(r"[\w./-]+@v\d+", u) for u in uses), uses
    assert all(step.get("shell") == "bash" for step in STEPS if "run" in step)


def test_every_input_and_output_is_documented_and_used():
    section = _ci_section()
    steps_text = yaml.safe_dump(STEPS)
    for name, spec in ACTION["inputs"].items():
        assert f"| `{name}` |" in section, f"input {name} is not in docs/ci.md §5"
        assert f"`{spec.get('default', '')}`" in section.split(f"| `{name}` |", 1)[1].split("\n", 1)[0], name
        assert f"inputs.{name}" in steps_text, f"input {name} is never used"
    ids = {step.get("id") for step in STEPS}
    for name, spec in ACTION["outputs"].items():
        assert f"| `{name}` |" in section, f"output {name} is not in docs/ci.md §5"
        step = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.[\w-]+ \}\}", spec["value"])
        assert step and step[1] in ids, spec["value"]


def _evaluate(text: str, context: dict) -> str:
    """`${{ a.b.c }}` replaced by its value in `context` (names only: GitHub's functions are not
    evaluated, so a step using one fails here rather than run on a guess)."""
    def value(match):
        expression = match[1]
        if not re.fullmatch(r"[\w.-]+", expression):
            raise AssertionError(f"expression not evaluated here: {expression}")
        found = context
        for part in expression.split("."):
            found = found.get(part, "") if isinstance(found, dict) else ""
        return str(found)

    return _EXPRESSION.sub(value, str(text))


def run_steps(tmp_path: Path, inputs: dict, only: set | None = None) -> tuple[dict, dict]:
    """Run the action's own shell steps (those not in NOT_RUN_HERE) as a runner would: in the
    workspace, inputs and outputs through `${{ }}` and $GITHUB_OUTPUT. Returns (steps' outputs,
    exit codes by step id)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    summary = tmp_path / "summary.md"
    given = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    given.update(inputs)
    context = {"inputs": given, "github": {"action_path": str(ROOT)}, "runner": {"os": "Linux"}, "steps": {}}
    codes = {}
    for step in STEPS:
        if "run" not in step or step.get("id") in NOT_RUN_HERE or (only is not None and step.get("id") not in only):
            continue
        condition = step.get("if")
        assert condition in (None, "${{ always() }}"), f"condition not evaluated here: {condition}"
        output = tmp_path / f"{step['id']}.out"
        output.write_text("")
        env = dict(os.environ, **{k: _evaluate(v, context) for k, v in step.get("env", {}).items()},
                   GITHUB_OUTPUT=str(output), GITHUB_STEP_SUMMARY=str(summary), GITHUB_WORKSPACE=str(workspace),
                   GITHUB_ACTION_PATH=str(ROOT), PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", _evaluate(step["run"], context)], cwd=workspace,
                              env=env, capture_output=True, text=True, timeout=900)
        codes[step["id"]] = done.returncode
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        context["steps"][step["id"]] = {"outputs": outputs}
        if done.returncode != 0 and step["id"] != "verdict":
            raise AssertionError(f"step {step['id']} failed ({done.returncode}): {done.stdout}{done.stderr}")
    return context["steps"], codes


@pytest.mark.webgpu
def test_the_actions_steps_run_a_gate_and_write_its_files_and_summary(tmp_path):
    steps, codes = run_steps(tmp_path, {"kernels": "merge_state", "profile": "quick",
                                        "args": "--implementation wgpu --jobs 2", "output": "out"})
    assert set(steps["keys"]["outputs"]) == {"pip", "code"}
    gate = steps["gate"]["outputs"]
    assert gate["exit-code"] == "0" and gate["sarif-written"] == "true"
    workspace = tmp_path / "workspace"
    results = json.loads((workspace / gate["results"]).read_text())
    assert {r["kernel"] for r in results["records"]} == {"merge_state"} and results["complete"]
    schema = json.loads((ROOT / "docs" / "schema" / "results-2.json").read_text())
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(results)) == []
    sarif = json.loads((workspace / gate["sarif"]).read_text())
    sarif_schema = json.loads((ROOT / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text())
    assert list(jsonschema.Draft4Validator(sarif_schema).iter_errors(sarif)) == []
    assert sarif["runs"][0]["originalUriBaseIds"]["SRCROOT"]["uri"] == workspace.resolve().as_uri() + "/"
    assert (workspace / gate["report"]).is_file() and (workspace / gate["junit"]).is_file()
    summary = (tmp_path / "summary.md").read_text()
    assert f"all {len(results['records'])} checks held" in summary and "| merge_state |" in summary
    assert codes["verdict"] == 0


@pytest.mark.parametrize("code,fail,expected", [("0", "true", 0), ("1", "true", 1), ("2", "true", 2),
                                                 ("1", "false", 0), ("", "true", 2)])
def test_the_verdict_step_fails_the_job_as_asked(tmp_path, code, fail, expected):
    step = next(s for s in STEPS if s.get("id") == "verdict")
    env = dict(os.environ, CODE=code, FAIL_ON_ERROR=fail)
    done = subprocess.run(["bash", "-e", "-c", step["run"]], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == expected, done.stdout


def test_the_summary_names_each_failure_and_counts_known_findings_apart(tmp_path, capsys):
    def result(kernel, check, verdict, reason="", **fields):
        return CheckResult(kernel=kernel, check=check, config={"dtype": "f16"}, verdict=verdict, reason=reason, **fields)

    junit = tmp_path / "junit.xml"
    write_junit([result("rope", "reference", Verdict.PASS), result("rope", "sanitize", Verdict.FAIL, "race | on s[0]",
                                                                   failure_kind=FailureKind.SANITIZER),
                 result("tvm.decode", "reference", Verdict.KNOWN, "nan", finding="TVM's -inf"),
                 result("tvm.decode", "determinism", Verdict.ERROR, "time limit"),
                 result("tvm.decode", "implementations", Verdict.SKIP, "no Dawn")], junit)
    assert summary_main([str(junit)]) == 0
    text = capsys.readouterr().out
    assert "❌ 2 of 5 checks did not hold" in text
    assert "| rope | 1 | 1 | 0 | 0 | 0 |" in text and "| tvm.decode | 0 | 0 | 1 | 1 | 1 |" in text
    assert "| FAIL | rope | sanitize [dtype=f16] | race \\| on s[0] |" in text
    assert "| ERROR | tvm.decode | determinism [dtype=f16] | time limit |" in text


def test_the_summary_of_a_file_that_is_not_junit_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "junit.xml").write_text("not xml")
    assert summary_main([str(tmp_path / "junit.xml")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
