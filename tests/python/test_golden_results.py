"""Golden hashes: the simulated results of a fixed set of specs, byte for byte.

A change that is meant to leave results alone (a faster medium, another serializer, code
moved between crates) must leave these hashes alone. Every spec in experiments/ and in
tests/golden/specs/ (paths those do not reach), every bench scenario (quick) and the bench's
scale points (short) are run and the SHA-256 of the canonical
text of each result's `data` compared with tests/golden/results.json.

A change that is meant to alter results rewrites the file, and its note lists what moved:
    LASTHOP_UPDATE_GOLDEN=1 python -m pytest tests/python/test_golden_results.py
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from lasthop import _native
from lasthop.bench import SCENARIOS, load_scenario
from lasthop.bench.scale import COUNTS, KINDS, scale_toml
from lasthop.results import _canonical
from lasthop.spec import load_spec, load_spec_text

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "results.json"


def _cases() -> dict[str, object]:
    cases: dict[str, object] = {}
    for p in sorted((ROOT / "experiments").glob("*.toml")):
        cases[f"experiments/{p.name}"] = lambda p=p: load_spec(p)
    for p in sorted((ROOT / "tests" / "golden" / "specs").glob("*.toml")):
        cases[f"golden/{p.name}"] = lambda p=p: load_spec(p)
    for name in SCENARIOS:
        cases[f"bench/{name}"] = lambda name=name: load_scenario(name, quick=True)
    for kind in KINDS:
        for n in COUNTS:
            cases[f"scale/{n}-{kind}"] = lambda n=n, kind=kind: load_spec_text(scale_toml(n, kind, "200ms"))
    return cases


def _digest(spec) -> str:
    # The canonical text of the parsed data: what a result file holds, however the simulator
    # serialized it (tests/python/test_results_text.py holds the two to be the same bytes).
    data = json.loads(_native.run(spec.to_json(), spec.seed, None))
    data["stats"].pop("events")
    text = _canonical(data)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def test_results_are_byte_identical_to_the_golden_hashes():
    got = {name: _digest(make()) for name, make in _cases().items()}
    if os.environ.get("LASTHOP_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        pytest.skip(f"rewrote {GOLDEN}")
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    moved = sorted(k for k in want if k in got and got[k] != want[k])
    assert not moved, f"results changed for {moved}: if that is intended, rewrite the hashes " \
                      "(LASTHOP_UPDATE_GOLDEN=1) and say why in the change"
    assert set(got) == set(want), f"cases added {sorted(set(got) - set(want))}, " \
                                  f"removed {sorted(set(want) - set(got))}: rewrite the hashes"
