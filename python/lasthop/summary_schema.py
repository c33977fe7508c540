"""The schema of a sweep's summary table (summary.parquet, docs/experiments.md): the per-flow
columns read from one result document (`FLOW_COLUMNS`, `flow_rows`) and the typed columns of the
varied keys (`VariedType`). A low module: the sweep machinery (`lasthop.sweeps`) writes the
table with it and the analysis (`lasthop.analysis`) reads result files with it."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from .results import number
from .spec import show_value
from .units import UnitError, parse_duration, parse_rate

__all__ = ["FLOW_COLUMNS", "VariedType", "flow_rows", "summary_columns", "value_label", "value_number"]


def value_label(v: Any) -> str:
    """The text of a varied value for the summary's `<KEY>` column: strings as they are,
    everything else as a TOML literal (`8`, `true`, `0.1`, `[0, 1]`)."""
    if isinstance(v, str):
        return v
    return show_value(v)


def value_number(v: Any) -> float | None:
    """A varied value as a number: numbers as float, durations in ns, rates in bit/s, else
    None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, str):
        for parse in (parse_duration, parse_rate):
            try:
                return float(parse(v))
            except UnitError:
                pass
    return None


_INT64 = (-(1 << 63), (1 << 63) - 1)


def _all_int64(xs: Iterable[Any]) -> bool:
    return all(isinstance(x, int) and not isinstance(x, bool) and _INT64[0] <= x <= _INT64[1]
               for x in xs)


@dataclass(frozen=True)
class VariedType:
    """The type of a varied key's `<KEY>` column, from all the values it takes: `bool`,
    `int64`, `float64` (numbers, some not integral), `int64` with `unit` "ns" (durations such
    as "1.5ms") or "bit/s" (rates such as "40Mbps"), else `string` (the text of `<KEY>#text`).
    Missing values are null."""

    arrow: str                 # "bool" | "int64" | "float64" | "string"
    unit: str | None = None    # "ns" | "bit/s" for parsed unit strings

    @classmethod
    def of(cls, values: Iterable[Any]) -> "VariedType":
        present = [v for v in values if v is not None]
        if not present:
            return cls("string")
        if all(isinstance(v, bool) for v in present):
            return cls("bool")
        if _all_int64(present):
            return cls("int64")
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in present):
            return cls("float64")
        if all(isinstance(v, str) for v in present):
            for unit, parse in (("ns", parse_duration), ("bit/s", parse_rate)):
                try:
                    parsed = [parse(v) for v in present]
                except UnitError:
                    continue
                if _all_int64(parsed):
                    return cls("int64", unit)
        return cls("string")

    def value(self, v: Any, text: Callable[[Any], str] | None = None) -> Any:
        """`v` as this column holds it (None stays None)."""
        if v is None:
            return None
        if self.unit == "ns":
            return parse_duration(v)
        if self.unit == "bit/s":
            return parse_rate(v)
        if self.arrow == "float64":
            return float(v)
        if self.arrow == "string":
            return (text or value_label)(v)
        return v

    def pa_type(self) -> Any:
        import pyarrow as pa
        return {"bool": pa.bool_(), "int64": pa.int64(), "float64": pa.float64(),
                "string": pa.string()}[self.arrow]

    def field(self, name: str) -> Any:
        """The pyarrow field of the `<KEY>` column; a unit is kept in its metadata."""
        import pyarrow as pa
        meta = {b"unit": self.unit.encode()} if self.unit else None
        return pa.field(name, self.pa_type(), metadata=meta)


# --- summary.parquet ------------------------------------------------------------------------

# (name, arrow type) of the per-run-and-flow columns, after point/seed/run and the varied keys.
FLOW_COLUMNS: tuple[tuple[str, str], ...] = (
    ("flow", "int64"), ("station", "int64"), ("direction", "string"), ("pattern", "string"),
    ("offered_bps", "float64"), ("goodput_bps", "float64"),
    ("delay_mean_ms", "float64"), ("delay_p50_ms", "float64"), ("delay_p95_ms", "float64"),
    ("delay_p99_ms", "float64"), ("delay_max_ms", "float64"),
    ("loss", "float64"), ("mean_ampdu", "float64"), ("airtime_frac", "float64"),
    ("busy_frac", "float64"), ("collisions", "int64"),
    ("ac", "string"), ("cc", "string"),
    ("retransmits", "int64"), ("timeouts", "int64"), ("srtt_ms", "float64"), ("min_rtt_ms", "float64"),
    ("cwnd_bytes", "int64"), ("completion_ms", "float64"), ("handshake_ms", "float64"),
)


