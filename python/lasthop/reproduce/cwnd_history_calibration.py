"""The calibration of the cwnd-history suite's paths and router queue (`cwnd_history.PATHS`,
`cwnd_history.ROUTER_QUEUE`), rerunnable:

    python -m lasthop.reproduce.cwnd_history_calibration good --delays 11,12,13 --losses 0.004 \\
        --queues 50 --seeds 200

The paper's Table 1 lost its values and the paper never gives its NetEm router's queue, so both
are calibrated from what the paper says of the DEFAULT window only (never from the history's
results, which the claims test):
- its default latencies (§5.1.1, §5.2.1; `cwnd_history.PAPER_DEFAULT_S`): the error of a grid
  point is the sum over the path's configurations of log(ours / paper)²;
- §5.3: "Packet loss during 1 MB data transmission was more frequent than that during 10 MB data
  transmission in good and average network environments" and, for 1 MB, "both schemes
  experienced greater packet losses than the loss ratio specified in Table 1". A point is
  admissible when, in the simple topology, the default's 1 MB loss ratio exceeds the path's
  random loss and its 10 MB one: per seed the difference, its mean less twice its standard error
  above 0.

Every point runs the default (`history = "none"`) in each configuration: 4 connections per run,
the first not measured (as the suite), seeds 1…N. The best admissible points come first.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys

from . import cwnd_history as ch

CONNECTIONS = 4
# The loss statements of §5.3 are checked on the simple topology's default transfers.
LOSS_CONFIGS = [("simple", "1MB"), ("simple", "10MB")]


def paper_configs(path: str) -> list[tuple[str, str, float]]:
    """(topology, size, the paper's default latency in s) for `path`."""
    return [(t, s, v) for (t, p, s), v in ch.PAPER_DEFAULT_S.items() if p == path]


def point_spec(path: str, topo: str, size: str, delay_ms: float, loss: float, queue: int) -> dict:
    """The suite's spec of one default configuration on a grid point's path and queue."""
    s = ch._spec(f"cwnd-history-calibration-{path}-{topo}-{size}", path, size, CONNECTIONS,
                 n_bg=1 if topo == "dumbbell" else 0)
    s["wired"].update({"delay": f"{delay_ms:g}ms", "loss": loss, "queue_limit": queue})
    # Lossier paths take longer: room for every transfer to end.
    lead = ch.BG_LEAD_S if topo == "dumbbell" else 0.0
    dur = ch._duration_s(path, size, CONNECTIONS, lead) * (2 if loss > 0.006 else 1)
    s["sim"]["duration"] = f"{dur:.1f}s"
    return s


def _lower(xs: list[float]) -> float:
    """Mean less twice its standard error."""
    if len(xs) < 2:
        return float("nan")
    return statistics.mean(xs) - 2.0 * statistics.stdev(xs) / len(xs) ** 0.5


def evaluate(path: str, loss: float, runs: dict[tuple[str, str], dict[int, dict]]) -> dict:
    """A grid point's error and admissibility from its runs: (topology, size) -> seed -> the
    QUIC flow's transfers (the `quic` object of the run's first flow)."""
    def measured(q: dict) -> list[dict]:
        return q["transfers"][1:]

    err, lat = 0.0, {}
    for topo, size, paper in paper_configs(path):
        xs = [t["completion_ns"] / 1e9 for q in runs[(topo, size)].values() for t in measured(q)
              if t["completion_ns"] is not None]
        m = statistics.mean(xs)
        lat[f"{topo} {size}"] = (m, paper)
        err += math.log(m / paper) ** 2

    def loss_ratio(q: dict) -> float:
        sent = sum(t["packets_sent"] for t in measured(q))
        return sum(t["packets_lost"] for t in measured(q)) / sent if sent else 0.0
    one, ten = runs[LOSS_CONFIGS[0]], runs[LOSS_CONFIGS[1]]
    seeds = sorted(set(one) & set(ten))
    l1 = [loss_ratio(one[s]) for s in seeds]
    l10 = [loss_ratio(ten[s]) for s in seeds]
    admissible = _lower([a - loss for a in l1]) > 0 and _lower([a - b for a, b in zip(l1, l10)]) > 0
    return {"error": err, "latency_s": lat, "admissible": admissible,
            "loss_1mb": statistics.mean(l1), "loss_10mb": statistics.mean(l10)}


def grid(path: str, delays: list[float], losses: list[float], queues: list[int], seeds: int, jobs: int,
         progress: bool = True) -> list[dict]:
    """Run every point of the grid and return the points, best admissible first."""
    from ..progress import SweepProgress
    from ..sweeps import _canonical, _code_version, _run_pool, _StopFlag, _validate, SweepInterrupted

    configs = list(dict.fromkeys([(t, s) for t, s, _ in paper_configs(path)] + LOSS_CONFIGS))
    tasks, where = [], {}
    for d, l, q, (topo, size) in itertools.product(delays, losses, queues, configs):
        spec = _validate(point_spec(path, topo, size, d, l, q), "calibration")
        for seed in range(1, seeds + 1):
            key = f"{len(tasks)}"
            where[key] = ((d, l, q), (topo, size), seed)
            tasks.append((key, _canonical(spec.normalized), seed))
    runs: dict = {}
    bar = SweepProgress(len(tasks), label=f"calibration ({path})", quiet=not progress)
    done = 0

    def on_done(key: str, text: str) -> None:
        nonlocal done
        point, cfg, seed = where[key]
        runs.setdefault(point, {}).setdefault(cfg, {})[seed] = json.loads(text)["data"]["flows"][0]["quic"]
        done += 1
        bar.update(done)

    with _StopFlag() as stop:
        finished = _run_pool(tasks, jobs, _code_version(), on_done, stop)
    bar.finish(ok=finished)
    if not finished:
        raise SweepInterrupted(done, 0, len(tasks))
    out = []
    for (d, l, q), r in runs.items():
        out.append({"delay_ms": d, "loss": l, "queue": q, **evaluate(path, l, r)})
    out.sort(key=lambda p: (not p["admissible"], p["error"]))
    return out


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        """One line per problem, no usage dump."""
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog="python -m lasthop.reproduce.cwnd_history_calibration",
                 description=__doc__.split("\n\n")[0])
    ap.add_argument("path", choices=[p for p in ch.PATH_NAMES if paper_configs(p)])
    ap.add_argument("--delays", required=True, help="one-way delays in ms, comma-separated")
    ap.add_argument("--losses", required=True, help="random loss of the data direction, comma-separated")
    ap.add_argument("--queues", required=True, help="router queues in packets, comma-separated")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--top", type=int, default=20, help="points to print")
    a = ap.parse_args(argv)
    problems = []
    parsed = {}
    for key, conv, ok, allowed in (("delays", float, lambda v: v > 0, "positive numbers (ms), comma-separated"),
                                   ("losses", float, lambda v: 0 <= v < 1, "numbers in [0, 1), comma-separated"),
                                   ("queues", int, lambda v: v >= 1, "integers >= 1 (packets), comma-separated")):
        text = getattr(a, key)
        try:
            vals = [conv(x) for x in text.split(",") if x.strip()]
        except ValueError:
            vals = []
        if not vals or not all(ok(v) for v in vals):
            problems.append(f"--{key} = {text}: {allowed}")
        parsed[key] = vals
    if a.seeds < 2:
        problems.append(f"--seeds = {a.seeds}: an integer >= 2 (the admissibility test needs a spread)")
    if a.jobs < 1:
        problems.append(f"--jobs = {a.jobs}: an integer >= 1")
    for p in problems:
        print(f"{ap.prog}: {p}", file=sys.stderr)
    if problems:
        return 2
    delays, losses, queues = parsed["delays"], parsed["losses"], parsed["queues"]
    for p in grid(a.path, delays, losses, queues, a.seeds, a.jobs)[:a.top]:
        lat = "; ".join(f"{k} {m:.3f}/{v:g} s" for k, (m, v) in p["latency_s"].items())
        print(f"{'ok ' if p['admissible'] else 'no '} error {p['error']:.4f}  delay {p['delay_ms']:g} ms  "
              f"loss {p['loss'] * 100:.2g} %  queue {p['queue']}  default loss 1 MB {p['loss_1mb'] * 100:.2f} % "
              f"10 MB {p['loss_10mb'] * 100:.2f} %  {lat}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
