"""The shape of the code: layers import downward only, no import cycle, the generic runtime names no
check, implementation or kernel family, and the public surfaces are exactly what they declare."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import verify
import verify.extend
from verify.checks import all_checks
from verify.gpu.implementations import implementation_names
from verify.kernels.registry import kernel_names

ROOT = Path(__file__).resolve().parents[2]
#: The checkout's folders and the packages they are imported as (references/ is verify.references).
PACKAGES = {"verify": "verify", "references": "verify.references"}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [package, *path.relative_to(ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()
NAMES = {path: name for name, path in MODULES.items()}


def _imported_from(child: ast.ImportFrom, path: Path) -> str | None:
    """The absolute module a `from ... import` names, relative imports resolved."""
    if not child.level:
        return child.module
    name = NAMES[path]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    parts = package.split(".")[: len(package.split(".")) - child.level + 1]
    return ".".join(parts + ([child.module] if child.module else []))


def _top_level_imports(path: Path) -> set[str]:
    """verify modules imported at module level (not inside functions or TYPE_CHECKING)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for child in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ():
            if isinstance(child, ast.ImportFrom) and (module := _imported_from(child, path)):
                submodules = {f"{module}.{alias.name}" for alias in child.names} & MODULES.keys()
                # `from package import submodule` imports the submodule (its package is already
                # initialising when a sibling does this); anything else imports the module itself.
                names.update(submodules if len(submodules) == len(child.names) else {module} | submodules)
            elif isinstance(child, ast.Import):
                names.update(alias.name for alias in child.names)
    return {name for name in names if name in MODULES}


def _imports_anywhere(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for child in ast.walk(tree):
        if isinstance(child, ast.ImportFrom) and (module := _imported_from(child, path)):
            names.add(module)
        elif isinstance(child, ast.Import):
            names.update(alias.name for alias in child.names)
    return names


def test_there_is_no_import_cycle():
    graph = {name: _top_level_imports(path) - {name} for name, path in MODULES.items()}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(name, stack):
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                cycle.extend(stack[stack.index(target):] + [target])
                return True
            if state.get(target) is None and visit(target, stack + [target]):
                return True
        state[name] = 2
        return False

    for name in sorted(graph):
        if state.get(name) is None and visit(name, [name]):
            break
    assert not cycle, " -> ".join(cycle)


def _folder(name: str) -> str:
    """The folder a module is drawn in: its package (a subpackage is a folder of its own), or a
    top-level module of verify itself."""
    if name.startswith("verify.references"):
        return "verify.references"
    if MODULES[name].name == "__init__.py" or name.count(".") == 1:
        return name
    return name.rpartition(".")[0]


def test_folders_import_each_other_one_way():
    """No loop between folders, function-level imports included: the drawing of the code has no
    arrow that runs back up (a loop the module-level test cannot see, e.g. gpu importing results
    while results imports checks that import gpu)."""
    arrows: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        for imported in _imports_anywhere(path):
            target = imported
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and _folder(target) != _folder(name):
                arrows.setdefault(_folder(name), set()).add(_folder(target))
    loops = []
    for start in sorted(arrows):
        seen, frontier = set(), [(start, [start])]
        while frontier:
            folder, path = frontier.pop()
            for target in sorted(arrows.get(folder, ())):
                if target == start:
                    loops.append(" -> ".join(path + [start]))
                elif target not in seen:
                    seen.add(target)
                    frontier.append((target, path + [target]))
    assert not loops, loops[:3]


def test_a_vendors_families_are_subpackages():
    """docs/architecture.md §2.6: a vendor's package holds what its families share at its top and
    one subpackage a family; a module named after a family at the top (`attention_*.py`) is a
    subpackage waiting to be made."""
    sources = ROOT / "verify" / "sources"
    vendors = [p for p in sources.iterdir() if (p / "__init__.py").exists()]
    families = {p.name for vendor in vendors for p in vendor.iterdir() if (p / "__init__.py").exists()}
    misplaced = [str(p.relative_to(ROOT)) for vendor in vendors for p in vendor.glob("*.py")
                 if p.stem.split("_")[0] in families | {"attention", "dp4a", "quant", "prefill", "decode"}]
    assert not misplaced, misplaced


def test_references_import_nothing_of_verify():
    """references/ is plain math a reviewer checks against a paper: it is installed inside verify's
    namespace (so a user's own `references` module cannot shadow it) but uses nothing of verify."""
    offenders = [f"{name} imports {imported}" for name, path in MODULES.items() if name.startswith("verify.references")
                 for imported in _imports_anywhere(path)
                 if imported.split(".")[0] == "verify" and not imported.startswith("verify.references")]
    assert not offenders, offenders
    assert any(name.startswith("verify.references.") for name in MODULES), "references/ was not found"


@pytest.mark.parametrize("layer,forbidden", [
    ("verify.wgsl", ("verify.gpu", "verify.kernels", "verify.checks", "verify.instrument", "verify.sources")),
    ("verify.gpu", ("verify.kernels", "verify.checks", "verify.sources", "verify.cli", "verify.report")),
    ("verify.budgets", ("verify.kernels", "verify.checks", "verify.sources", "verify.gpu")),
    ("verify.kernels", ("verify.cli", "verify.report", "verify.session", "verify.worker", "verify.plan")),
])
def test_layers_import_downward_only(layer, forbidden):
    offenders = [f"{name} imports {imported}" for name, path in MODULES.items() if name == layer or
                 name.startswith(layer + ".") for imported in _imports_anywhere(path)
                 if any(imported == f or imported.startswith(f + ".") for f in forbidden)]
    assert not offenders, offenders


#: Modules that run any kernel, check and implementation: they must name none of them.
GENERIC = ("verify.worker", "verify.plan", "verify.run", "verify.session", "verify.protocol", "verify.cli", "verify.api",
           "verify.pytest_plugin", "verify.profiles", "verify.checks.runner", "verify.checks.context",
           "verify.checks.base", "verify.results.record", "verify.results.store", "verify.results.merge",
           "verify.report.model", "verify.report.render", "verify.display", "verify.gpu.implementations",
           "verify.gpu.device", "verify.kernels.registry", "verify.kernels.contract")


def _string_constants(path: Path) -> set[str]:
    """Every string literal of a module that is not a docstring, the name of a timing stage
    (`timer.stage("reference")` times the float64 reference, whatever the check) or a key of a
    record (`entry["reference"]` is the kernel's reference function)."""
    tree = ast.parse(path.read_text())
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skipped.add(id(first.value))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "stage":
            skipped.update(id(arg) for arg in node.args)
        if isinstance(node, ast.Dict):
            skipped.update(id(key) for key in node.keys if key is not None)
        if isinstance(node, ast.Subscript):
            skipped.add(id(node.slice))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in skipped}


