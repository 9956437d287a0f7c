"""Every KNOWN record whose finding has a committed reproduction folder (reports/findings/) links
to it, under whichever check the kernel reports the finding.

A folder is exported under one kernel and check (verify/export/findings.py), but a finding shows
under several: TVM's merge race under `reference` and `sanitize`, ORT's zero-initialised decode
partials under `reference`, `determinism`, `implementations` and `sanitize`, one program's bug
under every kernel that runs it. A KNOWN record carries the finding's id (verify.findings), which
is the folder's name: the expected links here come from the kernels' own Kernel.known_finding,
while the report reads only the committed index.json. Records written before findings had ids
carry only the finding's text, and still link by its headline (the last tests).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.report.dom import parse
from tests.report.synthetic import FAILING, known, load_fixture, record
from verify.errors import SetupError
from verify.report import render_report
from verify.report.render import finding_entries, reproductions_of
from verify.results.record import CheckResult, KnownFinding
from verify.results.store import parse_results

ROOT = Path(__file__).resolve().parents[2]
FINDINGS_DIR = ROOT / "reports" / "findings"
TEMPLATE = record(load_fixture(FAILING), "reference", "fail")


def known_record(kernel: str, check: str, text: str, config: dict | None = None,
                 finding_id: str | None = None) -> CheckResult:
    """A KNOWN record of `kernel` under `check` carrying the finding `text` (and its id), as the
    worker writes it."""
    data = dict(known(TEMPLATE, text), kernel=kernel, check=check, config=config or TEMPLATE["config"],
                finding_id=finding_id)
    return CheckResult.from_dict(data)


@pytest.fixture(scope="module")
def registry():
    """The documented findings with a committed folder, and each one's kernel, config and the
    findings that kernel states under each of its checks at that config."""
    from verify.export.findings import FINDINGS
    from verify.kernels.registry import get_kernel

    found = []
    for finding in FINDINGS:
        if not (FINDINGS_DIR / finding.name / "repro.html").is_file():
            continue
        try:
            kernel = get_kernel(finding.kernel)
            config = kernel.config(finding.config)
            stated = {check: KnownFinding.all_of(kernel.known_finding(check, config)) for check in kernel.checks}
        except SetupError as exc:
            pytest.skip(f"a finding's kernel cannot be built here: {exc}")
        found.append((finding, config, stated))
    assert found, "no committed reproduction folder"
    return found


def links(record: CheckResult, entries: list[dict]) -> set[str]:
    return {name for name, _ in reproductions_of(record, entries)}


def test_every_known_record_of_a_finding_with_a_reproduction_links_to_it(registry):
    """Each folder is linked from the KNOWN records of its finding under every check its kernel
    states it, and a record links only the folders its findings' ids name."""
    entries = finding_entries(FINDINGS_DIR, ROOT / "reports")
    folders = {e["name"] for e in entries}
    linked, checked = set(), 0
    for finding, config, stated in registry:
        for check, findings in stated.items():
            for stated_finding in findings:
                assert stated_finding.finding_id, (finding.kernel, check, stated_finding.headline)
                got = links(known_record(finding.kernel, check, stated_finding.text, config,
                                         stated_finding.finding_id), entries)
                expected = {stated_finding.finding_id} & folders
                assert got == expected, (finding.kernel, check, stated_finding.finding_id)
                linked |= got
                checked += 1
    # Every folder whose kernel states its finding somewhere is linked from a record of it.
    stated_ids = {f.finding_id for _, _, stated in registry for fs in stated.values() for f in fs}
    assert {f.name for f, _, _ in registry if f.name in stated_ids} <= linked and checked >= len(linked)
    # The index lists, per folder, the headlines of the findings of that id its kernel states there.
    for entry in entries:
        assert all(h for h in entry.get("headlines") or ())


def test_the_merge_race_under_sanitize_and_orts_zero_init_under_every_check_link_their_folders(registry, tmp_path):
    """The two cases that did not link: rendered, with the committed folder beside the report's folder."""
    stated = {(f.kernel, check): fs for f, _, s in registry for check, fs in s.items()}
    race = stated[("tvm.merge_state", "sanitize")][0]
    zero_init = stated[("ort.attention.decode_qkv", "reference")][-1]
    assert (race.finding_id, zero_init.finding_id) == ("tvm-merge-race", "ort-decode-partials-zero-init")
    document = load_fixture(FAILING)
    document["records"] = [dict(known(TEMPLATE, race.text), kernel="tvm.merge_state", check="sanitize",
                                finding_id=race.finding_id)]
    for check in ("reference", "determinism", "implementations", "sanitize"):
        document["records"].append(dict(known(TEMPLATE, zero_init.text), kernel="ort.attention.decode_qkv", check=check,
                                        finding_id=zero_init.finding_id))
    report = tmp_path / "reports" / "check" / "report.html"
    report.parent.mkdir(parents=True)
    (tmp_path / "reports" / "findings").symlink_to(FINDINGS_DIR)  # as the committed reports/findings/
    render_report([parse_results(copy.deepcopy(document))], report)
    dom = parse(report.read_text())
    for article in dom.find_id("known").iter("article"):
        title = article.all_text()
        hrefs = [a.attrs["href"] for a in article.iter("a") if "reproduction" in a.attrs.get("class", "")]
        expected = "tvm-merge-race" if "tvm.merge_state" in title else "ort-decode-partials-zero-init"
        assert hrefs == [f"../findings/{expected}/repro.html"], title[:200]
        assert (report.parent / hrefs[0]).resolve().is_file()


def test_a_finding_without_a_listed_headline_links_the_folder_of_the_section_it_cites():
    """TVM's tree kernels' extra warp also races under `determinism` (its own headline, §14.1):
    §14.1's folder reproduces that warp; a finding citing a section no folder has links none."""
    entries = finding_entries(FINDINGS_DIR, ROOT / "reports")
    race = ("TVM's tree kernels' extra warp races with the loads it overwrites: results differ run to run.\n"
            "The fifth warp's stores past the tile (docs/findings.md §14.1) land where the adapter puts them; "
            "docs/findings.md §14.1.")
    assert links(known_record("tvm.tree_attention_paged", "determinism", race), entries) == {"tvm-tree-extra-warp"}
    unread = ("ORT's tile program reads workgroup tiles it never loaded.\nThe reads are wasted, not wrong; "
              "docs/findings.md §13.")
    assert links(known_record("ort.dp4a.matmul", "sanitize", unread), entries) == set()


def test_a_finding_of_a_kernel_other_than_its_folders_links_the_folder():
    """One program's bug reported under every kernel that runs it: FlashAttention's carried scores
    under ORT's GroupQueryAttention session, TVM's packed grid under the sliding-window decode."""
    entries = finding_entries(FINDINGS_DIR, ROOT / "reports")
    index = json.loads((FINDINGS_DIR / "index.json").read_text())["findings"]
    carried = next(e for e in index if e["name"] == "ort-flash-carried-scores")["headlines"][-1]
    packed = next(e for e in index if e["name"] == "tvm-packed-grid")["headlines"][0]
    assert links(known_record("ort.gqa", "reference", carried), entries) == {"ort-flash-carried-scores"}
    assert links(known_record("tvm.decode_sliding_window", "packed_grid", packed), entries) == {"tvm-packed-grid"}
