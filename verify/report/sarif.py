"""SARIF 2.1.0 for code-scanning UIs (GitHub's, IDE viewers): each failure as a result at a WGSL line.

A CI that already shows linters' and compilers' findings through SARIF shows verify's the same way,
on the line of the `.wgsl` file to edit. What becomes a result, and at which level:

| record | level | ruleId |
|---|---|---|
| FAIL, DIVERGENCE | `error` | the check (`reference`, `sanitize`, ...) |
| ERROR (no verdict on the kernel: a time limit, a crash of what runs it, verify's own limit or defect) \
| `warning` | the check |
| KNOWN (a documented finding reproduced) | `note` | the finding's id (`tvm-decode-...`) |

PASS and SKIP records are not results (a skip fails the gate, and the gate's log says why). A
sanitizer record becomes one result per finding (each race, each stray access), the others one
each. Where a result points (`locate`): a line a message names (the sanitizer's `line 85
(verify/kernels/attention/merge_state.wgsl:76)`, Naga's `wgsl:86:26`, Tint's `:86:26 error`) in
the kernel's own `.wgsl` file where its `// source:` marker says which (verify.wgsl.source_map),
in the user's file for `verify check --wgsl FILE`, and otherwise (TVM's and ONNX Runtime's
generated WGSL) in the module as verify ran it, written to `wgsl/<sha256>.wgsl` beside the run's
results; a failure naming no line points at the top of the same file. Paths under the repository
root are relative to `SRCROOT` (`originalUriBaseIds`), as GitHub's upload resolves them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from verify._files import write_atomic
from verify._version import __version__
from verify.errors import FailureKind
from verify.results.record import CheckResult, Verdict
from verify.wgsl import sha256
from verify.wgsl.source_map import MARKER

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
#: The base id of paths relative to the repository root (GitHub resolves it to the checkout).
ROOT_ID = "SRCROOT"
#: The level of each verdict that becomes a result.
LEVELS = {Verdict.FAIL: "error", Verdict.DIVERGENCE: "error", Verdict.ERROR: "warning", Verdict.KNOWN: "note"}
#: The rule of a record of no single check (a kernel that could not be planned: check "*").
PLAN_RULE = "plan"
#: A result's message is cut here: a code-scanning alert is a pointer, the report has the rest.
MAX_MESSAGE = 4000

#: Lines a message names: the sanitizer's `line 85 (pkg/file.wgsl:76)`, Naga's `wgsl:86:26`,
#: Tint's `:86:26 error`.
_SITE = re.compile(r"\bline (\d+)(?: \(([^\s()]+\.wgsl):(\d+)\))?")
_NAGA = re.compile(r"\bwgsl:(\d+):(\d+)")
_TINT = re.compile(r"(?m)^:(\d+):(\d+) error")
_FIRST_MARKER = re.compile(r"(?m)^" + re.escape(MARKER) + r"(\S+)$")


@dataclass(frozen=True)
class Ref:
    """A line a message names: in the module (`line`, `column`), and in its body file where known."""

    line: int
    column: int | None = None
    origin: str | None = None
    origin_line: int | None = None


@dataclass(frozen=True)
class Place:
    """A file and a line (1 where the failure names none)."""

    path: Path
    line: int = 1
    column: int | None = None


def refs(message: str) -> list[Ref]:
    """The lines `message` names, in order, each once."""
    found: list[Ref] = []
    for match in _SITE.finditer(message):
        found.append(Ref(int(match[1]), None, match[2], int(match[3]) if match[3] else None))
    for pattern in (_NAGA, _TINT):
        found += [Ref(int(m[1]), int(m[2])) for m in pattern.finditer(message)]
    return list(dict.fromkeys(found))


def package_file(marked: str) -> Path | None:
    """The file a `// source: pkg/sub/file.wgsl` marker names, found through its top-level
    package's location (without importing it), or None where it is not there."""
    top = marked.split("/", 1)[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location).parent / marked
        if path.is_file():
            return path.resolve()
    return None


