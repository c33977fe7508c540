"""The Python fuzz targets' kept corpora, replayed through their bodies without atheris (the
stable replay of the Rust targets is crates/lasthop-live/tests/fuzz_corpus.rs): every input
of fuzz/corpus/<target>/ and fuzz/regressions/<target>/ must still hold the target's property.
Campaigns: `make fuzz-py FUZZ_TIME=3600` (docs/reliability.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ["result_readers"]


def _body(target: str):
    spec = importlib.util.spec_from_file_location(f"fuzz_{target}", ROOT / "fuzz" / "python" / f"{target}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.one_input


@pytest.mark.parametrize("target", TARGETS)
def test_kept_corpus_holds_the_property(target: str):
    one_input = _body(target)
    files = sorted(p for d in ("corpus", "regressions") for p in (ROOT / "fuzz" / d / target).glob("*")
                   if p.is_file())
    assert files, f"no corpus for {target}"
    for p in files:
        one_input(p.read_bytes())
