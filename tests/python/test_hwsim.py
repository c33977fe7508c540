"""`lasthop-live wqm` against a real kernel's mac80211: a VM (tests/vm/hwsim_vm.py) boots
Debian's kernel with mac80211_hwsim, hostapd as an AP on one radio and an associated station
on the other, and runs the standalone binary there. Control plane only (hwsim has no real
airtime): the tool finds the phy and its AP interface, reads the station dump and survey,
sets the phy's TXQ limit through nl80211, restores it on SIGTERM, and after a SIGKILL restores
it at its next start; bad input is one line and exit 2 and changes nothing. `iw phy phy0 get
txq` (the kernel's own view) checks every step.

Skips with the harness's reason where the VM cannot run (no /dev/kvm, no qemu and no way to
install it, Debian's packages unreachable). The first run downloads ~115 MB into
/var/cache/lasthop-hwsim-vm.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "vm"))
import hwsim_vm  # noqa: E402

# The standalone binary: the newest of `make build`'s and `cargo test`'s.
_candidates = [p for p in (ROOT / ".venv" / "bin" / "lasthop-live", ROOT / "target" / "release" / "lasthop-live",
                           ROOT / "target" / "debug" / "lasthop-live") if p.exists()]
BINARY = max(_candidates, key=lambda p: p.stat().st_mtime) if _candidates else ROOT / "target" / "debug" / "lasthop-live"

SCRIPT = r"""
set -u
mkdir -p out
B=/host/lasthop-live
limit() { iw phy phy0 get txq | sed -n 's/^Packet limit:[[:space:]]*\([0-9]*\) pkts/\1/p'; }
echo "LIMIT0 $(limit)"
$B wqm --phy phy0 --show > out/show.json; echo "SHOW $?"
# Sizing: the daemon runs, the kernel's limit moves; SIGTERM puts it back.
$B wqm --phy phy0 --interval 20ms -q --record out/rec.jsonl 2> out/run1.err &
P=$!; sleep 3; echo "LIMIT1 $(limit)"
kill -TERM $P; wait $P; echo "TERM $?"; echo "LIMIT2 $(limit)"
# SIGKILL leaves it; the next start restores it first.
$B wqm --iface wlan0 --interval 20ms -q 2> out/run2.err &
P=$!; sleep 1.5; kill -KILL $P; wait $P; echo "LIMIT3 $(limit)"
$B wqm --phy phy0 --interval 20ms 2> out/run3.err &
P=$!; sleep 1.5; kill -TERM $P; wait $P; echo "LIMIT4 $(limit)"
# Bad input: one line, exit 2, nothing changed.
$B wqm --phy phy9 2> out/bad1.err; echo "BAD1 $?"
$B wqm --iface nope0 2> out/bad2.err; echo "BAD2 $?"
$B wqm --phy phy0 --limit 3x 2> out/bad3.err; echo "BAD3 $?"
echo "LIMIT5 $(limit)"
ls /run/lasthop/wqm/ 2>/dev/null | wc -l | sed 's/^/RECORDS /'
"""

_reason = None if BINARY.exists() else "lasthop-live not built (make build, or cargo build -p lasthop-live)"
if _reason is None:
    _reason = hwsim_vm.available()


@pytest.mark.skipif(_reason is not None, reason=_reason or "")
def test_wqm_on_a_real_mac80211_phy(tmp_path):
    out = tmp_path / "out"
    code, console = hwsim_vm.run(SCRIPT, files={"lasthop-live": str(BINARY)}, timeout=240,
                                 out_dir=out)
    text = hwsim_vm.script_output(console)
    assert code == 0, console[-4000:]
    v = dict(line.split(" ", 1) for line in text.splitlines()
             if line.split(" ", 1)[0].isupper() and " " in line)
    assert v["LIMIT0"] == "8192", text  # mac80211's default fq limit
    assert v["SHOW"] == "0"
    show = json.loads((out / "show.json").read_text())
    assert show["limit"] == 8192 and show["stations"] == 1, show
    assert show["via"] == "the kernel's nl80211", show
    assert show["rate_bps"] > 0 and show["aggregate"] >= 1, show
    # Sized: B_max at the default 600 Mb/s top rate is 95 packets here, then the initial stage.
    assert 1 <= int(v["LIMIT1"]) <= 95, text
    assert v["TERM"] == "0", (out / "run1.err").read_text()
    assert v["LIMIT2"] == "8192", text
    assert int(v["LIMIT3"]) <= 95, text
    err3 = (out / "run3.err").read_text()
    assert "restored the TXQ limit of phy0 (8192 packets) left by a wqm that did not exit cleanly" in err3, err3
    assert v["LIMIT4"] == "8192", text
    for k, want in (("1", "no such phy (phys: phy0)"), ("2", "no such interface"), ("3", "--limit")):
        err = (out / f"bad{k}.err").read_text()
        assert v[f"BAD{k}"] == "2" and err.count("\n") == 1 and want in err, (k, err)
    assert v["LIMIT5"] == "8192"
    assert v["RECORDS"] == "0", "every record removed"
    rec = [json.loads(x) for x in (out / "rec.jsonl").read_text().splitlines()]
    assert len(rec) > 20
    assert {x["station"] for x in rec} == {"02:00:00:00:01:00"}


def test_a_guest_panic_before_init_boots_again_then_gives_up(tmp_path, monkeypatch):
    """The harness's own logic, without a VM: a 'qemu' that prints a kernel panic and exits
    before /init is booted three times in all, and the run ends as a crash (-1) whose console
    keeps every attempt; one that reaches /init and panics later is not booted again."""
    calls = tmp_path / "calls"
    fake = tmp_path / "qemu"
    fake.write_text("#!/bin/sh\necho x >> " + str(calls) + "\n"
                    "[ -n \"$LATE\" ] && echo 'lasthop-vm: init started'\n"
                    "echo '[    2.48] Kernel panic - not syncing: Fatal exception in interrupt'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(hwsim_vm, "prepare", lambda *a, **k: {"kernel": "k", "initramfs": "i", "kernel_release": "r"})
    monkeypatch.setattr(hwsim_vm, "ensure_qemu", lambda: str(fake))
    monkeypatch.setattr(hwsim_vm, "choose_accel", lambda q: (["-accel", "tcg"], "tcg (test)"))
    code, console = hwsim_vm.run("true", timeout=30)
    assert code == -1 and len(calls.read_text().split()) == 1 + hwsim_vm.BOOT_PANIC_RETRIES, console
    assert console.count("panicked before /init: booting again") == hwsim_vm.BOOT_PANIC_RETRIES, console
    calls.unlink()
    monkeypatch.setenv("LATE", "1")
    code, console = hwsim_vm.run("true", timeout=30)
    assert code == -1 and len(calls.read_text().split()) == 1 and "booting again" not in console, console
