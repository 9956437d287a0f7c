"""WGSL instrumentation on a real parse tree: a parser, `sanitize` (races, out-of-bounds and
uninitialised reads, logged by the kernel itself) and subgroup emulation at any width."""

from verify.instrument.parser import Module, WgslSyntaxError, parse

__all__ = ["Module", "WgslSyntaxError", "parse"]
