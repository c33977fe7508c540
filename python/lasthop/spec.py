"""Scenario specs: TOML in, a validated and normalized spec out (docs/spec.md).

`load_spec(path)` hands the TOML text to the native validator (`crates/lasthop-sim/src/spec_in`,
`_native.normalize_text`, which reads it with the standalone tools' TOML reader; where that refuses
the text or the spec, `tomllib`, whose errors carry line and column, reads it again and
`_native.normalize` validates the document, so the messages are the same either way): it
checks structure, types, ranges and the cross-field rules that docs/spec.md states, fills
defaults, converts every quantity to integers in base units (ns, bit/s) and expands station
groups and flows (one normalized flow per station), and in the same call (`rules=True`) holds
what it wrote to the simulator's rules across keys (the 802.11 rules), with the station and
flow indices of the TOML tables. `check_native` asks the simulator (`_native.validate`) about a
spec normalized without them. The first problem found raises `SpecError(path, value, allowed)`;
nothing is simulated or written before a spec passes.

What stays here is Python's own: reading files, TOML, the `Spec` object the CLI, the sweep and
the API pass around. Each key's type, default and range is declared once, in Rust, beside the
code that reads it; the standalone tools read the same specs through the same code.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from . import _native

TYPE_CHECKING = False  # typing's own flag without importing typing (a run's start-up)
if TYPE_CHECKING:
    from typing import Any

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

# The keys each table allows (section "" is the top level), as the validator has them.
SECTIONS: dict[str, tuple[str, ...]] = {s: tuple(keys) for s, keys in _native.spec_sections()}

# The value lists by key ("ap.qdisc": ("fifo", ...)), each from its one name table in Rust.
NAMES: dict[str, tuple[str, ...]] = {k: tuple(names) for k, names in _native.spec_names()}


class SpecError(Exception):
    """One problem in a spec: the TOML key path, the offending value, what is allowed.
    `others`: the further problems of the same document, if the validator listed them."""

    def __init__(self, path: str, value: str, allowed: str) -> None:
        super().__init__(path, value, allowed)
        self.path = path
        self.value = value
        self.allowed = allowed
        self.others: list[SpecError] = []

    @classmethod
    def listing(cls, problems: list[tuple[str, str, str]]) -> SpecError:
        """The first of `problems`, carrying the rest in `others`."""
        first = cls(*problems[0])
        first.others = [cls(*p) for p in problems[1:]]
        return first

    def all(self) -> list[SpecError]:
        """This problem and the others, in the order they were found."""
        return [self, *self.others]

    def __str__(self) -> str:
        return f"{self.path} = {self.value}: {self.allowed}"


class SpecFileError(Exception):
    """The spec file cannot be read or is not valid TOML (message includes line and column)."""


def show_value(v: Any) -> str:
    """Render a TOML value for an error message, in TOML-like syntax, clipped to one line."""
    if v is MISSING:
        return "(missing)"
    return _native.show_value(v)


def _unknown_key(key: str, allowed: tuple[str, ...]) -> str:
    """What an error says of an unknown key: the closest allowed one, or all of them."""
    return _native.unknown_key(key, list(allowed))


# --- the normalized spec ----------------------------------------------------------------------


class Spec:
    """A validated, normalized spec and how its lists map back to the TOML tables.

    `normalized` (a dict, decoded from the validator's canonical JSON when first read: treat it
    as read-only, and to change a spec change its document and normalize again);
    `station_group` (normalized station -> its [[stations]] table) and `flow_table`
    (normalized flow -> its [[flows]] table); `source`. `to_json()` is the canonical JSON the
    validator wrote (a large cell's spec is megabytes: it is written once, and handed to the
    simulator as it is); `checked_json` is that text once the simulator's rules passed it. Equality
    ignores `checked_json`. (A plain class, not a dataclass, so that `lasthop run` does not
    import `dataclasses` and `inspect`.)"""

    __slots__ = ("_normalized", "_text", "_head", "station_group", "flow_table", "source",
                 "checked_json")

    def __init__(self, normalized: dict[str, Any] | None = None, station_group: list[int] | None = None,
                 flow_table: list[int] | None = None, source: str = "",
                 checked_json: str | None = None, text: str | None = None,
                 head: tuple[str, int, int] | None = None) -> None:
        if normalized is None and (text is None or head is None):
            raise ValueError("a Spec needs its normalized dict, or its JSON text and head")
        self._normalized = normalized
        self._text = text
        # (name, seed, duration_ns) without decoding the text.
        self._head = head
        self.station_group = [] if station_group is None else station_group
        self.flow_table = [] if flow_table is None else flow_table
        self.source = source
        self.checked_json = checked_json

    @property
    def normalized(self) -> dict[str, Any]:
        if self._normalized is None:
            self._normalized = json.loads(self._text)  # type: ignore[arg-type]
        return self._normalized

    @normalized.setter
    def normalized(self, value: dict[str, Any]) -> None:
        self._normalized, self._text, self._head = value, None, None

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
        return self._head[0] if self._head else self.normalized["name"]

    @property
    def seed(self) -> int:
        return self._head[1] if self._head else self.normalized["sim"]["seed"]

    @property
    def duration_ns(self) -> int:
        return self._head[2] if self._head else self.normalized["sim"]["duration_ns"]

    def to_json(self) -> str:
        """Canonical JSON handed to the native module (sorted keys, no whitespace, ASCII)."""
        if self._text is None:
            self._text = json.dumps(self._normalized, sort_keys=True, separators=(",", ":"))
        return self._text

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


def normalize(doc: dict[str, Any], default_name: str = "scenario", rules: bool = False) -> Spec:
    """Validate a parsed TOML document and return the normalized spec; with `rules`, the
    simulator's rules across keys too, in the same native call (without: see `check_native`)."""
    ok, errors = _native.normalize(doc, default_name, rules)
    if ok is None:
        raise SpecError.listing(errors)
    return _spec(ok, rules)


