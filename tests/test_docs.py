"""The documentation is the repository's own (docs/index.md): no file points at notes a user of the
package does not have, every `docs/<page>.md §N` pointer names a page and a numbered section that
exist, and the index lists exactly the pages there are."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: Names of documents that live outside the repository. Spelled in pieces, so that this file does
#: not match its own pattern.
OUTSIDE = re.compile("|".join((
    "shared" "/",
    "tvm_" "semantics",
    "ort_" "dp4a",
    "methodology" r"\.md",
    "webgpu_" "probe",
    "measurements" r"\.md",
)).encode())
#: Folders that are not the repository's content.
SKIPPED_FOLDERS = {".git", ".venv", "node_modules"}
#: Folders the fallback walk (no git) also skips: what .gitignore keeps out of the repository.
IGNORED_FOLDERS = {"__pycache__", ".hypothesis", ".pytest_cache", "build", "reports"}
#: A pointer into docs/: the page (lower-case names only, so an upstream path such as ONNX Runtime's
#: docs/ContribOperators.md is not one), then any sections, e.g. `docs/tvm.md §2, §3`.
POINTER = re.compile(r"docs/([a-z0-9][a-z0-9-]*\.md)((?:\s*(?:,|and)?\s*§\s*\d+(?:\.\d+)*)*)")
SECTION = re.compile(r"§\s*(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s", re.M)


def repository_files() -> list[Path]:
    """What git tracks plus new files it does not ignore; without git, every file outside the
    skipped and ignored folders (and *.egg-info)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        files = []
        for folder, subfolders, names in os.walk(ROOT):
            subfolders[:] = [d for d in subfolders if d not in SKIPPED_FOLDERS | IGNORED_FOLDERS
                             and not d.endswith(".egg-info")]
            files += [Path(folder) / name for name in names]
        return files
    paths = (ROOT / name for name in listed.decode().split("\0") if name)
    return [p for p in paths if p.is_file() and not SKIPPED_FOLDERS & set(p.relative_to(ROOT).parts)]


def _text(path: Path) -> str:
    text = path.read_bytes().decode("utf-8", errors="replace")
    if path.suffix == ".json":  # results fixtures carry docstrings as escaped JSON strings
        text = text.replace("\\u00a7", "§").replace("\\n", "\n")
    return text


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def page_sections() -> dict[str, set[str]]:
    """Each docs page with the numbers of its numbered headings ("## 5. ...", "### 9.2 ...")."""
    return {page.name: set(HEADING.findall(page.read_text())) for page in DOCS.glob("*.md")}


def test_no_file_points_at_documents_outside_the_repository():
    offenders = []
    for path in repository_files():
        data = path.read_bytes()
        for match in OUTSIDE.finditer(data):
            line = data.count(b"\n", 0, match.start()) + 1
            offenders.append(f"{path.relative_to(ROOT)}:{line}: {match.group().decode()}")
    assert offenders == [], "point these at docs/ instead:\n" + "\n".join(offenders)


def test_every_docs_pointer_names_an_existing_page_and_section():
    sections = page_sections()
    pointers, broken = 0, []
    for path in repository_files():
        if path.suffix in (".npz", ".png", ".svg"):
            continue
        text = _text(path)
        for match in POINTER.finditer(text):
            pointers += 1
            where = f"{path.relative_to(ROOT)}:{_line(text, match.start())}: {' '.join(match.group().split())}"
            page = match.group(1)
            if page not in sections:
                broken.append(f"{where}: no page docs/{page}")
                continue
            broken += [f"{where}: docs/{page} has no section {number}"
                       for number in SECTION.findall(match.group(2)) if number not in sections[page]]
    assert broken == [], "\n".join(broken)
    assert pointers > 50  # the code does cite the docs: a pattern that matched nothing would prove nothing


def test_the_index_lists_every_page_once():
    index = (DOCS / "index.md").read_text()
    listed = re.findall(r"^- \[([\w.-]+\.md)\]\(\1\) — \S", index, re.M)
    pages = sorted(page.name for page in DOCS.glob("*.md") if page.name != "index.md")
    assert sorted(listed) == pages


def test_every_docs_page_numbers_its_sections_in_order():
    """Top-level sections run 1, 2, 3, ... and subsections n.1, n.2, ... under section n, so a
    pointer's number says where the section is."""
    for path in DOCS.glob("*.md"):
        page, numbers = path.name, HEADING.findall(path.read_text())
        top = [n for n in numbers if "." not in n]
        assert top == [str(i) for i in range(1, len(top) + 1)], page
        for parent in top:
            children = [n for n in numbers if n.rsplit(".", 1)[0] == parent and "." in n]
            assert children == [f"{parent}.{i}" for i in range(1, len(children) + 1)], (page, parent)


def test_the_architecture_page_names_every_package_kernel_and_check():
    """docs/architecture.md is the newcomer's map: every package of verify (a folder with an
    __init__.py), every kernel verify registers and every check is on it."""
    from verify.checks import all_checks
    from verify.kernels.registry import kernel_specs

    text = (DOCS / "architecture.md").read_text()
    packages = sorted(str(p.parent.relative_to(ROOT / "verify")) for p in (ROOT / "verify").rglob("__init__.py")
                      if p.parent != ROOT / "verify")
    missing = [f"verify/{p}" for p in packages if f"{p.split('/')[-1]}/" not in text]
    missing += [s.name for s in kernel_specs() if s.origin == "built in" and f"`{s.name}`" not in text]
    missing += [name for name in all_checks() if f"`{name}`" not in text and name not in text]
    assert not missing, f"docs/architecture.md does not name {missing}"


def test_the_readme_names_every_built_in_kernel_or_its_family():
    """The README's list of what is covered stays true: every kernel verify registers is named
    there, by itself or by its family's prefix (`tvm.*`)."""
    from verify.kernels.registry import kernel_specs

    text = (ROOT / "README.md").read_text()
    missing = [s.name for s in kernel_specs() if s.origin == "built in" and f"`{s.name}`" not in text
               and f"`{s.name.split('.')[0]}.*`" not in text]
    assert not missing, f"README.md does not name {missing}"
