"""SARIF output (verify.report.sarif): every failure and every sanitizer finding a result at the
line of the `.wgsl` file to edit, valid under the official SARIF 2.1.0 schema (OASIS, vendored in
tests/fixtures/sarif with its notice)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.fixtures.mutants.regenerate import fixture_path, specs
from verify.findings import all_findings
from verify.kernels.attention.merge_state import MergeState
from verify.report.sarif import refs, sarif_log
from verify.results.record import CheckResult, ExampleSummary, FailureKind, Source, Verdict
from verify.wgsl import sha256
from verify.wgsl.source_map import source_location

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text())
VALIDATOR = jsonschema.Draft4Validator(SCHEMA)


def valid(log: dict) -> dict:
    """`log`, after asserting the official schema holds it (every error listed)."""
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(log)]
    assert errors == [], errors
    return log


def results(log: dict) -> list[dict]:
    return log["runs"][0]["results"]


def where(result: dict, key: str = "locations") -> list[tuple[str, int, str | None]]:
    """(uri, line, base id) of a result's locations."""
    return [(p["physicalLocation"]["artifactLocation"]["uri"], p["physicalLocation"]["region"]["startLine"],
             p["physicalLocation"]["artifactLocation"].get("uriBaseId")) for p in result.get(key, [])]


def record(verdict: Verdict, check: str = "reference", *, reason: str = "", kind: FailureKind | None = None,
           source: Source | None = None, reasons: list | None = None, case_file: str | None = None, **fields):
    shrunk = ExampleSummary(score=float("inf"), passed=False, message=reason, reasons=list(reasons or []),
                            case_file=case_file) if verdict is not Verdict.PASS else None
    return CheckResult(kernel="k", check=check, config={"dtype": "f32"}, verdict=verdict, reason=reason,
                       failure_kind=kind, source=source or Source("own", "", ""), shrunk=shrunk, **fields)


def test_the_lines_a_message_names_are_read_with_their_body_file_and_column():
    race = ('race on storage buffer s[0] in epoch 0: write by (wg 0, lane 0) at line 85 '
            '(verify/kernels/attention/merge_state.wgsl:76) "s[row] = m + log2(d);" and read by (wg 0, lane 1) '
            'at line 54 "s_self = s[row];"')
    assert [(r.line, r.origin, r.origin_line) for r in refs(race)] == [
        (85, "verify/kernels/attention/merge_state.wgsl", 76), (54, None, None)]
    naga = "WGSL does not compile:\nShader '' parsing error: expected expression\n   ┌─ wgsl:86:26\n"
    tint = "WGSL does not compile:\n:86:26 error: unable to parse right side of + expression"
    assert [(r.line, r.column) for r in refs(naga)] == [(86, 26)]
    assert [(r.line, r.column) for r in refs(tint)] == [(86, 26)]


def test_a_sanitizer_finding_in_verifys_own_kernel_points_at_the_kernels_wgsl_file(tmp_path):
    """The sanitizer's message as it names a line of merge_state's module, mapped through the
    module's `// source:` marker: the result is on the line of verify/kernels/attention/
    merge_state.wgsl that holds the quoted statement, relative to the repository root."""
    kernel = MergeState()
    text = kernel.wgsl(kernel.config({"head_dim": 128, "dtype": "f16"}))
    lines = text.splitlines()
    write = next(i for i, line in enumerate(lines, 1) if "s[row] = m + log2(d);" in line)
    read = next(i for i, line in enumerate(lines, 1) if "s_self = s[row];" in line)
    message = (f"race on storage buffer s[0] in epoch 0: write by (wg 0, lane 0) at line {write} "
               f"({source_location(text, write)}) \"s[row] = m + log2(d);\" and read by (wg 0, lane 1) at line "
               f"{read} ({source_location(text, read)}) \"s_self = s[row];\"")
    other = message.replace("race on", "unsynchronised access to")
    failed = record(Verdict.FAIL, "sanitize", reason=message, kind=FailureKind.SANITIZER, reasons=[message, other],
                    source=Source("own", "verify.kernels.attention.merge_state:MergeState", sha256(text)))
    log = valid(sarif_log([([failed], tmp_path / "results.json")], wgsl_dir=tmp_path / "wgsl", root=ROOT))
    found = results(log)
    assert len(found) == 2  # one result per sanitizer finding
    uri, line, base = where(found[0])[0]
    assert (uri, base) == ("verify/kernels/attention/merge_state.wgsl", "SRCROOT")
    source_lines = (ROOT / uri).read_text().splitlines()
    assert "s[row] = m + log2(d);" in source_lines[line - 1]
    related = where(found[0], "relatedLocations")
    assert len(related) == 1 and "s_self = s[row];" in source_lines[related[0][1] - 1]
    assert found[0]["level"] == "error" and found[0]["ruleId"] == "sanitize"
    assert log["runs"][0]["originalUriBaseIds"]["SRCROOT"]["uri"] == ROOT.as_uri() + "/"
    assert not (tmp_path / "wgsl").exists()  # the kernel's own file was named: no copy needed


