"""`verify findings status`: every finding of ONNX Runtime Web's programs on every onnxruntime-web
version verify installs side by side, as reproduces / fixed / changed.

Each finding's reproduction is the check that shows it in the gate (verify.sources.ort.findings.
REPRODUCTIONS: kernel, check, config, and where it shows), run on its explicit cases (the kernel's
finding examples and corners, which the gate runs first on every seed, then a few drawn ones) in a
worker started with the version selected, and read as the gate reads it:

- `reproduces`: the record is KNOWN and the finding is among those it was recognised as (its
  signature: the outputs, the kind of failure, the sanitizer's lines);
- `fixed`: the check passes, or fails only as other findings (the finding's own signature no
  longer shows);
- `changed`: the check fails otherwise than any documented finding (a new failure, or the old one
  with another signature: the finding's text needs reading again);
- `not run`: the check could not run here (SKIP or ERROR, with the reason).

Beside each verdict, whether the program the check ran is the version's first's (`same program`)
or differs from it once its provenance line is left out (`program changed`): a finding that
reproduces in a changed program was not fixed by the change.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from verify.errors import UsageError
from verify.results.record import CheckResult, Verdict
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.findings import REPRODUCTIONS, Reproduction

REPRODUCES, FIXED, CHANGED, NOT_RUN = "reproduces", "fixed", "changed", "not run"


@dataclass(frozen=True)
class Status:
    """One finding on one onnxruntime-web version: the status, why in a line, the records'
    verdicts, and the sha256 of the program it ran without its provenance line ("" where none)."""

    finding: str
    version: str
    status: str
    why: str
    verdicts: tuple[str, ...]
    program_sha256: str = ""
    program: str = ""  # "same program" / "program changed" against the first version's, or ""


def classify(finding_id: str, records: Sequence[CheckResult]) -> tuple[str, str]:
    """(status, why) of `finding_id` from the records of its reproduction."""
    if not records:
        return NOT_RUN, "no check was planned"
    for record in records:
        ids = [i for i in (record.finding_id or "").split(",") if i]
        if record.verdict is Verdict.KNOWN and finding_id in ids:
            return REPRODUCES, f"KNOWN: {_first_line(record.reason)}"
    failing = [r for r in records if r.verdict in (Verdict.FAIL, Verdict.DIVERGENCE)]
    if failing:
        return CHANGED, f"{failing[0].verdict.value.upper()} otherwise: {_first_line(failing[0].reason)}"
    unrun = [r for r in records if r.verdict in (Verdict.SKIP, Verdict.ERROR)]
    if unrun:
        return NOT_RUN, f"{unrun[0].verdict.value.upper()}: {_first_line(unrun[0].reason)}"
    others = sorted({i for r in records if r.verdict is Verdict.KNOWN for i in (r.finding_id or "").split(",") if i})
    if others:
        return FIXED, f"KNOWN only as {', '.join(others)}: this finding's signature no longer shows"
    return FIXED, "PASS: the finding's own cases are within budget"


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:160] if lines else ""


def program_sha256(reproduction: Reproduction) -> str:
    """sha256 of the WGSL the reproduction's kernel runs for its config under the selected version,
    without the lines that name the version (its provenance); "" where it has none (a session)."""
    from verify.kernels.registry import get_kernel

    kernel = get_kernel(reproduction.kernel)
    wgsl = kernel.wgsl(kernel.config(dict(reproduction.config)))
    kept = [line for line in (wgsl or "").splitlines() if not line.startswith("// onnxruntime-web ")]
    return hashlib.sha256("\n".join(kept).encode()).hexdigest() if kept else ""


#: Random examples a reproduction draws after its explicit cases (a check with none, such as
#: zero_blocks, whose every case has zero blocks, is judged on these alone).
EXAMPLES = 3


def run_reproduction(reproduction: Reproduction, session, out_dir: Path, *, seed: int = 0,
                     time_limit: float | None = None) -> list[CheckResult]:
    """The records of `reproduction`'s check, run by `session`'s worker: its explicit cases first
    (the finding's examples, the corners), then EXAMPLES drawn from `seed`."""
    from verify.profiles import get_profile
    from verify.run import plan_check

    plan = plan_check([reproduction.kernel], dict(reproduction.config), profile=get_profile("quick"),
                      examples=EXAMPLES,
                      seed=seed, out_dir=out_dir, checks=[reproduction.check],
                      subgroup_width=reproduction.subgroup_width or "native", time_limit=time_limit,
                      implementation=reproduction.implementation, require_adapters=False)
    records: list[CheckResult] = []
    session.run(plan.jobs, on_record=records.append)
    return records


def finding_status(versions: Sequence[str] | None = None, only: Sequence[str] | None = None, *,
                   time_limit: float | None = 1800.0, say: Callable[[str], None] = lambda line: None) -> list[Status]:
    """Every ORT finding (or `only` those) on every version (or `versions`, resolved as
    --ort-version is), the first version's program the one the others' are compared with."""
    from verify.session import Session

    chosen = [ort_runtime.resolve_version(v) for v in versions] if versions else list(ort_runtime.pinned_versions())
    ids = list(REPRODUCTIONS)
    if only:
        unknown = sorted(set(only) - set(ids))
        if unknown:
            raise UsageError(f"--only: {', '.join(unknown)}: not a finding of ORT's programs; known: {', '.join(ids)}")
        ids = [i for i in ids if i in only]
    found: list[Status] = []
    first_sha: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="verify-findings-status-") as out:
        for version in chosen:
            with ort_runtime.using_version(version), Session() as session:
                for finding_id in ids:
                    reproduction = REPRODUCTIONS[finding_id]
                    say(f"...   {finding_id} on onnxruntime-web {version}")
                    records = run_reproduction(reproduction, session, Path(out), time_limit=time_limit)
                    status, why = classify(finding_id, records)
                    try:
                        sha = program_sha256(reproduction)
                    except Exception as exc:  # noqa: BLE001 -- the status stands without the comparison
                        sha, why = "", f"{why} (program not read: {_first_line(str(exc))})"
                    program = ""
                    if sha:
                        first_sha.setdefault(finding_id, sha)
                        if version != chosen[0] and finding_id in first_sha:
                            program = "same program" if first_sha[finding_id] == sha else "program changed"
                    found.append(Status(finding_id, version, status, why, tuple(r.verdict.value for r in records),
                                        sha, program))
                    say(f"done  {finding_id} on {version}: {status}" + (f" ({program})" if program else ""))
    return found


def table(statuses: Sequence[Status]) -> list[str]:
    """finding x version, one row a finding: its section and each version's status."""
    from verify.findings import get_finding

    versions = list(dict.fromkeys(s.version for s in statuses))
    by = {(s.finding, s.version): s for s in statuses}
    findings = list(dict.fromkeys(s.finding for s in statuses))

    def cell(status: Status | None) -> str:
        if status is None:
            return "-"
        return status.status + (f" ({status.program})" if status.program == "program changed" else "")

    rows = [["finding", "§", *(f"onnxruntime-web {v}" for v in versions)]]
    rows += [[f, get_finding(f).section.lstrip("§"), *(cell(by.get((f, v))) for v in versions)] for f in findings]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(text.ljust(width) for text, width in zip(row, widths, strict=True)).rstrip() for row in rows]


def to_json(statuses: Sequence[Status]) -> str:
    return json.dumps({"schema": "verify.findings-status/1", "statuses": [asdict(s) for s in statuses]}, indent=1)
