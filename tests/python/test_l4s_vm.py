"""Kernel DCTCP across the emulator: this host's kernel has no tcp_dctcp, so the VM harness
(tests/vm/hwsim_vm.py) boots Debian's kernel, which has it as a module, and runs the host's own
userland there (`run(host_root=True)`: Python, iperf3 and this checkout's build, shared
read-only). Inside, `lasthop bench --live l4s`'s cell runs one point: a DCTCP download (both ends
DCTCP, ECT(0)) to station 0 beside a CUBIC one without ECN to station 1, the AP marking CE at a
5 ms sojourn threshold in mac80211's FQ-CoDel, the pull driver; then the simulator's same spec.
The cell is the bench's `vht20` (20 MHz MCS 4, 2 × 39 Mb/s): this machine's /dev/kvm cannot run a
stock kernel, so the VM is emulated (TCG) and a faster cell would leave the emulator behind its
instants (at 2 × 780 Mb/s its writes were 13-16 ms late at p99; here about 2 ms).

Skips with the harness's reason where the VM cannot run, or when not root or iperf3 is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "vm"))
import hwsim_vm  # noqa: E402

SECONDS = 12

SCRIPT = r"""
set -u
modprobe tun; modprobe tcp_dctcp
host_keep @ROOT@ || exit 125
host_chroot sh -c 'cd @ROOT@ && .venv/bin/python - <<"PY"
import json, tempfile
from pathlib import Path
from lasthop.live import bench_l4s as b
assert b.kernel_cc_problem("dctcp") is None, b.kernel_cc_problem("dctcp")
tmp = Path(tempfile.mkdtemp())
script = tmp / "l4s.sh"; script.write_text(b.L4S); script.chmod(0o755)
doc = b.cell("pull", "5ms", @SECS@, "dctcp", "vht20")
run = tmp / "run"; run.mkdir()
emu = b._emulate(doc, run, script, @SECS@, "dctcp")
sim = b._simulate(doc, 1)[0]
Path("/tmp/host/out/point.json").write_text(json.dumps({"emulator": emu, "simulator": sim}))
PY'
"""


def _reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (the VM's 9p share of /)"
    if shutil.which("iperf3") is None:
        return "needs iperf3 on the host (the VM runs the host's userland)"
    if not (ROOT / ".venv" / "bin" / "python").exists():
        return "needs the project's .venv (make .venv/.native-stamp)"
    return hwsim_vm.available()


_why = _reason()


@pytest.mark.skipif(_why is not None, reason=_why or "")
def test_kernel_dctcp_across_the_emulator_in_the_vm_kernel(tmp_path):
    script = SCRIPT.replace("@ROOT@", str(ROOT)).replace("@SECS@", str(SECONDS))
    code, console = hwsim_vm.run(script, wifi=False, host_root=True, smp=2, memory_mb=3072,
                                 timeout=420, out_dir=tmp_path)
    assert code == 0, hwsim_vm.script_output(console)[-4000:] or console[-4000:]
    point = json.loads((tmp_path / "point.json").read_text())
    emu, sim = point["emulator"], point["simulator"]
    # Both ends of the ECN download ran the VM kernel's DCTCP, and the model marked its packets.
    assert emu["kernel_cc"] == ["dctcp", "dctcp"], emu
    assert emu["ce_marked"] > 100, emu
    # The marks hold DCTCP's queue near the threshold, far below the unmarked CUBIC flow's
    # (44-48 ms at p99 here), on both hosts, and it still moves data.
    for host, x in (("emulator", emu), ("simulator", sim)):
        assert x["ecn_mbps"] > 0.5, (host, x)
        assert x["ecn_p50_ms"] < 10.0, (host, x)
        assert x["ecn_p99_ms"] < 0.6 * x["plain_p99_ms"], (host, x)
    # The kernel's DCTCP and the model's agree on its median queueing delay (measured 5.3 and
    # 5.7 ms) and, from iperf3's own count, on its share of the cell (5.8 of 29.6 Mb/s, and 5.0
    # of 30.9 in the model).
    assert abs(emu["ecn_p50_ms"] - sim["ecn_p50_ms"]) < 2.5, point
    share = emu["iperf_mbps"][0] / sum(emu["iperf_mbps"])
    model_share = sim["ecn_mbps"] / (sim["ecn_mbps"] + sim["plain_mbps"])
    assert 0.5 * model_share < share < 2.0 * model_share, point
