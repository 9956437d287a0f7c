"""WGSL instrumentation on a real parse tree.

- `parse(wgsl) -> Module`: the WGSL grammar (LALR, from the specification) with source positions.
- `sanitize(wgsl) -> Sanitized` and `SanitizingDevice(device)`: every access to workgroup and
  storage memory checked against its bounds and logged by the kernel itself; the log is analysed
  for races, out-of-bounds accesses and reads of uninitialised workgroup memory, and every loop
  is ended, as a finding, past a bound no kernel reaches (`Finding`s).
- `emulate_subgroups(wgsl, width)` and `EmulatingDevice(device, width)`: subgroup built-ins
  rewritten into workgroup memory, so a kernel runs with subgroups of any width 4..128.
"""

from verify.instrument.devices import EmulatingDevice, SanitizingDevice
from verify.instrument.findings import (
                                        Access,
                                        Finding,
                                        LogTruncated,
                                        OutOfBounds,
                                        Race,
                                        RedundantWrites,
                                        SanitizerReport,
                                        UnboundedLoop,
                                        UninitializedRead,
)
from verify.instrument.passes import SanitizerLogLimit
from verify.instrument.sanitize import LOOP_BOUND, Sanitized, sanitize
from verify.instrument.subgroups import emulate_subgroups
from verify.wgsl.parser import Module, WgslSyntaxError, parse
from verify.wgsl.types import UnsupportedWgsl

__all__ = [
    "Access", "EmulatingDevice", "Finding", "LOOP_BOUND", "LogTruncated", "Module", "OutOfBounds", "Race",
    "RedundantWrites", "SanitizerReport", "SanitizerLogLimit", "Sanitized", "SanitizingDevice", "UnboundedLoop",
    "UninitializedRead", "UnsupportedWgsl", "WgslSyntaxError", "emulate_subgroups", "parse", "sanitize",
]
