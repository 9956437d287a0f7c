"""Planning that meets slow WGSL makes the rest of the configs' in parallel first (verify.prepare),
and the plan is the same as a serial one's. The kernels here keep their WGSL in files, as ORT's captures and
TVM's builds do; two of them wait for each other, so they can only finish when made at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

KERNELS = textwrap.dedent('''
    import os, time
    from pathlib import Path
    from verify.kernels.contract import Kernel

    FOLDER = Path(os.environ["PREPARE_TEST_DIR"])
    PLANNER = int(os.environ["PREPARE_TEST_PLANNER"])

    class _Kept(Kernel):
        """Makes its WGSL once, kept in FOLDER: `<name>.wgsl`, and `<name>.<pid>` for each process making it."""
        checks = ("reference",)
        leaves_out = {"determinism": "a planning fixture: one job a kernel", "sanitize": "a planning fixture"}
        partner = ""

        def wgsl(self, config):
            kept = FOLDER / f"{self.name}.wgsl"
            if not kept.exists():
                (FOLDER / f"{self.name}.{os.getpid()}").touch()
                if self.partner:  # waits until its partner is being made too: only a pool finishes both
                    deadline = time.monotonic() + 120
                    while not list(FOLDER.glob(f"{self.partner}.*")):
                        if time.monotonic() > deadline:
                            raise TimeoutError(f"{self.partner} was never made beside {self.name}")
                        time.sleep(0.05)
                if self.name == "prep.fails_in_pool" and os.getpid() != PLANNER:
                    raise RuntimeError("this kernel cannot make its WGSL in a pool process")
                kept.write_text(f"// {self.name}\\n@compute @workgroup_size(1) fn main() {{}}\\n")
            return kept.read_text()

        def cases(self, config, profile): raise NotImplementedError
        def launch(self, device, wgsl, config, case): raise NotImplementedError
        def expected(self, config, case): raise NotImplementedError

    class First(_Kept):
        name = "prep.first"

    class Left(_Kept):
        name, partner = "prep.left", "prep.right"

    class Right(_Kept):
        name, partner = "prep.right", "prep.left"

    class FailsInPool(_Kept):
        name = "prep.fails_in_pool"
''')

PLAN = textwrap.dedent('''
    import json, os, sys
    import verify.prepare
    from verify.plan import gate_jobs, plan_identity
    from verify.profiles import get_profile
    os.environ["PREPARE_TEST_PLANNER"] = str(os.getpid())
    verify.prepare.SLOW_S = float(sys.argv[2])
    names = [f"prep_kernels:{n}" for n in ("First", "Left", "Right", "FailsInPool")]
    jobs, skipped = gate_jobs(names, profile=get_profile("quick"), seed=0, out_dir=None, time_limit=None,
                              workers=int(sys.argv[1]))
    print(json.dumps({"jobs": [[j.kernel, j.kernel_ref, j.check] for j in jobs], "skipped": len(skipped),
                      "plan": plan_identity(jobs, skipped, get_profile("quick"), 0).fingerprint}))
''')


def _plan(folder: Path, kernels: str, workers: int, slow_s: float) -> tuple[dict, str, dict]:
    """(the plan's jobs and identity, what planning said, kernel name -> the processes that made its WGSL)."""
    kept = folder / "kept"
    kept.mkdir(parents=True)
    (folder / "prep_kernels.py").write_text(kernels)
    env = dict(os.environ, PREPARE_TEST_DIR=str(kept), PREPARE_TEST_PLANNER="0",
               PYTHONPATH=os.pathsep.join([str(folder), *sys.path]))
    run = subprocess.run([sys.executable, "-c", PLAN, str(workers), str(slow_s)], capture_output=True, text=True,
                         env=env, cwd=folder, timeout=600)
    assert run.returncode == 0, run.stderr
    makers: dict[str, set] = {}
    for path in kept.iterdir():
        if path.suffix != ".wgsl":
            name, _, pid = path.name.rpartition(".")
            makers.setdefault(name, set()).add(int(pid))
    return json.loads(run.stdout), run.stderr, makers


def test_the_kernels_left_are_made_at_once_once_one_is_slow(tmp_path):
    plan, said, makers = _plan(tmp_path, KERNELS, workers=2, slow_s=0.0)
    # Left waits for Right and Right for Left: both were made, so by two processes at once.
    assert len(makers["prep.left"]) == len(makers["prep.right"]) == 1
    assert makers["prep.left"] != makers["prep.right"]
    assert "making the 3 configs left in 2 processes at once" in said
    # A failure in the pool is the planner's to meet: it made that kernel's WGSL itself.
    assert len(makers["prep.fails_in_pool"]) == 2
    assert [job[0] for job in plan["jobs"]] == ["prep.first", "prep.left", "prep.right", "prep.fails_in_pool"]


def test_the_plan_is_the_same_with_and_without_the_pool(tmp_path):
    pooled, _, _ = _plan(tmp_path / "pooled", KERNELS, workers=2, slow_s=0.0)
    # Without a pool Left and Right would wait for each other for ever: here they do not wait.
    alone = KERNELS.replace('name, partner = "prep.left", "prep.right"', 'name = "prep.left"') \
                   .replace('name, partner = "prep.right", "prep.left"', 'name = "prep.right"')
    assert alone.count("partner = \"prep.") == 0
    serial, said, makers = _plan(tmp_path / "serial", alone, workers=1, slow_s=0.0)
    assert "processes at once" not in said and all(len(pids) == 1 for pids in makers.values())
    assert pooled == serial


def test_a_quick_plan_starts_no_pool():
    from verify.prepare import KernelConfig, made_in_order

    heard = []
    items = list(made_in_order(["a", "b", "c"], lambda item: KernelConfig(item, item, {}), workers=4,
                               report=heard.append))
    assert items == ["a", "b", "c"]
    assert heard == []


def _waited_for(lock: Path) -> bool:
    """Whether someone waits for an flock of `lock` (Linux lists a waiter as
    `N: -> FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF`)."""
    inode = lock.stat().st_ino
    return any(line.split()[1] == "->" and line.split()[6].endswith(f":{inode}")
               for line in Path("/proc/locks").read_text().splitlines())


def test_a_text_wanted_by_two_at_once_is_made_once(tmp_path):
    """The second caller of made_once, arriving while the first makes the text, waits for it and
    reads it: an ORT capture of minutes wanted by two planning processes is captured once."""
    import threading
    import time

    from verify._files import made_once

    path, made, second = tmp_path / "kept" / "capture.json", [], {}

    def make_second():
        second["text"] = made_once(path, lambda: made.append("second") or "second's")

    def make_first():
        made.append("first")
        waiter = threading.Thread(target=make_second)
        waiter.start()
        deadline = time.monotonic() + 60
        while not _waited_for(path.parent / ".capture.json.lock"):  # the second caller is queued behind this one
            assert time.monotonic() < deadline, "the second caller never waited for the first"
            time.sleep(0.01)
        second["thread"] = waiter
        return "first's"

    assert made_once(path, make_first) == "first's"
    second["thread"].join(60)
    assert second["text"] == "first's" and made == ["first"]
    assert made_once(path, lambda: made.append("again") or "again") == "first's" and made == ["first"]
