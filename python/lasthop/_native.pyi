"""Typed view of the private native module `lasthop._native` (crates/lasthop-py).

Only the `lasthop` package calls it. All specs are normalized spec JSON (docs/spec.md).
"""

from typing import Callable, Optional

def run(spec_json: str, seed: int, progress: Optional[Callable[[float], object]] = None) -> str:
    """Run one simulation; return the `data` JSON of docs/results.md, in its canonical text
    (what `lasthop.results` stores: sorted keys, compact, ASCII, floats as `repr`).

    `progress` is called with the fraction of simulated time done (0.0..=1.0), at most ~200
    times, with the GIL held. If it raises, it is not called again and the exception is raised
    when the run ends. Simulator errors raise RuntimeError.
    """

def station_rates(spec_json: str) -> list[int]:
    """Each station's PHY data rate (bit/s) at its MCS and streams, from a normalized spec (JSON);
    ValueError when it does not parse."""

def run_capture(spec_json: str, seed: int, pcap: str,
                progress: Optional[Callable[[float], object]] = None, limit: int = 100_000,
                records: bool = False) -> tuple[str, bytes, Optional[str]]:
    """Run one simulation like `run` and capture the frames of node `pcap` ("ap" or a station
    index as a string): every PPDU it sends or is the addressed receiver of.

    Returns (data JSON — identical to `run`'s, the pcap file with at most `limit` records, the
    per-PPDU frame records as JSON if `records` else None). A malformed node raises ValueError,
    a node out of range or a simulator error RuntimeError.
    """

def validate(spec_json: str) -> list[tuple[str, str, str]]:
    """The 802.11 rule violations of a normalized spec as (key path, value, allowed).

    Paths use normalized station/flow indices (e.g. `stations[3].mcs`); empty if valid.
    """

def canonical_json(obj: object) -> str:
    """The canonical text of a document (None, bool, int, float, str, list, dict with str
    keys), byte for byte what `json.dumps(obj, sort_keys=True, separators=(",", ":"),
    ensure_ascii=True, allow_nan=False)` writes: the writer of the simulator's results.
    Anything else raises ValueError."""

def sha256_hex(parts: list[str]) -> str:
    """SHA-256 of the concatenated UTF-8 bytes of `parts`, lowercase hex."""

def normalize(doc: dict[str, object], default_name: str = "scenario", rules: bool = False) -> tuple[
        Optional[tuple[str, list[int], list[int], tuple[str, int, int]]], list[tuple[str, str, str]]]:
    """Validate and normalize a spec document (as `tomllib` returns it, after overrides):
    ((canonical normalized JSON, station_group, flow_table, (name, seed, duration_ns)), []), or (None, [(key path, value,
    what is allowed), ...]) listing every problem, the first as the validator meets it
    (crates/lasthop-sim/src/spec_in); with `rules`, a document that reads is then held to the
    simulator's rules across keys, their paths with the TOML tables' indices (a normalized spec
    the simulator cannot read: the one problem at path "spec")."""

def normalize_text(text: str, default_name: str = "scenario", rules: bool = False) -> Optional[tuple[
        Optional[tuple[str, list[int], list[int], tuple[str, int, int]]], list[tuple[str, str, str]]]]:
    """`normalize` of a spec's TOML text read by the simulator's TOML reader (the standalone
    tools'), or None when that reader refuses the text."""

def spec_reads(doc: dict[str, object]) -> list[tuple[str, Optional[str], Optional[str], str]]:
    """Every key read `normalize` makes on `doc`: (key path, default as JSON or None when
    required, JSON Schema fragment as JSON or None, what is allowed)."""

def spec_sections() -> list[tuple[str, list[str]]]:
    """The keys each spec table allows (section "" is the top level)."""

def spec_standards() -> list[tuple[str, list[str]]]:
    """The standards and the bands each allows."""

def spec_names() -> list[tuple[str, list[str]]]:
    """The spec's value lists by key (e.g. "ap.qdisc"), each from its one name table."""

def spec_pages() -> list[tuple[str, tuple[int, int, int, int, int, int], list[int]]]:
    """The web pages of the QUIC page loads: (name, (html, css, js, image, other, total kB),
    object sizes in bytes, HTML first)."""

def show_value(v: object) -> str:
    """A value as spec errors show it (TOML-like, clipped to one short line)."""

def unknown_key(key: str, allowed: list[str]) -> str:
    """What a spec error says of an unknown key."""

def parse_duration(v: object) -> int:
    """A duration string in integer ns; ValueError says what is allowed."""

def parse_rate(v: object) -> int:
    """A rate string in integer bit/s; ValueError says what is allowed."""

def format_duration(ns: int) -> str:
    """Nanoseconds as the shortest exact duration string."""

def format_rate(bps: int) -> str:
    """Bit/s as the shortest exact rate string."""

def version() -> str:
    """Crate version + '+' + short git hash ('-dirty' if the tree had changes, or 'unknown')."""

def build_kind() -> str:
    """'profile-guided' (built again from the training specs' counts, `make build`) or 'release'."""

EMU_IO_MODES: list[str]
"""`lasthop emu --io`'s choices, the default first."""

def emu_program_cpus() -> Optional[list[int]]:
    """The CPUs programs in the emulator's namespaces run on: all but the model thread's (None
    on one CPU)."""

def emu_up(spec_json: str, name: str, seed: int, stats_every_s: float,
           pcap: Optional[str] = None, duration_s: Optional[float] = None,
           command: Optional[list[str]] = None, node: Optional[str] = None,
           spin_ns: Optional[float] = None, realtime: Optional[int] = None,
           io: Optional[str] = None, place_programs: bool = True) -> tuple[str, str, Optional[int]]:
    """`lasthop emu up|run` (docs/emu.md): build the namespace topology of a normalized spec,
    run the cell in real time until SIGINT/SIGTERM, the end of `command` (run inside `node`'s
    namespace if given) or `duration_s`, then tear everything down.

    Returns (data JSON of a result file, the emulator's figures as JSON, the command's exit
    code or None). ValueError: found before anything was built (spec, name, not root, already
    up); RuntimeError: a failure while running (the topology is removed either way).
    """

def emu_down(name: str) -> str:
    """Stop emulator `name` and remove its namespaces (also after a crash); a one-line summary."""

def emu_netns(name: str, node: str) -> str:
    """The network namespace of `node` in the running emulator `name` (ValueError if none)."""


def live_main(argv: list[str]) -> int:
    """Run a live tool (`argv[0]`: "wqm", ...) with its arguments, exactly as the standalone
    `lasthop-live` binary does; returns its exit code (0 ok, 1 failure, 2 bad usage)."""
