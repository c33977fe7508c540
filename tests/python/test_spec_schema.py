"""The JSON Schema of the spec (`lasthop schema`, docs/spec.schema.json): current, accepting
everything the validator accepts, and flagging what editors should flag (unknown keys, a
duration without its unit, a choice that is not one)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

jsonschema = pytest.importorskip("jsonschema")

from lasthop import spec as spec_mod  # noqa: E402
from lasthop.spec_schema import schema, schema_text  # noqa: E402

from helpers import run_cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "spec.schema.json"


@pytest.fixture(scope="module")
def validator() -> Any:
    s = schema()
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s)


def _accepted(doc: dict[str, Any]) -> bool:
    try:
        spec_mod.normalize(doc)
    except spec_mod.SpecError:
        return False
    return True


def test_the_checked_in_schema_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == schema_text(), \
        "docs/spec.schema.json is stale: lasthop schema -o docs/spec.schema.json"


def test_every_key_of_the_validator_is_in_the_schema() -> None:
    s = schema()
    for section, keys in spec_mod.SECTIONS.items():
        if section == "":
            assert set(s["properties"]) == set(keys)
            continue
        node = s
        for part in section.split("."):  # a table inside a table: mac.ofdma
            node = node["properties"][part]
            node = node.get("items", node)
        assert set(node["properties"]) == set(keys), section
        assert node["additionalProperties"] is False


def _files() -> list[Path]:
    return sorted((ROOT / "experiments").glob("*.toml")) + sorted((ROOT / "python" / "lasthop" / "templates").glob("*.toml")) \
        + sorted((ROOT / "tests" / "python" / "bad_specs").glob("*.toml"))


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_spec_the_validator_accepts_the_schema_accepts(path: Path, validator: Any) -> None:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError:
        pytest.skip("not TOML")
    if not _accepted(doc):
        return
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
    assert not errors, errors


@pytest.mark.parametrize("patch, where", [
    ({"sim": {"duraton": "1s"}}, "sim"),                      # a typo
    ({"sim": {"duration": 10}}, "sim.duration"),               # units are mandatory
    ({"phy": {"standard": "wifi7"}}, "phy.standard"),
    ({"stations": [{"mcs": -1}]}, "stations.0.mcs"),
    ({"stations": [{"mcs": 7, "count": 3000}]}, "stations.0.count"),
    ({"flows": [{"pattern": "cbr", "rate": "1 Mbit/s"}]}, "flows.0.rate"),
    ({"ap": {"qdisc": "cake"}}, "ap.qdisc"),
    ({"turbo": True}, ""),
])
def test_the_schema_flags_what_the_validator_refuses(patch: dict[str, Any], where: str, validator: Any) -> None:
    doc: dict[str, Any] = {"sim": {"duration": "1s"}, "stations": [{"mcs": 7}]}
    for k, v in patch.items():
        doc[k] = {**doc[k], **v} if isinstance(v, dict) and isinstance(doc.get(k), dict) else v
    assert not _accepted(doc)
    paths = {".".join(map(str, e.absolute_path)) for e in validator.iter_errors(doc)}
    assert where in paths, paths


def test_generated_documents_the_validator_accepts_pass_the_schema(validator: Any) -> None:
    hypothesis = pytest.importorskip("hypothesis")
    from test_spec_hypothesis import documents

    seen = {"accepted": 0}

    @hypothesis.settings(max_examples=300, deadline=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(doc=documents())
    def check(doc: dict[str, Any]) -> None:
        if not _accepted(doc):
            return
        seen["accepted"] += 1
        errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
        assert not errors, (errors, doc)

    check()
    assert seen["accepted"] > 0


def test_lasthop_schema_prints_and_writes_it(tmp_path: Path) -> None:
    r = run_cli("schema")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(schema_text())
    out = tmp_path / "s.json"
    r = run_cli("schema", "-o", str(out))
    assert r.returncode == 0 and out.read_text(encoding="utf-8") == schema_text()
    r = run_cli("schema", "-o", str(tmp_path))
    assert r.returncode == 2 and "is a directory" in r.stderr and "Traceback" not in r.stderr


def test_docs_spec_md_documents_every_key_of_the_schema() -> None:
    """Each key appears as `key = …` under its table in docs/spec.md's annotated TOML."""
    import re

    text = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    documented: dict[str, set[str]] = {}
    for block in re.findall(r"```toml\n(.*?)```", text, flags=re.S):
        section = ""
        for line in block.splitlines():
            m = re.match(r"^\[\[?([a-z_.]+)\]\]?", line)
            if m:
                section = m.group(1)
                continue
            m = re.match(r"^([a-z_0-9]+)\s*=", line)
            if m:
                documented.setdefault(section, set()).add(m.group(1))
            elif re.match(r"^# [a-z_0-9]+ = ", line):
                # optional keys shown commented out: "# cw_min = 15, cw_max = 1023, aifsn = 3"
                documented.setdefault(section, set()).update(re.findall(r"([a-z_0-9]+) = ", line))
    s = schema()
    missing = []
    for section, node in s["properties"].items():
        if "properties" not in node and "items" not in node:
            if section not in documented.get("", set()):
                missing.append(section)
            continue
        keys = node.get("items", node)["properties"]
        for k, sub in keys.items():
            if "properties" in sub:
                # A table inside the table (e.g. [mac.ofdma]): its own header and keys.
                missing += [f"{section}.{k}.{j}" for j in sub["properties"]
                            if j not in documented.get(f"{section}.{k}", set())]
            elif k not in documented.get(section, set()):
                missing.append(f"{section}.{k}")
    assert not missing, f"keys of the schema missing from docs/spec.md: {missing}"
