"""A JSON Schema (draft 2020-12) of the scenario spec as written in TOML, for editors.

It is read off the validator itself rather than written a second time: every key of every
table comes from `spec.SECTIONS` (so an unknown key — a typo — is flagged), and the type,
choices, range and default of a key are what the native validator asked for while it read the
specimens below (the templates of `lasthop new` and a few documents for the keys they leave
alone), as `_native.spec_reads` reports each read. Where the validator reads a key in several contexts
(a band per standard), the schema takes the union of the choices, and keeps only the numeric
bounds all contexts share (an MCS range per standard, a parent index per station: a context the
specimens did not reach could widen them); a key whose value
the validator checks by hand (a list of MCS, a utility curve) is documented but not typed.
The validator stays the authority: a document the schema accepts may still be refused with a
one-line error (a rule across keys), never the other way round for the typed keys.

`lasthop schema` prints it; `docs/spec.schema.json` is a copy a test keeps current. Editors that
read JSON Schema for TOML (Taplo / "Even Better TOML") take it from a first line
`#:schema ./spec.schema.json` in the spec.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from . import _native
from . import spec as _spec
from .units import format_duration, format_rate

__all__ = ["schema", "schema_text"]

_ROOT = Path(__file__).resolve().parent
_ARRAYS = ("stations", "flows")
_TITLES = {
    "": "lasthop scenario spec",
    "sim": "[sim]: duration, warm-up, seed, time-series bin",
    "phy": "[phy]: standard, band, channel width, guard interval, control rate",
    "mac": "[mac]: aggregation, A-MSDU, PPDU time, retries, beacons, EDCA",
    "mac.ofdma": "[mac.ofdma]: 802.11ax DL OFDMA",
    "ap": "[ap]: queues, scheduler, qdisc, driver, AQL, buffer sizer",
    "wired": "[wired]: the server's link",
    "channel": "[channel]: path loss and link budget",
    "channel.interference": "[channel.interference]: bursts of interference the cell does not sense",
    "channel.fading": "[channel.fading]: small-scale fading on every link whose errors follow its SNR",
    "stations": "[[stations]]: a group of stations",
    "flows": "[[flows]]: traffic",
    "aggctl": "[aggctl]: the aggregation-level rate controller",
    "vwire": "[vwire]: the split proxy and Virtual Wires",
    "emu": "[emu]: the emulator",
}


# Keys the templates leave alone, each read in the context that reads it.
_EXTRA = (
    ("mobility-and-requests", """
[sim]
duration = "1s"
[mac]
aggregation_min_rate = "6.5Mbps"
[[stations]]
rate_control = "ideal"
walk_m = [1, 23]
speed_mps = 1.0
[[stations]]
rate_control = "ideal"
waypoints = [["0s", 1.0], ["1s", 23.0]]
repeat = true
[[flows]]
pattern = "tcp"
app = "request_response"
request_bytes = 300
response_bytes = 10000
think_time = "10ms"
requests = 5
[emu]
ap_host = false
"""),
    ("interference-and-fading", """
[sim]
duration = "1s"
[channel.interference]
on = "2ms"
off = "50ms"
inr_db = 20.0
[channel.fading]
model = "rician"
doppler_hz = 5.76
k_db = 10.0
[[stations]]
mcs = 7
error_model = "snr"
snr_db = 30.0
[[flows]]
pattern = "cbr"
rate = "1Mbps"
"""),
    ("aggctl-feedback", """
[sim]
duration = "1s"
[[stations]]
mcs = 7
[[flows]]
pattern = "aggctl"
[aggctl]
report_blackout = ["0s", "1s"]
"""),
)


# DL OFDMA, HE only: read after the standards so that their reads come first.
_OFDMA = ("he-ofdma", """
[sim]
duration = "1s"
[phy]
standard = "he"
[mac.ofdma]
dl = true
ul = false
scheduler = "txq"
max_users = 4
ack = "mu-bar"
mu_edca_aifsn = 8
mu_edca_cw_min = 511
mu_edca_cw_max = 1023
mu_edca_timer = "2.08896s"
[[stations]]
mcs = 7
[[flows]]
pattern = "cbr"
rate = "1Mbps"
""")


def _specimens() -> list[tuple[str, str]]:
    """The templates of `lasthop new` (shipped with the package) and the documents above: the
    same for an installed package as in a checkout."""
    paths = sorted((_ROOT / "templates").glob("*.toml"))
    out = [(p.name, p.read_text(encoding="utf-8")) for p in paths] + list(_EXTRA)
    # Every standard in every band it allows, so per-standard choices and ranges (MCS, widths,
    # guard intervals, Block Ack window) are the union over all of them.
    for standard, bands in _native.spec_standards():
        for band in bands:
            out.append((f"{standard}-{band}", f"""
