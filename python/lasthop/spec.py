"""Scenario specs: TOML in, a validated and normalized spec out (docs/spec.md).

`load_spec(path)` parses the TOML, checks structure, types, ranges and the cross-field rules
that docs/spec.md states, fills defaults, converts every quantity to integers in base units
(ns, bit/s), expands station groups and flows (one normalized flow per station), and finally
asks the native simulator to check its 802.11 rules (`_native.validate`), mapping the station
and flow indices of its answers back to the TOML tables. The first problem found raises
`SpecError(path, value, allowed)`; nothing is simulated or written before a spec passes.

The per-standard sets below (widths, guard intervals, MCS and NSS ranges, Block Ack windows,
maximum A-MPDU lengths) are the ones docs/spec.md lists; checking them here gives the user a
message naming the TOML key. The simulator checks them again, so the two cannot silently drift.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from .units import DURATION_UNITS, RATE_UNITS, UnitError, parse_duration, parse_rate
from .webpages import TABLE_II, page_objects

__all__ = [
    "SpecError",
    "SpecFileError",
    "Spec",
    "load_spec",
    "load_spec_text",
    "normalize",
    "show_value",
]

MISSING: Any = object()


class SpecError(Exception):
    """One problem in a spec: the TOML key path, the offending value, what is allowed."""

    def __init__(self, path: str, value: str, allowed: str) -> None:
        super().__init__(path, value, allowed)
        self.path = path
        self.value = value
        self.allowed = allowed

    def __str__(self) -> str:
        return f"{self.path} = {self.value}: {self.allowed}"


class SpecFileError(Exception):
    """The spec file cannot be read or is not valid TOML (message includes line and column)."""


SHOW_MAX = 80


def _clip(text: str) -> str:
    """An echoed value longer than SHOW_MAX characters, cut (an error stays one short line)."""
    if len(text) <= SHOW_MAX:
        return text
    return f"{text[:SHOW_MAX - 1]}… ({len(text)} characters)"


def show_value(v: Any) -> str:
    """Render a TOML value for an error message, in TOML-like syntax, clipped to SHOW_MAX."""
    if v is MISSING:
        return "(missing)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return _clip(json.dumps(v[:SHOW_MAX * 2], ensure_ascii=False)) if len(v) <= SHOW_MAX * 2 else \
            f"{json.dumps(v[:SHOW_MAX - 2], ensure_ascii=False)}… ({len(v)} characters)"
    if isinstance(v, int) and v.bit_length() > 200:
        return f"an integer of {v.bit_length()} bits"
    if isinstance(v, (int, float)):
        return _clip(repr(v))
    if isinstance(v, dict):
        return "{...}"
    if isinstance(v, list):
        text = "[" + ", ".join(show_value(x) for x in v[:8]) + (", ..." if len(v) > 8 else "") + "]"
        return _clip(text)
    return _clip(repr(v))


# --- per-standard facts (docs/spec.md "Sections") ------------------------------------------


class _Std(NamedTuple):
    widths: tuple[int, ...]
    guard_intervals: tuple[int, ...]
    mcs_max: int
    nss_max: int
    bands: tuple[str, ...]
    ba_window: int
    max_ampdu_bytes: int
    max_ppdu_time_ns: int
    default_width: int


STANDARDS: dict[str, _Std] = {
    # Clause 17 OFDM (802.11a/g): MCS index 0..7 = 6, 9, 12, 18, 24, 36, 48, 54 Mb/s.
    "ofdm": _Std((20,), (800,), 7, 1, ("2.4GHz", "5GHz"), 64, 65535, 5_484_000, 20),
    # Clause 19 HT: per-stream MCS 0..7 with nss 1..4 (equal modulation).
    "ht": _Std((20, 40), (800, 400), 7, 4, ("2.4GHz", "5GHz"), 64, 65535, 10_000_000, 20),
    # Clause 21 VHT (5 GHz only).
    "vht": _Std((20, 40, 80, 160), (800, 400), 9, 8, ("5GHz",), 64, 1_048_575,
                5_484_000, 80),
    # Clause 27 HE (SU).
    "he": _Std((20, 40, 80, 160), (800, 1600, 3200), 11, 8, ("2.4GHz", "5GHz", "6GHz"), 256,
               6_500_631, 5_484_000, 80),
}

# IEEE 802.11-2020 Tables 21-30..21-61: VHT (width, mcs, nss) combinations that do not exist
# (the number of data bits per symbol would not be an integer per encoder).
VHT_INVALID: frozenset[tuple[int, int, int]] = frozenset(
    [(20, 9, n) for n in (1, 2, 4, 5, 7, 8)] + [(80, 6, 3), (80, 6, 7), (80, 9, 6), (160, 9, 3)]
)

CONTROL_RATES_MBPS = (6, 9, 12, 18, 24, 36, 48, 54)
ACCESS_CATEGORIES = ("BK", "BE", "VI", "VO")
ERROR_MODELS = ("none", "fixed", "snr")
RATE_CONTROLS = ("fixed", "ideal", "minstrel")
PATH_LOSS_MODELS = ("log_distance", "tgn_a", "tgn_b", "tgn_c", "tgn_d", "tgn_e", "tgn_f")
MAX_DISTANCE_M = 100_000.0
DIRECTIONS = ("down", "up", "cross")
PATTERNS = ("cbr", "poisson", "saturated", "tcp", "ping", "quic", "aggctl")
ALLOCATIONS = ("equal_airtime", "per_station")
QUIC_PROFILES = ("quic", "bquic")
ACK_POLICIES = ("tcp_acking", "ack_decimation", "ack_frequency")
RECONNECTS = ("1rtt", "0rtt")
HISTORIES = ("none", "mean", "ewma")
HISTORY_GUARDS = ("none", "rtt")
DRIVERS = ("pull", "ath9k", "firmware")
QDISCS = ("fifo", "codel", "pie", "fq_codel")
CONGESTION_CONTROLS = ("newreno", "cubic", "bbr")
SCHEDULERS = ("round_robin", "airtime")
BUFFER_SIZERS = ("none", "wqm")
WQM_VARIANTS = ("aimd", "aiad", "miad", "mimd")
MAX_STATIONS = 2007  # association IDs 1..=2007
MAX_BINS = 1_000_000
U64_MAX = 2**64 - 1
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

SECTIONS: dict[str, tuple[str, ...]] = {
    "": ("name", "description", "sim", "phy", "mac", "ap", "wired", "channel", "stations",
         "flows", "aggctl", "vwire", "emu"),
    "emu": ("ap_host",),
    "vwire": ("enabled", "period", "efficiency", "relay_buffer", "sndbuf", "tsq", "sample",
              "work_conserving"),
    "channel": ("path_loss", "exponent", "tx_power_dbm", "noise_figure_db"),
    "sim": ("duration", "warmup", "seed", "bin"),
    "phy": ("standard", "band", "channel_width", "guard_interval", "control_rate"),
    "mac": ("aggregation", "max_ampdu_mpdus", "max_ampdu_bytes", "max_ppdu_time", "retry_limit",
            "beacon_interval", "access_category", "cw_min", "cw_max", "aifsn",
            "eifs_after_collision", "aggregation_min_rate", "max_amsdu_bytes", "rx_delivery"),
    "ap": ("queue_limit", "scheduler", "qdisc", "driver", "hw_queue_limit", "aql",
           "aql_limit_low", "aql_limit_high", "aql_threshold", "buffer_sizer", "wqm_limit",
           "wqm_interval", "wqm_variant"),
    "wired": ("rate", "delay", "queue_limit", "loss", "loss_up", "qdisc"),
    "stations": ("count", "mcs", "nss", "error_model", "per", "snr_db", "queue_limit", "qdisc",
                 "rate_control", "distance_m", "walk_m", "speed_mps", "waypoints", "repeat",
                 "parent", "hop_channel", "nss_change", "device"),
    "flows": ("stations", "direction", "pattern", "rate", "packet_size", "start", "stop",
              "cc", "bytes", "pacing", "hystart", "extra_acked", "app", "request_bytes",
              "response_bytes", "think_time", "requests", "interval", "profile", "ack_policy",
              "zero_rtt", "initial_cwnd", "page", "connections", "idle", "idle_timeout", "reconnect",
              "history", "history_guard", "split", "split_wired_cc", "app_rate", "app_class",
              "utility", "ac"),
    "aggctl": ("target_aggregation", "interval", "k0", "initial_rate", "min_rate", "max_rate",
               "allocation", "hold_time", "decay_after", "decay_factor", "gap_threshold",
               "clock_resolution", "clock_jitter", "report_rate", "report_loss",
               "report_blackout"),
}


APP_CLASSES = ("video_sd", "video_hd", "video_4k", "bulk", "web", "voip")
DEVICES = ("unknown", "phone", "laptop", "tv")
UTILITY_TEXT = ('"step:RATE:U[,RATE:U...]" (rates increasing, utilities >= 0 non-decreasing), '
                'e.g. "step:32Mbps:10", or "log:W" with W > 0, e.g. "log:0.1"')


def parse_utility(v: Any) -> dict[str, Any]:
    """A vwire utility from its text form: {"step": [[bps, u], ...]} or {"log": w}."""
    if not isinstance(v, str) or ":" not in v:
        raise _Bad(UTILITY_TEXT)
    kind, _, rest = v.partition(":")
    try:
        if kind == "log":
            w = float(rest)
            if not (math.isfinite(w) and w > 0):
                raise ValueError
            return {"log": w}
        if kind == "step":
            steps = []
            for part in rest.split(","):
                rate, _, u = part.partition(":")
                bps, util = parse_rate(rate.strip()), float(u)
                if bps <= 0 or not (math.isfinite(util) and util >= 0):
                    raise ValueError
                if steps and (bps <= steps[-1][0] or util < steps[-1][1]):
                    raise ValueError
                steps.append([float(bps), util])
            return {"step": steps}
    except (ValueError, UnitError):
        pass
    raise _Bad(UTILITY_TEXT)


# --- typed access to one TOML table ----------------------------------------------------------


class _Table:
    """A TOML table at `path` whose keys are checked against `allowed` on construction."""

    # Set by `spec_schema` while it watches the validator read keys: called with the key path,
    # the default (MISSING: required), a JSON Schema fragment of the accepted TOML values (None
    # when the reader checks the value itself) and the one-line description of what is allowed.
    recorder: Callable[[str, Any, dict[str, Any] | None, str], None] | None = None

    def __init__(self, data: Any, path: str, allowed: tuple[str, ...], what: str) -> None:
        if not isinstance(data, dict):
            raise SpecError(path or "(top level)", show_value(data), what)
        self.data = data
        self.path = path
        for key in data:
            if key not in allowed:
                raise SpecError(self.key(key), show_value(data[key]), _unknown_key(key, allowed))

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def has(self, name: str) -> bool:
        return name in self.data

    def raw(self, name: str) -> Any:
        if _Table.recorder is not None:
            _Table.recorder(self.key(name), MISSING, None, "")
        return self.data.get(name, MISSING)

    def fail(self, name: str, allowed: str) -> SpecError:
        return SpecError(self.key(name), show_value(self.raw(name)), allowed)

    def _get(self, name: str, default: Any, check: Callable[[Any], Any], allowed: str,
             schema: dict[str, Any] | None = None) -> Any:
        if _Table.recorder is not None:
            _Table.recorder(self.key(name), default, schema, allowed)
        v = self.data.get(name, MISSING)
        if v is MISSING:
            if default is MISSING:
                raise SpecError(self.key(name), "(missing)", f"required: {allowed}")
            return default
        try:
            return check(v)
        except _Bad as e:
            raise self.fail(name, e.allowed or allowed) from None

    def get_int(self, name: str, default: Any, lo: int | None = None, hi: int | None = None,
            allowed: str | None = None) -> int:
        text = allowed or _range_text("an integer", lo, hi)

        def check(v: Any) -> int:
            if isinstance(v, bool) or not isinstance(v, int):
                raise _Bad(text)
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise _Bad(text)
            return v

        return self._get(name, default, check, text, _int_schema(lo, hi))

    def choice_int(self, name: str, default: Any, choices: tuple[int, ...], why: str = "") -> int:
        text = "one of " + "|".join(str(c) for c in choices) + why

        def check(v: Any) -> int:
            if isinstance(v, bool) or not isinstance(v, int) or v not in choices:
                raise _Bad(text)
            return v

        return self._get(name, default, check, text, {"enum": list(choices)})

    def get_float(self, name: str, default: Any, lo: float, hi: float,
                  closed: bool = False) -> float:
        """A number in [lo, hi) (or [lo, hi] when `closed`); TOML integers are accepted."""
        text = f"a number in [{lo:g}, {hi:g}{']' if closed else ')'}"

        def check(v: Any) -> float:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise _Bad(text)
            f = float(v)
            if not math.isfinite(f) or f < lo or f > hi or (f == hi and not closed):
                raise _Bad(text)
            return f

        top = "maximum" if closed else "exclusiveMaximum"
        return self._get(name, default, check, text, {"type": "number", "minimum": lo, top: hi})

    def get_bool(self, name: str, default: Any) -> bool:
        def check(v: Any) -> bool:
            if not isinstance(v, bool):
                raise _Bad("true or false")
            return v

        return self._get(name, default, check, "true or false", {"type": "boolean"})

    def get_str(self, name: str, default: Any, allowed: str = "a string") -> str:
        def check(v: Any) -> str:
            if not isinstance(v, str):
                raise _Bad(allowed)
            return v

        return self._get(name, default, check, allowed, {"type": "string"})

    def choice(self, name: str, default: Any, choices: tuple[str, ...], why: str = "") -> str:
        text = "one of " + "|".join(f'"{c}"' for c in choices) + why

        def check(v: Any) -> str:
            if not isinstance(v, str) or v not in choices:
                raise _Bad(text)
            return v

        return self._get(name, default, check, text, {"enum": list(choices)})

    def duration(self, name: str, default: Any, positive: bool = False) -> int:
        def check(v: Any) -> int:
            try:
                ns = parse_duration(v)
            except UnitError as e:
                raise _Bad(str(e)) from None
            if positive and ns == 0:
                raise _Bad('must be > 0, e.g. "10s"')
            return ns

        return self._get(name, default, check, 'a duration such as "10s" or "102.4ms"',
                         _DURATION_SCHEMA)

    def rate(self, name: str, default: Any) -> int:
        def check(v: Any) -> int:
            try:
                bps = parse_rate(v)
            except UnitError as e:
                raise _Bad(str(e)) from None
            if bps == 0:
                raise _Bad('must be > 0, e.g. "100Mbps"')
            return bps

        return self._get(name, default, check, 'a rate such as "100Mbps" or "1.5Gbps"',
                         _RATE_SCHEMA)


def _int_schema(lo: int | None, hi: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer"}
    if lo is not None:
        out["minimum"] = lo
    if hi is not None:
        out["maximum"] = hi
    return out


def _quantity_schema(units: dict[str, int]) -> dict[str, Any]:
    # units._QUANTITY with the unit words spelled out (the value range is checked on load).
    return {"type": "string", "pattern": r"^\s*(\d+(\.\d*)?|\.\d+)\s*(" + "|".join(units) + r")\s*$"}


_DURATION_SCHEMA = _quantity_schema(DURATION_UNITS)
_RATE_SCHEMA = _quantity_schema(RATE_UNITS)


class _Bad(Exception):
    def __init__(self, allowed: str = "") -> None:
        super().__init__(allowed)
        self.allowed = allowed


def _range_text(what: str, lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"{what} in {lo}..={hi}"
    if lo is not None:
        return f"{what} >= {lo}"
    if hi is not None:
        return f"{what} <= {hi}"
    return what


def _unknown_key(key: str, allowed: tuple[str, ...]) -> str:
    import difflib

    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if not close:
        close = [a for a in allowed if a.lower() == key.lower()]
    if close:
        return f'unknown key; did you mean "{close[0]}"?'
    return "unknown key; allowed: " + ", ".join(allowed)


# --- the normalized spec ----------------------------------------------------------------------


class Spec:
    """A validated, normalized spec and how its lists map back to the TOML tables.

    `normalized`; `station_group` (normalized station -> its [[stations]] table) and
    `flow_table` (normalized flow -> its [[flows]] table); `source`. `checked_json` is
    `to_json()` as `check_native` passed it (a large cell's spec is megabytes of JSON: it is
    written once for validation and run); whoever changes `normalized` afterwards calls
    `to_json()` itself. Equality ignores `checked_json`. (A plain class, not a dataclass, so
    that `lasthop run` does not import `dataclasses` and `inspect`.)"""

    __slots__ = ("normalized", "station_group", "flow_table", "source", "checked_json")

    def __init__(self, normalized: dict[str, Any], station_group: list[int] | None = None,
                 flow_table: list[int] | None = None, source: str = "",
                 checked_json: str | None = None) -> None:
        self.normalized = normalized
        self.station_group = [] if station_group is None else station_group
        self.flow_table = [] if flow_table is None else flow_table
        self.source = source
        self.checked_json = checked_json

    def _key(self) -> tuple:
        return (self.normalized, self.station_group, self.flow_table, self.source)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"Spec(normalized={self.normalized!r}, station_group={self.station_group!r}, "
                f"flow_table={self.flow_table!r}, source={self.source!r})")

    @property
    def name(self) -> str:
        return self.normalized["name"]

    @property
    def seed(self) -> int:
        return self.normalized["sim"]["seed"]

    @property
    def duration_ns(self) -> int:
        return self.normalized["sim"]["duration_ns"]

    def to_json(self) -> str:
        """Canonical JSON handed to the native module (sorted keys, no whitespace)."""
        return json.dumps(self.normalized, sort_keys=True, separators=(",", ":"))

    def map_path(self, path: str) -> str:
        """`stations[5].mcs` (normalized index) -> `stations[1].mcs` (TOML table index)."""
        m = re.match(r"^(stations|flows)\[(\d+)\](.*)$", path)
        if not m:
            return path
        table = self.station_group if m.group(1) == "stations" else self.flow_table
        i = int(m.group(2))
        if i < len(table):
            return f"{m.group(1)}[{table[i]}]{m.group(3)}"
        return path


# Most packets any queue may hold: 2^20, far above deployed queues (txqueuelen 1000, mac80211's
# 8192) and still within memory when a saturated source fills it (a queued packet is a small
# handle; without a bound a limit of 2^32 filled 12 GB within seconds).
MAX_QUEUE = 1 << 20

# One time unit (TU), IEEE 802.11-2020 §3.1.
TU_NS = 1_024_000

# A result file is NAME-s<seed>.json (with -emu-, a pcap suffix): room for those in 255 bytes.
NAME_MAX = 200


def normalize(doc: dict[str, Any], default_name: str = "scenario") -> Spec:
    """Validate a parsed TOML document and return the normalized spec (no native checks)."""
    top = _Table(doc, "", SECTIONS[""], "a TOML document")

    name = top.get_str("name", default_name, "a name of letters, digits, '.', '_', '-' "
                   "(it names the result file)")
    if len(name) > NAME_MAX:
        raise top.fail("name", f"at most {NAME_MAX} characters (it names the result file, whose "
                       "name the file system limits to 255 bytes)")
    if not NAME_RE.match(name):
        raise top.fail("name", "letters, digits, '.', '_', '-', starting with a letter or digit "
                       "(it names the result file)")
    description = top.get_str("description", "")

    # [sim]
    sim = _Table(top.raw("sim"), "sim", SECTIONS["sim"], "a table [sim]") if top.has("sim") \
        else None
    if sim is None:
        raise SpecError("sim.duration", "(missing)", 'required: a [sim] table with duration, '
                        'e.g. duration = "10s"')
    duration = sim.duration("duration", MISSING, positive=True)
    warmup = sim.duration("warmup", 0)
    if warmup >= duration:
        raise sim.fail("warmup", "must be < sim.duration")
    seed = sim.get_int("seed", 1, 0, U64_MAX)
    bin_ns = sim.duration("bin", min(100_000_000, duration), positive=True)
    if bin_ns > duration:
        raise sim.fail("bin", "must be <= sim.duration")
    if -(-duration // bin_ns) > MAX_BINS:
        raise sim.fail("bin", f"too small: at most {MAX_BINS} bins per run (duration / bin)")

    # [phy]
    phy = _Table(top.raw("phy") if top.has("phy") else {}, "phy", SECTIONS["phy"], "a table [phy]")
    standard = phy.choice("standard", "vht", tuple(STANDARDS))
    std = STANDARDS[standard]
    band = phy.choice("band", "5GHz", std.bands, f" for {standard}")
    width = phy.choice_int("channel_width", std.default_width, std.widths, f" MHz for {standard}")
    gi = phy.choice_int("guard_interval", 800, std.guard_intervals, f" ns for {standard}")
    control_rate = phy.rate("control_rate", 24_000_000)
    if control_rate not in tuple(r * 1_000_000 for r in CONTROL_RATES_MBPS):
        raise phy.fail("control_rate", "a legacy OFDM rate: "
                       + "|".join(f"{r}Mbps" for r in CONTROL_RATES_MBPS))

    # [mac]
    mac = _Table(top.raw("mac") if top.has("mac") else {}, "mac", SECTIONS["mac"], "a table [mac]")
    aggregation = mac.get_bool("aggregation", standard != "ofdm")
    if standard == "ofdm" and aggregation:
        raise mac.fail("aggregation", "must be false for ofdm (no A-MPDU in Clause 17)")
    max_mpdus = mac.get_int("max_ampdu_mpdus", 64, 1, std.ba_window,
                        f"an integer in 1..={std.ba_window} (the {standard} Block Ack window)")
    max_bytes = mac.get_int("max_ampdu_bytes", 0, 0, std.max_ampdu_bytes,
                        f"0 (the standard's maximum) or 1..={std.max_ampdu_bytes} for {standard}")
    max_ppdu = mac.duration("max_ppdu_time", 5_484_000, positive=True)
    if max_ppdu > std.max_ppdu_time_ns:
        raise mac.fail("max_ppdu_time", f"0 < t <= {_ms(std.max_ppdu_time_ns)} for {standard}")
    retry_limit = mac.get_int("retry_limit", 7, 1, 64)
    beacon = mac.duration("beacon_interval", 102_400_000)
    # The Beacon Interval field counts time units of 1024 µs in two octets, 0 reserved
    # (IEEE 802.11-2020 §9.4.1.3): 1..=65535 TU; "0s" here turns beacons off.
    if beacon and not TU_NS <= beacon <= 65535 * TU_NS:
        raise mac.fail("beacon_interval", '"0s" (off) or 1 TU (1.024ms) ..= 65535 TU (67.10784s), '
                       "IEEE 802.11-2020 §9.4.1.3")
    ac = mac.choice("access_category", "BE", ACCESS_CATEGORIES)
    cw_text = "2^k - 1 for k in 0..=15 (0, 1, 3, 7, ..., 32767)"
    cw_values = tuple(2**k - 1 for k in range(16))
    cw_min = mac.get_int("cw_min", None, allowed=cw_text)
    if cw_min is not None and cw_min not in cw_values:
        raise mac.fail("cw_min", cw_text)
    cw_max = mac.get_int("cw_max", None, allowed=cw_text)
    if cw_max is not None and cw_max not in cw_values:
        raise mac.fail("cw_max", cw_text)
    if cw_min is not None and cw_max is not None and cw_min > cw_max:
        raise mac.fail("cw_min", "must be <= mac.cw_max")
    aifsn = mac.get_int("aifsn", None, 1, 15)
    eifs_after_collision = mac.get_bool("eifs_after_collision", False)
    agg_min_rate = mac.rate("aggregation_min_rate", 0) if mac.has("aggregation_min_rate") else 0
    # A-MSDU: the largest Maximum A-MSDU Length of the amendment (HT 3839 or 7935, VHT/HE
    # 11454, IEEE 802.11-2020 §9.4.2.55.2 / Table 9-34); any value from HT's smaller one up.
    amsdu_max = {"ofdm": 0, "ht": 7935}.get(standard, 11454)
    max_amsdu = mac.get_int("max_amsdu_bytes", 0, 0, amsdu_max,
                            "0 for ofdm (no A-MSDU here)" if amsdu_max == 0 else
                            f"0 (off) or 3839..={amsdu_max} for {standard}")
    if 0 < max_amsdu < 3839:
        raise mac.fail("max_amsdu_bytes", f"0 (off) or 3839..={amsdu_max} for {standard}")
    if mac.has("aggregation_min_rate") and not aggregation:
        raise mac.fail("aggregation_min_rate", "only with aggregation = true")
    rx_delivery = mac.choice("rx_delivery", "subframe", ("subframe", "ppdu"))

    # [ap]
    ap = _Table(top.raw("ap") if top.has("ap") else {}, "ap", SECTIONS["ap"], "a table [ap]")
    scheduler = ap.choice("scheduler", "round_robin", SCHEDULERS)
    qdisc = ap.choice("qdisc", "fifo", QDISCS)
    # txqueuelen (1000) in front of a qdisc; mac80211's own flow queue holds 8192 (`fq_init`).
    ap_queue = ap.get_int("queue_limit", 8192 if qdisc == "fq_codel" else 1000, 1, MAX_QUEUE)
    driver = ap.choice("driver", "pull", DRIVERS)
    fw_keys = ("hw_queue_limit", "aql", "aql_limit_low", "aql_limit_high", "aql_threshold")
    if driver != "firmware":
        for k in fw_keys:
            if ap.has(k):
                raise ap.fail(k, 'only with driver = "firmware" (the pull driver has no queue '
                              'below the station queues)')
    hw_queue_limit = ap.get_int("hw_queue_limit", 1024, 1, MAX_QUEUE)
    aql = ap.get_bool("aql", True)
    if not aql:
        for k in fw_keys[2:]:
            if ap.has(k):
                raise ap.fail(k, "only with aql = true")
    aql_low = ap.duration("aql_limit_low", 5_000_000, positive=True)
    aql_high = ap.duration("aql_limit_high", 12_000_000, positive=True)
    aql_threshold = ap.duration("aql_threshold", 24_000_000, positive=True)
    if aql_low > aql_high:
        raise ap.fail("aql_limit_low", f"must be <= ap.aql_limit_high ({_ms(aql_high)})")
    buffer_sizer = ap.choice("buffer_sizer", "none", BUFFER_SIZERS)
    if buffer_sizer != "wqm":
        for k in ("wqm_limit", "wqm_interval", "wqm_variant"):
            if ap.has(k):
                raise ap.fail(k, 'only with buffer_sizer = "wqm"')
    elif qdisc != "fifo":
        raise ap.fail("buffer_sizer", '"wqm" only with qdisc = "fifo" (WQM sizes a tail-drop '
                      'buffer)')
    elif driver == "firmware":
        raise ap.fail("buffer_sizer", '"wqm" only with driver = "pull" or "ath9k" (it sizes the '
                      'queue the driver takes frames from)')
    wqm_limit = ap.duration("wqm_limit", 2_500_000, positive=True)
    wqm_interval = ap.duration("wqm_interval", 100_000_000, positive=True)
    wqm_variant = ap.choice("wqm_variant", "aimd", WQM_VARIANTS)

    # [wired]
    wired = _Table(top.raw("wired") if top.has("wired") else {}, "wired", SECTIONS["wired"],
                   "a table [wired]")
    wired_rate = wired.rate("rate", 10_000_000_000)
    wired_delay = wired.duration("delay", 1_000_000)
    wired_queue = wired.get_int("queue_limit", 1000, 1, MAX_QUEUE)
    wired_loss = wired.get_float("loss", 0.0, 0.0, 1.0)
    wired_loss_up = wired.get_float("loss_up", None, 0.0, 1.0)
    wired_qdisc = wired.choice("qdisc", "fifo", QDISCS)

    # [channel]
    ch = _Table(top.raw("channel") if top.has("channel") else {}, "channel", SECTIONS["channel"],
                "a table [channel]")
    path_loss = ch.choice("path_loss", "log_distance", PATH_LOSS_MODELS)
    exponent = ch.get_float("exponent", 3.5, 1.0, 8.0, closed=True)
    if ch.has("exponent") and path_loss != "log_distance":
        raise ch.fail("exponent", 'only with path_loss = "log_distance" (TGn models fix theirs)')
    tx_power = ch.get_float("tx_power_dbm", 20.0, -30.0, 40.0, closed=True)
    noise_figure = ch.get_float("noise_figure_db", 7.0, 0.0, 30.0, closed=True)

    # [[stations]]
    groups = top.raw("stations")
    if groups is MISSING:
        raise SpecError("stations", "(missing)", "at least one [[stations]] table is required")
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise SpecError("stations", show_value(groups), "an array of tables [[stations]]")
    if not groups:
        raise SpecError("stations", "[]", "at least one [[stations]] table is required")
    stations: list[dict[str, Any]] = []
    station_group: list[int] = []
    for gi_, g in enumerate(groups):
        t = _Table(g, f"stations[{gi_}]", SECTIONS["stations"], "a table [[stations]]")
        count = t.get_int("count", 1, 1, MAX_STATIONS)
        rc = t.choice("rate_control", "fixed", RATE_CONTROLS)
        if rc == "fixed":
            mcs = t.get_int("mcs", MISSING, 0, std.mcs_max,
                        f"an integer in 0..={std.mcs_max} for {standard}"
                        + (" (0..7 = 6, 9, 12, 18, 24, 36, 48, 54 Mb/s)" if standard == "ofdm"
                           else ""))
        elif t.has("mcs"):
            raise t.fail("mcs", f'only with rate_control = "fixed" (rate control "{rc}" picks it)')
        else:
            mcs = 0
        if rc != "fixed" and standard == "ofdm":
            raise t.fail("rate_control", '"fixed" for ofdm (rate control covers HT/VHT/HE MCS)')
        nss = t.get_int("nss", 1, 1, std.nss_max, f"an integer in 1..={std.nss_max} for {standard}"
                        + ("" if rc == "fixed" else " (the most streams rate control uses)"))
        if standard == "vht" and (width, mcs, nss) in VHT_INVALID:
            raise t.fail("mcs", f"VHT MCS {mcs} does not exist at {width} MHz with nss = {nss}")
        waypoints, repeat, placed = _station_placement(t)
        model = t.choice("error_model", "snr" if placed else "none", ERROR_MODELS)
        if placed and model != "snr":
            raise t.fail("error_model", '"snr" for a station placed at a distance')
        per = t.get_float("per", 0.0, 0.0, 1.0)
        if t.has("per") and model != "fixed":
            raise t.fail("per", 'only with error_model = "fixed"')
        snr = t.get_float("snr_db", 30.0, -20.0, 100.0, closed=True)
        if t.has("snr_db") and model != "snr":
            raise t.fail("snr_db", 'only with error_model = "snr"')
        if t.has("snr_db") and placed:
            raise t.fail("snr_db", "not with a distance: the SNR follows from [channel]")
        if rc != "fixed" and model != "snr":
            raise t.fail("rate_control", 'needs an SNR: set distance_m, walk_m, waypoints or '
                         'error_model = "snr" with snr_db')
        queue = t.get_int("queue_limit", 1000, 1, MAX_QUEUE)
        sta_qdisc = t.choice("qdisc", "fifo", QDISCS)
        first = len(stations)
        parent = t.get_int("parent", None, 0, first - 1 if first else None,
                           f"the index of an earlier station (0..={first - 1})" if first else
                           "nothing: the first station has no earlier station to relay for it")
        if t.has("parent") and first == 0:
            raise t.fail("parent", "nothing: the first station has no earlier station to relay "
                         "for it")
        if parent is not None and driver == "firmware":
            raise t.fail("parent", 'only with ap.driver = "pull" or "ath9k" (relays are ath9k nodes)')
        hop_channel = t.get_int("hop_channel", 0, 0, 63)
        device = t.choice("device", "unknown", DEVICES)
        if parent is None and hop_channel != 0:
            raise t.fail("hop_channel", "0 for a station associated with the AP (the AP has one radio, on "
                          "channel 0)")
        if parent is not None and driver == "ath9k" and hop_channel != stations[parent]["hop_channel"]:
            raise t.fail("hop_channel", f"{stations[parent]['hop_channel']} (its parent's) with ap.driver = "
                         '"ath9k": a relay has one driver stage, so one radio')
        siblings = [st for st in stations if parent is not None and st["parent"] == parent]
        if siblings and siblings[0]["hop_channel"] != hop_channel:
            raise t.fail("hop_channel", f"{siblings[0]['hop_channel']} like the other stations behind station "
                         f"{parent} (one radio per side of a relay)")
        nss_change = _nss_change(t, nss, rc, mcs, width, standard, duration)
        if len(stations) + count > MAX_STATIONS:
            raise t.fail("count", f"at most {MAX_STATIONS} stations in total")
        for _ in range(count):
            stations.append({"mcs": mcs, "nss": nss, "error_model": model, "per": per,
                             "snr_db": snr, "queue_limit": queue, "qdisc": sta_qdisc,
                             "rate_control": rc,
                             "waypoints": [list(w) for w in waypoints], "repeat": repeat,
                             "parent": parent, "hop_channel": hop_channel,
                             "nss_change": nss_change})
            if device != "unknown":
                # Only when given: the vwire classifier's device type (default "unknown").
                stations[-1]["device"] = device
            station_group.append(gi_)
    n_sta = len(stations)
    for st in stations:
        par = st["parent"]
        if par is not None and stations[par]["qdisc"] != "fifo":
            raise SpecError(f"stations[{station_group[par]}].qdisc",
                            show_value(stations[par]["qdisc"]),
                            '"fifo" for a relay (its interface queue is configured by [ap])')

    # [[flows]]
    tables = top.raw("flows")
    if tables is MISSING:
        tables = []
    if not isinstance(tables, list) or not all(isinstance(f, dict) for f in tables):
        raise SpecError("flows", show_value(tables), "an array of tables [[flows]]")
    flows: list[dict[str, Any]] = []
    flow_table: list[int] = []
    for fi, f in enumerate(tables):
        t = _Table(f, f"flows[{fi}]", SECTIONS["flows"], "a table [[flows]]")
        direction = t.choice("direction", "down", DIRECTIONS)
        if direction == "cross":
            # Cross traffic on the wired path: consumed at the AP, no station involved.
            if t.has("stations"):
                raise t.fail("stations", 'not used with direction = "cross"')
            sel = [0]
        else:
            sel = _stations_selector(t, n_sta)
        pattern = t.choice("pattern", "cbr", PATTERNS)
        if direction == "cross" and pattern not in ("cbr", "poisson"):
            raise t.fail("pattern", '"cbr" or "poisson" for direction = "cross"')
        if t.has("interval") and pattern != "ping":
            raise t.fail("interval", 'only for pattern = "ping"')
        if pattern == "quic" and direction != "down":
            raise t.fail("direction", '"down" for pattern = "quic" (a download from the server)')
        if pattern == "aggctl" and direction != "down":
            raise t.fail("direction", '"down" for pattern = "aggctl" (a paced download from the '
                         'server)')
        if pattern in ("saturated", "tcp", "ping", "quic", "aggctl"):
            if t.has("rate"):
                raise t.fail("rate", 'only for pattern = "cbr" or "poisson"' + (
                    ' (a ping sets its interval)' if pattern == "ping" else ""))
            rate = 0  # not used by saturated/TCP flows; the normalized spec keeps every key
        else:
            rate = t.rate("rate", MISSING)
        tcp_keys = ("cc", "bytes", "pacing", "hystart", "extra_acked", "app", "request_bytes",
                    "response_bytes", "think_time", "requests")
        both = ("bytes", "pacing")
        if pattern != "tcp":
            for k in tcp_keys:
                if t.has(k) and not (pattern == "quic" and k in both):
                    raise t.fail(k, 'only for pattern = "tcp"' + (' or "quic"' if k in both else ""))
        quic_keys = ("profile", "ack_policy", "zero_rtt", "initial_cwnd", "page", "connections", "idle",
                     "idle_timeout", "reconnect", "history", "history_guard")
        if pattern != "quic":
            for k in quic_keys:
                if t.has(k):
                    raise t.fail(k, 'only for pattern = "quic"')
        quic = pattern == "quic"
        profile = t.choice("profile", "quic", QUIC_PROFILES) if quic else "quic"
        ack_policy = t.choice("ack_policy", None, ACK_POLICIES) if quic else None
        zero_rtt = t.get_bool("zero_rtt", False) if quic else False
        initial_cwnd = t.get_int("initial_cwnd", 10, 1, 10_000) if quic else 10
        page = t.choice("page", None, tuple(TABLE_II)) if quic else None
        if page is not None and t.has("bytes"):
            raise t.fail("bytes", "not with page (the page sets the object sizes)")
        objects = page_objects(page) if page is not None else []
        cc = t.choice("cc", "cubic", CONGESTION_CONTROLS) if pattern == "tcp" else "cubic"
        nbytes = t.get_int("bytes", 0, 0) if pattern in ("tcp", "quic") else 0
        # Connection lifecycles and the history-based initial window (world_quic.rs).
        connections = t.get_int("connections", 1, 1, 10_000) if quic else 1
        if connections > 1 and nbytes == 0 and not objects:
            raise t.fail("connections", "1 for an endless download (bytes = 0); later connections need a "
                                        "finite transfer (bytes or page)")
        idle = t.duration("idle", 0) if quic else 0
        idle_timeout = t.duration("idle_timeout", 30_000_000_000, positive=True) if quic else 30_000_000_000
        reconnect = t.choice("reconnect", "1rtt", RECONNECTS) if quic else "1rtt"
        history = t.choice("history", "none", HISTORIES) if quic else "none"
        history_guard = t.choice("history_guard", "none", HISTORY_GUARDS) if quic else "none"
        if history_guard != "none" and history == "none":
            raise t.fail("history_guard", '"none" unless history is "mean" or "ewma"')
        pacing = t.get_bool("pacing", None) if pattern in ("tcp", "quic") else None
        hystart = t.get_bool("hystart", True) if pattern == "tcp" else True
        extra_acked = t.get_bool("extra_acked", True) if pattern == "tcp" else True
        app = t.choice("app", "bulk", ("bulk", "request_response")) if pattern == "tcp" else "bulk"
        rr_keys = ("request_bytes", "response_bytes", "think_time", "requests")
        if app != "request_response":
            for k in rr_keys:
                if t.has(k):
                    raise t.fail(k, 'only with app = "request_response"')
        elif t.has("bytes"):
            raise t.fail("bytes", 'only with app = "bulk" (request/response sizes are request_bytes and response_bytes)')
        request_bytes = t.get_int("request_bytes", 300, 1) if app == "request_response" else 0
        response_bytes = t.get_int("response_bytes", MISSING, 1) if app == "request_response" else 0
        think = t.duration("think_time", 0) if app == "request_response" else 0
        requests = t.get_int("requests", 0, 0) if app == "request_response" else 0
        if pattern == "tcp" and cc != "cubic" and t.has("hystart"):
            raise t.fail("hystart", 'only with cc = "cubic"')
        if pattern == "tcp" and cc != "bbr" and t.has("extra_acked"):
            raise t.fail("extra_acked", 'only with cc = "bbr"')
        size = t.get_int("packet_size", {"ping": 84, "quic": 1378}.get(pattern, 1500),
                         {"tcp": 120, "quic": 1228}.get(pattern, 20), 2304)
        if pattern == "ping":
            # Echo requests every `interval` (a CBR schedule at size / interval).
            interval = t.duration("interval", 100_000_000, positive=True)
            rate = max(1, round(size * 8 * 1_000_000_000 / interval))
        # Split proxy and Virtual Wires keys (world_vwire.rs).
        tcp_down = pattern == "tcp" and direction == "down"
        split = t.get_bool("split", False)
        if split and not tcp_down:
            raise t.fail("split", 'only for pattern = "tcp" with direction = "down"')
        if split and app != "bulk":
            raise t.fail("split", 'only with app = "bulk"')
        for k in ("split_wired_cc", "app_class", "utility"):
            if t.has(k) and not split:
                raise t.fail(k, "only with split = true")
        split_wired_cc = t.choice("split_wired_cc", "bbr", CONGESTION_CONTROLS) if split else "bbr"
        app_class = t.choice("app_class", None, APP_CLASSES) if split else None
        utility = t._get("utility", None, parse_utility, UTILITY_TEXT) if split else None
        if t.has("app_rate") and not (pattern == "tcp" and app == "bulk"):
            raise t.fail("app_rate", 'only for pattern = "tcp" with app = "bulk"')
        if t.has("app_rate") and t.has("bytes"):
            raise t.fail("app_rate", "not with bytes (a paced application writes until the flow stops)")
        app_rate = t.rate("app_rate", 0) if t.has("app_rate") else 0
        # WMM access category of the flow's packets (both directions); default
        # mac.access_category. Only in the normalized spec when given.
        if direction == "cross" and t.has("ac"):
            raise t.fail("ac", 'not used with direction = "cross" (cross traffic never enters the cell)')
        flow_ac = t.choice("ac", None, ACCESS_CATEGORIES)
        start = t.duration("start", 0)
        stop = t.duration("stop", duration)
        if stop > duration:
            raise t.fail("stop", "must be <= sim.duration")
        if start >= stop:
            raise t.fail("start", f"must be < stop ({_ms(stop)})")
        for s in sel:
            flows.append({"station": s, "direction": direction, "pattern": pattern,
                          "rate_bps": rate, "packet_size": size, "start_ns": start,
                          "stop_ns": stop, "cc": cc, "bytes": nbytes, "pacing": pacing,
                          "hystart": hystart, "extra_acked": extra_acked, "app": app,
                          "request_bytes": request_bytes, "response_bytes": response_bytes,
                          "think_time_ns": think, "requests": requests, "profile": profile,
                          "ack_policy": ack_policy, "zero_rtt": zero_rtt,
                          "initial_cwnd": initial_cwnd, "objects": objects,
                          "connections": connections, "idle_ns": idle, "idle_timeout_ns": idle_timeout,
                          "reconnect": reconnect, "history": history, "history_guard": history_guard})
            if pattern == "tcp":
                flows[-1].update({"split": split, "split_wired_cc": split_wired_cc,
                                  "app_rate_bps": app_rate, "app_class": app_class,
                                  "utility": utility})
            if flow_ac is not None:
                flows[-1]["ac"] = flow_ac
            flow_table.append(fi)

    aggctl = _aggctl_section(top, flows, flow_table, max_mpdus if aggregation else 1)

    # [vwire]: only in the normalized spec when given (defaults in docs/spec.md).
    vwire = None
    if top.has("vwire"):
        vw = _Table(top.raw("vwire"), "vwire", SECTIONS["vwire"], "a table [vwire]")
        relay = vw.get_int("relay_buffer", 4 << 20, 65536, 1 << 34)
        vwire = {"enabled": vw.get_bool("enabled", True),
                 "period_ns": vw.duration("period", 2_000_000_000, positive=True),
                 "efficiency": vw.get_float("efficiency", 0.75, 0.0, 1.0, closed=True),
                 "relay_buffer_bytes": relay,
                 "sndbuf_bytes": vw.get_int("sndbuf", min(256 << 10, relay), 4096, relay,
                                            f"bytes in 4096..={relay} (relay_buffer)"),
                 "tsq_bytes": vw.get_int("tsq", 1 << 20, 3000, 1 << 30),
                 "sample_ns": vw.duration("sample", 10_000_000, positive=True),
                 "work_conserving": vw.get_bool("work_conserving", True)}
        if vwire["efficiency"] <= 0:
            raise vw.fail("efficiency", "0 < efficiency <= 1")

    # [emu]: how `lasthop emu` lays the cell out; only in the normalized spec when given.
    emu = None
    if top.has("emu"):
        et = _Table(top.raw("emu"), "emu", SECTIONS["emu"], "a table [emu]")
        emu = {"ap_host": et.get_bool("ap_host", False)}

    normalized = {
        "name": name,
        "description": description,
        "sim": {"duration_ns": duration, "warmup_ns": warmup, "seed": seed, "bin_ns": bin_ns},
        "phy": {"standard": standard, "band": band, "channel_width": width,
                "guard_interval": gi, "control_rate_bps": control_rate},
        "mac": {"aggregation": aggregation, "max_ampdu_mpdus": max_mpdus,
                "max_ampdu_bytes": max_bytes, "max_ppdu_time_ns": max_ppdu,
                "retry_limit": retry_limit, "beacon_interval_ns": beacon,
                "access_category": ac, "cw_min": cw_min, "cw_max": cw_max, "aifsn": aifsn,
                "eifs_after_collision": eifs_after_collision,
                "aggregation_min_rate_bps": agg_min_rate, "max_amsdu_bytes": max_amsdu,
                "rx_delivery": rx_delivery},
        "ap": {"queue_limit": ap_queue, "scheduler": scheduler, "qdisc": qdisc,
               "driver": driver, "hw_queue_limit": hw_queue_limit, "aql": aql,
               "aql_limit_low_ns": aql_low, "aql_limit_high_ns": aql_high,
               "aql_threshold_ns": aql_threshold, "buffer_sizer": buffer_sizer,
               "wqm_limit_ns": wqm_limit, "wqm_interval_ns": wqm_interval,
               "wqm_variant": wqm_variant},
        "wired": {"rate_bps": wired_rate, "delay_ns": wired_delay, "queue_limit": wired_queue,
                  "loss": wired_loss, "loss_up": wired_loss_up, "qdisc": wired_qdisc},
        "channel": {"path_loss": path_loss, "exponent": exponent, "tx_power_dbm": tx_power,
                    "noise_figure_db": noise_figure},
        "stations": stations,
        "flows": flows,
        "aggctl": aggctl,
    }
    if vwire is not None:
        normalized["vwire"] = vwire
    if emu is not None:
        normalized["emu"] = emu
    return Spec(normalized, station_group, flow_table)


def _nss_change(t: _Table, nss: int, rc: str, mcs: int, width: int, standard: str,
                duration: int) -> list[int] | None:
    """`nss_change = [time, n]`: from `time` on the station uses at most `n` streams."""
    v = t.raw("nss_change")
    if v is MISSING:
        return None
    allowed = f'[time, streams] with streams in 1..={nss} (at most nss), e.g. ["20s", 1]'
    if not isinstance(v, list) or len(v) != 2 or isinstance(v[1], bool) \
            or not isinstance(v[1], int) or not 1 <= v[1] <= nss:
        raise t.fail("nss_change", allowed)
    try:
        at = parse_duration(v[0])
    except UnitError:
        raise t.fail("nss_change", allowed) from None
    if at > duration:
        raise t.fail("nss_change", "a time <= sim.duration")
    if rc == "fixed" and standard == "vht" and (width, mcs, v[1]) in VHT_INVALID:
        raise t.fail("nss_change", f"VHT MCS {mcs} does not exist at {width} MHz with nss = {v[1]}")
    return [at, v[1]]


def _aggctl_section(top: _Table, flows: list[dict[str, Any]], flow_table: list[int],
                    n_max: int) -> dict[str, Any]:
    """[aggctl]: the allocator shared by the `pattern = "aggctl"` flows and their receivers'
    estimators (docs/spec.md). Defaults: the paper's N_e 32, Δ 500 ms, K0 1 (Mb/s per packet)."""
    a = _Table(top.raw("aggctl") if top.has("aggctl") else {}, "aggctl", SECTIONS["aggctl"],
               "a table [aggctl]")
    seen: dict[int, int] = {}
    for i, f in enumerate(flows):
        if f["pattern"] != "aggctl":
            continue
        if f["station"] in seen:
            raise SpecError(f"flows[{flow_table[i]}].stations", str(f["station"]),
                            f"one aggctl flow per station (flows[{seen[f['station']]}] already "
                            "goes there)")
        seen[f["station"]] = flow_table[i]
        first = next(g for g in flows if g["pattern"] == "aggctl")
        if f["packet_size"] != first["packet_size"]:
            raise SpecError(f"flows[{flow_table[i]}].packet_size", str(f["packet_size"]),
                            f"the same for every aggctl flow ({first['packet_size']})")
    target = a.get_int("target_aggregation", 32, 1, n_max,
                       f"an integer in 1..={n_max} (N_max: mac.max_ampdu_mpdus, or 1 without "
                       "aggregation)")
    interval = a.duration("interval", 500_000_000, positive=True)
    k0 = a.get_float("k0", 1.0, 0.0, 1000.0, closed=True)
    if k0 == 0.0:
        raise a.fail("k0", "a number in (0, 1000] (Mb/s per packet of aggregation error)")
    min_rate = a.rate("min_rate", 1_000_000)
    max_rate = a.rate("max_rate", 10_000_000_000)
    initial = a.rate("initial_rate", max(min_rate, min(10_000_000, max_rate)))
    if min_rate > max_rate:
        raise a.fail("min_rate", "must be <= aggctl.max_rate")
    if not min_rate <= initial <= max_rate:
        raise a.fail("initial_rate", "must be within [aggctl.min_rate, aggctl.max_rate]")
    allocation = a.choice("allocation", "equal_airtime", ALLOCATIONS)
    hold = a.duration("hold_time", 2 * interval, positive=True)
    if hold < interval:
        raise a.fail("hold_time", "must be >= aggctl.interval")
    decay_after = a.duration("decay_after", max(4 * interval, hold), positive=True)
    if decay_after < hold:
        raise a.fail("decay_after", "must be >= aggctl.hold_time")
    decay_factor = a.get_float("decay_factor", 0.5, 0.0, 1.0)
    if decay_factor == 0.0:
        raise a.fail("decay_factor", "a number in (0, 1)")
    gap = a.duration("gap_threshold", 50_000, positive=True)
    resolution = a.duration("clock_resolution", 1_000, positive=True)
    jitter = a.duration("clock_jitter", 0)
    if resolution > 1_000_000_000:
        raise a.fail("clock_resolution", "at most 1s")
    if jitter > 1_000_000_000:
        raise a.fail("clock_jitter", "at most 1s")
    report_rate = a.get_bool("report_rate", True)
    report_loss = a.get_float("report_loss", 0.0, 0.0, 1.0)
    blackout = None
    if a.has("report_blackout"):
        v = a.raw("report_blackout")
        allowed = '[from, until]: two durations with from < until, e.g. ["25s", "30s"]'
        if not isinstance(v, list) or len(v) != 2:
            raise a.fail("report_blackout", allowed)
        try:
            blackout = [parse_duration(v[0]), parse_duration(v[1])]
        except UnitError:
            raise a.fail("report_blackout", allowed) from None
        if blackout[0] >= blackout[1]:
            raise a.fail("report_blackout", allowed)
    return {"target_aggregation": target, "interval_ns": interval, "k0": k0,
            "initial_rate_bps": initial, "min_rate_bps": min_rate, "max_rate_bps": max_rate,
            "allocation": allocation, "hold_time_ns": hold, "decay_after_ns": decay_after,
            "decay_factor": decay_factor, "gap_threshold_ns": gap,
            "clock_resolution_ns": resolution, "clock_jitter_ns": jitter,
            "report_rate": report_rate, "report_loss": report_loss,
            "report_blackout_ns": blackout}


