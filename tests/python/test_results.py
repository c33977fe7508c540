"""Result envelope, canonical text and atomic writes (docs/results.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lasthop import results
from lasthop.results import ResultError, dumps, envelope, load_result, result_path, write_result


def doc(**data):
    return envelope({"name": "x", "sim": {"duration_ns": 1}}, 3, data or {"stats": {"events": 1}},
                    "0.1.0+abc")


def test_envelope_and_canonical_text():
    d = doc(b=0.1, a=[1, 2.5e-07])
    text = dumps(d)
    assert text.endswith("\n") and "\n" not in text[:-1]
    assert text.index('"code_version"') < text.index('"data"') < text.index('"format"')
    assert '"a":[1,2.5e-07],"b":0.1' in text  # shortest round-trip float repr
    loaded = json.loads(text)
    assert loaded.pop("checksum") == results.content_checksum(d) and loaded == d
    assert d["format"] == "lasthop.result" and d["format_version"] == 1 and d["seed"] == 3


def test_checksum_seals_the_content(tmp_path: Path):
    p = tmp_path / "x.json"
    write_result(p, doc())
    good = p.read_text()
    assert load_result(p)["checksum"].startswith("sha256:")
    p.write_text(good.replace('"events":1', '"events":2'))
    with pytest.raises(ResultError, match="changed after it was written"):
        load_result(p)
    unsealed = json.loads(good)
    del unsealed["checksum"]
    p.write_text(json.dumps(unsealed))
    assert "checksum" not in load_result(p)  # read (written by hand or by an older lasthop)


def test_write_and_load(tmp_path: Path):
    p = result_path(tmp_path, "x", 3)
    assert p.name == "x-s3.json"
    write_result(p, doc())
    assert os.listdir(tmp_path) == ["x-s3.json"]
    assert {k: v for k, v in load_result(p).items() if k != "checksum"} == doc()
    write_result(p, doc(c=1))  # replaces atomically
    assert load_result(p)["data"] == {"c": 1}


def test_unserializable_document_creates_no_file(tmp_path: Path):
    with pytest.raises(ValueError):
        write_result(tmp_path / "x.json", doc(bad=float("nan")))
    assert os.listdir(tmp_path) == []


def test_failure_during_write_removes_temp_file(tmp_path: Path, monkeypatch):
    def fail(*_a):
        raise OSError("disk on fire")

    monkeypatch.setattr(results.os, "replace", fail)
    with pytest.raises(OSError, match="disk on fire"):
        write_result(tmp_path / "x.json", doc())
    assert os.listdir(tmp_path) == []


def test_load_result_errors(tmp_path: Path):
    with pytest.raises(ResultError, match="no such file"):
        load_result(tmp_path / "nope.json")
    (tmp_path / "a.json").write_text("{trunc")
    with pytest.raises(ResultError, match="JSON"):
        load_result(tmp_path / "a.json")
    (tmp_path / "b.json").write_text('{"format": "other"}')
    with pytest.raises(ResultError, match="not a lasthop result"):
        load_result(tmp_path / "b.json")
    d = doc()
    del d["data"]
    (tmp_path / "c.json").write_text(json.dumps(d))
    with pytest.raises(ResultError, match="incomplete"):
        load_result(tmp_path / "c.json")
