"""`decode`: the host-side switch between the tiled and the sequence-sharded decode kernels.

TVM PR #20426 (docs/tvm.md §10) keeps TVM's tiled nest for short contexts, where it is faster,
and selects the sharded nest on the host from the page count: sharded when
nnz_pages > B * 256 / page_size, i.e. when the batch averages more than 256 rows of pages per
sequence. Both are separate WGSL modules with the same bindings and semantics; checking `decode`
checks the pair as an application runs it, so a case on either side of the boundary exercises
the kernel the host would pick.

One WGSL text stands for both (for `verify show decode` and `--wgsl`): each module follows a line
`// ---- module: <kernel name> ----`, tiled first. `modules` splits the text there and `launch`
dispatches the module the rule picks.
"""

from __future__ import annotations

import re
from functools import cached_property

from verify.errors import UsageError
from verify.kernels.attention.decode_common import DecodeKernel

#: Rows of context per sequence above which the sharded kernel is chosen (the seed's switch point).
SWITCH_ROWS = 256
#: Switch points the cases draw: the real one (None), and a low one so that the short contexts of
#: every profile take the sharded branch too (the rule is the same; only its threshold moves).
DRAWN_SWITCH_ROWS = (None, 32)
_SEPARATOR = "// ---- module: {name} ----"
_SEPARATOR_LINE = re.compile(r"^// ---- module: (\S+) ----$", re.M)


def use_sharded(nnz_pages: int, batch: int, page_size: int, switch_rows: int = SWITCH_ROWS) -> bool:
    """The seed's host rule: sharded when nnz_pages > B * 256 / page_size (integer division, as TVM's
    shape arithmetic), else tiled."""
    return nnz_pages > batch * switch_rows // page_size


class DecodeSwitch(DecodeKernel):
    name = "decode"
    summary = (f"host switch: decode.sharded when nnz_pages > B*{SWITCH_ROWS}/page_size, else decode.tiled "
               "(one WGSL text, two modules)")

    @cached_property
    def branches(self) -> dict:
        """The two kernels by branch name, imported on first use."""
        from verify.kernels.attention.decode_sharded import DecodeSharded
        from verify.kernels.attention.decode_tiled import DecodeTiled

        return {"tiled": DecodeTiled(), "sharded": DecodeSharded()}

    def validate(self, config):
        for kernel in self.branches.values():
            kernel.validate(config)

    # Kernel.limits is a class attribute, read and never assigned: a property in its place is sound
    @property
    def limits(self) -> dict:  # type: ignore[override]
        """Device limits both modules run under: per key, the larger of the two kernels' needs."""
        from verify.gpu.device import WANTED_LIMITS

        kernels = self.branches.values()
        keys = set().union(*(k.limits for k in kernels))
        return {key: max(k.limits.get(key, WANTED_LIMITS[key]) for k in kernels) for key in keys}

    def branch(self, case) -> str:
        """'sharded' or 'tiled': the kernel the host rule picks for this case (at the case's drawn
        switch point, `switch_rows`, else the real one)."""
        nnz_pages = int(case["page_values"].shape[0])
        batch = int(case["q"].shape[0])
        rows = case.params.get("switch_rows") or SWITCH_ROWS
        return "sharded" if use_sharded(nnz_pages, batch, int(case["pages"].shape[3]), rows) else "tiled"

    def cases(self, config, profile):
        """The decode cases, each with a drawn switch point (DRAWN_SWITCH_ROWS): at the real one
        only the longer contexts of the ci profile reach the sharded branch, so a lower one sends
        short cases there too and every profile exercises both branches."""
        from hypothesis import strategies as st

        return st.tuples(super().cases(config, profile), st.sampled_from(DRAWN_SWITCH_ROWS)).map(
            lambda pair: pair[0] if pair[1] is None else pair[0].replace(switch_rows=pair[1]))

    def launch_paths(self, config, case):
        return (self.branch(case),)

    def wgsl(self, config):
        parts = []
        for kernel in self.branches.values():
            parts += [_SEPARATOR.format(name=kernel.name), kernel.wgsl(config)]
        return "\n".join(parts)

    def _modules_by_name(self, wgsl: str) -> dict:
        names = _SEPARATOR_LINE.findall(wgsl)
        texts = _SEPARATOR_LINE.split(wgsl)[2::2]
        expected = [k.name for k in self.branches.values()]
        if sorted(names) != sorted(expected):
            found = ", ".join(names) or "none"
            raise UsageError(f"decode WGSL must hold one module per kernel ({', '.join(expected)}), each after a "
                             f"line '{_SEPARATOR.format(name='<kernel>')}'; found modules: {found}")
        return dict(zip(names, (t.strip("\n") + "\n" for t in texts)))

    def modules(self, wgsl):
        return list(self._modules_by_name(wgsl).values())

    def launch(self, device, wgsl, config, case):
        kernel = self.branches[self.branch(case)]
        return kernel.launch(device, self._modules_by_name(wgsl)[kernel.name], config, case)

    def features(self, case):
        return dict(super().features(case), sharded=int(self.branch(case) == "sharded"))
