"""JUnit XML for CI systems: one testcase per (kernel, config, check).

Repro details go into the failure message and system-out, not testcase <properties>, which
break some consumers' schemas (pytest-dev/pytest#5202). A known finding (verdict "known") is a
<skipped> testcase, as pytest writes an xfail: CI stays green, and the finding, what was
observed and the replay commands are in its message and system-out.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from verify.results.atomic import write_atomic


def _case_name(record: dict) -> str:
    config = " ".join(f"{k}={v}" for k, v in sorted((record.get("config") or {}).items()))
    return f"{record.get('check')} [{config}]"


def _details(record: dict) -> str:
    lines = [f"seed: {record.get('seed')}", f"examples: {record.get('examples')}"]
    if record.get("finding"):
        reproduced = "reproduced" if record.get("finding_reproduced") else "did not reproduce"
        lines.append(f"known finding ({reproduced}):\n{record['finding'].strip()}")
    if record.get("verdict") == "known" and record.get("reason"):
        lines.append(f"observed:\n{record['reason'].strip()}")
    adapter = record.get("adapter") or {}
    if adapter:
        lines.append(f"adapter: {adapter.get('name')} ({adapter.get('backend')}, {adapter.get('driver')})")
    source = record.get("source") or {}
    if source.get("sha256"):
        lines.append(f"wgsl sha256: {source['sha256']} ({source.get('origin')})")
    for role in ("shrunk", "worst"):
        part = record.get(role) or {}
        if part:
            lines.append(f"{role}: err/budget {part.get('score')} case {part.get('case')}")
            if part.get("case_file"):
                lines.append(f"  replay: verify replay {part['case_file']}")
    return "\n".join(lines)


def write_junit(document: dict, path: Path) -> None:
    suites = ET.Element("testsuites", name="verify")
    by_kernel: dict = {}
    for record in document.get("records", []):
        by_kernel.setdefault(record.get("kernel", "?"), []).append(record)
    for kernel, records in by_kernel.items():
        suite = ET.SubElement(suites, "testsuite", name=kernel, tests=str(len(records)))
        counts = {"failures": 0, "errors": 0, "skipped": 0}
        total_time = 0.0
        for record in records:
            seconds = float(record.get("duration_s") or 0.0)
            total_time += seconds
            case = ET.SubElement(suite, "testcase", classname=kernel, name=_case_name(record), time=f"{seconds:.3f}")
            verdict = record.get("verdict")
            reason = (record.get("reason") or "").strip()
            if verdict == "fail":
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=reason.splitlines()[0] if reason else "failed").text = reason
            elif verdict == "error":
                counts["errors"] += 1
                ET.SubElement(case, "error", message=reason.splitlines()[0] if reason else "error").text = \
                    record.get("traceback") or reason
            elif verdict == "skip":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=reason)
            elif verdict == "known":
                counts["skipped"] += 1
                headline = (record.get("finding") or "").strip().splitlines()[:1]
                ET.SubElement(case, "skipped", message=f"known finding: {headline[0] if headline else '?'}")
            ET.SubElement(case, "system-out").text = _details(record)
        suite.set("time", f"{total_time:.3f}")
        for key, value in counts.items():
            suite.set(key, str(value))
    ET.indent(suites)
    write_atomic(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")
