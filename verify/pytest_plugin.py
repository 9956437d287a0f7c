"""verify's pytest plugin (registered under the `pytest11` entry point; nothing to configure).

What a test suite gets:

- ``@pytest.mark.webgpu(requires={"shader-f16", "subgroup"})``: the test needs a WebGPU adapter
  (with those features); without one it is skipped with the one-line install hint.
- ``webgpu_device``: a session-wide ``verify.gpu.Device`` on the chosen adapter.
- ``verify_check``: ``verify_check(kernel, config, **options)`` runs ``verify.check`` with the
  session's options and fails the test with the shrunk case and its replay command.
- ``--verify-profile``, ``--verify-adapter``, ``--verify-seed``: the options ``verify_check``
  and the gate items run with.
- ``pytest --verify-gate``: every (kernel, config, check) of ``verify gate`` becomes a test
  item, so ``-k``, ``-x``, ``--lf``, ``--junitxml`` and pytest-xdist (``-n 2``) work on the
  gate; each item records its verdict, err/budget and replay commands as JUnit properties.
  A documented finding (verdict KNOWN) is an xfail; a skipped check fails unless
  ``--verify-allow-skip``, because it verified nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_GATE_NODE = "verify-gate"


# -- options and markers ------------------------------------------------------------------------
def pytest_addoption(parser):
    group = parser.getgroup("verify", "WebGPU kernel verification (verify)")
    group.addoption("--verify-profile", default="ci", metavar="NAME",
                    help="verify profile for verify_check and the gate: quick | ci | nightly (default ci)")
    group.addoption("--verify-adapter", default=None, metavar="TEXT",
                    help="run on the WebGPU adapter whose name/backend contains TEXT (default: $VERIFY_ADAPTER, "
                    "else the best one)")
    group.addoption("--verify-seed", type=int, default=0, metavar="N",
                    help="Hypothesis seed of verify's checks (default 0)")
    group.addoption("--verify-implementation", default=None, metavar="NAME",
                    help="WebGPU implementation, e.g. wgpu (Naga) or dawn (Tint) (default: $VERIFY_IMPLEMENTATION, "
                    "else the first registered; the gate runs on every one installed unless one is named)")
    # The former name of --verify-implementation: accepted, with a warning, until verify.errors.REMOVED_IN.
    group.addoption("--verify-backend", default=None, metavar="NAME", dest="verify_renamed_backend",
                    help="deprecated name of --verify-implementation")
    group.addoption("--verify-gate", action="store_true",
                    help="collect every (kernel, config, check) of `verify gate` as a test item (instead of the "
                    "test files, unless paths are given)")
    group.addoption("--verify-kernels", default=None, metavar="NAMES",
                    help="with --verify-gate: a comma-separated subset of kernels")
    group.addoption("--verify-allow-skip", action="store_true",
                    help="a gate check the adapter cannot run is skipped instead of failed")
    group.addoption("--verify-out", default=None, metavar="DIR",
                    help="where failing cases are saved for `verify replay` (default: verify-<uid> in the system's "
                    "temporary folder)")


def pytest_configure(config):
    _check_options(config)
    config.addinivalue_line(
        "markers", "webgpu(requires=()): needs a WebGPU adapter (with the named features, e.g. "
        "{'shader-f16', 'subgroup'}); skipped with the install hint where there is none")


def _check_options(config) -> None:
    """A bad --verify-* option is pytest's usage error (one line, exit 4), not an internal error."""
    from verify.errors import UsageError, deprecated

    renamed = config.getoption("verify_renamed_backend")
    if renamed:
        deprecated("--verify-backend", "--verify-implementation")
        chosen = config.getoption("verify_implementation")
        if chosen and chosen != renamed:
            raise pytest.UsageError(f"--verify-backend {renamed} and --verify-implementation {chosen} disagree "
                                    "(--verify-backend is the deprecated name of --verify-implementation)")
        config.option.verify_implementation = renamed
    try:
        from verify.gpu.implementations import chosen_implementation
        from verify.profiles import get_profile

        get_profile(config.getoption("verify_profile"))
        chosen_implementation(config.getoption("verify_implementation"))
        if config.getoption("verify_out") is not None:
            from verify.results.destination import output_folder

            output_folder(config.getoption("verify_out"), "--verify-out")
        kernels = config.getoption("verify_kernels")
        if kernels is not None:
            from verify.kernels.registry import spec_of
            from verify.plan import named_list

            for name in named_list(kernels, "--verify-kernels", "kernel"):
                spec_of(name)
    except UsageError as exc:
        raise pytest.UsageError(f"verify: {exc}") from None