@pytest.mark.parametrize("module", GENERIC)
def test_the_generic_runtime_names_no_check_implementation_or_family(module):
    names = set(all_checks()) | set(implementation_names()) | set(kernel_names()) | {"attention", "dp4a", "tvm", "ort"}
    named = sorted(_string_constants(MODULES[module]) & names)
    assert not named, f"{module} names {named}"


VERIFY_ALL = {
    "Case", "CheckResult", "CheckResults", "ConfigKey", "DISTRIBUTION", "Expected", "InOut", "Kernel", "KernelError",
    "Launched", "Output", "Profile", "SetupError", "UsageError", "Verdict", "VerificationFailure", "__version__",
    "check", "get_profile",
}
EXTEND_ALL = {
    "AdapterInfo", "CaseFamilyCheck", "Check", "CheckContext", "Device", "FailureKind", "FamilySizes",
    "Implementation", "Outcome", "Preflight", "Profile", "ShaderCompileError", "Verdict", "config_line",
    "pack_struct", "register", "specialize", "wgsl_file",
}


@pytest.mark.parametrize("module,declared", [(verify, VERIFY_ALL), (verify.extend, EXTEND_ALL)])
def test_the_public_names_are_exactly_the_declared_ones(module, declared):
    """As Hypothesis asserts of its strategies module: a name becomes public on purpose."""
    public = {name for name in dir(module) if not name.startswith("_")} - {"annotations"}
    modules = {name for name in public if type(getattr(module, name)).__name__ == "module"}
    assert set(module.__all__) == declared
    assert public - modules - {"DISTRIBUTION"} <= declared | {"DISTRIBUTION"}, sorted(public - modules - declared)


def test_every_public_name_of_verify_is_importable_from_where_it_lives():
    assert set(verify._PUBLIC) | {"DISTRIBUTION", "__version__"} == VERIFY_ALL
    for name in verify._PUBLIC:
        assert getattr(verify, name) is not None


@pytest.mark.parametrize("name", sorted(EXTEND_ALL))
def test_every_extension_name_is_documented(name):
    value = getattr(verify.extend, name)
    assert (getattr(value, "__doc__", None) or "").strip(), f"verify.extend.{name} has no docstring"
    assert name in verify.extend.__doc__, f"verify.extend's docstring does not mention {name}"