[sim]
duration = "1s"
[phy]
standard = "{standard}"
band = "{band}"
[mac]
aggregation = {"false" if standard == "ofdm" else "true"}
[[stations]]
mcs = 0
[[flows]]
pattern = "cbr"
rate = "1Mbps"
"""))
    out.append(_OFDMA)
    return out


def _merge(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """The union of two fragments the validator asked for at the same key."""
    if a is None or a == b:
        return b if a is None else a
    if b is None:
        return a
    if "enum" in a and "enum" in b:
        return {"enum": a["enum"] + [v for v in b["enum"] if v not in a["enum"]]}
    if a.get("type") == b.get("type") and a.get("type") in ("integer", "number"):
        # A bound that differs between contexts depends on the document (an MCS range per
        # standard, a parent index per station), and contexts the specimens did not reach may
        # widen it: only bounds every context shares are kept.
        return {k: v for k, v in a.items() if k == "type" or b.get(k) == v}
    alts = a["anyOf"] if "anyOf" in a else [a]
    return {"anyOf": alts + ([b] if b not in alts else [])}


def _record(specimens: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}

    def rec(path: str, default: Any, frag: dict[str, Any] | None, allowed: str) -> None:
        key = re.sub(r"\[\d+\]", "", path)
        e = seen.setdefault(key, {"frag": None, "defaults": [], "allowed": []})
        e["frag"] = _merge(e["frag"], frag)
        if frag is not None:
            e["defaults"].append(default)
            if allowed and allowed not in e["allowed"]:
                e["allowed"].append(allowed)

    for name, text in specimens:
        try:
            doc = _spec.parse_toml(text, name)
        except _spec.SpecFileError:
            continue
        for path, default, frag, allowed in _native.spec_reads(doc):
            rec(path, _spec.MISSING if default is None else json.loads(default),
                None if frag is None else json.loads(frag), allowed)
    return seen


def _property(key: str, e: dict[str, Any] | None) -> dict[str, Any]:
    if e is None or e["frag"] is None:
        return {"description": f"{key}: see docs/spec.md (checked by `lasthop validate`)"}
    out = dict(e["frag"])
    text = "; ".join(e["allowed"])
    defaults = e["defaults"]
    required = all(d is _spec.MISSING for d in defaults)
    if required:
        text += " (required)"
    elif len({json.dumps(d, default=str) for d in defaults}) == 1 and defaults[0] is not _spec.MISSING:
        d = defaults[0]
        # Durations and rates are held in base units; the TOML form is the unit string.
        if out.get("type") == "string" and "pattern" in out and isinstance(d, int):
            d = format_duration(d) if "(ns|" in out["pattern"] else format_rate(d)
        if isinstance(d, (bool, int, float, str)):
            out["default"] = d
    out["description"] = f"{key}: {text}" if text else key
    return out


def _table(section: str, seen: dict[str, dict[str, Any]]) -> dict[str, Any]:
    props = {k: _table(f"{section}.{k}", seen) if f"{section}.{k}" in _spec.SECTIONS
             else _property(f"{section}.{k}", seen.get(f"{section}.{k}")) for k in _spec.SECTIONS[section]}
    return {"type": "object", "title": _TITLES.get(section, section), "properties": props,
            "additionalProperties": False}


def _section(name: str, seen: dict[str, dict[str, Any]]) -> dict[str, Any]:
    t = _table(name, seen)
    if name in _ARRAYS:
        return {"type": "array", "items": t, "description": t["title"]}
    return t


def schema() -> dict[str, Any]:
    """The JSON Schema of a spec document."""
    seen = _record(_specimens())
    top = {"type": "object", "properties": {}, "additionalProperties": False, "required": ["sim", "stations"]}
    for k in _spec.SECTIONS[""]:
        top["properties"][k] = _section(k, seen) if k in _spec.SECTIONS else _property(k, seen.get(k))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": _TITLES[""],
            "description": "A lasthop scenario (TOML). Units are mandatory for durations and rates. "
                           "`lasthop validate SPEC` is the authority; see docs/spec.md.",
            **top}


def schema_text() -> str:
    return json.dumps(schema(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
