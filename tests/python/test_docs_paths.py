"""docs/architecture.md names files and functions; every one of them must exist, so the map of the
code stays true when the code moves."""
from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
CODE_SUFFIXES = (".rs", ".py", ".md", ".toml", ".json", ".txt", ".cc", ".h", ".sh", ".ipynb", ".c")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode == 0 and out.stdout:
        return out.stdout.split()
    return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and "target" not in p.parts]


def _named_paths(text: str) -> list[str]:
    """Backticked tokens that are paths: a slash, no spaces, a file suffix or a folder's name."""
    names = set()
    for tok in re.findall(r"`([^`\s]+)`", text):
        if "/" not in tok or tok.startswith(("http", "/", "-", "$", ".")) or "::" in tok:
            continue
        tok = tok.rstrip("/")
        if re.fullmatch(r"[\w.*-]+(/[\w.*-]+)+", tok):
            names.add(tok)
    return sorted(names)


def _exists(name: str, files: list[str], dirs: set[str]) -> bool:
    """A path the document names exists if some tracked file or folder ends with it (the
    document names paths from the repository root, from a crate, or from a crate's `src/`;
    `wifi/mac/txq.rs` is lasthop-wifi's; a module path without a suffix is a file or a folder)."""
    head, _, rest = name.partition("/")
    if f"crates/lasthop-{head}/src" in dirs and _exists(f"crates/lasthop-{head}/src/{rest}", files, dirs):
        return True
    if not name.endswith(CODE_SUFFIXES) and "*" not in name and _exists(name + ".rs", files, dirs):
        return True
    if name.endswith(CODE_SUFFIXES) or "*" in name:
        pat = "*" + name if "*" in name else None
        return any(f == name or f.endswith("/" + name) or (pat and fnmatch.fnmatch(f, pat)) for f in files)
    return name in dirs or any(d.endswith("/" + name) for d in dirs)


def test_every_path_architecture_md_names_exists():
    files = _tracked()
    dirs = {str(Path(f).parent) for f in files}
    dirs |= {str(p) for d in list(dirs) for p in Path(d).parents if str(p) != "."}
    names = _named_paths(DOC.read_text())
    assert len(names) > 50, "the document names its files in backticks"
    missing = [n for n in names if not _exists(n, files, dirs)]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_world_item_architecture_md_names_exists():
    """`World::name` in the document is a method or a field of the world."""
    text = DOC.read_text()
    named = sorted(set(re.findall(r"World::([a-z_][a-z0-9_]*)", text)))
    src = "\n".join(p.read_text() for p in (ROOT / "crates" / "lasthop-sim" / "src").rglob("*.rs"))
    defined = set(re.findall(r"\bfn ([a-z_][a-z0-9_]*)", src))
    defined |= set(re.findall(r"^\s*(?:pub(?:\([a-z]+\))? )?([a-z_][a-z0-9_]*):", src, re.M))
    missing = [n for n in named if n not in defined]
    assert named and not missing, f"docs/architecture.md names World methods that do not exist: {missing}"
