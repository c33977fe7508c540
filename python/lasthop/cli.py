"""The `lasthop` command line.

    lasthop run SPEC [--seed N] [-o DIR] [--quiet]   simulate; write DIR/<name>-s<seed>.json
        [--pcap NODE [--pcap-limit N]]               ... and DIR/<name>-s<seed>-<NODE>.pcap
    lasthop validate SPEC                            check a spec without simulating
    lasthop bench [--quick] [--compare-ns3]          time the fixed scenarios and the TCP cells
        [--instructions]                             ... and count the TCP cells' instructions
    lasthop sweep SPEC --vary KEY=V1,V2 [--seeds K]   run a grid of specs x seeds (sweep_cli.py)
    lasthop tune SPEC [--budget N] [--seeds K]       search the AP's levers (tune.py, tune_cli.py)
    lasthop version                                  print the code version
    lasthop table|plot|report -i RESULTS ...         analysis from files (analysis_cli.py)
    lasthop export --flent RESULTS [-o OUT]          flent's .flent.gz files (flent_export.py)
    lasthop emu up|run|exec|down ...                 the model in real time (live/emu_cli.py)
    lasthop soak emu|live [SPEC] --duration 1h       the emulator under load for hours (live/soak.py)
    lasthop wqm ...                                  live tools on a real or emulated AP
                                                     (live/cli.py, docs/live.md)

This module only parses the arguments and dispatches: the simulator's own commands are in
`commands.py`, the others in their modules (imported only when asked for); user errors and
exit codes are in `errors.py`.

Exit codes: 0 success; 2 user error (bad spec, missing file, bad arguments), reported as ONE
line on stderr and before anything is written; 1 internal or simulator error.
Set LASTHOP_DEBUG=1 to get a traceback for internal errors.
"""

from __future__ import annotations

import argparse
import os
import sys
TYPE_CHECKING = False  # typing's flag, without importing typing (a run's start-up)
if TYPE_CHECKING:
    from typing import Any, NoReturn, Sequence

from .errors import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, PROG, UserError
from .spec import SpecError, SpecFileError