class WgslTexts:
    """The WGSL a record ran, by its sha256: from its saved case's sidecar, the user's file it was
    read from, or (`rebuild`, in the run that made the record, where the kernel's WGSL is at hand)
    the kernel itself; each checked against the record's sha256, so a file edited since is not taken."""

    def __init__(self, rebuild: bool = False):
        self.rebuild = rebuild
        self._texts: dict[str, str | None] = {}

    def text(self, record: CheckResult, results_dir: Path | None) -> str | None:
        digest = record.source.sha256 if record.source is not None else ""
        if not digest:
            return None
        if digest not in self._texts or self._texts[digest] is None:
            self._texts[digest] = self._find(record, digest, results_dir)
        return self._texts[digest]

    def _find(self, record: CheckResult, digest: str, results_dir: Path | None) -> str | None:
        for summary in (record.shrunk, record.worst):
            if summary is None or not summary.case_file:
                continue
            sidecar = Path(summary.case_file).with_suffix(".json")
            candidates = [sidecar] + ([results_dir / "cases" / sidecar.name] if results_dir is not None else [])
            for path in candidates:
                try:
                    text = json.loads(path.read_text()).get("wgsl")
                except (OSError, ValueError, AttributeError):
                    continue
                if isinstance(text, str) and sha256(text) == digest:
                    return text
        assert record.source is not None  # text() looks only for a record's source's sha256
        if record.source.kind == "file":
            text = _read(Path(record.source.origin))
            if text is not None and sha256(text) == digest:
                return text
        if self.rebuild and record.kernel_ref:
            try:
                from verify.kernels.registry import load_kernel

                kernel = load_kernel(record.kernel_ref)
                text = kernel.wgsl(kernel.config(dict(record.config)))
            except Exception:  # noqa: BLE001 - a kernel that cannot build has its own record saying so
                return None
            return text if sha256(text) == digest else None
        return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def repository_root(start: Path | None = None) -> Path:
    """What paths are made relative to: $GITHUB_WORKSPACE in a GitHub job, else the git work tree
    around `start` (default: the current folder), else the current folder."""
    if os.environ.get("GITHUB_WORKSPACE"):
        return Path(os.environ["GITHUB_WORKSPACE"]).resolve()
    folder = Path(start or Path.cwd()).resolve()
    try:
        done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True, text=True,
                              timeout=30, stdin=subprocess.DEVNULL)
        if done.returncode == 0 and done.stdout.strip():
            return Path(done.stdout.strip()).resolve()
    except (OSError, subprocess.SubprocessError):
        pass
    return folder


