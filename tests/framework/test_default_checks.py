"""The default check set (verify.kernels.default_checks.DEFAULT_CHECKS): every kernel runs it unless it
says why not, so a check meant for every kernel is added in one place."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verify.kernels.default_checks import DEFAULT_CHECKS
from verify.kernels.contract import Kernel
from verify.kernels.registry import get_kernel, kernel_names

PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "plugin"


def test_a_kernel_naming_its_own_checks_also_runs_the_default_ones_after_its_first():
    class Mine(Kernel):
        checks = ("reference", "implementations")

    assert DEFAULT_CHECKS == ("determinism", "sanitize")
    assert Mine.checks == ("reference", "determinism", "sanitize", "implementations")


def test_a_kernel_leaves_a_default_check_out_with_its_reason_and_a_subclass_inherits_that():
    class Session(Kernel):
        checks = ("reference",)
        leaves_out = {"sanitize": "the runtime dispatches the programs"}

    class Narrower(Session):
        checks = ("reference", "large_scores")

    assert Session.checks == ("reference", "determinism")
    assert Narrower.checks == ("reference", "determinism", "large_scores")


def test_a_subclass_can_leave_out_what_its_parent_ran():
    class Parent(Kernel):
        checks = ("reference",)

    class Child(Parent):
        leaves_out = {"determinism": "draws its own seed each launch"}

    assert Parent.checks == ("reference", "determinism", "sanitize")
    assert Child.checks == ("reference", "sanitize")


def test_leaving_out_a_check_that_is_not_a_default_or_that_the_kernel_names_is_a_contract_error():
    with pytest.raises(TypeError, match="implementations, not a default check"):
        class NotDefault(Kernel):  # noqa: F841 (the class statement is what raises)
            checks = ("reference", "implementations")
            leaves_out = {"implementations": "meant for Dawn"}
    with pytest.raises(TypeError, match="names sanitize in checks and leaves it out"):
        class Both(Kernel):  # noqa: F841
            checks = ("reference", "sanitize")
            leaves_out = {"sanitize": "..."}


def test_a_kernel_that_names_no_check_stays_without_any_and_is_refused_when_planned():
    class Abstract(Kernel):
        pass

    assert Abstract.checks == ()


def test_every_built_in_kernel_runs_each_default_check_or_says_why_not_in_a_sentence():
    for name in kernel_names():
        kernel = get_kernel(name)
        for check in DEFAULT_CHECKS:
            why = kernel.leaves_out.get(check)
            assert (check in kernel.checks) != (why is not None), (name, check)
            assert why is None or len(why.split()) >= 6, (name, check, why)


def test_verify_list_shows_a_plug_in_kernels_default_checks_and_each_reason_for_one_left_out():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PLUGIN), *sys.path]))
    listed = subprocess.run([sys.executable, "-m", "verify", "list", "--json"], capture_output=True, text=True,
                            env=env, timeout=300)
    assert listed.returncode == 0, listed.stderr
    kernels = {k["name"]: k for k in json.loads(listed.stdout)}
    assert kernels["toy.double"]["checks"] == ["reference", "determinism", "sanitize", "small_workgroup",
                                               "implementations"]
    assert kernels["toy.double"]["leaves_out"] == {}
    assert set(kernels["ort.gqa"]["leaves_out"]) == {"sanitize"}
    text = subprocess.run([sys.executable, "-m", "verify", "list"], capture_output=True, text=True, env=env,
                          timeout=300).stdout
    assert "    without:   sanitize (ONNX Runtime's session dispatches its programs" in text
