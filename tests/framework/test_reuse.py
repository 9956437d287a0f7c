"""`--reuse`: a check whose inputs are all unchanged since it passed takes its earlier record; any
change to what decides its verdict, or an earlier verdict other than PASS, runs it again."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

MUTANTS = Path(__file__).resolve().parents[1] / "fixtures" / "mutants"


def verify(*args):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, timeout=900)


def records(out: Path) -> list[dict]:
    return json.loads((out / "results.json").read_text())["records"]


@pytest.mark.webgpu
def test_an_unchanged_check_is_reused_and_a_changed_one_runs_again(tmp_path):
    out = tmp_path / "out"
    base = ["check", "merge_state", "--checks", "reference,determinism", "--examples", "5", "--out", str(out)]
    first = verify(*base, "--reuse")
    assert first.returncode == 0, first.stderr
    again = verify(*base, "--reuse")
    assert again.returncode == 0 and "reusing 2 of 2 checks" in again.stderr, again.stderr
    assert all(r["reused_from"] and r["inputs_sha256"] for r in records(out))
    reseeded = verify(*base, "--seed", "1", "--reuse")
    assert "reusing 0 of 2 checks" in reseeded.stderr and not any(r["reused_from"] for r in records(out))


@pytest.mark.webgpu
def test_a_run_without_reuse_leaves_records_a_later_reuse_can_take(tmp_path):
    """The usual sequence: a plain gate, an edit, then `--reuse`. The plain run must record each
    check's inputs, or the first `--reuse` after it would run everything again."""
    out = tmp_path / "out"
    base = ["check", "merge_state", "--checks", "reference,determinism", "--examples", "5", "--out", str(out)]
    plain = verify(*base)
    assert plain.returncode == 0, plain.stderr
    assert all(r["inputs_sha256"] and not r["reused_from"] for r in records(out))
    again = verify(*base, "--reuse")
    assert again.returncode == 0 and "reusing 2 of 2 checks" in again.stderr, again.stderr


@pytest.mark.webgpu
def test_a_plain_gate_then_reuse_reuses_every_pass_and_again_from_the_reused_records(tmp_path):
    """The gate's sequence end to end: every record of a plain gate is tagged, so a --reuse with
    nothing changed takes each PASS; the records it copied keep their tags, so the next takes them too."""
    out = tmp_path / "out"
    base = ["gate", "--profile", "quick", "--kernels", "merge_state", "--implementation", "wgpu", "--jobs", "2",
            "--out", str(out)]
    plain = verify(*base)
    assert plain.returncode == 0, plain.stderr
    passed = sum(r["verdict"] == "pass" for r in records(out))
    assert passed and all(r["auth_tag"] for r in records(out))
    for _ in range(2):
        again = verify(*base, "--reuse")
        assert again.returncode == 0 and f"reusing {passed} of {passed} checks" in again.stderr, again.stderr
        assert "not reused" not in again.stderr and all(r["reused_from"] for r in records(out))


@pytest.mark.webgpu
def test_a_failure_is_never_reused(tmp_path):
    out = tmp_path / "out"
    wgsl = MUTANTS / "merge_state" / "natural_log.wgsl"
    base = ["check", "merge_state", "--wgsl", str(wgsl), "--checks", "reference", "--examples", "3", "--out", str(out)]
    assert verify(*base, "--reuse").returncode == 1
    again = verify(*base, "--reuse")
    assert again.returncode == 1 and "reusing 0 of 1 checks" in again.stderr