class _Log:
    """One SARIF run being assembled: its rules, results and the WGSL copies it wrote."""

    def __init__(self, root: Path, wgsl_dir: Path, texts: WgslTexts):
        self.root, self.wgsl_dir, self.texts = root, wgsl_dir, texts
        self.rules: dict[str, dict] = {}
        self.results: list[dict] = []

    def uri(self, path: Path) -> dict:
        path = path.resolve()
        try:
            relative = path.relative_to(self.root)
        except ValueError:
            return {"uri": path.as_uri()}
        return {"uri": quote(relative.as_posix()), "uriBaseId": ROOT_ID}

    def saved(self, text: str) -> Path:
        """The module as verify ran it, in wgsl/<sha256>.wgsl (written once)."""
        path = self.wgsl_dir / f"{sha256(text)}.wgsl"
        if not path.is_file():
            self.wgsl_dir.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
        return path

    def place(self, record: CheckResult, ref: Ref, results_dir: Path | None) -> Place | None:
        source = record.source
        if source is not None and source.kind == "file":
            own = Path(source.origin)
            text = _read(own)
            if text is not None and sha256(text) == source.sha256:  # the user's file is the module
                return Place(own.resolve(), ref.line, ref.column)
        if ref.origin and ref.origin_line:
            found = package_file(ref.origin)
            if found is not None:
                return Place(found, ref.origin_line, ref.column)
        text = self.texts.text(record, results_dir)
        if text is not None and ref.line <= len(text.splitlines()):
            return Place(self.saved(text), ref.line, ref.column)
        return None

    def top(self, record: CheckResult, results_file: Path | None) -> Place | None:
        """Where a failure that names no line points: the kernel's own file, else its module."""
        source = record.source
        results_dir = results_file.parent if results_file is not None else None
        if source is not None and source.kind == "file" and _read(Path(source.origin)) is not None:
            return Place(Path(source.origin).resolve())
        text = self.texts.text(record, results_dir)
        if text is not None:
            marked = _FIRST_MARKER.search(text)
            found = package_file(marked[1]) if marked else None
            return Place(found or self.saved(text))
        return Place(results_file.resolve()) if results_file is not None else None

    def location(self, place: Place) -> dict:
        region = {"startLine": place.line}
        if place.column:
            region["startColumn"] = place.column
        return {"physicalLocation": {"artifactLocation": self.uri(place.path), "region": region}}

    def add(self, record: CheckResult, results_file: Path | None) -> None:
        level = LEVELS.get(record.verdict)
        if level is None:
            return
        ids = [i for i in (record.finding_id or "").split(",") if i] if record.verdict is Verdict.KNOWN else []
        rule = ids[0] if ids else (record.check if record.check != "*" else PLAN_RULE)
        self._rule(rule, record, ids)
        results_dir = results_file.parent if results_file is not None else None
        # A sanitizer's findings are separate defects, each at its lines; another check's messages
        # (one per failing output) describe one failure.
        sanitizer = record.failure_kind is FailureKind.SANITIZER and record.messages
        messages = record.messages if sanitizer else [record.reason]
        for index, message in enumerate(messages):
            places = [p for p in (self.place(record, r, results_dir) for r in refs(message)) if p is not None]
            if not places:
                places = [p for p in (self.top(record, results_file),) if p is not None]
            self.results.append(self._result(record, rule, level, message, places, index, ids))

    def _result(self, record: CheckResult, rule: str, level: str, message: str, places: list[Place], index: int,
                ids: list[str]) -> dict:
        adapter = record.adapter
        text = f"{record.verdict.value.upper()} {record.title}: {message or 'no reason recorded'}"
        if record.verdict is Verdict.KNOWN and record.finding_headline:
            text += f"\nknown finding: {record.finding_headline}"
        for command in record.replay_commands[:1]:
            text += f"\nreplay: {command}"
        if len(text) > MAX_MESSAGE:
            text = text[:MAX_MESSAGE - 1] + "…"
        first = places[0] if places else None
        fingerprint = "|".join(str(part) for part in (
            record.kernel, record.check, record.config_text, adapter.implementation if adapter else "", rule,
            self.uri(first.path)["uri"] if first else "", first.line if first else "", index))
        properties = {
            "verdict": record.verdict.value, "kernel": record.kernel, "check": record.check,
            "config": record.config_text, "failureKind": record.failure_kind.value if record.failure_kind else None,
            "thoroughness": record.thoroughness.value if record.thoroughness else None,
            "wgslSha256": record.source.sha256 if record.source is not None else "",
            "adapter": adapter.label if adapter else "", "implementation": adapter.implementation if adapter else "",
            "driver": adapter.driver if adapter else "", "replay": record.replay_commands,
        }
        if ids:
            properties["findingIds"] = ids
        result = {"ruleId": rule, "level": level, "message": {"text": text},
                  "locations": [self.location(p) for p in places[:1]],
                  "partialFingerprints": {"verifyResult/v1": hashlib.sha256(fingerprint.encode()).hexdigest()},
                  "properties": {k: v for k, v in properties.items() if v not in (None, "", [])}}
        if len(places) > 1:
            result["relatedLocations"] = [dict(self.location(p), id=i, message={"text": "also involved"})
                                          for i, p in enumerate(places[1:], 1)]
        return result

    def _rule(self, rule: str, record: CheckResult, ids: list[str]) -> None:
        if rule in self.rules:
            return
        if ids:
            from verify.findings import all_findings

            declared = all_findings().get(rule)
            short = declared.title if declared is not None else (record.finding_headline or rule)
            full = (f"A documented finding (docs/findings.md {declared.section}), the {declared.blame}'s: reported, "
                    "it does not fail the run" if declared is not None else "A documented finding: reported, it does "
                    "not fail the run")
        else:
            short, full = _check_doc(record.check) or f"the {rule} check", "A check verify runs on every kernel config"
        self.rules[rule] = {"id": rule, "shortDescription": {"text": short}, "fullDescription": {"text": full},
                            "defaultConfiguration": {"level": "note" if ids else "error"}}


def _check_doc(name: str) -> str | None:
    try:
        from verify.checks import all_checks

        check = all_checks().get(name)
    except Exception:  # noqa: BLE001 - a broken check package: the rule is named, not described
        return None
    return check.doc if check is not None and check.doc else None


def sarif_log(documents: list[tuple[list[CheckResult], Path | None]], *, wgsl_dir: Path, root: Path | None = None,
              rebuild: bool = False, complete: bool = True) -> dict:
    """The SARIF log of `documents` ((records, the results file they are in) each)."""
    log = _Log((root or repository_root()).resolve(), Path(wgsl_dir), WgslTexts(rebuild))
    for records, results_file in documents:
        for record in records:
            log.add(record, results_file)
    driver = {"name": "verify", "version": __version__, "semanticVersion": __version__,
              "rules": list(log.rules.values())}
    run = {"tool": {"driver": driver},
           "originalUriBaseIds": {ROOT_ID: {"uri": log.root.as_uri().rstrip("/") + "/"}},
           "invocations": [{"executionSuccessful": complete}],
           "columnKind": "utf16CodeUnits",
           "results": log.results}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def write_sarif(path: Path, documents: list[tuple[list[CheckResult], Path | None]], *, wgsl_dir: Path,
                root: Path | None = None, rebuild: bool = False, complete: bool = True) -> int:
    """Write the SARIF log of `documents` to `path`; the number of results."""
    log = sarif_log(documents, wgsl_dir=wgsl_dir, root=root, rebuild=rebuild, complete=complete)
    write_atomic(Path(path), json.dumps(log, indent=1) + "\n")
    return len(log["runs"][0]["results"])
