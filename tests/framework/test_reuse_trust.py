"""`--reuse` takes only what verify itself recorded on this machine, and refuses bad paths.

A record is reused only if its authentication tag (CheckResult.auth_tag, an HMAC made with a key
in verify's cache folder) verifies: a results file edited by hand, or written on another machine,
runs its checks again, and the run says why, once per file. A --reuse path that is not a regular
file of sane size (a symlink loop, /dev/zero, a FIFO, a folder) is one line and exit 2, at once.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.framework.test_cli import assert_one_line_usage_error

MUTANTS = Path(__file__).resolve().parents[1] / "fixtures" / "mutants"
BASE = ["check", "merge_state", "--checks", "reference,determinism", "--examples", "5"]


def verify(*args, timeout=900, env=None):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def rewrite(path: Path, change) -> None:
    data = json.loads(path.read_text())
    for record in data["records"]:
        change(record)
    path.write_text(json.dumps(data, indent=1))


# -- authentication ------------------------------------------------------------------------------
@pytest.mark.webgpu
def test_a_failure_edited_to_pass_is_not_reused(tmp_path):
    out = tmp_path / "out"
    wgsl = MUTANTS / "merge_state" / "natural_log.wgsl"
    base = ["check", "merge_state", "--wgsl", str(wgsl), "--checks", "reference", "--examples", "3", "--out", str(out)]
    assert verify(*base).returncode == 1
    rewrite(out / "results.json", lambda r: r.update(verdict="pass", failure_kind=None))
    again = verify(*base, "--reuse")
    assert again.returncode == 1, again.stderr
    assert "reusing 0 of 1 checks" in again.stderr
    assert f"1 record of {out / 'results.json'} was not reused: not signed by verify on this machine" in again.stderr
    assert results(out)["records"][0]["verdict"] == "fail"


@pytest.mark.webgpu
def test_records_from_another_machine_or_without_a_tag_run_again(tmp_path):
    """A results file from another machine's run (CI's, a colleague's) carries tags made with that
    machine's key; one written before records were tagged carries none: neither is reused."""
    from verify.results.signing import tag
    from verify.results.store import load_results

    out = tmp_path / "out"
    plain = verify(*BASE, "--out", str(out))
    assert plain.returncode == 0, plain.stderr
    mine = out / "results.json"
    assert all(r["auth_tag"] for r in results(out)["records"])
    elsewhere, untagged = tmp_path / "elsewhere.json", tmp_path / "untagged.json"
    other_key = os.urandom(32)
    tags = [tag(record, other_key) for record in load_results(mine).records]
    data = results(out)
    for record, other in zip(data["records"], tags):
        record["auth_tag"] = other
    elsewhere.write_text(json.dumps(data))
    for record in data["records"]:
        del record["auth_tag"]
    untagged.write_text(json.dumps(data))

    for path in (elsewhere, untagged):
        again = verify(*BASE, "--out", str(tmp_path / path.stem), "--reuse", str(path))
        assert again.returncode == 0, again.stderr
        assert "reusing 0 of 2 checks" in again.stderr, again.stderr
        lines = [line for line in again.stderr.splitlines() if "not reused" in line]
        assert lines == [f"verify: 2 records of {path} were not reused: not signed by verify on this machine "
                         + ("(their tags are another key's, or they changed since)" if path == elsewhere
                            else "(they carry no tag)")], again.stderr
    own = verify(*BASE, "--out", str(tmp_path / "own"), "--reuse", str(mine))
    assert "reusing 2 of 2 checks" in own.stderr and "not reused" not in own.stderr, own.stderr
    # A reused record keeps its tag: reused again, from the copy, it is still verify's own.
    twice = verify(*BASE, "--out", str(tmp_path / "own"), "--reuse")
    assert "reusing 2 of 2 checks" in twice.stderr and "not reused" not in twice.stderr, twice.stderr


def make_record(**fields):
    from verify.results.record import CheckResult, Verdict

    values = dict(kernel="k", check="reference", config={"n": 1}, verdict=Verdict.PASS, reason="", inputs_sha256="a" * 64)
    values.update(fields)
    return CheckResult(**values)


