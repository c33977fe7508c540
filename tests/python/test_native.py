"""The native module's Python surface (lasthop._native, see _native.pyi)."""

from __future__ import annotations

import json
import re

import pytest
from helpers import TINY_SPEC

import lasthop
from lasthop import _native
from lasthop.spec import load_spec_text


def tiny_json() -> str:
    return load_spec_text(TINY_SPEC, "tiny.toml").to_json()


def test_version_format_and_python_version_agree():
    v = _native.version()
    assert re.fullmatch(r"\d+\.\d+\.\d+\+([0-9a-f]{4,}(-dirty)?|unknown)", v), v
    assert v.split("+")[0] == lasthop.__version__


def test_validate_valid_spec_has_no_problems():
    assert _native.validate(tiny_json()) == []


def test_validate_returns_path_value_allowed_tuples():
    spec = json.loads(tiny_json())
    spec["stations"][1]["mcs"] = 42
    problems = _native.validate(json.dumps(spec))
    assert problems, "the simulator should reject VHT MCS 42"
    for p in problems:
        assert isinstance(p, tuple) and len(p) == 3 and all(isinstance(x, str) for x in p)
    assert any(p[0] == "stations[1].mcs" for p in problems)


def test_validate_unreadable_json():
    problems = _native.validate("{not json")
    assert problems and problems[0][0] == "spec"


def test_run_rejects_bad_json_with_runtime_error():
    with pytest.raises(RuntimeError):
        _native.run("{not json", 1)


def test_run_progress_callback(simulator):
    seen: list[float] = []
    data = json.loads(_native.run(tiny_json(), 1, seen.append))
    assert {"stats", "flows", "stations"} <= set(data)
    assert 1 <= len(seen) <= 250
    assert all(0.0 <= f <= 1.0 for f in seen)
    assert seen == sorted(seen)


def test_run_progress_exception_propagates(simulator):
    calls = []

    def boom(f: float) -> None:
        calls.append(f)
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback"):
        _native.run(tiny_json(), 1, boom)
    assert len(calls) == 1  # not called again after it raised


def test_run_is_deterministic_in_process(simulator):
    assert _native.run(tiny_json(), 5) == _native.run(tiny_json(), 5)


def test_sha256_hex_is_hashlib_sha256_of_the_concatenation():
    import hashlib

    from lasthop import _native

    for parts in ([], [""], ["abc"], ["a", "bc", "", '{"x":1}' * 1000], ["\u00e9t\u00e9"]):
        want = hashlib.sha256("".join(parts).encode("utf-8")).hexdigest()
        assert _native.sha256_hex(parts) == want, parts