def summary_columns(keys: Sequence[str] | dict[str, VariedType]) -> list[tuple[str, str]]:
    """Column names and arrow types of summary.parquet for the varied `keys` (a mapping to
    their `VariedType`, or names only, typed `string`): each key's typed column, then its
    `<KEY>#text` twin."""
    types = keys if isinstance(keys, dict) else {k: VariedType("string") for k in keys}
    return ([("point", "int64"), ("seed", "int64"), ("run", "string")]
            + [(k, t.arrow) for k, t in types.items()]
            + [(f"{k}#text", "string") for k in types]
            + list(FLOW_COLUMNS))


_num = number


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _ms(v: Any) -> float | None:
    x = _num(v)
    return None if x is None else x / 1e6


def flow_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-flow columns of one result document (FLOW_COLUMNS), one dict per flow."""
    spec = doc.get("spec") or {}
    data = doc.get("data") or {}
    sim = spec.get("sim") or {}
    window = (sim.get("duration_ns") or 0) - (sim.get("warmup_ns") or 0)
    window_s = window / 1e9 if window > 0 else None
    channel = data.get("channel") or {}
    busy = _num(channel.get("busy_frac"))
    if busy is None and _num(channel.get("busy_ns")) is not None and window > 0:
        busy = channel["busy_ns"] / window
    collisions = _int(channel.get("collisions"))
    stations = {s.get("id"): s for s in data.get("stations") or []}
    spec_flows = spec.get("flows") or []
    default_ac = (spec.get("mac") or {}).get("access_category")
    rows = []
    for i, f in enumerate(data.get("flows") or []):
        d = f.get("delay_ns") or {}
        direction = f.get("direction")
        cross = direction == "cross"
        # Cross traffic runs on the wired path only: no station, no access category.
        sta = {} if cross else (stations.get(f.get("station")) or {})
        # A flow's index in the spec (its position, where the file gives no integer id).
        fid = f.get("id") if _int(f.get("id")) is not None else i
        sf = spec_flows[fid] if isinstance(fid, int) and 0 <= fid < len(spec_flows) else {}
        tcp, quic = f.get("tcp") or {}, f.get("quic") or {}
        transport = tcp or quic
        airtime = None
        if window_s is not None:
            tx, rx = _num(sta.get("airtime_tx_ns")), _num(sta.get("airtime_rx_ns"))
            if tx is not None or rx is not None:
                airtime = ((tx or 0.0) + (rx or 0.0)) / window
        offered = _num(f.get("offered_bytes"))
        delivered = (d.get("samples") or f.get("delivered_packets") or 0) > 0
        rows.append({
            "flow": fid,
            "station": None if cross else _int(f.get("station")),
            "direction": direction,
            "pattern": f.get("pattern"),
            "offered_bps": offered * 8 / window_s if offered is not None and window_s else None,
            "goodput_bps": _num(f.get("goodput_bps")),
            # A flow that delivered nothing has no delay: null, not 0 ms.
            "delay_mean_ms": _ms(d.get("mean")) if delivered else None,
            "delay_p50_ms": _ms(d.get("p50")) if delivered else None,
            "delay_p95_ms": _ms(d.get("p95")) if delivered else None,
            "delay_p99_ms": _ms(d.get("p99")) if delivered else None,
            "delay_max_ms": _ms(d.get("max")) if delivered else None,
            "loss": _num(f.get("loss")),
            "mean_ampdu": _num(sta.get(f"mean_ampdu_{direction}")),
            "airtime_frac": airtime,
            "busy_frac": busy,
            "collisions": collisions,
            "ac": None if cross else (sf.get("ac") or default_ac),
            "cc": tcp.get("cc") or (sf.get("cc") if f.get("pattern") == "tcp" else None),
            # Transport statistics at the end of the run (the last connection's for QUIC with
            # several): TCP retransmitted segments / QUIC packets declared lost, RTOs / PTOs.
            "retransmits": _int(tcp.get("retransmits")) if tcp else _int(quic.get("packets_lost")),
            "timeouts": _int(tcp.get("rto_count")) if tcp else _int(quic.get("pto_count")),
            "srtt_ms": _ms(transport.get("srtt_ns")),
            "min_rtt_ms": _ms(transport.get("min_rtt_ns")),
            "cwnd_bytes": _int(transport.get("cwnd_bytes")),
            # A finite transfer's completion (the first connection's), from the flow's start.
            "completion_ms": _ms(transport.get("completion_ns")),
            "handshake_ms": _ms(quic.get("handshake_ns")),
        })
    return rows
