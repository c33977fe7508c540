"""The `lasthop` command line.

    lasthop run SPEC [--seed N] [-o DIR] [--quiet]   simulate; write DIR/<name>-s<seed>.json
        [--pcap NODE [--pcap-limit N]]               ... and DIR/<name>-s<seed>-<NODE>.pcap
    lasthop validate SPEC                            check a spec without simulating
    lasthop bench [--quick]                          time the fixed benchmark scenarios
    lasthop sweep SPEC --vary KEY=V1,V2 [--seeds K]   run a grid of specs x seeds (sweep.py)
    lasthop version                                  print the code version
    lasthop table|plot|report -i RESULTS ...         analysis from files (analysis_cli.py)
    lasthop export --flent RESULTS [-o OUT]          flent's .flent.gz files (flent_export.py)
    lasthop emu up|run|exec|down ...                 the model in real time (emu_cli.py)
    lasthop soak emu|live [SPEC] --duration 1h       the emulator under load for hours (soak.py)
    lasthop wqm ...                                  live tools on a real or emulated AP
                                                     (live_cli.py, docs/live.md)

Exit codes: 0 success; 2 user error (bad spec, missing file, bad arguments), reported as ONE
line on stderr and before anything is written; 1 internal or simulator error.
Set LASTHOP_DEBUG=1 to get a traceback for internal errors.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn, Sequence

from .spec import SpecError, SpecFileError, load_spec

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2

PROG = "lasthop"


class UserError(Exception):
    """A problem the user can fix (exit code 2); the message is printed as is."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UserError(message)


# Commands defined in this module: when one of them is asked for, the other modules' parsers
# (and what they import) are not loaded.
_CORE = ("run", "validate", "bench", "version")