def test_generated_wgsl_without_markers_is_written_beside_the_results_and_pointed_at(tmp_path):
    """TVM's and ORT's WGSL has no `// source:` marker: the module as it ran, taken from the saved
    case's sidecar, is written to wgsl/<sha256>.wgsl and the result points at its line."""
    text = "".join(f"// line {i}\n" for i in range(1, 30))
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "k-sanitize-shrunk.json").write_text(json.dumps({"wgsl": text}))
    message = 'read of uninitialised workgroup memory tile[3] by (wg 0, lane 2) at line 12 "x = tile[i];"'
    failed = record(Verdict.FAIL, "sanitize", reason=message, kind=FailureKind.SANITIZER, reasons=[message],
                    source=Source("tvm", "verify.sources.tvm.attention.decode:TvmDecode", sha256(text)),
                    case_file=str(cases / "k-sanitize-shrunk.npz"))
    log = valid(sarif_log([([failed], tmp_path / "results.json")], wgsl_dir=tmp_path / "wgsl", root=tmp_path))
    (uri, line, base), = where(results(log)[0])
    assert (uri, line, base) == (f"wgsl/{sha256(text)}.wgsl", 12, "SRCROOT")
    assert (tmp_path / uri).read_text() == text


def test_a_sidecar_whose_wgsl_is_not_the_recorded_one_is_not_used(tmp_path):
    """An edited sidecar (its WGSL's sha256 is not the record's) is not what ran: the result falls
    back to the results file rather than point at a line of other code."""
    (tmp_path / "x.json").write_text(json.dumps({"wgsl": "// edited\n" * 20}))
    failed = record(Verdict.FAIL, "sanitize", reason="stray read at line 3", kind=FailureKind.SANITIZER,
                    reasons=["stray read at line 3"], source=Source("tvm", "m:K", sha256("// original\n" * 20)),
                    case_file=str(tmp_path / "x.npz"))
    log = valid(sarif_log([([failed], tmp_path / "results.json")], wgsl_dir=tmp_path / "wgsl", root=tmp_path))
    assert where(results(log)[0]) == [("results.json", 1, "SRCROOT")]
    assert not (tmp_path / "wgsl").exists()


