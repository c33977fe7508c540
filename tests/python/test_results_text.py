"""One serialization: the simulator's `data` text is stored as it comes.

`_native.run` returns the canonical text of the data (crates/lasthop-sim/src/canonical.rs), and
`results.result_text` wraps it, with the spec's canonical text, into the result file without
parsing either. These tests hold that to the rule it replaces — `json.loads` then
`results.dumps(envelope(...))` — byte for byte: on every spec in experiments/ and the bench's
scale scenarios, and on generated documents (floats at every magnitude, any Unicode).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from lasthop import _native
from lasthop.bench.scale import scale_toml
from lasthop.results import _canonical, dumps, envelope, result_text
from lasthop.spec import load_spec, load_spec_text

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = sorted((ROOT / "experiments").glob("*.toml"))


def _specs():
    for p in EXPERIMENTS:
        yield p.name, load_spec(p)
    for n, kind in ((30, "idle"), (30, "loaded")):
        yield f"scale-{n}-{kind}", load_spec_text(scale_toml(n, kind, "300ms"))


@pytest.mark.parametrize("name,spec", list(_specs()), ids=lambda x: x if isinstance(x, str) else "")
def test_native_text_is_the_file_python_would_write(name, spec):
    spec_text = spec.to_json()
    data_text = _native.run(spec_text, spec.seed, None)
    data = json.loads(data_text)
    assert data_text == _canonical(data), f"{name}: the simulator's text is not canonical"
    assert spec_text == _canonical(spec.normalized)
    for version in ("0.1.0+abc", "0.1.0+src.0123abcd"):
        assert result_text(spec_text, spec.seed, data_text, version) == \
            dumps(envelope(spec.normalized, spec.seed, data, version))


def test_written_file_is_the_text(tmp_path):
    from lasthop.results import load_result, write_result_text

    spec = load_spec(EXPERIMENTS[0])
    data_text = _native.run(spec.to_json(), spec.seed, None)
    p = write_result_text(tmp_path / "r.json", spec.to_json(), spec.seed, data_text, "0.1.0+x")
    assert p.read_text(encoding="ascii") == result_text(spec.to_json(), spec.seed, data_text, "0.1.0+x")
    assert load_result(p)["data"] == json.loads(data_text)  # the checksum verifies
    assert [f.name for f in tmp_path.iterdir()] == ["r.json"]


def test_dumps_puts_the_checksum_where_sort_keys_does():
    from lasthop.results import content_checksum

    for doc in ({"b": 1, "a": [1.5, "é"]}, {"z": {}}, {}, {"checksum": "x", "d": 1}, {"cz": 2, "ca": 1}):
        body = {k: v for k, v in doc.items() if k != "checksum"}
        slow = _canonical({**body, "checksum": content_checksum(body)}) + "\n"
        assert dumps(doc) == slow


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_leaf = (st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1)
         | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
_doc = st.recursive(_leaf, lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(st.text(max_size=6), kids, max_size=4), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(_doc)
def test_canonical_text_matches_python_json_dumps(doc):
    assert _native.canonical_json(doc) == _canonical(doc)


@settings(max_examples=600, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_are_written_as_python_repr(x):
    assert _native.canonical_json([x]) == "[" + repr(x) + "]"
    assert not math.isnan(x)
