"""The ORT WGSL cache: captures of ORT's programs kept on disk with their provenance, checked on
every read.

A capture is one run of a small session (ORT's DP4A programs, verify.sources.ort.dp4a.captures; its
attention programs, verify.sources.ort.attention.sessions) and the WGSL of every program it
dispatched. It is kept under `$VERIFY_ORT_CACHE` (else `$XDG_CACHE_HOME/verify/ort`, else
`~/.cache/verify/ort`), one folder per onnxruntime-web version and adapter vendor, in a file
named by a hash of what it was captured for.

Why every file carries a `Provenance`, and why it is compared on every read: nothing in a
file's name proves what is in it. A cache copied between machines with its files shuffled, a
file renamed, or captures of an older verify leave one config's programs under another config's
name, and verify then checks them as that config's programs: ORT's f32 quantizer launched on f16
data fails, and the failure is verify's, not ORT's. So a capture records the config it was
captured for, the model (its description and that description's sha256: the op, its attributes
and static shapes, which inputs it has), the shapes of the inputs the run was fed, the
onnxruntime-web version that generated it and the adapter it ran on; a reader states what it
needs and takes a file only when the two agree. A file that does not agree, one written before
captures carried provenance, and one that cannot be read as a capture (empty, truncated, `{}`,
no programs) are all treated alike: where ORT runs it is captured again and the file replaced;
where it does not (a GPU machine served from a cache filled elsewhere) the refusal is one line
naming the file.

verify ships the captures of every gate config for the pinned onnxruntime-web, made on lavapipe,
in `shipped/` beside this file in the cache's layout (verify.sources.shipped). A capture missing
from the user's cache (or unusable there) is read from the shipped copy of the same version,
adapter vendor and name when its provenance is the one asked for, before ORT captures it; where
ORT does not run, a shipped copy of any vendor stands in as a cached one does. So a fresh machine
plans in seconds, and one without Node plans at all. The shipped copies are never written but by
`verify sources refresh`, and the user's cache is never filled from them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from verify._files import write_atomic
from verify.errors import SetupError
from verify.sources.shipped import Shipped

CACHE_ENV = "VERIFY_ORT_CACHE"
#: The captures shipped with verify, in the cache's layout (<version>/<vendor>/<file>), read-only.
SHIPPED = Shipped(Path(__file__).resolve().parent / "shipped", "ORT's captures")
#: The layout of a cache file: {"format", "provenance": {...}, "programs": {label: WGSL}}. Files
#: without it (verify's captures before provenance) are stale.
FORMAT = 2


def cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "verify" / "ort"


def vendor_folder(adapter: dict) -> str:
    """The cache folder of an adapter's captures: its vendor, as a file name."""
    vendor = "".join(c if c.isalnum() else "-" for c in (adapter.get("vendor") or "").lower())
    return vendor or "unknown"


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class InputShape:
    """One input a capture run was fed: its name, numpy dtype and dims."""

    name: str
    dtype: str
    dims: tuple[int, ...]


def input_shapes(feeds: dict) -> tuple[InputShape, ...]:
    """The shapes of a run's feeds (name -> array), in feed order."""
    return tuple(InputShape(name, np.asarray(array).dtype.name, tuple(int(d) for d in np.shape(array)))
                 for name, array in feeds.items())