def _columns() -> int:
    """The terminal's width as `shutil.get_terminal_size` finds it (COLUMNS, then stdout's
    terminal, else 80), without importing shutil and the compression modules it loads."""
    try:
        cols = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        cols = 0
    if cols <= 0:
        try:
            cols = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            cols = 0
    return cols or 80


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, given its width: argparse makes one per argument added, and
    without a width each imports shutil (2-3 ms of a run's start-up)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UserError(message)


# The simulator's own commands (commands.py): when one of them is asked for, the other modules'
# parsers (and what they import) are not loaded.
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
    b.add_argument("--compare-ns3", action="store_true",
                   help="also run ns-3 (reference/ns3/tcp.cc; needs libns3-dev) on the TCP cells "
                        "and print its wall time over lasthop's")
    b.add_argument("--instructions", action="store_true",
                   help="also count each TCP cell's instructions per event under valgrind's "
                        "cachegrind: a figure the machine's load does not move (needs valgrind)")
    b.add_argument("--sweep", action="store_true",
                   help="time a 24-run sweep at -j 1 and -j 2 and print the speedup")
    b.add_argument("--emu", action="store_true",
                   help="the emulator against the simulator: iperf3/ping through `lasthop emu` "
                        "(needs root, iperf3, ping), and its capacity (live/emu_bench.py)")
    b.add_argument("--live", nargs="?", const="wqm", choices=["wqm", "vwire", "proxy", "aggctl", "quic", "tune", "l4s"], default=None,
                   metavar="TOOL",
                   help="a live tool across the emulator's AP host next to the simulator: wqm "
                        "(W1/W2 live and the AP host's cost; needs iperf3, ping; live/bench.py), "
                        "vwire (V1-V3 live; live/bench_vwire.py), or proxy (the split proxy's speed "
                        "and a checked 2 GB load between namespaces; live/bench_proxy.py), or aggctl "
                        "(aggctl send|recv across the emulator, 1 and 5 receivers, and pacing "
                        "precision; live/bench_aggctl.py), or quic (quic vs bquic and the history "
                        "across the emulator; live/bench_quic.py), or tune (lasthop tune's choice "
                        "for a household cell with kernel TCP, next to the simulator; "
                        "live/bench_tune.py), or l4s (the l4s suite's WiFi cell with kernel classic "
                        "ECN, next to the simulator; live/bench_l4s.py); needs root")
    b.add_argument("--tune-cells", action="store_true",
                   help="lasthop tune on a matrix of RRUL-like cells (2-8 stations, VHT and HE, FQ-CoDel "
                        "and FIFO stations) against the default AP: gain, floors, the lever that buys "
                        "most (bench/tune_cells.py; --quick: budget 8, 1 seed)")
    b.add_argument("--ofdma-cells", action="store_true",
                   help="802.11ax OFDMA (dl, dl+ul) against single-user PPDUs on two RRUL-like cells "
                        "and a dense 50-station cell, with and without AQL (bench/ofdma_cells.py; "
                        "--quick: 5 s, 1 seed)")
    b.add_argument("--runs", type=int, default=5, metavar="N",
                   help="--live wqm and tune: runs per configuration (default 5; tune's pairs alternate "
                        "which configuration goes first)")
    b.add_argument("--cc", default="cubic", metavar="NAME",
                   help="--live l4s: the kernel controller of the ECN download (default cubic, "
                        "classic ECN; the choices: live/bench_l4s.py KERNEL_CCS, docs/emu.md)")
    b.add_argument("--l4s-cell", default="vht80", metavar="NAME",
                   help="--live l4s: the cell (default vht80, the l4s suite's; the choices: "
                        "live/bench_l4s.py CELLS)")
    b.add_argument("--tune-cell", default="house", metavar="NAME",
                   help="--live tune: the cell (default house, the household cell; or one of "
                        "--tune-cells' cells, bench/tune_cells.py CELLS, e.g. he-2sta-fq)")
    from .units import share_fraction
    b.add_argument("--upload-floor", type=share_fraction, default=None, metavar="F",
                   help="--live tune: the search holds every upload to F of an equal share "
                        "(default: the downloads' floor; lasthop tune --upload-floor)")
    b.add_argument("-o", "--out", default="results/bench", metavar="DIR",
                   help="--emu/--live/--tune-cells/--ofdma-cells: where emu-bench.json / "
                        "live-bench.json / tune-cells.json / ofdma-cells.json go (default results/bench)")

    sub.add_parser("version", help="print the code version")
    if core_only:
        return p

    from .sweep_cli import add_parser as _add_sweep
    _add_sweep(sub)

    from .reproduce.cli import add_parser as _add_reproduce
    _add_reproduce(sub)

    from .analysis_cli import add_parsers as _add_analysis
    _add_analysis(sub)

    from .flent_export import add_parser as _add_export
    _add_export(sub)

    from .live.emu_cli import add_parser as _add_emu
    _add_emu(sub)

    from .live.cli import add_parsers as _add_live
    _add_live(sub)

    from .new_cli import add_parsers as _add_new
    _add_new(sub)

    from .tune_cli import add_parser as _add_tune
    _add_tune(sub)

    from .live.soak import add_parser as _add_soak
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


def _cmd_core(args: argparse.Namespace) -> int:
    from . import commands
    return getattr(commands, f"cmd_{args.command}")(args)


def _cmd_version(args: argparse.Namespace) -> int:
    from .commands import cmd_version
    return cmd_version(args)


COMMANDS = {name: _cmd_core for name in _CORE}


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .reproduce.cli import cmd_reproduce
    return cmd_reproduce(args)


COMMANDS["reproduce"] = _cmd_reproduce


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep_cli import cmd_sweep
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
    from .live.emu_cli import cmd_emu
    return cmd_emu(args)


COMMANDS["emu"] = _cmd_emu


def _cmd_new(args: argparse.Namespace) -> int:
    from . import new_cli
    if args.command == "completion":
        return new_cli.cmd_completion(args, _parser())
    return {"new": new_cli.cmd_new, "schema": new_cli.cmd_schema}[args.command](args)


COMMANDS.update({"new": _cmd_new, "schema": _cmd_new, "completion": _cmd_new})


def _cmd_tune(args: argparse.Namespace) -> int:
    from .tune_cli import cmd_tune
    return cmd_tune(args)


COMMANDS["tune"] = _cmd_tune


def _cmd_soak(args: argparse.Namespace) -> int:
    from .live.soak import cmd_soak
    return cmd_soak(args)


COMMANDS["soak"] = _cmd_soak


def main(argv: Sequence[str] | None = None) -> int:
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        core_only = bool(argv) and argv[0] in _CORE
        command = None
        if not core_only:
            from .live.emu_cli import split_command
            from .live.cli import TOOLS, run as run_live
            if argv and argv[0] in TOOLS:
                return run_live(argv)
            argv, command = split_command(argv)
        args = _parser(core_only).parse_args(argv)
        args.cmd = command
        if args.version and not args.command:
            return _cmd_version(args)
        if not args.command:
            _parser().print_help(sys.stderr)
            return EXIT_USAGE
        return COMMANDS[args.command](args)
    except SpecError as e:
        for one in e.all():
            print(f"{PROG}: spec error: {one}", file=sys.stderr)
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

