"""Checks of ggml-webgpu's programs that verify's generic checks do not cover as they are.

`native_width`: the reference comparison at the adapter's own subgroup width only. ggml-webgpu's
mat-vec and split-KV attention programs call subgroupAdd and subgroupShuffle in control flow that
is uniform within a subgroup but not across the workgroup (a loop over rows from `subgroup_id`,
work done by subgroup 0 alone), which WGSL allows; verify's emulation of other widths synchronises
the whole workgroup at every built-in (docs/instrumentation.md §3) and cannot run such a program,
so for these kernels the gate compares at the width the adapter runs and says so, instead of
recording an error at each emulated width. The programs are instantiated for subgroups of 4 to
128 lanes, so the native width is one they must be right at.
"""

from __future__ import annotations

from verify.checks.reference import ReferenceCheck


class NativeWidthCheck(ReferenceCheck):
    name = "native_width"
    doc = ("outputs within the derived error budget of the float64 reference, at the adapter's own subgroup width "
           "(the program's subgroup built-ins sit in subgroup-uniform control flow, which verify cannot emulate)")
    at_every_subgroup_width = False
