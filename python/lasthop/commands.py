"""The simulator's own commands: `lasthop run`, `validate`, `bench` and `version`, and the
pieces other commands share (running the native simulator so that a signal stops it at once,
checking an output directory before simulating). `cli.py` parses the arguments and calls these.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
TYPE_CHECKING = False  # typing's flag, without importing typing (a run's start-up)
if TYPE_CHECKING:
    from typing import Any

from .errors import EXIT_INTERNAL, EXIT_OK, PROG, UserError
from .native import code_version
from .native import native as load_native
from .spec import load_spec


def out_dir_arg(value: str) -> Path:
    """`-o DIR` as a path; an empty one is refused (it would silently mean ".")."""
    if not str(value).strip():
        raise UserError("-o: the output directory is empty: name a directory (\".\" for this one)")
    return Path(value)


def check_out_dir(out: Path) -> None:
    """Fail (as a user error) before simulating if results could not be written to `out`."""
    from .results import unwritable_dir

    problem = unwritable_dir(out)
    if problem:
        raise UserError(problem)


def interruptible(fn: Any, what: str) -> Any:
    """Call `fn()` (native code that writes nothing) so that SIGINT or SIGTERM ends the process
    at once with one line saying what was interrupted and that nothing was written. The call
    runs in a worker thread so that the main thread, waiting in Python, handles the signal at
    once whatever the native code is doing."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return fn()

    def stop(signum: int, _frame: Any) -> None:
        name = signal.Signals(signum).name
        try:
            sys.stderr.write(f"\n{PROG}: {name} while {what}: stopped, nothing was written\n")
            sys.stderr.flush()
        finally:
            os._exit(128 + signum)

    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the caller below
            box["error"] = e

    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        t = threading.Thread(target=work, name="lasthop-native", daemon=True)
        t.start()
        while t.is_alive():
            t.join(0.2)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if "error" in box:
        raise box["error"]
    return box["value"]


def simulate_text(spec_json: str, seed: int, progress: Any = None) -> str:
    """Run the native simulator; return the canonical text of the `data` document."""
    native = load_native()
    data_json = interruptible(lambda: native.run(spec_json, seed, progress), "simulating")
    if not data_json.startswith("{"):
        raise RuntimeError("simulator returned something other than a JSON object")
    return data_json


def simulate(spec_json: str, seed: int, progress: Any = None) -> dict[str, Any]:
    """Run the native simulator; return the parsed `data` document."""
    data = json.loads(simulate_text(spec_json, seed, progress))
    if not isinstance(data, dict):
        raise RuntimeError("simulator returned something other than a JSON object")
    return data


