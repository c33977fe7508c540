"""The Python package's modules import each other without a circle, counting the imports inside
functions: a module lower in the layers never reaches back up."""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "python" / "lasthop"


def _modules() -> dict[str, Path]:
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = p
    return mods


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The package's modules `name` imports anywhere in its body (a submodule imported with
    `from . import x` counts as `x`; the native extension is not a Python module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("lasthop"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in mods:
                    out.add(sub)
                elif not alias.name.startswith("_native") and target in mods:
                    out.add(target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in mods}
    out.discard(name)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_of_the_package_imports_in_a_circle():
    mods = _modules()
    assert "lasthop.api" in mods and "lasthop.sweeps" in mods
    graph = {m: _imports(m, p, mods) for m, p in mods.items()}
    assert "lasthop.summary_schema" in graph["lasthop.analysis"]
    cycles = _cycles(graph)
    assert not cycles, "modules that import each other in a circle: " + "; ".join(" ↔ ".join(c) for c in cycles)


def test_no_module_is_made_callable():
    """`lasthop.sweep` is the API's function; no module swaps its own class at import."""
    for p in PKG.rglob("*.py"):
        assert "sys.modules[__name__].__class__" not in p.read_text(), p


def _rust_graph(src: Path) -> dict[str, set[str]]:
    """The modules of one crate (`crate::a::b`) and the other modules each names in its code
    (paths from `crate::`, `super::`, `self::`; comments and the `#[cfg(test)]` part left out;
    a module and its own ancestors or descendants do not count)."""
    import re

    mods: dict[str, Path] = {}
    for p in src.rglob("*.rs"):
        parts = list(p.relative_to(src).with_suffix("").parts)
        if parts[0] == "bin":
            continue
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        mods["::".join(["crate", *parts])] = p
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        text = p.read_text().split("#[cfg(test)]")[0]
        text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
        here = m.split("::")
        for path in re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", text):
            parts = path.split("::")
            if parts[0] == "crate":
                full = parts
            elif parts[0] == "self":
                full = here + parts[1:]
            else:
                up = here[:-1]
                k = 1
                while k < len(parts) and parts[k] == "super":
                    up, k = up[:-1], k + 1
                full = up + parts[k:]
            for n in range(len(full), 0, -1):
                cand = "::".join(full[:n])
                if cand in mods:
                    if not (cand == m or m.startswith(cand + "::") or cand.startswith(m + "::")):
                        graph[m].add(cand)
                    break
    return graph


def test_no_rust_module_names_another_in_a_circle():
    crates = sorted(p for p in (PKG.parents[1] / "crates").iterdir() if (p / "src").is_dir())
    assert len(crates) >= 5
    found = []
    for crate in crates:
        graph = _rust_graph(crate / "src")
        found += [f"{crate.name}: " + " ↔ ".join(c) for c in _cycles(graph)]
    assert not found, "modules that name each other in a circle: " + "; ".join(found)


def test_the_rust_file_tree_is_the_module_tree():
    """No module is placed with `#[path]`: a reader finds `a::b` in `a/b.rs`."""
    placed = [str(p) for p in (PKG.parents[1] / "crates").rglob("*.rs") if "#[path" in p.read_text()]
    assert not placed, f"modules placed with #[path]: {placed}"
