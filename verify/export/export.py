"""`verify export CASE.npz -o DIR`: a saved case as a reproduction that needs nothing of verify.

The case file is read as `verify replay` reads it (a foreign, truncated or edited file is one
line and exit 2), its kernel's launch is captured (verify.export.capture) and the folder is
written all at once (verify.export.write). What the files say about the failure comes from the
sidecar: the kernel's documented finding where it has one for this check and config (a user's
WGSL never inherits one), else the failure message the case was saved with.
"""

from __future__ import annotations

import re
from pathlib import Path

from verify.errors import ContractError, UsageError
from verify.export.capture import capture, conform
from verify.export.write import Story, render, write_folder
from verify.results.casefile import SavedCase
from verify.results.record import KnownFinding

#: A sanitizer's messages are joined with "; " and contain semicolons of their own: each starts so.
_SANITIZER_HEADS = re.compile(r"; (?=race on |unsynchronised access |out-of-bounds |uninitialised read |benign |"
                              r"sanitizer log )")
#: Pointers into this project's tests and documents, which mean nothing to an upstream reader.
_EVIDENCE = re.compile(r"\s*Evidence: [^\n]*")
_DOC = r"(?:see )?docs/[\w-]+\.md §[\d.]+(?:, §[\d.]+)*"
#: A function of this project named in a budget's derivation: its own name says what it bounds.
_MODULE_PATH = re.compile(r"\bverify\.(?:\w+\.)*(\w+)")
_DOC_REFERENCES = (re.compile(rf",\s*{_DOC}"), re.compile(rf"\s*\({_DOC}[^)]*\)"), re.compile(rf";?\s*{_DOC}\.?"))


def load_for_export(path) -> tuple:
    """(kernel, config, check, case, saved) of a case file, checked as `verify replay` checks it."""
    from verify.checks.saved import resolved
    from verify.results.casefile import load_case

    case, saved = load_case(path)
    kernel, config, check = resolved(saved, str(path))
    try:
        kernel.expected(config, case)
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise UsageError(f"{path}: the case does not fit {kernel.name} with config "
                         f"{' '.join(f'{k}={v}' for k, v in sorted(config.items()))} "
                         f"({type(exc).__name__}: {exc})") from None
    return kernel, config, check, case, saved


def plain(text: str) -> str:
    """A finding's text for an upstream reader: without its pointers into this project's tests and docs."""
    text = _EVIDENCE.sub("", text)
    for pattern in _DOC_REFERENCES:
        text = pattern.sub("", text)
    return _MODULE_PATH.sub(r"`\1`", text).strip()


#: The worst element of one output in a failure message (verify.budgets.metrics.OutputMetrics.message).
_WORST = re.compile(r"worst at \(([^)]*)\): got (\S+), expected (\S+) ± (\S+) \(err/budget (\S+)\)")


def worst_of(message: str) -> list[dict]:
    """The worst element of each output a saved failure message names, as ISSUE.md's table rows."""
    rows, name = [], None
    for part in (message or "").split("; "):
        head = re.match(r"^([\w.]+): ", part)
        if head:
            name = head[1]
        found = _WORST.search(part)
        if found and name:
            try:
                index = [int(i) for i in found[1].split(",") if i.strip()]
                rows.append({"output": name, "index": index, "got": float(found[2]), "expected": found[3],
                             "budget": float(found[4]), "ratio": float(found[5])})
            except ValueError:
                continue
    return rows


def sanitizer_messages(message: str) -> list[str]:
    return [part.strip() for part in _SANITIZER_HEADS.split(message or "") if part.strip()]


def finding_of(kernel, check: str, config: dict, saved: SavedCase) -> KnownFinding | None:
    """The documented finding this saved failure is, if any: of the kernel's own WGSL only, and of
    the failure's kind where the finding names kinds."""
    if saved.user_wgsl:
        return None
    findings = KnownFinding.all_of(kernel.known_finding(check, config))
    kind = saved.failure_kind
    matching = [f for f in findings if not f.kinds or kind in {k.value for k in f.kinds}]
    return matching[0] if matching else None


