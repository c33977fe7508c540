"""`lasthop soak emu|live`: long runs of the emulator (and a live tool on its AP host) under
iperf3 load, watching for leaks and growing lateness (docs/reliability.md).

    lasthop soak emu [SPEC] --duration 1h [--every 10] [-o DIR]
    lasthop soak live [SPEC] --duration 1h [--every 10] [-o DIR] -- TOOL ARGS ...

`emu` runs `lasthop emu up SPEC` (default experiments/emu-vht-1sta.toml) with one iperf3 TCP
download per station (`--parallel` streams each) and a 5 Hz ping from sta0 to the server.
`live` does the same on a cell with an AP host (default experiments/emu-wqm-ht.toml) and runs
TOOL (e.g. `wqm --phy phy0`, any `lasthop` live tool) in the AP's namespace for the whole run.

Every `--every` seconds it samples each watched process — the emulator (and the tool):
resident memory (VmRSS), open file descriptors, threads — and the emulator's own live line
(`--stats`): its write lateness over the interval (p50/p99/max, the figure `data.emu.lateness_*`
gives for a whole run) and how late the line itself came (the real-time loop's lag). The spec's
`sim.duration` is set to the soak's length so that the emulator's time series are allocated
before the run: any growth of memory is then the emulator's, not the series'.

Writes DIR/soak-<kind>.csv (one row per sample), DIR/soak-<kind>.json (the samples, the
verdict, the emulator's result summary, iperf3's totals) and DIR/soak-<kind>.png, and prints a
verdict; exit 0 when every check passes, 1 otherwise:

* memory: RSS growth after the warm-up (least-squares slope x remaining time) at most
  max(RSS_TOL_MIB MiB, RSS_TOL_FRAC of the RSS at the end of the warm-up); the emulator's
  A-MPDU counter log grows by design for its first ~11 minutes (AMPDU_LOG_FULL_S): runs of at
  least 33 minutes are judged after it is full, shorter ones get its size added to the
  tolerance;
* descriptors: the count after the warm-up stays within FD_TOL of its value then;
* lateness: the median of the interval p99 lateness over the last third of the run is at most
  LATE_TOL_FACTOR x the first third's median + LATE_TOL_US µs (the same for the line lag).

Needs root, iproute2, iperf3 and ping. Not part of `make test` (hours, not CI).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_SPECS = {"emu": ROOT / "experiments" / "emu-vht-1sta.toml",
                 "live": ROOT / "experiments" / "emu-wqm-ht.toml"}

# Tolerances of the verdict (module docstring).
RSS_TOL_MIB = 4.0
RSS_TOL_FRAC = 0.02
FD_TOL = 2
LATE_TOL_FACTOR = 1.5
LATE_TOL_US = 100.0
# The emulator keeps a log of A-MPDU counters (`EmuStats::ampdu_samples`, emu.rs): one sample
# per 10 ms of wall time, 8 + 16 x stations bytes each, at most 65536 samples (full after
# ~655 s), then no more. Runs of at least 3x that are judged after it is full; shorter runs
# allow for its size.
AMPDU_LOG_FULL_S = 65536 * 0.010

STATS_LINE = re.compile(r"^emu t=(?P<t>[0-9.]+)s(?P<rest>.*)$")
LATE = re.compile(r"late p50 (?P<p50>\d+) p99 (?P<p99>\d+) max (?P<max>\d+) us n (?P<n>\d+)")
GOODPUT = re.compile(r"sta(?P<s>\d+) down (?P<down>[0-9.]+) up (?P<up>[0-9.]+) Mb/s")
PING = re.compile(r"time=(?P<ms>[0-9.]+) ms")


def parse_duration(text: str) -> float:
    """`1h`, `10m`, `90s`, `90` (seconds) -> seconds."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(h|m|min|s)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"--duration = {text!r}: a duration such as 1h, 10m, 600s")
    v = float(m.group(1)) * {"h": 3600, "m": 60, "min": 60, "s": 1, None: 1}[m.group(2)]
    if v <= 0:
        raise argparse.ArgumentTypeError(f"--duration = {text!r}: more than 0")
    return v


