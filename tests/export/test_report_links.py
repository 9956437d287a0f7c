"""The HTML report links each known finding to its standalone reproduction when a findings folder
(`verify findings export`) lies beside the report, or is named with `--findings-dir`; without one
the report is as before."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

from tests.report.dom import parse
from tests.report.synthetic import FAILING, known, load_fixture, record
from verify.export.findings import INDEX
from verify.report import render_report
from verify.results.store import parse_results

MERGE_RACE = "TVM's merge races: the lanes of a row read S[n, h] and write it with no barrier between.\nEach lane ..."
DROPPED = ("TVM's merge leaves heads 12-13 of 14 unmerged at head_dim 256, and races.\nThe schedule covers ...")


def results(tmp_path: Path) -> Path:
    """A run with two known findings of tvm.merge_state under `reference`: the race, and (at 14
    heads) the dropped heads, whose folder was exported at 9 heads."""
    document = load_fixture(FAILING)
    template = record(document, "reference", "fail")
    race = dict(known(template, MERGE_RACE), kernel="tvm.merge_state")
    dropped = dict(known(template, DROPPED), kernel="tvm.merge_state", config={"heads": 14, "head_dim": 256})
    document = dict(copy.deepcopy(document), records=[race, dropped])
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document))
    return path


def findings_folder(folder: Path) -> Path:
    entries = [
        {"name": "tvm-merge-race", "kernel": "tvm.merge_state", "check": "reference", "headlines": [MERGE_RACE.split("\n")[0]]},
        {"name": "tvm-merge-dropped-heads", "kernel": "tvm.merge_state", "check": "reference",
         "headlines": ["TVM's merge leaves heads 8-8 of 9 unmerged at head_dim 128, and races."]},
        {"name": "missing-page", "kernel": "tvm.merge_state", "check": "reference", "headlines": []},
    ]
    for entry in entries[:2]:
        (folder / entry["name"]).mkdir(parents=True)
        (folder / entry["name"] / "repro.html").write_text("<!doctype html>")
    (folder / INDEX).write_text(json.dumps({"schema": "verify.findings/1", "findings": entries}))
    return folder


def _links(html: str) -> list[str]:
    return [a.attrs["href"] for a in parse(html).iter("a") if "reproduction" in a.attrs.get("class", "")]


def test_known_rows_link_to_the_findings_beside_the_report(tmp_path):
    findings_folder(tmp_path / "findings")
    out = tmp_path / "report.html"
    render_report([parse_results(json.loads(results(tmp_path).read_text()))], out)
    links = _links(out.read_text())
    # each finding in the index and in its card; the 14-head record is the 9-head folder's finding
    assert sorted(set(links)) == ["findings/tvm-merge-dropped-heads/repro.html", "findings/tvm-merge-race/repro.html"]
    assert links.count("findings/tvm-merge-race/repro.html") == 2


def test_without_a_findings_folder_the_report_has_no_links(tmp_path):
    out = tmp_path / "report.html"
    render_report([parse_results(json.loads(results(tmp_path).read_text()))], out)
    assert _links(out.read_text()) == []


def test_findings_dir_names_the_folder_and_links_are_relative_to_the_report(tmp_path):
    import subprocess

    findings_folder(tmp_path / "elsewhere" / "findings")
    out = tmp_path / "reports" / "report.html"
    out.parent.mkdir()
    done = subprocess.run([sys.executable, "-m", "verify", "report", str(results(tmp_path)), "-o", str(out),
                           "--findings-dir", str(tmp_path / "elsewhere" / "findings")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    links = _links(out.read_text())
    assert "../elsewhere/findings/tvm-merge-race/repro.html" in links
    assert (out.parent / links[0]).resolve().is_file()