# -- the adapter --------------------------------------------------------------------------------
class _AdapterProbe:
    """Which adapter the session runs on and its features, found once without opening a device."""

    def __init__(self, name: str | None, implementation: str | None):
        self.name = name
        self.implementation = implementation
        self._found: tuple[frozenset | None, str] | None = None

    def features(self) -> tuple[frozenset | None, str]:
        """(features, "") of the chosen adapter, or (None, why there is none)."""
        if self._found is None:
            from verify.errors import UsageError
            from verify.gpu.implementations import default_implementation, implementation

            try:
                chosen = implementation(self.implementation or default_implementation())
                adapters = [info for info in chosen.adapters() if info.matches(self.name or "")]
                if not adapters:
                    raise UsageError(f"{chosen.name}: no adapter matches {self.name!r}")
                self._found = (frozenset(adapters[0].features), "")
            except UsageError as exc:
                self._found = (None, str(exc))
        return self._found


_probe_key = pytest.StashKey[_AdapterProbe]()
_session_key = pytest.StashKey[object]()


def _probe(config) -> _AdapterProbe:
    if _probe_key not in config.stash:
        config.stash[_probe_key] = _AdapterProbe(config.getoption("verify_adapter"),
                                                 config.getoption("verify_implementation"))
    return config.stash[_probe_key]


def pytest_runtest_setup(item):
    marker = item.get_closest_marker("webgpu")
    if marker is None:
        return
    features, why = _probe(item.config).features()
    if features is None:
        pytest.skip(why)
    wanted = marker.kwargs.get("requires", marker.args[0] if marker.args else ())
    wanted = {wanted} if isinstance(wanted, str) else set(wanted)
    missing = sorted(wanted - features)
    if missing:
        pytest.skip(f"the WebGPU adapter lacks {', '.join(missing)}")


@pytest.fixture(scope="session")
def webgpu_device(pytestconfig):
    """A device (verify.gpu.Device) on the session's adapter and implementation
    (--verify-implementation); the test is skipped (with the install hint) on a machine without one."""
    from verify.errors import SetupError
    from verify.gpu.implementations import open_device

    try:
        return open_device(pytestconfig.getoption("verify_implementation"), pytestconfig.getoption("verify_adapter"))
    except SetupError as exc:
        pytest.skip(str(exc))


# -- verify_check ---------------------------------------------------------------------------------
def _out_dir(config) -> Path:
    from verify.api import default_out_dir

    chosen = config.getoption("verify_out")
    return Path(chosen) if chosen is not None else default_out_dir()


def _record_properties(node, results) -> None:
    for result in results:
        prefix = f"verify[{result.check}]"
        node.user_properties.append((f"{prefix} verdict", result.verdict.value))
        node.user_properties.append((f"{prefix} examples", result.examples))
        if result.max_err_over_budget is not None:
            node.user_properties.append((f"{prefix} max err/budget", f"{result.max_err_over_budget:.6g}"))
        for command in result.replay_commands:
            node.user_properties.append((f"{prefix} replay", command))


@pytest.fixture
def verify_check(request):
    """``verify_check(kernel, config=None, **options) -> CheckResults``: verify.check with the
    session's --verify-profile/--verify-adapter/--verify-seed; a failure fails the test with
    the shrunk case and its replay command, a check the adapter cannot run skips it."""
    import verify

    config = request.config

    def run(kernel, kernel_config: dict | None = None, **options):
        options.setdefault("profile", config.getoption("verify_profile"))
        options.setdefault("adapter", config.getoption("verify_adapter"))
        options.setdefault("implementation", config.getoption("verify_implementation"))
        options.setdefault("seed", config.getoption("verify_seed"))
        options.setdefault("out_dir", _out_dir(config))
        results = verify.check(kernel, kernel_config, **options)
        _record_properties(request.node, results)
        if any(r.verdict.fails_run for r in results):
            pytest.fail(str(_failure(results)), pytrace=False)
        if any(r.verdict is verify.Verdict.SKIP for r in results):
            pytest.skip("; ".join(sorted({f"{r.check}: {r.reason}" for r in results
                                          if r.verdict is verify.Verdict.SKIP})))
        return results

    return run


