"""What `sanitize` found in one or more dispatches, as typed values with readable messages.

Each finding names the memory (address space, variable, element), the invocations involved as
(workgroup, lane) with lane = local_invocation_index and workgroup the linear workgroup id
(x + X (y + Y z)), and the source line of each access, quoted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verify.instrument.sanitize import LoopSite, Site
from verify.wgsl.types import Array, Matrix, Struct, Vector

_COMPONENTS = "xyzw"


@dataclass(frozen=True)
class Access:
    """One logged execution of an access site."""

    site: Site
    group: int
    lane: int
    epoch: int | None = None

    def describe(self, with_epoch: bool = False) -> str:
        when = f" in epoch {self.epoch}" if with_epoch and self.epoch is not None else ""
        return (f"{self.site.kind.verb} by (wg {self.group}, lane {self.lane}){when} at {self.site.where} "
                f"\"{self.site.source_line.strip()}\"")


class Finding:
    """Base of every finding: `message()` is one paragraph a kernel author can act on."""

    def message(self) -> str:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __str__(self) -> str:
        return self.message()


def _memory(space: str, variable: str) -> str:
    return (f"{'workgroup' if space == 'workgroup' else 'storage'} "
            f"{'array' if space == 'workgroup' else 'buffer'} {variable}")


def _more(count: int, plural: str) -> str:
    return f" ({count} {plural} in all)" if count > 1 else ""


@dataclass(frozen=True)
class Race(Finding):
    """Two invocations touch one address, at least one writes, and nothing orders them.

    `ordering`: "epoch" (same workgroup, same barrier epoch: no barrier between them),
    "memory" (same workgroup, a barrier between them, but none that orders this address space:
    workgroupBarrier orders workgroup memory, storageBarrier storage memory), or "workgroups"
    (different workgroups of one dispatch: nothing orders them).
    """

    space: str
    variable: str
    address: str
    ordering: str
    first: Access
    second: Access
    addresses: int = 1

    def message(self) -> str:
        memory = f"{_memory(self.space, self.variable)}{self.address}"
        if self.ordering == "epoch":
            head = f"race on {memory} in epoch {self.first.epoch}: "
            tail = ""
            first, second = self.first.describe(), self.second.describe()
        elif self.ordering == "memory":
            barrier = "storageBarrier" if self.space == "storage" else "workgroupBarrier"
            head = f"unsynchronised access to {memory}: "
            tail = (f"; a barrier separates them, but no {barrier}, and only {barrier} makes {self.space} "
                    "memory writes visible to other invocations")
            first, second = self.first.describe(True), self.second.describe(True)
        else:
            head = f"race on {memory} between workgroups: "
            tail = "; nothing orders workgroups of one dispatch"
            first, second = self.first.describe(), self.second.describe()
        return f"{head}{first} and {second}{tail}{_more(self.addresses, 'addresses')}"


@dataclass(frozen=True)
class RedundantWrites(Race):
    """A race in which every access writes the same value (TVM's decode stores each output from
    every slice of a workgroup): no value is lost, so it is a note, not a failure."""

    def message(self) -> str:
        race = Race.message(self)
        return f"benign {race}: every access writes the same value"


@dataclass(frozen=True)
class OutOfBounds(Finding):
    """An index past its array's length (or a vector's width): the access was not performed."""

    access: Access
    dimension: int  # 1-based position of the index on the access path
    index: int
    length: int
    count: int = 1

    def message(self) -> str:
        site = self.access.site
        index = self.index if self.index < 2**31 else self.index - 2**32
        where = site.expression.strip()
        if where.count("[") > 1:
            where = f"index {self.dimension} of {where}"
        return (f"out-of-bounds {site.kind.verb} of {_memory(site.space, site.variable)}: index {index} is not below "
                f"the length {self.length} ({where}); {self.access.describe()}{_more(self.count, 'accesses')}")


@dataclass(frozen=True)
class UninitializedRead(Finding):
    """A read of workgroup memory no invocation of the workgroup wrote before it: the value is
    WGSL's zero-initialisation (which some drivers, e.g. Mesa 22.3's lavapipe, do not perform)."""

    access: Access
    address: str
    count: int = 1

    def message(self) -> str:
        site = self.access.site
        return (f"uninitialised read of {_memory(site.space, site.variable)}{self.address}: "
                f"{self.access.describe(True)}, and no invocation of workgroup {self.access.group} wrote it "
                f"before (the kernel relies on zero-initialisation){_more(self.count, 'reads')}")


@dataclass(frozen=True)
class UnboundedLoop(Finding):
    """A loop began more trips than the bound (sanitize.LOOP_BOUND, far above what any kernel of
    the repository needs) in one execution: a kernel that does not terminate. The sanitizer left
    the loop there, so the dispatch ended; a plain run would hang, be ended by the driver, or
    have the loop removed by the compiler where it has no side effect."""

    loop: LoopSite
    group: int
    lane: int
    bound: int
    count: int = 1  # invocations that ran past the bound

    def message(self) -> str:
        return (f"unbounded loop: the loop at {self.loop.where} \"{self.loop.source_line.strip()}\" ran past "
                f"{self.bound} trips in (wg {self.group}, lane {self.lane}), the sanitizer's bound (far above what "
                f"any kernel needs), and was ended there: the kernel does not terminate"
                f"{_more(self.count, 'invocations')}")


@dataclass(frozen=True)
class LogTruncated(Finding):
    """The shadow log filled up: accesses past its capacity were not recorded, so the analysis
    of the rest is incomplete (a clean result would mean nothing). Only `analyze` of such a log
    reports it: SanitizingDevice runs a dispatch whose log does not fit again in passes
    (verify.instrument.passes), or raises SanitizerLogLimit where it cannot."""

    recorded: int
    attempted: int

    def message(self) -> str:
        return (f"sanitizer log truncated: {self.attempted} accesses, room for {self.recorded}; "
                "the findings are incomplete")


@dataclass
class SanitizerReport:
    """Findings of the dispatches run since the report was started."""

    findings: list[Finding] = field(default_factory=list)
    #: Races in which every access writes the same value: reported, but not failures.
    notes: list[Finding] = field(default_factory=list)
    dispatches: int = 0
    accesses: int = 0

    @property
    def clean(self) -> bool:
        return not self.findings

    def messages(self) -> list[str]:
        return [f.message() for f in self.findings]

    def of_type(self, kind: type) -> list:
        return [f for f in self.findings if isinstance(f, kind)]


def describe_address(type_, scalar: int, scalars: int = 1) -> str:
    """`[9].y` for scalar 37 of array<vec4<f32>, N>: the part of a variable of type `type_` that
    holds scalars [scalar, scalar + scalars), named down to the smallest part holding them all."""
    text = ""
    while _size(type_) > scalars:
        if isinstance(type_, Array):
            size = type_.element.scalars  # fixed: only the outermost array may be runtime-sized
            text += f"[{scalar // size}]"
            scalar, type_ = scalar % size, type_.element
        elif isinstance(type_, Struct):
            for name, member in type_.members:
                if scalar < member.scalars:
                    text += f".{name}"
                    type_ = member
                    break
                scalar -= member.scalars
            else:
                break
        elif isinstance(type_, Matrix):
            text += f"[{scalar // type_.rows}]"
            scalar, type_ = scalar % type_.rows, type_.column
        elif isinstance(type_, Vector):
            text += "." + _COMPONENTS[scalar:scalar + scalars]
            break
        else:
            break
    return text


def _size(type_) -> float:
    if isinstance(type_, Array) and type_.length is None:
        return float("inf")
    return type_.scalars