def _parser(core_only: bool = False) -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Fast, deterministic 802.11 last-hop simulator.")
    p.add_argument("-V", "--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    r = sub.add_parser("run", help="run one simulation and write its result file")
    r.add_argument("spec", metavar="SPEC", help="scenario spec (TOML, docs/spec.md)")
    r.add_argument("--seed", type=_seed, default=None,
                   help="random seed (default: sim.seed of the spec)")
    r.add_argument("-o", "--out", default="results", metavar="DIR",
                   help="output directory (default: results)")
    r.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no summary; print only the result path")
    r.add_argument("--pcap", default=None, metavar="NODE",
                   help="also write a pcap of the frames NODE ('ap' or a station index) sends "
                        "or receives: DIR/<name>-s<seed>-<NODE>.pcap")
    r.add_argument("--pcap-limit", default=None, metavar="N",
                   help="at most N pcap records (default 100000; ~150 MB with 1500-byte packets)")

    v = sub.add_parser("validate", help="check a spec without simulating")
    v.add_argument("spec", metavar="SPEC")
    v.add_argument("--json", action="store_true", help="print the normalized spec as JSON")

    b = sub.add_parser("bench", help="time the fixed benchmark scenarios")
    b.add_argument("--quick", action="store_true", help="shorter simulated durations")
    b.add_argument("--sweep", action="store_true",
                   help="time a 24-run sweep at -j 1 and -j 2 and print the speedup")
    b.add_argument("--emu", action="store_true",
                   help="the emulator against the simulator: iperf3/ping through `lasthop emu` "
                        "(needs root, iperf3, ping), and its capacity (emu_bench.py)")
    b.add_argument("--live", nargs="?", const="wqm", choices=["wqm", "vwire", "proxy", "aggctl", "quic"], default=None,
                   metavar="TOOL",
                   help="a live tool across the emulator's AP host next to the simulator: wqm "
                        "(W1/W2 live and the AP host's cost; needs iperf3, ping; live_bench.py), "
                        "vwire (V1-V3 live; live_bench_vwire.py), or proxy (the split proxy's speed "
                        "and a checked 2 GB load between namespaces; live_bench_proxy.py), or aggctl "
                        "(aggctl send|recv across the emulator, 1 and 5 receivers, and pacing "
                        "precision; live_bench_aggctl.py), or quic (quic vs bquic and the history "
                        "across the emulator; live_bench_quic.py); needs root")
    b.add_argument("--runs", type=int, default=5, metavar="N",
                   help="--live: runs per configuration (default 5)")
    b.add_argument("-o", "--out", default="results/bench", metavar="DIR",
                   help="--emu/--live: where emu-bench.json / live-bench.json go "
                        "(default results/bench)")

    sub.add_parser("version", help="print the code version")
    if core_only:
        return p

    from .sweep import add_parser as _add_sweep
    _add_sweep(sub)

    from .reproduce.cli import add_parser as _add_reproduce
    _add_reproduce(sub)

    from .analysis_cli import add_parsers as _add_analysis
    _add_analysis(sub)

    from .flent_export import add_parser as _add_export
    _add_export(sub)

    from .emu_cli import add_parser as _add_emu
    _add_emu(sub)

    from .live_cli import add_parsers as _add_live
    _add_live(sub)

    from .new_cli import add_parsers as _add_new
    _add_new(sub)

    from .soak import add_parser as _add_soak
    _add_soak(sub)
    return p


def _seed(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seed = {text!r}: an integer in 0..=2^64-1") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"--seed = {text}: an integer in 0..=2^64-1")
    return value


def _native() -> Any:
    try:
        from . import _native as native
    except ImportError as e:
        raise RuntimeError(f"the native module is not built ({e}); run `make` first") from None
    return native


def code_version() -> str:
    _native()  # a clear message when the module is not built
    from .version import code_version as _cv

    return _cv()


def out_dir_arg(value: str) -> Path:
    """`-o DIR` as a path; an empty one is refused (it would silently mean ".")."""
    if not str(value).strip():
        raise UserError("-o: the output directory is empty: name a directory (\".\" for this one)")
    return Path(value)


def _check_out_dir(out: Path) -> None:
    """Fail (as a user error) before simulating if results could not be written to `out`."""
    from .results import unwritable_dir

    problem = unwritable_dir(out)
    if problem:
        raise UserError(problem)


def _interruptible(fn: Any, what: str) -> Any:
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
    native = _native()
    data_json = _interruptible(lambda: native.run(spec_json, seed, progress), "simulating")
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
    _check_out_dir(out)
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
        node = parse_node(args.pcap, len(spec.normalized["stations"]))
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

    _native()  # a clear error if the module is not built
    data_json, pcap_bytes, _, kept = _interruptible(
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

    if getattr(args, "live", None) == "proxy":
        from .live_bench_proxy import run_live_proxy
        return run_live_proxy(args.out)
    if getattr(args, "live", None) == "quic":
        from .live_bench_quic import run_live_quic
        return run_live_quic(args.out, runs=3 if args.quick else 10)
    if getattr(args, "live", None) == "aggctl":
        from .live_bench_aggctl import run_live_aggctl
        return run_live_aggctl(args.out, seconds=16 if args.quick else 30)
    if getattr(args, "live", None) == "vwire":
        from .live_bench_vwire import run_live_vwire
        return run_live_vwire(args.out, seconds=12 if args.quick else 20)
    if getattr(args, "live", None) == "wqm":
        from .live_bench import run_live_bench
        if not 1 <= args.runs <= 100:
            raise UserError(f"--runs = {args.runs}: 1..100")
        return run_live_bench(args.out, runs=args.runs, seconds=10 if args.quick else 20)
    if getattr(args, "emu", False):
        from .emu_bench import run_emu_bench
        return run_emu_bench(args.out, seconds=5 if args.quick else 10)
    if getattr(args, "sweep", False):
        from .sweep import bench_sweep
        return bench_sweep()
    return run_bench(quick=args.quick)


def cmd_version(_args: argparse.Namespace) -> int:
    print(f"{PROG} {code_version()}")
    return EXIT_OK


COMMANDS = {"run": cmd_run, "validate": cmd_validate, "bench": cmd_bench,
            "version": cmd_version}


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .reproduce.cli import cmd_reproduce
    return cmd_reproduce(args)


COMMANDS["reproduce"] = _cmd_reproduce


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import cmd_sweep
    return cmd_sweep(args)


COMMANDS["sweep"] = _cmd_sweep


def _cmd_analysis(args: argparse.Namespace) -> int:
    from .analysis_cli import COMMANDS as _analysis_commands
    return _analysis_commands[args.command](args)


COMMANDS.update({"table": _cmd_analysis, "plot": _cmd_analysis, "report": _cmd_analysis})


def _cmd_export(args: argparse.Namespace) -> int:
    from .flent_export import cmd_export
    return cmd_export(args)


COMMANDS["export"] = _cmd_export


def _cmd_emu(args: argparse.Namespace) -> int:
    from .emu_cli import cmd_emu
    return cmd_emu(args)


COMMANDS["emu"] = _cmd_emu


def _cmd_new(args: argparse.Namespace) -> int:
    from .new_cli import cmd_completion, cmd_new
    return (cmd_new if args.command == "new" else cmd_completion)(args)


COMMANDS.update({"new": _cmd_new, "completion": _cmd_new})


def _cmd_soak(args: argparse.Namespace) -> int:
    from .soak import cmd_soak
    return cmd_soak(args)


COMMANDS["soak"] = _cmd_soak


def main(argv: Sequence[str] | None = None) -> int:
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        core_only = bool(argv) and argv[0] in _CORE
        command = None
        if not core_only:
            from .emu_cli import split_command
            from .live_cli import TOOLS, run as run_live
            if argv and argv[0] in TOOLS:
                return run_live(argv)
            argv, command = split_command(argv)
        args = _parser(core_only).parse_args(argv)
        args.cmd = command
        if args.version and not args.command:
            return cmd_version(args)
        if not args.command:
            _parser().print_help(sys.stderr)
            return EXIT_USAGE
        return COMMANDS[args.command](args)
    except SpecError as e:
        print(f"{PROG}: spec error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (SpecFileError, UserError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # Output piped into e.g. `head`: not an error; silence the interpreter's flush.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # internal error: one line unless debugging
        if os.environ.get("LASTHOP_DEBUG"):
            raise
        print(f"{PROG}: internal error: {type(e).__name__}: {e} "
              f"(set LASTHOP_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_INTERNAL