@dataclass(frozen=True)
class Provenance:
    """What a capture was made for, and by what.

    `capture` is the config it was captured for (the text its file name hashes), `model` the
    model's description and `model_sha256` that description's sha256 (verify builds the ONNX
    bytes from the description; their hash would change with the `onnx` release, and a machine
    reading a cache carried over need not have `onnx`), `inputs` the shapes the run was fed,
    `ort_version` the onnxruntime-web that generated the WGSL. A reader's wanted provenance
    leaves `inputs` None where it cannot state them without drawing the capture's case again;
    `adapter` and `run` only say where the capture came from (the comment line each program
    carries) and are never compared.
    """

    capture: str
    model: str
    model_sha256: str
    ort_version: str
    inputs: tuple[InputShape, ...] | None = None
    adapter: str = ""
    run: str = ""

    @classmethod
    def wanted(cls, capture: str, model, ort_version: str, feeds: dict | None = None) -> Provenance:
        """What a reader asks of a capture of `model` (anything with describe()) for `capture`."""
        description = model.describe()
        return cls(capture, description, text_sha256(description), ort_version,
                   None if feeds is None else input_shapes(feeds))

    @property
    def line(self) -> str:
        """The comment line put before each program's WGSL (the record's upstream is read from it)."""
        return f"// onnxruntime-web {self.ort_version} on {self.adapter or '?'}: {self.run or self.capture}"

    def mismatch(self, found: Provenance) -> str | None:
        """Why `found` (a file's provenance) is not a capture of what this one asks for; None if it is."""
        if found.capture != self.capture:
            return f"it is the capture of {found.capture!r}, not of {self.capture!r}"
        if found.model != self.model:
            return f"its model is {found.model!r}, not {self.model!r}"
        if found.model_sha256 != self.model_sha256:
            return f"its model's sha256 is {found.model_sha256}, not {self.model_sha256}"
        if found.ort_version != self.ort_version:
            return f"it was captured by onnxruntime-web {found.ort_version}, not {self.ort_version}"
        if self.inputs is not None and found.inputs != self.inputs:
            return f"its run was fed {_shapes(found.inputs)}, not {_shapes(self.inputs)}"
        return None

    def to_json(self) -> dict:
        data = asdict(self)
        data["inputs"] = None if self.inputs is None else [asdict(s) | {"dims": list(s.dims)} for s in self.inputs]
        return data

    @classmethod
    def from_json(cls, data) -> Provenance:
        """The provenance of a file; ValueError naming what is wrong with it."""
        if not isinstance(data, dict):
            raise ValueError("its provenance is not a record")
        strings = ("capture", "model", "model_sha256", "ort_version", "adapter", "run")
        bad = [name for name in strings if not isinstance(data.get(name, ""), str)]
        missing = [name for name in strings[:4] if not data.get(name)]
        if bad or missing:
            raise ValueError(f"its provenance lacks {', '.join(missing + bad)}")
        inputs = data.get("inputs")
        if inputs is not None:
            try:
                inputs = tuple(InputShape(str(s["name"]), str(s["dtype"]), tuple(int(d) for d in s["dims"]))
                               for s in inputs)
            except (KeyError, TypeError, ValueError):
                raise ValueError("its provenance's input shapes are damaged") from None
        return cls(data["capture"], data["model"], data["model_sha256"], data["ort_version"], inputs,
                   data.get("adapter", ""), data.get("run", ""))


def _shapes(inputs) -> str:
    if inputs is None:
        return "(not recorded)"
    return ", ".join(f"{s.name} {s.dtype} [{', '.join(map(str, s.dims))}]" for s in inputs) or "nothing"


@dataclass(frozen=True)
class Capture:
    """The programs one capture run dispatched (label -> WGSL, in dispatch order) and its provenance."""

    provenance: Provenance
    programs: dict

    @property
    def line(self) -> str:
        return self.provenance.line

    def program(self, label: str) -> str:
        """The WGSL of program `label`; SetupError (one line) if the run did not dispatch it."""
        if label not in self.programs:
            raise SetupError(f"{self.line.removeprefix('// ')} dispatched {', '.join(self.programs) or 'nothing'}, "
                             f"not {label}")
        return self.programs[label]

    def wgsl(self, label: str) -> str:
        """The program's WGSL after the provenance line; SetupError if it did not run."""
        return f"{self.line}\n{self.program(label)}"

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "provenance": self.provenance.to_json(), "programs": self.programs},
                          indent=1)


class UnusableCapture(Exception):
    """A cache file that is not a capture verify can use; the message says why (after the file)."""


class StaleCapture(UnusableCapture):
    """A capture verify wrote before captures carried their provenance: expected once per file,
    so it is captured again without a word."""


