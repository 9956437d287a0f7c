"""The architecture's drawing in numbers, for a checkout: the same measures before and after a change.

    python benchmarks/architecture_drawing.py [ROOT ...] [--json OUT]

For each checkout ROOT (default: this one):

- modules and import edges of verify/ and references/ (every `import`, function-level included);
- the folder-level drawing: one box per package folder of verify/ (and per top-level module),
  arrows between boxes, boxes on layers (longest path from the bottom), the arrows that run back
  up (arrows inside a loop of boxes) and the loops themselves;
- the largest files (lines);
- the gate's route from `cli.cmd_gate`: the calls it makes in order, following functions of
  cli.py, plan.py and run.py up to three calls deep, and how many times the route enters each
  file (entering a file again after leaving it is the back and forth a reader follows).

Plain ast, nothing imported from the checkout, so an old commit is measured by the same code
(`git worktree add /tmp/old REV` and pass both folders).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

ROUTE_FILES = ("verify/cli.py", "verify/plan.py", "verify/run.py")


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for top in ("verify", "references"):
        for path in sorted((root / top).rglob("*.py")):
            if "templates" in path.parts or path.is_symlink() or "references" in path.parts[len(root.parts) + 1:]:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(path: Path, name: str) -> set[str]:
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


def _box(module: str, packages: set[str]) -> str:
    """The drawing's box of a module: its package folder under verify/ (a subpackage such as
    verify/gpu/dawn is a box of its own), or a top-level module of verify/ itself."""
    parts = module.split(".")
    if parts[0] == "references":
        return "references"
    if module in packages:
        return module
    if len(parts) == 2:
        return module
    return ".".join(parts[:-1])


def measure(root: Path) -> dict:
    modules = _modules(root)
    is_package = {name for name, path in modules.items() if path.name == "__init__.py"}
    edges = set()
    for name, path in modules.items():
        for imported in _imports(path, name):
            target = imported
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add((name, target))
    packages = {name for name in is_package if name.count(".")}
    boxes = defaultdict(set)
    for name in modules:
        boxes[_box(name, packages)].add(name)
    arrows = {(_box(a, packages), _box(b, packages)) for a, b in edges}
    arrows = {(a, b) for a, b in arrows if a != b}
    loops = _strongly_connected(set(boxes), arrows)
    up = sorted(f"{a} -> {b}" for loop in loops if len(loop) > 1 for a, b in _back_up(loop, arrows))
    layers = _layers(set(boxes), arrows - {tuple(u.split(" -> ")) for u in up})
    sizes = sorted(((len(p.read_text().splitlines()), str(p.relative_to(root))) for p in modules.values()),
                   reverse=True)
    return {
        "modules": len(modules), "import_edges": len(edges), "boxes": len(boxes), "arrows": len(arrows),
        "layers": max(layers.values()) + 1 if layers else 0, "arrows_back_up": len(up), "back_up": up,
        "loops": [sorted(loop) for loop in loops if len(loop) > 1],
        "largest_files": [{"file": f, "lines": n} for n, f in sizes[:6]],
        "gate_route": _route(root),
    }


def _strongly_connected(nodes: set[str], arrows: set[tuple[str, str]]) -> list[set[str]]:
    graph = defaultdict(list)
    for a, b in arrows:
        graph[a].append(b)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on.discard(w)
                component.add(w)
                if w == v:
                    break
            out.append(component)

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def _back_up(loop: set[str], arrows: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The fewest arrows of a loop that must run back up, whatever order its boxes are drawn in
    (a minimum feedback arc set, by trying every order: loops here have a handful of boxes)."""
    from itertools import permutations

    inside = [(a, b) for a, b in arrows if a in loop and b in loop]
    best: list[tuple[str, str]] | None = None
    for order in permutations(sorted(loop)):
        rank = {box: i for i, box in enumerate(order)}  # drawn top to bottom: an arrow points down
        up = [(a, b) for a, b in inside if rank[a] > rank[b]]
        if best is None or len(up) < len(best):
            best = up
    return best or []


def _layers(nodes: set[str], arrows: set[tuple[str, str]]) -> dict[str, int]:
    """Each box's layer: 0 for a box that imports no other box, else one above the highest box it
    imports (the arrows that run back up are left out by the caller)."""
    down = defaultdict(set)
    for a, b in arrows:
        down[a].add(b)
    layer: dict[str, int] = {}

    def of(v: str) -> int:
        if v not in layer:
            layer[v] = 0
            layer[v] = 1 + max((of(w) for w in down[v]), default=-1)
        return layer[v]

    for v in nodes:
        of(v)
    return layer


def _route(root: Path) -> dict:
    """The calls `cmd_gate` makes, in order, into functions of cli.py, plan.py and run.py (and
    their methods), followed three deep; how often the route enters each file."""
    functions: dict[str, tuple[str, ast.AST]] = {}
    for rel in ROUTE_FILES:
        path = root / rel
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                functions.setdefault(node.name, (rel, node))
    visits: list[str] = []

    def walk(name: str, depth: int) -> None:
        rel, node = functions[name]
        visits.append(rel)
        if depth == 3:
            return
        body = node
        if isinstance(node, ast.ClassDef):  # a class called: its __init__ and what it runs
            body = ast.Module(body=[n for n in node.body if isinstance(n, ast.FunctionDef)], type_ignores=[])
        for call in (n for n in ast.walk(body) if isinstance(n, ast.Call)):
            func = call.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if called and called in functions and called != name and not called.startswith("__"):
                walk(called, depth + 1)
                visits.append(rel)

    if "cmd_gate" in functions:
        walk("cmd_gate", 0)
    entries: dict[str, int] = defaultdict(int)
    previous = None
    for rel in visits:
        if rel != previous:
            entries[rel] += 1
        previous = rel
    return {"calls": len(visits), "entries": dict(entries), "switches": sum(entries.values()) - 1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", default=[str(Path(__file__).resolve().parents[1])])
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args(argv)
    results = {root: measure(Path(root)) for root in args.roots}
    for root, m in results.items():
        print(f"{root}: {m['modules']} modules, {m['import_edges']} import edges; {m['boxes']} boxes on "
              f"{m['layers']} layers, {m['arrows']} arrows, {m['arrows_back_up']} back up, {len(m['loops'])} loops")
        print("  largest: " + ", ".join(f"{f['file']} {f['lines']}" for f in m["largest_files"]))
        route = m["gate_route"]
        print(f"  gate route from cmd_gate: {route['switches']} switches between files; entries "
              + ", ".join(f"{k} {v}" for k, v in sorted(route["entries"].items())))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