def test_the_key_is_made_private_on_first_use_and_a_missing_or_exposed_key_reuses_nothing(tmp_path, monkeypatch):
    from dataclasses import replace

    from verify.results import signing
    from verify.results.record import Verdict

    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "cache"))
    key_file = tmp_path / "cache" / signing.KEY_FILE
    signing.forget_key()
    record = signing.signed(make_record())
    assert record.auth_tag and signing.verify_tag(record).authentic
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    for tampered in (dict(reason="edited"), dict(verdict=Verdict.FAIL), dict(inputs_sha256="b" * 64),
                     dict(auth_tag=None)):
        assert not signing.verify_tag(replace(record, **tampered)).authentic
    # What a reuse changes (the job's position, where it came from) is not what the tag covers.
    assert signing.verify_tag(replace(record, job_id=7, reused_from="x (then)")).authentic

    key_file.unlink()  # a missing key: a new one, and no earlier record verifies
    signing.forget_key()
    assert not signing.verify_tag(record).authentic and key_file.stat().st_size == signing.KEY_BYTES
    again = signing.signed(make_record())
    key_file.chmod(0o644)  # a key others may read can be forged with: replaced
    signing.forget_key()
    assert not signing.verify_tag(again).authentic
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_without_a_key_nothing_is_signed_and_the_run_says_why(tmp_path, monkeypatch):
    from verify.results import signing
    from verify.results.reuse import reusable
    from verify.results.store import ResultsDocument

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / signing.KEY_FILE).mkdir()  # cannot be read, nor replaced
    monkeypatch.setenv("VERIFY_CACHE", str(cache))
    signing.forget_key()
    record = signing.signed(make_record())
    assert record.auth_tag is None
    found = reusable([ResultsDocument(records=[record], path="r.json")], {record.inputs_sha256})
    assert not found.records
    assert found.refusals == [f"1 record of r.json was not reused: no key to authenticate it with "
                              f"({signing.key_problem()})"]


# -- paths that are not results files ------------------------------------------------------------
def bad_path(kind: str, tmp_path: Path) -> str:
    from verify.results.store import MAX_RESULTS_BYTES

    path = tmp_path / kind
    if kind == "symlink-loop":
        os.symlink(path, path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        return "/dev/zero"
    elif kind == "folder":
        path.mkdir()
    elif kind == "invalid-json":
        path.write_text("{ not json")
    elif kind == "too-large":
        with path.open("wb") as handle:  # sparse: no disk used
            handle.truncate(MAX_RESULTS_BYTES + 1)
    elif kind == "unreadable":
        path.write_text("{}")
        path.chmod(0)
    return str(path)


WHY = {"symlink-loop": "symbolic links", "fifo": "not a regular file", "device": "not a regular file",
       "folder": "is a folder", "invalid-json": "not valid JSON", "too-large": "larger than",
       "unreadable": "cannot read"}


@pytest.mark.webgpu
@pytest.mark.parametrize("kind", list(WHY))
def test_a_reuse_path_that_is_not_a_results_file_is_one_line_and_exit_2(kind, tmp_path):
    if kind == "unreadable" and os.geteuid() == 0:
        pytest.skip("root reads any file")
    path = bad_path(kind, tmp_path)
    # A FIFO nobody writes would block a read for ever, /dev/zero never ends: both must be
    # refused before any read, so a run that blocks or reads on is this limit away from failing.
    result = verify(*BASE, "--out", str(tmp_path / "out"), "--reuse", path, timeout=120)
    assert_one_line_usage_error(result, path, WHY[kind])
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.mark.parametrize("kind", ["symlink-loop", "fifo", "device", "too-large"])
def test_report_refuses_the_same_paths(kind, tmp_path):
    path = bad_path(kind, tmp_path)
    result = verify("report", path, "-o", str(tmp_path / "report.html"), timeout=120)
    assert_one_line_usage_error(result, path, WHY[kind])
