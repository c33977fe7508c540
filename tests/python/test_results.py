"""Result envelope, canonical text and atomic writes (docs/results.md)."""

from __future__ import annotations

import json
import math
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


def test_a_file_as_written_is_verified_from_its_own_text(tmp_path: Path, monkeypatch):
    """The sealed text is verified by hashing the file's own body; a file reformatted since is
    verified by serializing it again, and an edit fails either way."""
    p = tmp_path / "x.json"
    write_result(p, doc(b=0.1))
    text = p.read_text()
    ck = json.loads(text)["checksum"]
    assert results._sealed_as_written(text, ck)
    assert not results._sealed_as_written(text.replace('"b":0.1', '"b":0.2'), ck)
    other = ck[:-1] + ("1" if ck[-1] == "0" else "0")
    assert not results._sealed_as_written(text.replace(ck, other), other)  # in the right place, not its hash
    # Reformatted (still its content): not the sealed text, verified the long way.
    pretty = json.dumps(json.loads(text), indent=1)
    assert not results._sealed_as_written(pretty, ck)
    p.write_text(pretty)
    assert load_result(p)["checksum"] == ck
    p.write_text(pretty.replace('"b": 0.1', '"b": 0.2'))
    with pytest.raises(ResultError, match="changed after it was written"):
        load_result(p)
    # The long way is not taken for a file as written.
    write_result(p, doc(b=0.1))
    monkeypatch.setattr(results, "content_checksum", lambda d: pytest.fail("serialized again"))
    assert load_result(p)["data"] == {"b": 0.1}


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


# Defects the result-reader fuzz target (fuzz/python/result_readers.py) found: a file that
# passed the reader but whose members had other types than the format's made the summary,
# the tables and the per-flow rows fail with a Python exception (an internal error) instead
# of one line naming the file and the member.
@pytest.mark.parametrize("edit,where", [
    (lambda d: d["data"].__setitem__("stats", "x"), "data.stats: expected an object"),
    (lambda d: d["data"]["flows"][0].__setitem__("station", [1]), "data.flows[0].station"),
    (lambda d: d["data"]["flows"][0].__setitem__("id", 10 ** 400), "data.flows[0].id"),
    (lambda d: d["spec"]["sim"].__setitem__("duration_ns", 2 ** 70), "spec.sim.duration_ns"),
    (lambda d: d["data"]["flows"][0]["delay_ns"].__setitem__("samples", "3"),
     "data.flows[0].delay_ns.samples"),
    (lambda d: d["data"].__setitem__("flows", {"0": {}}), "data.flows: expected an array"),
    (lambda d: d["data"]["flows"][0].__setitem__("tcp", {"cc": ["cubic"]}),
     "data.flows[0].tcp.cc: expected text"),
    (lambda d: d.__setitem__("seed", True), "seed: expected a 64-bit integer"),
])
def test_members_of_another_type_are_refused_naming_them(tmp_path: Path, edit, where):
    d = envelope({"name": "x", "sim": {"duration_ns": 10 ** 9, "warmup_ns": 0}}, 3,
                 {"stats": {}, "flows": [{"id": 0, "station": 0, "delay_ns": {"samples": 1}}],
                  "stations": [{"id": 0}]}, "0.1.0+abc")
    edit(d)
    p = tmp_path / "r.json"
    p.write_text(json.dumps(d))  # no checksum: a hand-made file
    with pytest.raises(ResultError) as e:
        load_result(p)
    assert where in str(e.value) and "\n" not in str(e.value)


def test_numbers_are_taken_only_when_finite():
    assert [results.number(v) for v in (1, 2.5, True, "3", None, 10 ** 400, float("inf"))] == \
        [1.0, 2.5, None, None, None, None, None]


def test_readers_take_odd_numbers_and_null_ids():
    """Numbers beyond a float and flows without an id reach the rows and the summary as
    missing values, not exceptions."""
    from lasthop import analysis
    from lasthop.summary import summarize

    d = envelope({"name": "x", "sim": {"duration_ns": 10 ** 9}, "flows": [{}, {}]}, 3,
                 {"flows": [{"id": None, "goodput_bps": 10 ** 400, "delay_ns": {"mean": "1"}},
                            {"goodput_bps": 5.0}],
                  "stations": [{"id": 0, "airtime_tx_ns": 10 ** 400}]}, "0.1.0+abc")
    rows = analysis.rows_from_result(d)
    assert [r["flow"] for r in rows] == [0, 1] and rows[0]["goodput_bps"] is None
    assert "total goodput 0.00 Mb/s" in summarize(d)


def test_aggregates_of_values_near_the_float_limit():
    """A file's numbers may be anywhere up to the float limit: the mean and spread of such
    values are a number and infinity, not an OverflowError (found by the result-reader fuzz
    target, in the tables)."""
    from lasthop.analysis import aggregate

    a = aggregate([1e308, 1e308, -1e308])
    assert math.isclose(a.mean, 1e308 / 3) and a.std == math.inf and a.n == 3
    assert aggregate([1.0, 2.0, 3.0]) == aggregate([1.0, 2.0, 3.0])
    assert aggregate([1.0, 2.0, 3.0]).mean == 2.0 and aggregate([1.0, 2.0, 3.0]).std == 1.0


def test_summary_of_tcp_members_left_null():
    """A TCP flow whose congestion control, state and delivered bytes are null prints "?"
    and 0 (found by the result-reader fuzz target)."""
    from lasthop.summary import summarize

    d = envelope({"name": "x", "sim": {"duration_ns": 10 ** 9}}, 3,
                 {"flows": [{"id": 0, "tcp": {"cc": None, "state": None, "bytes": 1000,
                                              "app_bytes_delivered": None}}]}, "0.1.0+abc")
    text = summarize(d)
    assert "0.00 MB delivered" in text and " ? " in text