def load(path: Path) -> Capture:
    """The capture in `path`; FileNotFoundError where there is none, UnusableCapture where the
    file is not one (damaged, or written before captures carried provenance)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise UnusableCapture(f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    return parse(text)


def parse(text: str) -> Capture:
    """The capture a file's `text` holds; UnusableCapture where it is not one (`verify sources
    refresh` compares captures it made with the shipped ones without writing them)."""
    if not text.strip():
        raise UnusableCapture("is empty")
    try:
        data = json.loads(text)
    except ValueError:
        raise UnusableCapture("is not JSON (truncated or damaged)") from None
    if not isinstance(data, dict):
        raise UnusableCapture("is not a capture (not a JSON object)")
    if data.get("format") != FORMAT:
        if isinstance(data.get("provenance"), str) and isinstance(data.get("programs"), dict):
            raise StaleCapture("was written before captures carried their provenance (stale)")
        raise UnusableCapture(f"is not a capture of format {FORMAT}")
    try:
        provenance = Provenance.from_json(data.get("provenance"))
    except ValueError as exc:
        raise UnusableCapture(f"is damaged: {exc}") from None
    programs = data.get("programs")
    if not isinstance(programs, dict) or not programs:
        raise UnusableCapture("is damaged: it holds no programs")
    if not all(isinstance(k, str) and isinstance(v, str) and v for k, v in programs.items()):
        raise UnusableCapture("is damaged: a program's WGSL is not text")
    return Capture(provenance, programs)


def _usable(path: Path, want: Provenance) -> tuple[Capture | None, UnusableCapture | None]:
    """(the capture in `path` if it is one of what `want` asks for, else None; why not, or None
    where there is no file)."""
    try:
        found = load(path)
    except FileNotFoundError:
        return None, None
    except UnusableCapture as exc:
        return None, exc
    why = want.mismatch(found.provenance)
    return (found, None) if why is None else (None, UnusableCapture(f"is not this capture: {why}"))


def cached_capture(path: Path, want: Provenance, capture: Callable[[], Capture]) -> Capture:
    """The capture of `want` kept at `path`, else `capture()`'s, kept there.

    A file whose provenance is not `want`, a stale or a damaged one is captured again and
    replaced. One process captures at a time (an advisory flock beside the file, released however
    its holder ends): processes that want one capture at once (a planning pool, two workers)
    capture it once, the others wait and read it."""
    path = Path(path)
    found, why = _usable(path, want)
    if found is not None:
        return found
    shipped = _shipped(path, want)
    if shipped is not None:
        return shipped
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found, why = _usable(path, want)  # captured while this process waited
        if found is not None:
            return found
        try:
            made = capture()
        except SetupError as cannot:  # ORT runs, but cannot capture here (no `onnx` to build the model)
            if why is None:
                raise
            raise SetupError(f"{cannot}; the ORT WGSL cache file {path} {why}") from None
        wrong = want.mismatch(made.provenance)
        if wrong is not None:
            raise RuntimeError(f"verify's capture of {want.capture} records that {wrong}")
        if why is not None and not isinstance(why, StaleCapture):  # a wrong or damaged file is news
            print(f"verify: the ORT WGSL cache file {path} {why}; captured again", file=sys.stderr)
        write_atomic(path, made.to_json())
        return made


def cached_elsewhere(root: Path, version: str, filename: str, want: Provenance, missing: SetupError) -> Capture:
    """Without ORT's runtime here (`missing` says why): the capture of `want` that the cache
    holds for onnxruntime-web `version` from any adapter's folder, else SetupError (one line)
    saying why ORT is missing and what the cache lacks, naming the file it could not use."""
    refused = []
    shipped = SHIPPED.matching(f"{version}/*/{filename}")
    for path in sorted((Path(root) / version).glob(f"*/{filename}")) + shipped:
        found, why = _usable(path, want)
        if found is not None:
            return found
        refused.append(f"{path} {why}")
    if refused:
        raise SetupError(f"{missing}; the ORT WGSL cache cannot stand in: {'; '.join(refused)} "
                         f"(capture it again where ORT runs)")
    raise SetupError(f"{missing} ({want.capture} is not in the ORT WGSL cache {root} nor shipped with verify)")


def _shipped(path: Path, want: Provenance) -> Capture | None:
    """The shipped capture kept as `path` is in the cache (its version, vendor and name), if its
    provenance is `want`'s."""
    shipped = SHIPPED.path("/".join(path.parts[-3:]))
    return None if shipped is None else _usable(shipped, want)[0]


def with_run(want: Provenance, feeds: dict, adapter: str, run: str) -> Provenance:
    """`want` completed by a capture run: the shapes it was fed, the adapter, what ran."""
    return replace(want, inputs=input_shapes(feeds), adapter=adapter, run=run)
