"""`lasthop emu`: the WiFi model in real time between network namespaces (docs/emu.md).

    lasthop emu up SPEC [--name N] [-o DIR] ...     build the topology, run until stopped
    lasthop emu run SPEC [--node NODE] -- CMD ...   the same, for as long as CMD runs
    lasthop emu exec [--name N] NODE -- CMD ...     run CMD in NODE's namespace
    lasthop emu down [--name N]                     stop it and remove everything it made

The cell of SPEC (its stations, PHY/MAC settings, AP queue discipline, wired link; its flows
run as simulated traffic beside the real one) is built as one namespace per node — `server`
behind the AP and `sta0`, `sta1`, ..., and with `[emu] ap_host = true` the AP itself (`ap`,
routing between its eth0 and wlan0) — joined through TUN devices to the emulator, which
moves every packet through the simulator's model on the wall clock. At the end the result
file has the same format as `lasthop run`'s, its flows the 5-tuples that crossed the cell.
Needs root (CAP_NET_ADMIN); otherwise one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

DEFAULT_NAME = "lh"


def add_parser(sub: Any) -> None:
    e = sub.add_parser("emu", help="the WiFi model in real time between network namespaces")
    es = e.add_subparsers(dest="emu_command", metavar="ACTION", parser_class=type(e))

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("spec", metavar="SPEC", help="cell spec (TOML, docs/spec.md)")
        p.add_argument("--name", default=DEFAULT_NAME,
                       help=f"emulator name: namespaces lh-NAME-server, lh-NAME-sta0, ... "
                            f"(default {DEFAULT_NAME})")
        p.add_argument("--seed", type=int, default=None, help="model seed (default: sim.seed)")
        p.add_argument("-o", "--out", default="results", metavar="DIR",
                       help="where the result file goes (default: results)")
        p.add_argument("--pcap", action="store_true",
                       help="also write DIR/<name>-emu-s<seed>.pcap: every delivered packet as "
                            "an 802.11 frame with radiotap (rate of its link)")
        p.add_argument("--stats", type=float, default=1.0, metavar="SECONDS",
                       help="live per-station statistics on stderr every SECONDS (0: off)")
        p.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                       help="stop after SECONDS (default: until stopped)")
        p.add_argument("--spin-us", type=float, default=None, metavar="US",
                       help="busy-poll when the next model event is closer than US "
                            "microseconds (default: longer when the programs run off the "
                            "model's CPU, docs/emu.md; the result's emu.spin_ns)")
        p.add_argument("--io", default=None, metavar="MODE",
                       help="how packets move between the model and the TUN devices: a "
                            "read/write per packet (default) or io_uring, readiness without a "
                            "syscall and a round's writes in one submission (docs/emu.md)")
        p.add_argument("--realtime", type=int, default=None, metavar="PRIO",
                       help="run the model thread under SCHED_FIFO at priority PRIO (1-99), so "
                            "that busy processes on its CPU cannot delay its writes (default: "
                            "the normal scheduler)")
        p.add_argument("-q", "--quiet", action="store_true", help="no live statistics, no summary")

    up = es.add_parser("up", help="build the topology and run the cell until Ctrl-C, SIGTERM "
                                  "or `lasthop emu down`")
    common(up)
    run = es.add_parser("run", help="build the topology, run CMD, stop when it exits "
                                    "(exit code: CMD's)")
    common(run)
    run.add_argument("--node", default=None,
                     help="run CMD inside this node's namespace (default: in the current one, "
                          "with LASTHOP_EMU=NAME set so it can use `lasthop emu exec`)")
    ex = es.add_parser("exec", help="run a program in a node's namespace")
    ex.add_argument("--name", default=os.environ.get("LASTHOP_EMU", DEFAULT_NAME))
    for p in (run, ex):
        p.add_argument("--share-cpu", action="store_true",
                       help="let the program run on the model thread's CPU too (default: on every "
                            "other CPU, so neither delays the other; docs/emu.md)")
    ex.add_argument("node", metavar="NODE", help="server, sta0, sta1, ..., or ap (with [emu] ap_host)")
    dn = es.add_parser("down", help="stop the emulator and remove its namespaces (also after a "
                                    "crash)")
    dn.add_argument("--name", default=os.environ.get("LASTHOP_EMU", DEFAULT_NAME))


def split_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """`emu run|exec ... -- CMD ...` (and `soak live ... -- TOOL ...`): the arguments before
    `--`, and CMD (None without `--`).
    Split before parsing so that CMD's own options never reach lasthop's parser."""
    if len(argv) >= 2 and (argv[0] == "emu" and argv[1] in ("run", "exec") or argv[0] == "soak") \
            and "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, None


def _need_root(user_error: type[Exception]) -> None:
    if os.geteuid() != 0:
        raise _RootError("lasthop emu needs root (CAP_NET_ADMIN) to create network namespaces "
                         "and TUN devices; run it with sudo")
    if shutil.which("ip") is None:
        raise user_error("lasthop emu needs the `ip` command (iproute2)")


class _RootError(Exception):
    pass


def cmd_emu(args: argparse.Namespace) -> int:
    from ..errors import EXIT_OK, EXIT_USAGE, PROG, UserError
    from ..native import native as _native

    try:
        if args.emu_command is None:
            raise UserError("emu: an action is needed: up, run, exec or down")
        _need_root(UserError)
    except _RootError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    native = _native()
    if args.emu_command == "down":
        try:
            print(native.emu_down(args.name))
        except ValueError as e:
            raise UserError(str(e)) from None
        return EXIT_OK
    if args.emu_command == "exec":
        cmd = args.cmd
        if not cmd:
            raise UserError("emu exec: a command is needed after NODE (-- CMD ...)")
        try:
            ns = native.emu_netns(args.name, args.node)
        except ValueError as e:
            raise UserError(str(e)) from None
        cpus = None if args.share_cpu else native.emu_program_cpus()
        if cpus:
            os.sched_setaffinity(0, cpus)
        sys.stdout.flush()
        os.execvp("ip", ["ip", "netns", "exec", ns, *cmd])
    return _up(args, native)


def _up(args: argparse.Namespace, native: Any) -> int:
    from ..commands import check_out_dir as _check_out_dir
    from ..errors import EXIT_INTERNAL, EXIT_OK, PROG, UserError
    from ..native import code_version
    from ..results import envelope, write_result
    from ..spec import load_spec

    spec = load_spec(args.spec)
    seed = spec.seed if args.seed is None else args.seed
    if not 0 <= seed < 2**64:
        raise UserError(f"--seed = {seed}: an integer in 0..=2^64-1")
    for key, v in (("--stats", args.stats), ("--spin-us", args.spin_us)):
        if v is not None and v < 0:
            raise UserError(f"{key} = {v}: 0 or more")
    if args.io is not None and args.io not in native.EMU_IO_MODES:
        raise UserError(f"--io = {args.io}: one of {', '.join(native.EMU_IO_MODES)}")
    if args.realtime is not None and not 1 <= args.realtime <= 99:
        raise UserError(f"--realtime = {args.realtime}: a SCHED_FIFO priority, 1 to 99")
    if args.duration is not None and args.duration <= 0:
        raise UserError(f"--duration = {args.duration}: more than 0 seconds")
    cmd: list[str] | None = None
    node = None
    if args.emu_command == "run":
        cmd = args.cmd
        if not cmd:
            raise UserError("emu run: a command is needed (-- CMD ...)")
        node = args.node
        n = len(spec.normalized["stations"])
        ap_host = spec.normalized.get("emu", {}).get("ap_host", False)
        nodes = {"server", *(f"sta{i}" for i in range(n))} | ({"ap"} if ap_host else set())
        if node is not None and node not in nodes:
            allowed = f"server, sta0..sta{n - 1}" + (" or ap" if ap_host else "")
            raise UserError(f"--node = {node!r}: {allowed}")
    from ..commands import out_dir_arg
    out = out_dir_arg(args.out)
    _check_out_dir(out)
    base = f"{spec.name}-emu-s{seed}"
    path = out / f"{base}.json"
    pcap = out / f"{base}.pcap" if args.pcap else None
    version = code_version()
    out.mkdir(parents=True, exist_ok=True)
    stats = 0.0 if args.quiet else args.stats
    tmp_pcap = None
    if pcap is not None:
        tmp_pcap = pcap.with_name(pcap.name + ".part")
    try:
        data_json, emu_json, code = native.emu_up(
            spec.to_json(), args.name, seed, stats, None if tmp_pcap is None else str(tmp_pcap),
            args.duration, cmd, node, None if args.spin_us is None else args.spin_us * 1e3, args.realtime, args.io,
            not getattr(args, "share_cpu", False))
    except ValueError as e:  # a user error found before anything was built
        raise UserError(str(e)) from None
    except RuntimeError as e:
        if tmp_pcap is not None:
            tmp_pcap.unlink(missing_ok=True)
        print(f"{PROG}: emulator failed: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    data = json.loads(data_json)
    data["emu"] = json.loads(emu_json)
    doc = envelope(spec.normalized, seed, data, version)
    write_result(path, doc)
    if tmp_pcap is not None and pcap is not None:
        os.replace(tmp_pcap, pcap)
    if not args.quiet:
        print(_summary(doc))
        print(f"result: {path}")
        if pcap is not None:
            print(f"pcap: {pcap}")
    if cmd is not None:
        return int(code) if code is not None else EXIT_INTERNAL
    return EXIT_OK


def _summary(doc: dict[str, Any]) -> str:
    d = doc["data"]
    e = d["emu"]
    lines = [f"emulated {e['wall_ns'] / 1e9:.1f} s: {e['packets_read']} packets in, "
             f"{e['packets_written']} out, {e['packets_dropped_by_model']} dropped by the model, "
             f"{e.get('ce_marked', 0)} CE-marked by the model, "
             f"{e['packets_unroutable']} unroutable; write lateness p50 "
             f"{e['lateness_p50_ns'] / 1e3:.0f} us, p99 {e['lateness_p99_ns'] / 1e3:.0f} us"]
    if e.get("io_fallback"):
        lines.append(f"  packet I/O: {e['io']} ({e['io_fallback']})")
    for f in d["flows"]:
        if f["delivered_packets"] == 0 and f["offered_packets"] == 0:
            continue
        what = f.get("external") or f"{f['pattern']} flow {f['id']}"
        dly = f["delay_ns"]
        lines.append(f"  sta{f['station']} {f['direction']:<4} {what}: "
                     f"{f['goodput_bps'] / 1e6:.2f} Mb/s, {f['delivered_packets']} pkts, "
                     f"one-way delay p50 {dly['p50'] / 1e6:.2f} ms p99 {dly['p99'] / 1e6:.2f} ms")
    return "\n".join(lines)
