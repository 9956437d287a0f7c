"""A captured case as files a maintainer runs without verify: repro.html, repro.py, repro.mjs,
repro.json, kernel.wgsl and ISSUE.md, written into a folder all at once.

The three scripts are the same reproduction: the page embeds the case (WGSL in script blocks,
everything else as one JSON object whose arrays are base64 of gzip), the Python and Node scripts
read the same JSON from repro.json. Their comparison is the one of verify.budgets.metrics
(distance from [lo, hi] over the budget, NaN never within budget, bit-exact elements), written
out in a few commented lines each, so a reader can check what PASS means.

What the files say comes from a `Story`: the kernel, the finding or failure, where it does not
show, what was observed. They speak of the kernel and the finding only.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from markupsafe import Markup, escape

from verify.errors import UsageError
from verify.export.capture import Capture
from verify.export.recording import GUARD_BYTES

TEMPLATES = Path(__file__).resolve().parent / "templates"
#: The version of npm `webgpu` (Dawn for Node) the Node script is run with here.
WEBGPU_VERSION = "0.6.2"
#: Lines cited by a sanitizer message: `at line 63`.
_CITED = re.compile(r"\bat line (\d+)\b")


@dataclass
class Story:
    """What a reproduction says about itself, besides the captured launch.

    `expect` holds the verdict the kernel showed (`verdict`), a sentence saying so (`text`), and
    what each verdict means when a script reports it (`fail`, `pass`, `error`, `skip`). `observed`,
    what the input the folder is made from says came back ({on, verdict, reason, worst: [{output,
    index, got, expected, budget, ratio}]}: a saved case's failure); never what came back when the
    folder was made, which differs by machine and run and would make the same export differ
    (verify.export.findings.OBSERVED).
    """

    title: str
    detail: list
    kernel: str
    config: dict
    case: str
    budget: str
    expect: dict
    upstream: object = None  # verify.kernels.contract.Upstream
    notes: list = field(default_factory=list)
    sanitizer: list = field(default_factory=list)
    observed: dict | None = None
    links: list = field(default_factory=list)
    #: Where the reproduction is known to give what ([{place, verdict, why}]): ISSUE.md's table
    #: where nothing observed is part of the folder.
    routes: list = field(default_factory=list)
    #: Whose bug it is (verify.findings.Finding: layer, project, where, note), for a documented finding.
    blame: object = None


def pack(data: bytes) -> str:
    """base64 of gzip (no timestamp, so the same bytes always give the same text)."""
    return base64.b64encode(gzip.compress(bytes(data), mtime=0)).decode("ascii")


def cited_lines(messages) -> list[int]:
    return sorted({int(n) for message in messages for n in _CITED.findall(message)})


def document(capture: Capture, story: Story) -> dict:
    """repro.json: everything the scripts need, and what they print about it."""
    outputs = []
    for o in capture.outputs:
        same = np.array_equal(o.lo, o.hi, equal_nan=True)
        outputs.append({
            "name": o.name, "buffer": o.buffer, "dtype": o.dtype, "shape": list(o.shape), "format": o.format,
            "lo": pack(np.ascontiguousarray(o.lo, "<f8").tobytes()),
            "hi": None if same else pack(np.ascontiguousarray(o.hi, "<f8").tobytes()),
            "budget": pack(np.ascontiguousarray(o.budget, "<f8").tobytes()),
            "exact": (None if o.exact is None or not o.exact.any()
                      else pack(np.ascontiguousarray(o.exact, np.uint8).tobytes())),
        })
    return {
        "format": "webgpu-kernel-repro/1",
        "title": story.title,
        "kernel": story.kernel,
        "config": story.config,
        "case": story.case,
        "expect": story.expect,
        "notes": story.notes,
        "citedLines": cited_lines(story.sanitizer),
        "features": capture.features,
        "limits": capture.limits,
        "pipelines": [{"wgsl": wgsl, "entryPoint": entry, "bindings": [list(b) for b in bindings]}
                      for wgsl, entry, bindings in capture.pipelines],
        "buffers": [{"name": b.name, "usage": b.usage, "data": pack(b.data), "readback": b.readback,
                     "guard": list(b.guard) if b.guard else None} for b in capture.buffers],
        "dispatches": [{"pipeline": d.pipeline, "bindings": [list(x) for x in d.bindings],
                        "workgroups": list(d.workgroups)} for d in capture.dispatches],
        "outputs": outputs,
    }


def _binding_rows(capture: Capture) -> list[dict]:
    judged = {o.buffer: o.name for o in capture.outputs}
    rows = []
    for d in capture.dispatches:
        for binding, index in d.bindings:
            b = capture.buffers[index]
            output = judged.get(index, "yes" if b.readback is not None else "")
            rows.append({"binding": binding, "name": b.name, "usage": b.usage, "size": len(b.data), "output": output})
    return rows


def _code(text: str) -> Markup:
    """`backticks` as <code>, everything else escaped."""
    parts = str(text).split("`")
    return Markup("".join(str(escape(p)) if i % 2 == 0 else f"<code>{escape(p)}</code>" for i, p in enumerate(parts)))


def _in_script(text: str) -> str:
    """Text that can sit in a <script> block: only `</script` would end it (in WGSL, a comment at most)."""
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.I)


def _num(x) -> str:
    x = float(x)
    return f"{x:.6g}" if np.isfinite(x) else str(x)


def _environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined, keep_trailing_newline=True,
                      autoescape=select_autoescape(["html.j2"]))
    env.filters["code"] = _code
    env.filters["num"] = _num
    return env


def render(capture: Capture, story: Story) -> dict[str, str]:
    """The folder's files by name."""
    env = _environment()
    data = document(capture, story)
    core = (TEMPLATES / "core.js").read_text(encoding="utf-8")
    lines = capture.pipelines[0][0].splitlines()
    cited = [{"number": n, "text": lines[n - 1]} for n in data["citedLines"] if 0 < n <= len(lines)]
    config_text = " ".join(f"{k}={v}" for k, v in sorted(story.config.items()))
    rows = _binding_rows(capture)
    page_data = dict(data, pipelines=[dict(p, wgsl=None) for p in data["pipelines"]])
    html = env.get_template("repro.html.j2").render(
        doc={**data, "config_text": config_text, "upstream": story.upstream, "detail": story.detail,
             "sanitizer": story.sanitizer, "cited_lines": cited, "binding_rows": rows, "guard_bytes": GUARD_BYTES,
             "budget": story.budget, "pipelines": [dict(p, wgsl=_in_script(p["wgsl"])) for p in data["pipelines"]]},
        data=Markup(json.dumps(page_data, separators=(",", ":"), sort_keys=True).replace("</", "<\\/")),
        core=Markup(core.replace("\nexport ", "\n")))
    issue = env.get_template("ISSUE.md.j2").render(
        story=story, capture=capture, config_text=f"`{config_text}`", binding_rows=rows, guard_bytes=GUARD_BYTES,
        cited=cited, has_exact=any(o["exact"] for o in data["outputs"]), webgpu_version=WEBGPU_VERSION)
    files = {
        "repro.html": html,
        "repro.json": json.dumps(data, indent=1, sort_keys=True) + "\n",
        "repro.py": (TEMPLATES / "repro.py").read_text(encoding="utf-8"),
        "repro.mjs": ((TEMPLATES / "repro.mjs").read_text(encoding="utf-8")
                      .replace("{{ webgpu_version }}", WEBGPU_VERSION).replace("{{ core }}", core)),
        "ISSUE.md": issue,
    }
    for index, (wgsl, _, _) in enumerate(capture.pipelines):
        files["kernel.wgsl" if len(capture.pipelines) == 1 else f"kernel-{index}.wgsl"] = wgsl
    return files


# -- writing a folder all at once ---------------------------------------------------------------------
def check_destination(out: Path, *, replace: bool = False) -> None:
    """UsageError (one line) unless `out` can become the folder: not a file, not a folder with
    anything in it (unless `replace`), not read-only, and its parent can be written."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: is a file, not a folder")
    if out.is_dir():
        if not replace and any(out.iterdir()):
            raise UsageError(f"{out}: exists and is not empty; name a new or empty folder")
        if _read_only(out):
            raise UsageError(f"{out}: the folder is read-only")
    parent = _existing_parent(out)
    if _read_only(parent):
        raise UsageError(f"{out}: cannot be created, {parent} is read-only")


def _read_only(path: Path) -> bool:
    """Not writable by us, or with no write bit for anyone (honoured even for root)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return True
    return not os.access(path, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def _existing_parent(path: Path) -> Path:
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


def write_folder(out: Path, files: dict, *, replace: bool = False) -> Path:
    """Write `files` (name -> text or bytes) into a new folder beside `out`, then rename it to
    `out`: nothing half-written is ever at `out`, and an error leaves nothing behind. With
    `replace`, an existing `out` is swapped for the new folder (and then removed)."""
    out = Path(out)
    check_destination(out, replace=replace)
    try:
        out.absolute().parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.absolute().parent))
    except OSError as exc:
        raise UsageError(f"{out}: cannot be written ({exc.strerror or exc})") from None
    old = None
    try:
        for name, content in files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, str):  # the same bytes whatever the locale or platform
                target.write_text(content, encoding="utf-8", newline="\n")
            else:
                target.write_bytes(content)
        staging.chmod(0o755)
        if out.is_dir():
            if replace and any(out.iterdir()):
                old = out.with_name(f".{out.name}.old-{os.getpid()}")
                os.rename(out, old)
            else:
                out.rmdir()
        os.rename(staging, out)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if old is not None and not out.exists():
            os.rename(old, out)
            old = None
        raise UsageError(f"{out}: cannot be written ({exc.strerror or exc})") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return out
