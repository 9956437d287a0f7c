"""JUnit XML for CI systems: one testcase per (kernel, config, check).

Repro details go into the failure message and system-out, not testcase <properties>, which
break some consumers' schemas (pytest-dev/pytest#5202). A known finding (verdict "known") is a
<skipped> testcase, as pytest writes an xfail: CI stays green, and the finding, what was
observed and the replay commands are in its message and system-out.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from verify._files import write_atomic
from verify.results.record import CheckResult, Verdict


def _case_name(record: CheckResult) -> str:
    return f"{record.check} [{record.config_text}]"


def _details(record: CheckResult) -> str:
    lines = [f"seed: {record.seed}", f"examples: {record.examples}"]
    if record.finding:
        reproduced = "reproduced" if record.finding_reproduced else "did not reproduce"
        lines.append(f"known finding ({reproduced}):\n{record.finding.strip()}")
    if record.verdict is Verdict.KNOWN and record.reason:
        lines.append(f"observed:\n{record.reason.strip()}")
    if record.adapter is not None:
        lines.append(f"adapter: {record.adapter.name} ({record.adapter.backend}, {record.adapter.driver})")
    if record.source is not None and record.source.sha256:
        lines.append(f"wgsl sha256: {record.source.sha256} ({record.source.origin or record.source.kind})")
    for role, part in (("shrunk", record.shrunk), ("worst", record.worst)):
        if part is not None:
            lines.append(f"{role}: err/budget {part.score} case {part.case}")
            if part.replay:
                lines.append(f"  {part.replay.replace('verify replay', 'replay: verify replay', 1)}")
    return "\n".join(lines)


def write_junit(records: list[CheckResult], path: Path) -> None:
    suites = ET.Element("testsuites", name="verify")
    by_kernel: dict = {}
    for record in records:
        by_kernel.setdefault(record.kernel, []).append(record)
    for kernel, group in by_kernel.items():
        suite = ET.SubElement(suites, "testsuite", name=kernel, tests=str(len(group)))
        counts = {"failures": 0, "errors": 0, "skipped": 0}
        total_time = 0.0
        for record in group:
            total_time += record.duration_s
            case = ET.SubElement(suite, "testcase", classname=kernel, name=_case_name(record),
                                 time=f"{record.duration_s:.3f}")
            reason = record.reason.strip()
            headline = reason.splitlines()[0] if reason else ""
            if record.verdict in (Verdict.FAIL, Verdict.DIVERGENCE):
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=headline or "failed", type=record.verdict.value).text = reason
            elif record.verdict is Verdict.ERROR:
                counts["errors"] += 1
                ET.SubElement(case, "error", message=headline or "error").text = record.traceback or reason
            elif record.verdict is Verdict.SKIP:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=reason)
            elif record.verdict is Verdict.KNOWN:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=f"known finding: {record.finding_headline or '?'}")
            ET.SubElement(case, "system-out").text = _details(record)
        suite.set("time", f"{total_time:.3f}")
        for key, value in counts.items():
            suite.set(key, str(value))
    ET.indent(suites)
    write_atomic(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")
