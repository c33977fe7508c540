"""`lasthop sweep --ray ADDRESS` against a real multi-node Ray cluster: a head and a second node
started as separate raylet processes (`ray.cluster_utils.Cluster`). The summary is the local
pool's byte for byte, and a sweep survives a worker node dying under it."""
from __future__ import annotations

import threading
import time

import pytest

from lasthop.sweeps import Sweep, run_sweep

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray>=2.9,<3'; the Makefile does)")
cluster_utils = pytest.importorskip("ray.cluster_utils")

SPEC = """\
name = "raycluster"
[sim]
duration = "400ms"
warmup = "100ms"
seed = 1
bin = "100ms"
[phy]
standard = "vht"
channel_width = 80
[[stations]]
count = 3
mcs = 7
[[flows]]
stations = "all"
direction = "down"
pattern = "tcp"
"""
GRID = [("ap.qdisc", ["fifo", "codel", "fq_codel"]), ("flows[0].cc", ["cubic", "bbr"])]


@pytest.fixture(scope="module")
def cluster():
    c = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    worker = c.add_node(num_cpus=1)
    c.wait_for_nodes()
    yield c, worker
    ray.shutdown()
    c.shutdown()


def _summary_bytes(d):
    return (d / "summary.parquet").read_bytes()


def test_two_node_cluster_sweep_equals_the_local_pool(cluster, tmp_path):
    c, _ = cluster
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    pool = run_sweep(Sweep(spec, GRID, seeds=2), tmp_path / "pool", jobs=2, progress=False)
    remote = run_sweep(Sweep(spec, GRID, seeds=2), tmp_path / "ray", jobs=2, ray=c.address, progress=False)
    assert pool.executed == remote.executed == 12
    assert _summary_bytes(tmp_path / "pool") == _summary_bytes(tmp_path / "ray")
    assert len(c.list_all_nodes()) == 2 and all(n.remaining_processes_alive() for n in c.list_all_nodes())
    for r in pool.runs:
        assert (tmp_path / "pool" / r["file"]).read_bytes() == (tmp_path / "ray" / r["file"]).read_bytes()


def test_a_sweep_survives_its_worker_node_dying(cluster, tmp_path):
    c, worker = cluster
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace('duration = "400ms"', 'duration = "3s"'))
    grid = GRID + [("stations[0].mcs", [5, 7, 9])]

    # The node dies once the first run is on disk, so the sweep is certainly under way, and the
    # test fails if all 36 were already done by then (nothing would have been survived).
    runs = tmp_path / "ray" / "runs"
    killed = {}

    def kill_when_under_way():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(runs.glob("*.json")):
            time.sleep(0.005)
        killed["done_before"] = len(list(runs.glob("*.json")))
        c.remove_node(worker, allow_graceful=False)

    t = threading.Thread(target=kill_when_under_way)
    t.start()
    res = run_sweep(Sweep(spec, grid, seeds=2), tmp_path / "ray", jobs=2, ray=c.address, progress=False)
    t.join()
    assert 0 < killed["done_before"] < 36, f"{killed['done_before']} of 36 runs were done when the node died"
    assert len(c.list_all_nodes()) == 1
    assert res.executed + res.cached == 36
    # The same grid on the local pool gives the same summary: nothing was lost or run twice.
    pool = run_sweep(Sweep(spec, grid, seeds=2), tmp_path / "pool", jobs=2, progress=False)
    assert _summary_bytes(tmp_path / "pool") == _summary_bytes(tmp_path / "ray")
    # And a second run on the (now one-node) cluster finds everything done.
    again = run_sweep(Sweep(spec, grid, seeds=2), tmp_path / "ray", jobs=2, ray=c.address, progress=False)
    assert again.executed == 0 and again.cached == 36