def add_parser(sub: Any) -> None:
    p = sub.add_parser("soak", help="hours of the emulator (and a live tool) under iperf3 load: "
                                    "memory, descriptors, lateness (live/soak.py)")
    p.add_argument("kind", choices=("emu", "live"), help="emu: the emulator; live: the emulator "
                   "with a live tool (after --) on its AP host")
    p.add_argument("spec", nargs="?", default=None, metavar="SPEC",
                   help="cell spec (default: experiments/emu-vht-1sta.toml for emu, "
                        "experiments/emu-wqm-ht.toml for live)")
    p.add_argument("--duration", type=parse_duration, default=3600.0, metavar="D",
                   help="how long: 1h, 10m, 600s (default 1h)")
    p.add_argument("--every", type=float, default=10.0, metavar="SECONDS",
                   help="sampling period (default 10 s)")
    p.add_argument("--warmup", type=float, default=None, metavar="SECONDS",
                   help="samples before this are not judged (default: 10%% of the run, at most 120 s)")
    p.add_argument("--name", default="soak", help="emulator name (default soak)")
    p.add_argument("--cc", default="cubic", help="iperf3 congestion control (default cubic)")
    p.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="iperf3 streams per station (default 1)")
    p.add_argument("-o", "--out", default="results/soak", metavar="DIR",
                   help="where the time series, plot and result go (default results/soak)")


def cmd_soak(args: argparse.Namespace) -> int:
    from ..errors import UserError

    if os.geteuid() != 0:
        raise UserError("lasthop soak runs the emulator: it needs root (CAP_NET_ADMIN)")
    for tool in ("ip", "iperf3", "ping"):
        if shutil.which(tool) is None:
            raise UserError(f"lasthop soak needs `{tool}`")
    if args.every <= 0:
        raise UserError(f"--every = {args.every}: more than 0 seconds")
    tool_cmd = list(args.cmd or [])
    if args.kind == "live" and not tool_cmd:
        raise UserError("soak live: the live tool is needed after -- (e.g. -- wqm --phy phy0)")
    if args.kind == "emu" and tool_cmd:
        raise UserError("soak emu takes no command; `soak live ... -- TOOL ...` runs one")
    spec = Path(args.spec) if args.spec else DEFAULT_SPECS[args.kind]
    if not spec.is_file():
        raise UserError(f"{spec}: no such spec file")
    return Soak(args, spec, tool_cmd).run()


def _lasthop(*a: str) -> list[str]:
    return [sys.executable, "-m", "lasthop", *a]


def _proc(pid: int) -> dict[str, float] | None:
    """VmRSS (MiB), open descriptors and threads of `pid`, or None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    rss = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
    thr = re.search(r"^Threads:\s+(\d+)", status, re.M)
    return {"rss_mib": int(rss.group(1)) / 1024 if rss else float("nan"), "fds": fds,
            "threads": int(thr.group(1)) if thr else 0}


def _slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs (0 with fewer than 2 points)."""
    if len(xs) < 2:
        return 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


class _Tail(threading.Thread):
    """Reads a child's output line by line, keeping what the samples need."""

    def __init__(self, stream: Any, on_line: Any, log: Path) -> None:
        super().__init__(daemon=True)
        self.stream, self.on_line, self.log = stream, on_line, log

    def run(self) -> None:
        with open(self.log, "w") as log:
            for line in iter(self.stream.readline, ""):
                log.write(line)
                log.flush()
                self.on_line(line.rstrip("\n"))