def test_a_check_that_launches_another_kernel_is_run_again_when_that_kernels_wgsl_changes(monkeypatch):
    """decode.sharded's `differential` launches decode.tiled's WGSL and its `split_merge`
    merge_state's: an edit to either changes those checks' inputs, though not decode.sharded's own
    WGSL; its `reference` depends on its own WGSL alone."""
    from verify.kernels.attention.decode_tiled import DecodeTiled
    from verify.kernels.attention.merge_state import MergeState
    from verify.plan import gate_jobs, with_inputs
    from verify.profiles import get_profile

    jobs, _ = gate_jobs(["decode.sharded"], profile=get_profile("quick"), seed=0, out_dir=None, time_limit=None,
                        implementations=["wgpu"])
    first = {job.check: job for job in jobs}
    chosen = [first["differential"], first["split_merge"], first["reference"]]

    def digests():
        return [job.inputs for job in with_inputs(chosen, None)]

    before = digests()
    for kernel_class, changed in ((DecodeTiled, 0), (MergeState, 1)):
        original = kernel_class.wgsl
        monkeypatch.setattr(kernel_class, "wgsl", lambda self, config, original=original: original(self, config) + "//")
        after = digests()
        assert after[changed] != before[changed] and after[2] == before[2]
        monkeypatch.setattr(kernel_class, "wgsl", original)
    assert digests() == before


def test_the_machinery_that_judges_examples_is_an_input_of_every_job(monkeypatch):
    """The runner (how examples become a verdict, a documented finding's examples kept aside) and
    the worker (the findings applied, lavapipe's loop cap told apart by counted trips) decide
    every check's verdict: an edit to them, or to what they import, runs every check again."""
    from verify.plan import VERDICT_MACHINERY, gate_jobs, with_inputs
    from verify.profiles import get_profile
    from verify.results import closure

    sources = closure.code_inputs(*VERDICT_MACHINERY).sources
    assert {"verify.checks.runner", "verify.worker", "verify.checks.loop_cap", "verify.instrument.trips"} <= set(sources)
    jobs, _ = gate_jobs(["merge_state"], profile=get_profile("quick"), seed=0, out_dir=None, time_limit=None,
                        implementations=["wgpu"])
    before = [job.inputs for job in with_inputs(jobs[:2], None)]
    real = closure._module

    def edited(name):
        found = real(name)
        return replace(found, sha256="edited") if name == "verify.checks.loop_cap" else found

    monkeypatch.setattr(closure, "_module", edited)
    for cached in (closure._code_digest, closure.code_inputs):
        cached.cache_clear()
    after = [job.inputs for job in with_inputs(jobs[:2], None)]
    for cached in (closure._code_digest, closure.code_inputs):
        cached.cache_clear()
    assert all(a != b for a, b in zip(after, before))


def test_a_partner_that_cannot_be_built_leaves_the_plan_to_the_checks_own_record(monkeypatch):
    """Digesting inputs never stops a run: a check whose other kernel refuses the config still gets
    a digest (its record, an error or skip, says why), unlike the one it had with the partner."""
    from verify.checks.differential import DifferentialCheck
    from verify.errors import UsageError
    from verify.plan import gate_jobs, with_inputs
    from verify.profiles import get_profile

    jobs, _ = gate_jobs(["decode.sharded"], profile=get_profile("quick"), seed=0, out_dir=None, time_limit=None,
                        implementations=["wgpu"])
    differential = [job for job in jobs if job.check == "differential"][:1]
    before = with_inputs(differential, None)[0].inputs

    def refuses(self, kernel, config):
        raise UsageError("the partner does not take this config")

    monkeypatch.setattr(DifferentialCheck, "other_wgsl", refuses)
    after = with_inputs(differential, None)[0].inputs
    assert after and after != before