def _spec(ok: tuple, rules: bool) -> Spec:
    text, station_group, flow_table, head = ok
    return Spec(None, station_group, flow_table, text=text, head=head, checked_json=text if rules else None)


# --- entry points -----------------------------------------------------------------------------


def toml_reader() -> Any:
    """Python's TOML reader: `tomllib` (`tomli` on Python 3.10), imported on first use — a run
    has the simulator read its spec and does not load it."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    return tomllib


def parse_toml(text: str, source: str) -> dict[str, Any]:
    tomllib = toml_reader()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecFileError(f"{source}: invalid TOML: {e}") from None
    except RecursionError:
        raise SpecFileError(f"{source}: arrays or tables nested too deeply to read "
                            f"(a spec needs at most a few levels)") from None


def load_spec_text(text: str, source: str = "<string>", default_name: str = "scenario",
                   native: bool = True) -> Spec:
    # The simulator reads the TOML itself (no tomllib to load); where it refuses the text or the
    # spec, Python's reader reads it again, so that every message is the one tomllib and the
    # document's validation give.
    out = _native.normalize_text(text, default_name, native)
    if out is not None and out[0] is not None:
        spec = _spec(out[0], native)
    else:
        spec = normalize(parse_toml(text, source), default_name, rules=native)
    spec.source = source
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
    """Ask the simulator for its rules (a spec normalized without them, or built elsewhere:
    each key's range too); raise the first problem as a SpecError."""
    from . import _native  # looked up at the call (tests stand a fake in its place)

    text = spec.to_json()
    problems = _native.validate(text)
    if not problems:
        spec.checked_json = text
        return
    path, value, allowed = problems[0]
    if path == "spec":
        # `normalize` hands over only what the simulator's types hold: anything it cannot read
        # is our bug.
        raise RuntimeError(f"normalized spec rejected by the simulator: {allowed}")
    # One line per problem: a rule broken by a station group or a flow table is reported once,
    # not once per station or flow it expands to.
    listed: list[tuple[str, str, str]] = []
    for path, value, allowed in problems:
        p = (spec.map_path(path), value or "(default)", allowed)
        if p not in listed:
            listed.append(p)
    raise SpecError.listing(listed)
