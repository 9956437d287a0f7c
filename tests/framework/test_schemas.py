"""The published JSON Schemas (docs/schema) describe the files verify writes: every field the code
writes is in them with its type, every file of a real run validates, and a file with a wrong type or
without a field readers need does not."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from tests.fixtures.mutants.regenerate import fixture_path, specs
from verify.cases import Case
from verify.errors import FailureKind
from verify.results.casefile import save_case
from verify.results.record import AdapterRecord, CheckResult, ExampleSummary, Source, StageTiming, Verdict
from verify.results.store import ResultsDocument
from verify.results.thoroughness import Thoroughness

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schema"


def schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


def errors(name: str, document) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema(name))
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


@pytest.mark.parametrize("name", ["results-2.json", "case-2.json"])
def test_the_schemas_are_json_schema_2020_12(name):
    document = schema(name)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(document)


def test_the_results_schema_names_every_field_the_code_writes():
    """Each dataclass field is a property of its object in the schema, and each enumeration is the
    code's: a field added to the code without the schema fails here."""
    results = schema("results-2.json")
    defs = results["$defs"]
    assert set(defs["record"]["properties"]) == {f.name for f in fields(CheckResult)}
    for name, cls in (("source", Source), ("adapter", AdapterRecord), ("example", ExampleSummary),
                      ("timing", StageTiming)):
        assert set(defs[name]["properties"]) == {f.name for f in fields(cls)}, name
    assert set(results["properties"]) == set(ResultsDocument().to_dict())
    record = defs["record"]["properties"]
    assert record["verdict"]["enum"] == [v.value for v in Verdict]
    assert record["failure_kind"]["anyOf"][0]["enum"] == [k.value for k in FailureKind]
    assert record["thoroughness"]["anyOf"][0]["enum"] == [t.value for t in Thoroughness]


def test_a_case_sidecar_has_the_fields_of_its_schema_and_validates(tmp_path):
    """save_case's sidecar, written here without a GPU, holds exactly the schema's properties."""
    meta = {"kernel": "k", "kernel_ref": "m:K", "config": {"n": 4}, "check": "reference", "seed": 0, "profile": "ci",
            "subgroup_width": None, "adapter": None, "source": None, "failure_kind": "NaN", "role": "shrunk",
            "message": "v: 1 NaN"}
    npz = save_case(tmp_path, "k", Case({"x": np.arange(4, dtype=np.float32)}, {"scale": 1.5}), meta, "fn f() {}\n")
    sidecar = json.loads(npz.with_suffix(".json").read_text())
    assert set(sidecar) == set(schema("case-2.json")["properties"])
    assert errors("case-2.json", sidecar) == []


MUTANT = fixture_path("merge_state", next(s for s in specs()["merge_state"] if s["name"] == "no_barrier"))


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A real `verify check` of a mutant whose `reference` and `sanitize` fail, so cases are saved."""
    out = tmp_path_factory.mktemp("schema-run")
    done = subprocess.run([sys.executable, "-m", "verify", "check", "merge_state", "--wgsl", str(MUTANT),
                           "--examples", "2", "--checks", "reference,sanitize,determinism", "--out", str(out)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 1, done.stderr
    return out


@pytest.mark.webgpu
def test_every_file_a_real_run_writes_validates(run):
    results = json.loads((run / "results.json").read_text())
    assert errors("results-2.json", results) == []
    assert {r["thoroughness"] for r in results["records"]} == {"numeric", "structural", "relation"}
    sidecars = sorted((run / "cases").glob("*.json"))
    assert len(sidecars) == 4  # shrunk and worst of each failing check
    for path in sidecars:
        assert errors("case-2.json", json.loads(path.read_text())) == [], path.name


def _set(path, value):
    def change(document):
        target = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _drop(path):
    def change(document):
        target = document
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change


RESULTS_TAMPERED = {
    "examples as text": _set(["records", 0, "examples"], "2"),
    "no verdict": _drop(["records", 0, "verdict"]),
    "unknown verdict": _set(["records", 0, "verdict"], "passed"),
    "no kernel": _drop(["records", 0, "kernel"]),
    "config as text": _set(["records", 0, "config"], "dtype=f16"),
    "subgroup size as text": _set(["records", 0, "adapter", "subgroup_size"], "8"),
    "adapter without name": _drop(["records", 0, "adapter", "name"]),
    "unknown thoroughness": _set(["records", 0, "thoroughness"], "thorough"),
    "score as a word": _set(["records", 0, "worst", "score"], "huge"),
    "no schema": _drop(["schema"]),
    "another schema": _set(["schema"], "verify.results/3"),
    "no records": _drop(["records"]),
    "complete as text": _set(["complete"], "yes"),
    "plan fingerprint not a sha256": _set(["plan", "fingerprint"], "abc"),
    "negative plan": _set(["planned"], -1),
    "shard not K/N": _set(["shard"], "2 of 4"),
}


@pytest.mark.webgpu
@pytest.mark.parametrize("tamper", list(RESULTS_TAMPERED))
def test_a_tampered_results_file_does_not_validate(run, tamper):
    document = json.loads((run / "results.json").read_text())
    document["records"].sort(key=lambda r: r["verdict"] != "fail")  # record 0 has worst, adapter, thoroughness
    assert errors("results-2.json", document) == []
    RESULTS_TAMPERED[tamper](document)
    assert errors("results-2.json", document) != []


CASE_TAMPERED = {
    "no wgsl_sha256": _drop(["wgsl_sha256"]),
    "no case_sha256": _drop(["case_sha256"]),
    "no wgsl": _drop(["wgsl"]),
    "params as a list": _set(["params"], []),
    "case digest as a number": _set(["case_sha256"], 5),
    "shape of words": _set(["arrays", "v", "shape"], ["a"]),
    "unknown role": _set(["role"], "best"),
    "another schema": _set(["schema"], "verify.case/3"),
}


@pytest.mark.webgpu
@pytest.mark.parametrize("tamper", list(CASE_TAMPERED))
def test_a_tampered_case_sidecar_does_not_validate(run, tamper):
    document = json.loads(next((run / "cases").glob("*reference*-shrunk.json")).read_text())
    assert errors("case-2.json", document) == []
    changed = copy.deepcopy(document)
    CASE_TAMPERED[tamper](changed)
    assert errors("case-2.json", changed) != []


@pytest.mark.webgpu
def test_a_file_with_only_the_required_fields_validates(run):
    """Additive compatibility: a /2 file written before the optional fields existed (no plan,
    thoroughness, auth_tag, finding_id, implementation version, ...) is still a valid /2 file."""
    document = json.loads((run / "results.json").read_text())
    results = schema("results-2.json")
    required = set(results["$defs"]["record"]["required"])
    bare = {"schema": document["schema"],
            "records": [{k: v for k, v in r.items() if k in required} for r in document["records"]]}
    assert errors("results-2.json", bare) == []
    sidecar = json.loads(next((run / "cases").glob("*-shrunk.json")).read_text())
    bare_case = {k: v for k, v in sidecar.items() if k in schema("case-2.json")["required"]}
    assert errors("case-2.json", bare_case) == []