def test_the_code_digest_follows_imports_and_changes_with_any_file_they_reach(tmp_path, monkeypatch):
    package = tmp_path / "digestpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kernel.py").write_text("from digestpkg import helper\n")
    (package / "helper.py").write_text("VALUE = 1\n")
    (package / "unrelated.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "cache"))

    def digest():
        return fresh_digest("digestpkg.kernel")

    before = digest()
    assert (tmp_path / "cache" / "module-imports.json").is_file()  # the next process reads the imports
    assert digest() == before  # read back, they give the same digest
    (package / "unrelated.py").write_text("VALUE = 2\n")
    assert digest() == before  # a module the kernel never imports does not decide its verdict
    (package / "helper.py").write_text("VALUE = 2\n")
    changed = digest()
    assert changed != before
    # The imports kept are those of the source as it is: an edit that imports another module
    # makes that module's changes count, though the file held the kernel's earlier imports.
    (package / "kernel.py").write_text("from digestpkg import helper\nfrom digestpkg import unrelated\n")
    imports_more = digest()
    (package / "unrelated.py").write_text("VALUE = 3\n")
    assert digest() != imports_more


# -- what the digest covers: all the code a job runs, and verify's own non-Python files ------------
def fresh_digest(*modules: str) -> str:
    """code_digest as a new process computes it (one process digests unchanging source once)."""
    import importlib

    from verify.results import closure, reuse

    importlib.invalidate_caches()  # files written within the same second are seen
    for module in (closure, reuse):
        for value in vars(module).values():
            if hasattr(value, "cache_clear"):
                value.cache_clear()
    return reuse.code_digest(*modules)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_plug_in_kernels_reference_in_a_sibling_package_decides_its_digest(tmp_path, monkeypatch):
    """A plug-in kernel whose reference lives in another package of its author's (a sibling folder
    on sys.path, an editable install) depends on that package's source as on its own: an edit to
    it, to what it imports, or a module it imports only when present appearing, changes the
    digest. The closure is read from the source: no package of it is imported to digest it."""
    imported = tmp_path / "imported"
    marker = f"open({str(imported)!r}, 'a').write(__name__ + ' ')\n"
    write(tmp_path / "kernelpkg" / "__init__.py", marker)
    write(tmp_path / "kernelpkg" / "kernel.py", "from refpkg.reference import expected\n")
    write(tmp_path / "refpkg" / "__init__.py", marker)
    write(tmp_path / "refpkg" / "reference.py", "import mathpkg\ntry:\n    import optionalpkg\nexcept ImportError:\n"
                                                "    optionalpkg = None\n\ndef expected(x):\n    return mathpkg.f(x)\n")
    write(tmp_path / "refpkg" / "unused.py", "VALUE = 1\n")
    write(tmp_path / "mathpkg.py", "def f(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "cache"))

    before = fresh_digest("kernelpkg.kernel")
    assert fresh_digest("kernelpkg.kernel") == before
    write(tmp_path / "refpkg" / "unused.py", "VALUE = 2\n")
    assert fresh_digest("kernelpkg.kernel") == before  # never imported: not the verdict's code
    digests = [before]
    for path, text in ((tmp_path / "refpkg" / "reference.py", "import mathpkg\n\ndef expected(x):\n    return -x\n"),
                       (tmp_path / "mathpkg.py", "def f(x):\n    return 2 * x\n")):
        write(path, text)
        digests.append(fresh_digest("kernelpkg.kernel"))
    write(tmp_path / "refpkg" / "reference.py", "import mathpkg\ntry:\n    import optionalpkg\nexcept ImportError:\n"
                                                "    optionalpkg = None\n")
    digests.append(fresh_digest("kernelpkg.kernel"))
    write(tmp_path / "optionalpkg.py", "SCALE = 2\n")  # now importable: the reference behaves otherwise
    digests.append(fresh_digest("kernelpkg.kernel"))
    assert len(set(digests)) == len(digests), digests
    assert not imported.exists(), imported.read_text()


def fake_distribution(site: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """An installed distribution as pip leaves one: the package, and a dist-info whose RECORD lists it."""
    info = site / f"{name}-{version}.dist-info"
    for old in site.glob(f"{name}-*.dist-info"):
        for file in old.iterdir():
            file.unlink()
        old.rmdir()
    write(site / name / "__init__.py", "VALUE = 1\n")
    write(info / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
          + "".join(f"Requires-Dist: {r}\n" for r in requires))
    write(info / "RECORD", f"{name}/__init__.py,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")


def test_an_installed_distribution_counts_by_its_name_and_version(tmp_path, monkeypatch):
    """A module of an installed distribution (numpy, hypothesis, wgpu, ...) stands in the digest
    as its distribution's name and version, as do the distributions it requires: an upgrade of
    either changes the digest."""
    from importlib import metadata

    from verify.results import reuse

    site = tmp_path / "site"
    fake_distribution(site, "fakedist", "1.0", requires=("fakedep>=1", "fakeextra; extra == 'all'"))
    fake_distribution(site, "fakedep", "1.0")
    write(tmp_path / "src" / "kernelpkg" / "__init__.py", "")
    write(tmp_path / "src" / "kernelpkg" / "kernel.py", "import fakedist\nimport numpy\nimport json\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "cache"))

    before = fresh_digest("kernelpkg.kernel")
    inputs = reuse.code_inputs("kernelpkg.kernel")
    assert inputs.distributions == {"fakedist": "1.0", "fakedep": "1.0", "numpy": metadata.version("numpy")}
    assert set(inputs.sources) == {"kernelpkg", "kernelpkg.kernel"}  # json: the Python version's
    fake_distribution(site, "fakedist", "1.1", requires=("fakedep>=1",))
    upgraded = fresh_digest("kernelpkg.kernel")
    fake_distribution(site, "fakedep", "2.0")
    assert len({before, upgraded, fresh_digest("kernelpkg.kernel")}) == 3


def test_verifys_own_non_python_files_are_inputs(tmp_path):
    """What verify runs from its package besides Python (Dawn's worker, ORT's runner, the WGSL
    grammar, the instrumentation WGSL, the pinned Node packages) decides verdicts as its Python
    does. Left out: what only renders a report or an exported reproduction, and the kernels' own
    .wgsl, which reach a verdict only as the WGSL a job runs (each job's digest has its sha256)."""
    import shutil

    import verify
    from verify.results import reuse

    package = Path(verify.__file__).resolve().parent
    listed = {path.as_posix() for path in reuse.verdict_files(package)}
    for name in ("gpu/dawn/worker.mjs", "gpu/dawn/frames.mjs", "gpu/dawn/polling.mjs", "gpu/dawn/package.json",
                 "gpu/dawn/package-lock.json", "sources/ort/runner.mjs", "wgsl/wgsl.lark",
                 "instrument/sanitize_log.wgsl", "instrument/subgroups_emulation.wgsl"):
        assert name in listed, sorted(listed)
    assert not [p for p in listed if p.endswith((".py", ".pyc")) or "node_modules" in p or "__pycache__" in p
                or p.startswith(("report/templates/", "export/templates/", "kernels/"))], sorted(listed)

    copy = tmp_path / "verify"
    for name in listed | {"report/templates/report.html.j2"}:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(package / name, copy / name)
    before = reuse.files_digest(copy)
    (copy / "report" / "templates" / "report.html.j2").write_text("<p>another page</p>")
    assert reuse.files_digest(copy) == before  # a report's look decides no verdict
    with (copy / "gpu" / "dawn" / "worker.mjs").open("a") as handle:
        handle.write("// an edit\n")
    assert reuse.files_digest(copy) != before


def test_the_implementation_stack_is_an_input(tmp_path, monkeypatch):
    """The versions of what runs the WGSL: wgpu-py and the wgpu-native library it loaded, the Node
    packages installed for Dawn and ORT, apache-tvm, and the driver (in the adapter's identity)."""
    from importlib import metadata

    from verify.plan import adapter_identity
    from verify.results import reuse

    wgpu = adapter_identity("wgpu", None)
    from wgpu.backends.wgpu_native import _ffi

    assert wgpu["versions"] == {"wgpu": metadata.version("wgpu"),
                                "wgpu-native": ".".join(map(str, _ffi.lib_version_info))}
    assert wgpu["driver"]  # e.g. "Mesa 22.3.6 (LLVM 15.0.6)", or an NVIDIA driver's version
    modules = tmp_path / "node_modules"
    monkeypatch.setenv("VERIFY_NODE_MODULES", str(modules))
    digests = []
    for version in ("0.6.2", "0.6.3"):
        write(modules / "webgpu" / "package.json", json.dumps({"name": "webgpu", "version": version}))
        reuse.runtime_versions.cache_clear()
        found = reuse.runtime_versions()
        assert found["npm"][0]["webgpu"] == version
        digests.append(json.dumps(found, sort_keys=True))
    assert digests[0] != digests[1]
    try:
        tvm = metadata.version("apache-tvm")
    except metadata.PackageNotFoundError:
        tvm = None
    assert found["apache-tvm"] == tvm