def _failure(results):
    from verify.results.record import VerificationFailure

    try:
        results.raise_for_verdict()
    except VerificationFailure as exc:
        return exc
    return ""


# -- the gate as test items -----------------------------------------------------------------------
def pytest_ignore_collect(collection_path, config):
    """With --verify-gate and no paths on the command line, the gate is the whole run."""
    if config.getoption("verify_gate") and config.args_source != pytest.Config.ArgsSource.ARGS:
        return True
    return None


def pytest_collection_modifyitems(session, config, items):
    if not config.getoption("verify_gate"):
        return
    gate = GateCollector.from_parent(session, name=_GATE_NODE, nodeid=_GATE_NODE)
    items.extend(gate.collect())


class GateCollector(pytest.Collector):
    """The gate's jobs, planned by the function `verify gate` plans with (verify.run.plan_gate);
    each job is one item, run by this pytest process's worker as pytest schedules it."""

    def collect(self):
        from verify.errors import UsageError
        from verify.gpu.implementations import chosen_implementation, default_implementation
        from verify.plan import named_list
        from verify.profiles import get_profile
        from verify.run import plan_gate

        config = self.config
        kernels = config.getoption("verify_kernels")
        try:
            plan = plan_gate(named_list(kernels, "--verify-kernels", "kernel") if kernels is not None else None,
                             profile=get_profile(config.getoption("verify_profile")),
                             seed=config.getoption("verify_seed"), out_dir=_out_dir(config),
                             adapter=config.getoption("verify_adapter"),
                             implementation=chosen_implementation(config.getoption("verify_implementation")))
        except UsageError as exc:  # no adapter, a broken kernel name: pytest's one-line usage error
            raise pytest.UsageError(f"verify: {exc}") from None
        default = default_implementation()
        for result in plan.prior:
            yield GateItem.from_parent(self, name=f"{result.kernel}::setup", job=None, unplanned=result)
        for job in plan.jobs:
            config_text = ",".join(f"{k}={v}" for k, v in sorted(job.config.items()))
            if job.subgroup_width:
                config_text += f",subgroup_width={job.subgroup_width}"
            if job.implementation and job.implementation != default:
                config_text += f",implementation={job.implementation}"
            yield GateItem.from_parent(self, name=f"{job.kernel}::{job.check}[{config_text}]", job=job)


class _GateFailure(Exception):
    """A gate check that did not hold; its message is the whole report (no Python traceback)."""


class GateItem(pytest.Item):
    def __init__(self, *, job, unplanned=None, **kwargs):
        super().__init__(**kwargs)
        self.job = job
        #: The record of a kernel the gate could not plan: a SKIP (what it needs is missing) or an
        #: ERROR (its package is broken).
        self.unplanned = unplanned

    def runtest(self):
        from verify.results.record import Verdict

        if self.unplanned is not None:
            if self.unplanned.verdict.fails_run:
                raise _GateFailure(self.unplanned.failure_message())
            self._skip(self.unplanned.reason)
        session = _worker_session(self.config)
        results = []
        session.run([self.job], on_record=results.append)
        [result] = results
        _record_properties(self, [result])
        if result.verdict.fails_run:
            raise _GateFailure(result.failure_message())
        if result.verdict is Verdict.SKIP:
            self._skip(result.reason)
        if result.verdict is Verdict.KNOWN:
            pytest.xfail(f"known finding: {result.finding_headline}")

    def _skip(self, reason: str):
        if self.config.getoption("verify_allow_skip"):
            pytest.skip(reason)
        raise _GateFailure(f"SKIPPED, and a skip verifies nothing: {reason} (pass --verify-allow-skip to accept it)")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, _GateFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, self.nodeid


def _worker_session(config):
    """One verify worker per pytest process (per xdist worker), for every gate item it runs."""
    if _session_key not in config.stash:
        from verify.session import Session

        log = _out_dir(config) / f"worker-{os.getpid()}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        config.stash[_session_key] = Session(log)
    return config.stash[_session_key]


def pytest_unconfigure(config):
    session = config.stash.get(_session_key, None)
    if session is not None:
        session.close()