def test_levels_and_rules_by_verdict(tmp_path):
    """FAIL and DIVERGENCE are errors, ERROR a warning (no verdict on the kernel), KNOWN a note under
    the finding's id with its title; PASS and SKIP are no results."""
    finding = next(iter(all_findings().values()))
    records = [record(Verdict.FAIL, reason="v: over budget", kind=FailureKind.OVER_BUDGET),
               record(Verdict.DIVERGENCE, "implementations", reason="Tint refuses it", kind=FailureKind.COMPILE_DIVERGENCE),
               record(Verdict.ERROR, reason="time limit", kind=FailureKind.TIME_LIMIT),
               record(Verdict.KNOWN, "sanitize", reason="a known race", kind=FailureKind.SANITIZER,
                      finding=finding.title, finding_id=finding.id),
               record(Verdict.PASS), record(Verdict.SKIP, reason="adapter lacks shader-f16")]
    log = valid(sarif_log([(records, tmp_path / "results.json")], wgsl_dir=tmp_path / "wgsl", root=tmp_path))
    assert [(r["ruleId"], r["level"]) for r in results(log)] == [
        ("reference", "error"), ("implementations", "error"), ("reference", "warning"), (finding.id, "note")]
    rules = {rule["id"]: rule for rule in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rules[finding.id]["shortDescription"]["text"] == finding.title
    assert rules[finding.id]["defaultConfiguration"]["level"] == "note"
    assert results(log)[3]["properties"]["findingIds"] == [finding.id]


def test_a_compile_error_points_at_the_line_and_column_the_compiler_names(tmp_path):
    wgsl = tmp_path / "kernel.wgsl"
    wgsl.write_text("fn main() {\n  let x = 1 +;\n}\n")
    failed = record(Verdict.FAIL, reason="WGSL does not compile:\n:2:13 error: unable to parse",
                    kind=FailureKind.COMPILE_ERROR, source=Source("file", str(wgsl), sha256(wgsl.read_text())))
    log = valid(sarif_log([([failed], tmp_path / "results.json")], wgsl_dir=tmp_path / "wgsl", root=tmp_path))
    region = results(log)[0]["locations"][0]["physicalLocation"]["region"]
    assert results(log)[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "kernel.wgsl"
    assert region == {"startLine": 2, "startColumn": 13}


def test_a_file_outside_the_repository_root_is_an_absolute_uri(tmp_path):
    wgsl = tmp_path / "outside.wgsl"
    wgsl.write_text("fn f() {}\n")
    failed = record(Verdict.FAIL, reason="line 1 is wrong", source=Source("file", str(wgsl), sha256(wgsl.read_text())))
    root = tmp_path / "repository"
    root.mkdir()
    log = valid(sarif_log([([failed], None)], wgsl_dir=tmp_path / "wgsl", root=root))
    (uri, line, base), = where(results(log)[0])
    assert (uri, line, base) == (wgsl.resolve().as_uri(), 1, None)


# -- the commands ------------------------------------------------------------------------------
MUTANT = fixture_path("merge_state", next(s for s in specs()["merge_state"] if s["name"] == "no_barrier"))


def _verify(*args, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, timeout=900, cwd=cwd)


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """`verify check` of a mutant missing a barrier: `reference` and `sanitize` fail."""
    out = tmp_path_factory.mktemp("sarif-run")
    done = _verify("check", "merge_state", "--wgsl", str(MUTANT), "--examples", "2", "--checks",
                   "reference,sanitize,determinism", "--out", str(out), "--sarif", str(out / "verify.sarif"))
    assert done.returncode == 1, done.stderr
    return out, done


@pytest.mark.webgpu
def test_verify_check_writes_valid_sarif_at_the_mutants_lines(checked):
    out, done = checked
    log = valid(json.loads((out / "verify.sarif").read_text()))
    verdicts = {r["check"]: r["verdict"] for r in json.loads((out / "results.json").read_text())["records"]}
    assert verdicts == {"reference": "fail", "sanitize": "fail", "determinism": "pass"}
    found = {r["ruleId"]: r for r in results(log)}
    assert set(found) == {"reference", "sanitize"}
    uri = MUTANT.relative_to(ROOT).as_posix()
    (race_uri, race_line, _), = where(found["sanitize"])
    lines = MUTANT.read_text().splitlines()
    assert race_uri == uri and "s[row]" in lines[race_line - 1]
    assert where(found["reference"]) == [(uri, 1, "SRCROOT")]
    assert found["sanitize"]["properties"]["thoroughness"] == "structural"
    assert "sarif: " in done.stderr


@pytest.mark.webgpu
def test_verify_report_writes_the_same_results_from_the_results_file(checked, tmp_path):
    out, _ = checked
    done = _verify("report", str(out / "results.json"), "-o", str(tmp_path / "r.html"), "--sarif",
                   str(tmp_path / "r.sarif"))
    assert done.returncode == 0, done.stderr
    again = valid(json.loads((tmp_path / "r.sarif").read_text()))
    first = json.loads((out / "verify.sarif").read_text())
    assert [(r["ruleId"], where(r)) for r in results(again)] == [(r["ruleId"], where(r)) for r in results(first)]


@pytest.mark.parametrize("target", ["results", "folder"])
def test_a_sarif_path_that_would_destroy_results_or_is_a_folder_is_one_line_and_exit_2(tmp_path, target):
    results_file = tmp_path / "results.json"
    results_file.write_text(json.dumps({"schema": "verify.results/2", "records": []}))
    path = results_file if target == "results" else tmp_path
    done = _verify("report", str(results_file), "-o", str(tmp_path / "r.html"), "--sarif", str(path))
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "--sarif" in done.stderr


def test_a_check_failing_on_several_outputs_is_one_result(tmp_path):
    """Only a sanitizer's messages are separate defects; one per failing output describe one failure."""
    failed = record(Verdict.FAIL, reason="v: over budget; lse: NaN", kind=FailureKind.OVER_BUDGET,
                    reasons=["v: over budget", "lse: NaN"])
    log = valid(sarif_log([([failed], tmp_path / "results.json")], wgsl_dir=tmp_path / "wgsl", root=tmp_path))
    assert len(results(log)) == 1 and "v: over budget; lse: NaN" in results(log)[0]["message"]["text"]