def _station_placement(t: _Table) -> tuple[list[tuple[int, float]], bool, bool]:
    """A station's distance schedule from one of `distance_m` (fixed), `walk_m` + `speed_mps`
    (back and forth, forever) or `waypoints` (+ `repeat`): ([(ns, metres)], repeat, placed)."""
    given = [k for k in ("distance_m", "walk_m", "waypoints") if t.has(k)]
    if len(given) > 1:
        raise t.fail(given[1], f"only one of distance_m, walk_m, waypoints (also got {given[0]})")
    if t.has("speed_mps") and not t.has("walk_m"):
        raise t.fail("speed_mps", "only with walk_m")
    if t.has("repeat") and not t.has("waypoints"):
        raise t.fail("repeat", "only with waypoints")
    dist_text = f"a distance in metres, 0 < d <= {MAX_DISTANCE_M:g}"

    def metres(v: Any, key: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or not 0 < v <= MAX_DISTANCE_M:
            raise t.fail(key, dist_text)
        return float(v)

    if t.has("distance_m"):
        return [(0, metres(t.raw("distance_m"), "distance_m"))], False, True
    if t.has("walk_m"):
        v = t.raw("walk_m")
        allowed = "[near, far]: two distinct distances in metres, e.g. [1, 23]"
        if not isinstance(v, list) or len(v) != 2:
            raise t.fail("walk_m", allowed)
        d1, d2 = metres(v[0], "walk_m"), metres(v[1], "walk_m")
        if d1 == d2:
            raise t.fail("walk_m", allowed)
        speed = t.get_float("speed_mps", 1.0, 0.01, 100.0, closed=True)
        leg = round(abs(d2 - d1) / speed * 1e9)
        return [(0, d1), (leg, d2), (2 * leg, d1)], True, True
    if t.has("waypoints"):
        v = t.raw("waypoints")
        allowed = ('a list of [time, metres] pairs in time order, e.g. '
                   '[["0s", 1.0], ["10s", 23.0]]')
        if not isinstance(v, list) or not v:
            raise t.fail("waypoints", allowed)
        out: list[tuple[int, float]] = []
        for w in v:
            if not isinstance(w, list) or len(w) != 2:
                raise t.fail("waypoints", allowed)
            try:
                ns = parse_duration(w[0])
            except UnitError:
                raise t.fail("waypoints", allowed) from None
            if out and ns < out[-1][0]:
                raise t.fail("waypoints", allowed)
            out.append((ns, metres(w[1], "waypoints")))
        repeat = t.get_bool("repeat", False)
        if repeat and out[-1][0] == out[0][0]:
            raise t.fail("repeat", "a repeating schedule needs its last time after its first")
        return out, repeat, True
    return [], False, False


def _stations_selector(t: _Table, n_sta: int) -> list[int]:
    allowed = f'"all", a station index in 0..={n_sta - 1}, or a list of distinct indices'
    v = t.raw("stations")
    if v is MISSING or v == "all":
        return list(range(n_sta))
    if isinstance(v, bool):
        raise t.fail("stations", allowed)
    if isinstance(v, int):
        v_list = [v]
    elif isinstance(v, list) and v:
        v_list = v
    else:
        raise t.fail("stations", allowed)
    for x in v_list:
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < n_sta:
            raise t.fail("stations", allowed)
    if len(set(v_list)) != len(v_list):
        raise t.fail("stations", allowed)
    return list(v_list)


def _ms(ns: int) -> str:
    from .units import format_duration

    return format_duration(ns)


# --- entry points -----------------------------------------------------------------------------


def parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecFileError(f"{source}: invalid TOML: {e}") from None
    except RecursionError:
        raise SpecFileError(f"{source}: arrays or tables nested too deeply to read "
                            f"(a spec needs at most a few levels)") from None


def load_spec_text(text: str, source: str = "<string>", default_name: str = "scenario",
                   native: bool = True) -> Spec:
    spec = normalize(parse_toml(text, source), default_name)
    spec.source = source
    if native:
        check_native(spec)
    return spec


def read_spec_file(path: str | Path) -> tuple[str, str]:
    """The text of the spec file at `path` and the run name its file name suggests
    (raises SpecFileError with one clear line)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SpecFileError(f"{path}: is a directory, not a spec file") from None
    except UnicodeDecodeError as e:
        raise SpecFileError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise SpecFileError(f"{path}: cannot read: {e.strerror}") from None
    return text, re.sub(r"[^A-Za-z0-9._-]", "_", p.stem).lstrip("._-") or "scenario"


def load_spec(path: str | Path, native: bool = True) -> Spec:
    """Read, validate and normalize the spec file at `path` (raises SpecError/SpecFileError)."""
    text, default_name = read_spec_file(path)
    return load_spec_text(text, str(path), default_name, native)


def check_native(spec: Spec) -> None:
    """Ask the simulator for its 802.11 rules; raise the first problem as a SpecError."""
    from . import _native

    text = spec.to_json()
    problems = _native.validate(text)
    if not problems:
        spec.checked_json = text
    if problems:
        path, value, allowed = problems[0]
        if path == "spec":
            # An integer our checks let through that the simulator's type cannot hold is the
            # user's value; anything else the simulator cannot read is our bug.
            m = re.search(r"invalid (?:value: integer|type: floating point) `([^`]*)`, expected ([ui])(8|16|32|64) "
                          r"at line 1 column (\d+)", allowed)
            where = _json_path_at(text, int(m.group(4)) - 1) if m else None
            if m is None or where is None:
                raise RuntimeError(f"normalized spec rejected by the simulator: {allowed}")
            bits = int(m.group(3))
            lo, hi = (0, 2**bits - 1) if m.group(2) == "u" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
            key = _toml_key(spec.map_path(where))
            raise SpecError(key, str(_value_at(spec.normalized, where, m.group(1))), f"an integer in {lo}..={hi}")
        raise SpecError(spec.map_path(path), value or "(default)", allowed)


def _value_at(doc: Any, path: str, fallback: str) -> Any:
    """The value at key path `path` (`a.b[2].c`) of `doc`, or `fallback`."""
    try:
        for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
            doc = doc[int(part[1:-1])] if part.startswith("[") else doc[part]
        return doc
    except (KeyError, IndexError, TypeError, ValueError):
        return fallback


def _toml_key(path: str) -> str:
    """A normalized key path in the words of the TOML file: `ap.wqm_limit_ns` -> `ap.wqm_limit`
    (unit suffixes the normalized spec adds), keeping keys that are spelled that way."""
    m = re.match(r"^(.*?)([A-Za-z0-9_]+)$", path)
    if not m:
        return path
    head, key = m.groups()
    section = re.sub(r"\[\d+\]", "", head.rstrip(".")).split(".")[-1] if head else ""
    allowed = SECTIONS.get(section, ())
    if key in allowed:
        return path
    for suffix in ("_ns", "_bps", "_bytes"):
        if key.endswith(suffix) and key[: -len(suffix)] in allowed:
            return head + key[: -len(suffix)]
    return path


def _json_path_at(text: str, offset: int) -> str | None:
    """The key path (`ap.queue_limit`, `stations[0].mcs`) of the scalar in the compact JSON
    `text` that ends at or just before character `offset` (where serde reports an error)."""
    best: tuple[int, str] | None = None
    dec = json.JSONDecoder()

    def value(i: int, path: str) -> int:
        nonlocal best
        c = text[i]
        if c == "{":
            i += 1
            if text[i] == "}":
                return i + 1
            while True:
                key, i = json.decoder.scanstring(text, i + 1)
                i = value(i + 1, f"{path}.{key}" if path else key)  # skip ':'
                if text[i] == "}":
                    return i + 1
                i += 1  # ','
        if c == "[":
            i += 1
            if text[i] == "]":
                return i + 1
            k = 0
            while True:
                i = value(i, f"{path}[{k}]")
                k += 1
                if text[i] == "]":
                    return i + 1
                i += 1
        _, end = dec.raw_decode(text, i)
        if end <= offset + 1 and (best is None or end > best[0]):
            best = (end, path)
        return end

    try:
        value(0, "")
    except (ValueError, IndexError, RecursionError):
        return None
    return best[1] if best else None