def adapter_label(adapter: dict | None) -> str:
    adapter = adapter or {}
    name = adapter.get("name") or "an unrecorded adapter"
    detail = ", ".join(x for x in (adapter.get("backend"), adapter.get("implementation")) if x)
    return f"{name} ({detail})" if detail else name


def story_of(kernel, config: dict, check, case, saved: SavedCase, converted: tuple = ()) -> Story:
    """What the files of an exported case file say: its finding, or its failure message.

    `converted`: the case's arrays conform turned from a 64-bit type into the kernel's ("v float64
    -> f32"). The saved verdict then came from a run that bound them as they were, bytes the kernel
    misread, so it says nothing of this reproduction: it is left out, and the case says so."""
    message = "" if converted else saved.message or ""
    on = adapter_label(saved.adapter)
    finding = finding_of(kernel, check.name, config, saved)
    sanitizer = sanitizer_messages(message) if saved.failure_kind == "sanitizer finding" else []
    if finding is not None:
        title, _, body = finding.text.partition("\n")
        detail = [p for p in plain(body).split("\n") if p.strip()]
    elif converted:
        title, detail = f"{kernel.name}: a saved case, its 64-bit arrays as the kernel binds them", []
    else:
        title = f"{kernel.name}: {message.split('; ')[0] or 'fails its reference'}"
        detail = []
    failed = bool(message) and not message.startswith("ok")
    observed = {"on": on, "verdict": "FAIL", "reason": message, "worst": worst_of(message)} if failed else None
    expect = {
        "verdict": "FAIL" if failed else "PASS",
        "text": f"FAIL, as on {on}." if failed else f"PASS, as on {on}.",
        "fail": f"The failure reproduces here (as on {on})." if failed else "This case passed where it was saved.",
        "pass": (f"This case failed on {on}; here it passes, so the failure depends on the adapter or the WebGPU "
                 "implementation (its subgroup width, schedule or zero-initialisation)." if failed else
                 "Within budget, as where it was saved."),
        "error": "The WGSL does not compile or the dispatch is refused here.",
        "skip": "This adapter cannot run the kernel.",
    }
    if sanitizer:
        expect["pass"] = ("The outputs are within budget here: what is wrong is an access the values do not show on "
                          "this adapter (the offending lines below).")
    summary = case.summary()
    if converted:
        summary += (f" ({', '.join(converted)}: the case file's arrays as the kernel binds them, floats rounded to "
                    "nearest; WebGPU has no 64-bit types)")
        expect.update(verdict="PASS or FAIL", text=f"Not known: the run on {on} bound the case's 64-bit arrays as "
                      "they were, bytes the kernel misread, so its verdict does not carry over.",
                      fail="The kernel fails this case.", **{"pass": "Within budget."})
    return Story(title=title.strip(), detail=detail, kernel=kernel.name, config=config, case=summary,
                 budget=plain(kernel.budget_doc()), expect=expect, upstream=kernel.upstream(config, saved.wgsl),
                 sanitizer=sanitizer, observed=observed)


def export_case(path, out) -> Path:
    """Write the reproduction of the case file `path` into the new folder `out`."""
    from verify.export.write import check_destination

    check_destination(Path(out))  # before any work: a bad destination is the first thing said
    kernel, config, check, case, saved = load_for_export(path)
    width = saved.subgroup_width
    limits = check.device_limits(kernel, config)
    try:
        case, converted = conform(kernel, config, saved.wgsl, case, limits=limits, width=width)
        captured = capture(kernel, config, saved.wgsl, case, limits=limits, width=width)
    except ContractError as exc:  # the kernel breaks its contract: nothing a reproduction could judge
        raise UsageError(f"{path}: {exc}") from None
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None
    return write_folder(Path(out), render(captured, story_of(kernel, config, check, case, saved, tuple(converted))))