class Soak:
    def __init__(self, args: argparse.Namespace, spec: Path, tool_cmd: list[str]) -> None:
        self.args, self.spec, self.tool_cmd = args, spec, tool_cmd
        self.out = Path(args.out)
        self.kind = args.kind
        self.lock = threading.Lock()
        self.stats_lines = 0
        self.late: dict[str, float] | None = None  # the latest interval's lateness (us)
        self.lag_us: float | None = None  # how late the latest live line came
        self.goodput: float | None = None
        self.rtts: list[float] = []
        self.children: list[subprocess.Popen[str]] = []
        self.clients: list[subprocess.Popen[str]] = []  # iperf3 clients and ping: end by themselves

    # --- the children -----------------------------------------------------------------

    def _on_stats(self, line: str) -> None:
        m = STATS_LINE.match(line)
        if not m:
            return
        with self.lock:
            self.stats_lines += 1
            t = float(m.group("t"))
            # The k-th line is due at k x every; its printed time is when it was written.
            self.lag_us = max(0.0, (t - self.stats_lines * self.args.every) * 1e6)
            lm = LATE.search(m.group("rest"))
            self.late = {k: float(v) for k, v in lm.groupdict().items()} if lm else None
            self.goodput = sum(float(g.group("down")) + float(g.group("up"))
                               for g in GOODPUT.finditer(m.group("rest")))

    def _on_ping(self, line: str) -> None:
        m = PING.search(line)
        if m:
            with self.lock:
                self.rtts.append(float(m.group("ms")))

    def _spawn(self, argv: list[str], log: str, on_line: Any = None, stderr_lines: bool = False
               ) -> subprocess.Popen[str]:
        path = self.out / log
        if on_line is None:
            f = open(path, "w")
            p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
        elif stderr_lines:
            f = open(path.with_suffix(".out"), "w")
            p = subprocess.Popen(argv, stdout=f, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
            _Tail(p.stderr, on_line, path).start()
        else:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
            _Tail(p.stdout, on_line, path).start()
        self.children.append(p)
        return p

    def _exec(self, node: str, *cmd: str) -> list[str]:
        return _lasthop("emu", "exec", "--name", self.args.name, node, "--", *cmd)

    def _soak_spec(self) -> Path:
        """The spec with `sim.duration` = the soak's length (time series allocated up front)."""
        text = self.spec.read_text()
        secs = int(self.args.duration) + 120
        text, n = re.subn(r'(?m)^duration\s*=\s*"[^"]*"', f'duration = "{secs}s"', text, count=1)
        if n == 0:
            raise SystemExit(f"{self.spec}: no sim.duration line to set")
        p = self.out / f"soak-{self.kind}.toml"
        p.write_text(text)
        return p

    def _wait_up(self, emu: subprocess.Popen[str], timeout: float = 60.0) -> None:
        state = Path("/run/lasthop/emu") / f"{self.args.name}.json"
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if emu.poll() is not None:
                raise RuntimeError(f"the emulator exited ({emu.returncode}); see {self.out}/emu.log")
            if state.exists() and subprocess.run(self._exec("server", "true"),
                                                 capture_output=True).returncode == 0:
                return
            time.sleep(0.5)
        raise RuntimeError("the emulator did not come up within 60 s")

    # --- the run ----------------------------------------------------------------------

    def run(self) -> int:
        from ..spec import load_spec

        a = self.args
        self.out.mkdir(parents=True, exist_ok=True)
        spec_path = self._soak_spec()
        n_sta = len(load_spec(spec_path).normalized["stations"])
        d = a.duration
        warm = a.warmup if a.warmup is not None else min(120.0, 0.1 * d)
        print(f"soak {self.kind}: {spec_path.name}, {n_sta} station(s), {d:.0f} s, sample every "
              f"{a.every:g} s, warm-up {warm:.0f} s; output in {self.out}", flush=True)
        emu = self._spawn(_lasthop("emu", "up", str(spec_path), "--name", a.name, "--stats",
                                   str(a.every), "--duration", str(d + 30), "-o", str(self.out)),
                          "emu.log", self._on_stats, stderr_lines=True)
        samples: list[dict[str, Any]] = []
        tool = None
        try:
            self._wait_up(emu)
            for i in range(n_sta):
                self._spawn(self._exec(f"sta{i}", "iperf3", "-s", "-p", str(5201 + i)), f"iperf-s{i}.log")
            time.sleep(1.0)
            secs = str(int(d))
            for i in range(n_sta):
                self.clients.append(self._spawn(
                    self._exec("server", "iperf3", "-c", f"10.77.1.{i + 1}", "-p", str(5201 + i), "-t", secs,
                               "-C", a.cc, "-P", str(a.parallel), "-J"), f"iperf-c{i}.json"))
            self.clients.append(self._spawn(self._exec("sta0", "ping", "-i", "0.2", "-w", secs, "10.77.0.1"),
                                            "ping.log", self._on_ping))
            if self.tool_cmd:
                tool = self._spawn(self._exec("ap", *_lasthop(*self.tool_cmd)), "tool.log")
            t0 = time.monotonic()
            next_t = t0
            while True:
                now = time.monotonic()
                if now - t0 >= d:
                    break
                if emu.poll() is not None:
                    raise RuntimeError(f"the emulator exited early ({emu.returncode}); see {self.out}/emu.log")
                next_t += a.every
                time.sleep(max(0.0, next_t - time.monotonic()))
                samples.append(self._sample(time.monotonic() - t0, emu.pid, tool))
                s = samples[-1]
                late = s.get("late_p99_us")
                print(f"t={s['t_s']:.0f}s rss {s['emu_rss_mib']:.1f} MiB fds {s['emu_fds']} "
                      f"late p99 {'-' if late is None else f'{late:.0f}'} us lag {s['lag_us'] or 0:.0f} us "
                      f"goodput {s['goodput_mbps'] or 0:.0f} Mb/s rtt {s['rtt_ms'] or 0:.1f} ms", flush=True)
        finally:
            self._stop(emu)
        result = self._emu_result()
        iperf = self._iperf_totals(n_sta)
        verdict = judge(samples, warm, tool is not None, n_sta)
        self._write(samples, verdict, result, iperf, d, warm, spec_path)
        return 0 if verdict["pass"] else 1

    def _sample(self, t: float, emu_pid: int, tool: subprocess.Popen[str] | None) -> dict[str, Any]:
        p = _proc(emu_pid) or {"rss_mib": float("nan"), "fds": -1, "threads": -1}
        with self.lock:
            late = self.late
            rtt = statistics.median(self.rtts) if self.rtts else None
            self.rtts.clear()
            s: dict[str, Any] = {
                "t_s": round(t, 3), "emu_rss_mib": round(p["rss_mib"], 3), "emu_fds": p["fds"],
                "emu_threads": p["threads"],
                "late_p50_us": late["p50"] if late else None, "late_p99_us": late["p99"] if late else None,
                "late_max_us": late["max"] if late else None, "late_n": late["n"] if late else None,
                "lag_us": self.lag_us, "goodput_mbps": self.goodput, "rtt_ms": rtt,
            }
        if tool is not None:
            # `emu exec` execs `ip netns exec`, which execs the tool: the same pid throughout.
            q = _proc(tool.pid) or {"rss_mib": float("nan"), "fds": -1, "threads": -1}
            s.update({"tool_rss_mib": round(q["rss_mib"], 3), "tool_fds": q["fds"], "tool_threads": q["threads"]})
        return s

    def _stop(self, emu: subprocess.Popen[str]) -> None:
        # The iperf3 clients and the ping end by themselves (-t, -w): let them write their totals.
        t0 = time.monotonic()
        while time.monotonic() - t0 < 15 and any(p.poll() is None for p in self.clients):
            time.sleep(0.2)
        for p in self.children:
            if p is not emu and p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        time.sleep(1.0)
        if emu.poll() is None:
            emu.send_signal(signal.SIGINT)
            try:
                emu.wait(60)
            except subprocess.TimeoutExpired:
                emu.kill()
                subprocess.run(_lasthop("emu", "down", "--name", self.args.name), capture_output=True)
        for p in self.children:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _emu_result(self) -> dict[str, Any] | None:
        files = sorted(self.out.glob("*-emu-s*.json"), key=lambda p: p.stat().st_mtime)
        if not files:
            return None
        e = json.loads(files[-1].read_text())["data"]["emu"]
        keep = ("wall_ns", "packets_read", "packets_written", "packets_dropped_by_model",
                "packets_unroutable", "tun_write_failures", "lateness_p50_ns", "lateness_p99_ns",
                "lateness_p999_ns", "lateness_max_ns", "lateness_mean_ns", "flows", "pool_slots")
        return {"file": str(files[-1]), **{k: e.get(k) for k in keep}}

    def _iperf_totals(self, n_sta: int) -> list[dict[str, Any]]:
        out = []
        for i in range(n_sta):
            try:
                j = json.loads((self.out / f"iperf-c{i}.json").read_text())
                end = j["end"]["sum_received"]
                if not end.get("bytes"):  # an interrupted client reports only what it sent
                    end = j["end"]["sum_sent"]
                out.append({"station": i, "seconds": end["seconds"], "bytes": end["bytes"],
                            "mbps": end["bits_per_second"] / 1e6,
                            "retransmits": j["end"].get("sum_sent", {}).get("retransmits")})
            except (OSError, ValueError, KeyError) as e:
                out.append({"station": i, "error": f"{type(e).__name__}: {e}"})
        return out

    def _write(self, samples: list[dict[str, Any]], verdict: dict[str, Any], result: Any,
               iperf: list[dict[str, Any]], d: float, warm: float, spec: Path) -> None:
        base = self.out / f"soak-{self.kind}"
        if samples:
            with open(base.with_suffix(".csv"), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(samples[0]))
                w.writeheader()
                w.writerows(samples)
        doc = {"kind": self.kind, "spec": str(spec), "duration_s": d, "every_s": self.args.every,
               "warmup_s": warm, "tolerances": {"rss_mib": RSS_TOL_MIB, "rss_frac": RSS_TOL_FRAC,
                                                 "fds": FD_TOL, "late_factor": LATE_TOL_FACTOR,
                                                 "late_us": LATE_TOL_US},
               "verdict": verdict, "emu_result": result, "iperf3": iperf, "samples": samples}
        base.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
        try:
            plot(samples, verdict, base.with_suffix(".png"), warm)
        except Exception as e:  # noqa: BLE001 - the figures are written; the plot is extra
            print(f"soak: plot failed: {type(e).__name__}: {e}", file=sys.stderr)
        for line in verdict["lines"]:
            print(line)
        if result:
            print(f"emulator (whole run): {result['packets_read']} packets in, {result['packets_written']} out, "
                  f"lateness p50 {result['lateness_p50_ns'] / 1e3:.0f} us p99 {result['lateness_p99_ns'] / 1e3:.0f} us "
                  f"p99.9 {result['lateness_p999_ns'] / 1e3:.0f} us max {result['lateness_max_ns'] / 1e6:.1f} ms")
        for r in iperf:
            if "mbps" in r:
                print(f"iperf3 sta{r['station']}: {r['mbps']:.1f} Mb/s over {r['seconds']:.0f} s")
        print(f"verdict: {'PASS' if verdict['pass'] else 'FAIL'}; {base}.csv/.json/.png")


def judge(samples: list[dict[str, Any]], warm: float, with_tool: bool, n_sta: int = 1) -> dict[str, Any]:
    """The verdict over the samples after the warm-up (module docstring)."""
    s = [x for x in samples if x["t_s"] >= warm]
    checks: dict[str, Any] = {}
    lines: list[str] = []
    if len(s) < 3:
        return {"pass": False, "checks": {}, "lines": ["too few samples after the warm-up to judge"]}
    span = s[-1]["t_s"] - s[0]["t_s"]
    for who in ("emu", "tool") if with_tool else ("emu",):
        # The emulator's A-MPDU log grows by design until it is full (AMPDU_LOG_FULL_S).
        after_log = [x for x in s if x["t_s"] >= AMPDU_LOG_FULL_S + 30]
        allowance = 0.0
        r = s
        if who == "emu":
            if after_log and after_log[-1]["t_s"] >= 3 * AMPDU_LOG_FULL_S:
                r = after_log
            else:
                allowance = 65536 * (8 + 16 * n_sta) / 2**20
        xs = [x["t_s"] for x in r]
        rss = [x[f"{who}_rss_mib"] for x in r]
        slope = _slope(xs, rss)
        rspan = xs[-1] - xs[0]
        growth = slope * rspan
        tol = max(RSS_TOL_MIB, RSS_TOL_FRAC * rss[0]) + allowance
        ok = growth <= tol
        checks[f"{who}_rss"] = {"from_s": xs[0], "start_mib": rss[0], "end_mib": rss[-1], "max_mib": max(rss),
                                "slope_kib_per_h": slope * 1024 * 3600, "growth_mib": growth,
                                "ampdu_log_allowance_mib": allowance, "tolerance_mib": tol, "pass": ok}
        note = f" incl. {allowance:.1f} MiB for the A-MPDU log" if allowance else ""
        lines.append(f"{who} RSS from t={xs[0]:.0f} s: {rss[0]:.1f} -> {rss[-1]:.1f} MiB (max {max(rss):.1f}); "
                     f"fitted growth {growth:+.2f} MiB over {rspan:.0f} s ({slope * 1024 * 3600:+.0f} KiB/h), "
                     f"tolerance {tol:.1f} MiB{note}: {'ok' if ok else 'GROWING'}")
        fds = [x[f"{who}_fds"] for x in s]
        ok = max(abs(f - fds[0]) for f in fds) <= FD_TOL and min(fds) >= 0
        checks[f"{who}_fds"] = {"start": fds[0], "end": fds[-1], "min": min(fds), "max": max(fds), "pass": ok}
        lines.append(f"{who} descriptors: {fds[0]} -> {fds[-1]} (range {min(fds)}..{max(fds)}), tolerance "
                     f"±{FD_TOL}: {'ok' if ok else 'CHANGING'}")
    for key, what in (("late_p99_us", "write lateness p99 per interval"),
                      ("lag_us", "live-line lag (0.1 s resolution)")):
        v = [(x["t_s"], x[key]) for x in s if x[key] is not None]
        if len(v) < 3:
            checks[key] = {"pass": None, "note": "not reported by this emulator build"}
            lines.append(f"{what}: not reported by this build of the emulator (not judged)")
            continue
        third = max(1, len(v) // 3)
        first = statistics.median(y for _, y in v[:third])
        last = statistics.median(y for _, y in v[-third:])
        limit = LATE_TOL_FACTOR * first + LATE_TOL_US
        ok = last <= limit
        checks[key] = {"first_third_median_us": first, "last_third_median_us": last,
                       "max_us": max(y for _, y in v), "limit_us": limit,
                       "slope_us_per_h": _slope([t for t, _ in v], [y for _, y in v]) * 3600, "pass": ok}
        lines.append(f"{what}: median {first:.0f} us (first third) -> {last:.0f} us (last third), max "
                     f"{max(y for _, y in v):.0f} us; limit {limit:.0f} us: {'ok' if ok else 'GROWING'}")
    judged = [c["pass"] for c in checks.values() if c["pass"] is not None]
    return {"pass": all(judged), "checks": checks, "lines": lines}


def plot(samples: list[dict[str, Any]], verdict: dict[str, Any], path: Path, warm: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [x["t_s"] / 60 for x in samples]
    fig, ax = plt.subplots(4, 1, figsize=(9, 10), sharex=True)
    ax[0].plot(t, [x["emu_rss_mib"] for x in samples], label="emulator")
    if samples and "tool_rss_mib" in samples[0]:
        ax[0].plot(t, [x["tool_rss_mib"] for x in samples], label="live tool")
    ax[0].set_ylabel("RSS (MiB)")
    ax[0].legend(loc="lower right")
    ax[1].plot(t, [x["emu_fds"] for x in samples], label="emulator")
    if samples and "tool_fds" in samples[0]:
        ax[1].plot(t, [x["tool_fds"] for x in samples], label="live tool")
    ax[1].set_ylabel("open descriptors")
    ax[1].legend(loc="lower right")
    for key, lab in (("late_p50_us", "lateness p50"), ("late_p99_us", "lateness p99"), ("lag_us", "live-line lag")):
        pts = [(a, x[key]) for a, x in zip(t, samples) if x[key] is not None]
        if pts:
            ax[2].plot([a for a, _ in pts], [b for _, b in pts], label=lab)
    ax[2].set_ylabel("µs")
    ax[2].set_yscale("symlog", linthresh=10)
    ax[2].legend(loc="upper right")
    ax[3].plot(t, [x["goodput_mbps"] or 0 for x in samples], label="goodput through the cell (Mb/s)")
    ax[3].plot(t, [x["rtt_ms"] or 0 for x in samples], label="ping RTT median (ms)")
    ax[3].set_xlabel("minutes")
    ax[3].legend(loc="upper right")
    for a in ax:
        a.axvline(warm / 60, color="grey", lw=0.8, ls=":")
        a.grid(alpha=0.3)
    fig.suptitle(f"soak: {'PASS' if verdict['pass'] else 'FAIL'}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