def cmd_run(args: argparse.Namespace) -> int:
    from .progress import Progress
    from .results import result_path, write_result_text

    spec = load_spec(args.spec)
    seed = spec.seed if args.seed is None else args.seed
    out = out_dir_arg(args.out)
    check_out_dir(out)
    path = result_path(out, spec.name, seed)
    if path.is_dir():
        raise UserError(f"result path {str(path)!r} is a directory")
    pcap = _pcap_request(args, spec, out, seed)
    version = code_version()

    bar = Progress(spec.duration_ns, label=spec.name, quiet=args.quiet)
    spec_text = spec.checked_json or spec.to_json()
    try:
        if pcap is None:
            data_text = simulate_text(spec_text, seed, bar)
        else:
            data_text, pcap_bytes, (kept, truncated) = _simulate_capture(spec_text, seed, bar, pcap[1], pcap[2])
            if truncated:
                print(f"{PROG}: warning: the pcap stopped at --pcap-limit = {pcap[2]} records ({kept} kept); "
                      "the run went on without capture: raise --pcap-limit to capture it all", file=sys.stderr)
    except RuntimeError as e:
        bar.finish(ok=False)
        print(f"{PROG}: simulation failed: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    bar.finish()
    wall = bar.elapsed()

    # The simulator's canonical text is stored as it is (one serialization); it is parsed only
    # to print the summary.
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    try:
        write_result_text(path, spec_text, seed, data_text, version)
        written.append(path)
        if pcap is not None:
            from .capture import write_pcap
            write_pcap(pcap[0], pcap_bytes)
    except OSError as e:
        # All or nothing: a result without the capture asked for is not what was asked.
        for f in written:
            f.unlink(missing_ok=True)
        what = e.filename or path
        raise UserError(f"cannot write {str(what)!r}: {e.strerror or e}; nothing was kept") from None
    if not args.quiet:
        from .results import envelope
        from .summary import summarize

        doc = envelope(spec.normalized, seed, json.loads(data_text), version)
        print(summarize(doc, wall_s=wall))
        print(f"result: {path}")
        if pcap is not None:
            print(f"pcap: {pcap[0]}")
    else:
        print(path)
    return EXIT_OK


def _pcap_request(args: argparse.Namespace, spec: Any, out: Path, seed: int
                  ) -> tuple[Path, str, int] | None:
    """(pcap path, node, record limit) of `run --pcap`, checked before simulating."""
    from .capture import DEFAULT_LIMIT, CaptureError, parse_limit, parse_node, pcap_path

    if args.pcap is None:
        if args.pcap_limit is not None:
            raise UserError("--pcap-limit needs --pcap NODE")
        return None
    try:
        node = parse_node(args.pcap, len(spec.station_group))
        limit = DEFAULT_LIMIT if args.pcap_limit is None else parse_limit(args.pcap_limit)
    except CaptureError as e:
        raise UserError(str(e)) from None
    path = pcap_path(out, spec.name, seed, node)
    if path.is_dir():
        raise UserError(f"pcap path {str(path)!r} is a directory")
    return path, node, limit


def _simulate_capture(spec_json: str, seed: int, progress: Any, node: str, limit: int
                      ) -> tuple[str, bytes, tuple[int, bool]]:
    """`simulate_text` with a capture of `node`: the canonical text of the `data` document,
    the pcap bytes and (records kept, truncated at the limit)."""
    from .capture import simulate_capture

    load_native()  # a clear error if the module is not built
    data_json, pcap_bytes, _, kept = interruptible(
        lambda: simulate_capture(spec_json, seed, node, progress, limit), "simulating")
    if not data_json.startswith("{"):
        raise RuntimeError("simulator returned something other than a JSON object")
    return data_json, pcap_bytes, kept


def cmd_validate(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    if args.json:
        print(json.dumps(spec.normalized, sort_keys=True, indent=2))
        return EXIT_OK
    n = spec.normalized
    print(f"ok: {spec.name}: {n['phy']['standard']} {n['phy']['channel_width']} MHz, "
          f"{len(n['stations'])} station(s), {len(n['flows'])} flow(s), "
          f"{n['sim']['duration_ns'] / 1e9:g} s")
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import run_bench
    from .children import stop_unwinds

    # Every bench runs programs as children in temporary directories (emulators, live tools,
    # ns-3 and its build, timed `lasthop` processes): a stop signal unwinds them (children
    # reaped, directories removed).
    with stop_unwinds():
        code = _live_bench(args)
        if code is not None:
            return code
        if getattr(args, "sweep", False):
            from .sweep_cli import bench_sweep
            return bench_sweep()
        if getattr(args, "tune_cells", False):
            from .bench.tune_cells import run_tune_cells
            return run_tune_cells(args.out, quick=args.quick)
        if getattr(args, "ofdma_cells", False):
            from .bench.ofdma_cells import run_ofdma_cells
            return run_ofdma_cells(args.out, quick=args.quick)
        return run_bench(quick=args.quick, compare_ns3=args.compare_ns3, instructions=getattr(args, "instructions", False))


def _live_bench(args: argparse.Namespace) -> int | None:
    """`bench --live KIND` or `bench --emu`: its exit code; None for the other benches."""
    if getattr(args, "live", None) == "tune":
        from .live.bench_tune import BUDGET, run_live_tune
        if not 1 <= args.runs <= 100:
            raise UserError(f"--runs = {args.runs}: 1..100")
        return run_live_tune(args.out, seconds=12 if args.quick else 20, budget=16 if args.quick else BUDGET,
                             cell_name=args.tune_cell, runs=1 if args.quick else args.runs,
                             up_floor=args.upload_floor)
    if getattr(args, "live", None) == "l4s":
        from .live.bench_l4s import run_live_l4s
        return run_live_l4s(args.out, seconds=10 if args.quick else 15, seeds=2 if args.quick else 3,
                            cc=args.cc, which=args.l4s_cell)
    if getattr(args, "live", None) == "proxy":
        from .live.bench_proxy import run_live_proxy
        return run_live_proxy(args.out)
    if getattr(args, "live", None) == "quic":
        from .live.bench_quic import run_live_quic
        return run_live_quic(args.out, runs=3 if args.quick else 10)
    if getattr(args, "live", None) == "aggctl":
        from .live.bench_aggctl import run_live_aggctl
        return run_live_aggctl(args.out, seconds=16 if args.quick else 30)
    if getattr(args, "live", None) == "vwire":
        from .live.bench_vwire import run_live_vwire
        return run_live_vwire(args.out, seconds=12 if args.quick else 20)
    if getattr(args, "live", None) == "wqm":
        from .live.bench import run_live_bench
        if not 1 <= args.runs <= 100:
            raise UserError(f"--runs = {args.runs}: 1..100")
        return run_live_bench(args.out, runs=args.runs, seconds=10 if args.quick else 20)
    if getattr(args, "emu", False):
        from .live.emu_bench import run_emu_bench
        return run_emu_bench(args.out, seconds=5 if args.quick else 10)
    return None


def cmd_version(_args: argparse.Namespace) -> int:
    print(f"{PROG} {code_version()}")
    return EXIT_OK
