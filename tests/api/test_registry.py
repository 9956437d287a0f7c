"""Kernels from anywhere: built-in names, entry points, import paths; `verify list` says where each comes from."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from verify import UsageError
from verify.kernels.registry import get_kernel, kernel_specs, spec_of


def test_built_in_kernels_come_from_this_distribution():
    spec = spec_of("decode.tiled")
    assert spec.origin == "built in" and spec.distribution == "webgpu-verify"
    assert spec.ref == "verify.kernels.attention.decode_tiled:DecodeTiled"


def test_an_import_path_of_a_built_in_kernel_is_that_kernel():
    assert spec_of("verify.kernels.attention.merge_state:MergeState").name == "merge_state"
    assert get_kernel("verify.kernels.attention.merge_state:MergeState").name == "merge_state"


def test_a_kernel_registered_by_entry_point_is_listed_with_its_package():
    specs = {s.name: s for s in kernel_specs()}
    assert "rmsnorm" in specs, "examples/rmsnorm is not installed (scripts/setup.sh --test installs it)"
    assert specs["rmsnorm"].origin == "entry point"
    assert specs["rmsnorm"].distribution == "verify-example-rmsnorm" and specs["rmsnorm"].version
    listed = json.loads(subprocess.run([sys.executable, "-m", "verify", "list", "--json"], capture_output=True,
                                       text=True, timeout=120).stdout)
    entry = next(d for d in listed if d["name"] == "rmsnorm")
    assert entry["package"] == "verify-example-rmsnorm" and entry["ref"] == "verify_rmsnorm.kernel:RmsNorm"


@pytest.mark.parametrize("ref,fragment", [
    ("no_module_here:K", "no module named 'no_module_here'"),
    ("verify.kernels.contract:Kernel", "does not implement"),
    ("verify.kernels.contract", "unknown kernel"),
    (":Kernel", "a kernel path is 'pkg.module:Class'"),
])
def test_a_bad_import_path_says_what_is_wrong(ref, fragment):
    with pytest.raises(UsageError, match=fragment):
        get_kernel(ref)


def test_show_accepts_an_import_path():
    result = subprocess.run([sys.executable, "-m", "verify", "show", "verify.kernels.attention.merge_state:MergeState",
                             "--config", "head_dim=64"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "const HEAD_DIM: u32 = 64u;" in result.stdout
