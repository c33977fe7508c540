#!/usr/bin/env python3
"""Boot a real Debian kernel with mac80211_hwsim under qemu and run commands in it.

This is a test harness for lasthop's live network tools: the host container has
no wireless stack, so we boot a small VM that does.

What it does
------------
``prepare(cache_dir)`` (from ``vm_image.py``, the boot image)
    Downloads (``apt-get download``, nothing is installed on the host) a Debian
    kernel image, busybox-static, hostapd, iw, tcpdump, iproute2, wireless-regdb
    and every shared library those need, extracts them with ``dpkg-deb -x`` and
    builds a gzip'd newc initramfs holding the tools, the libraries, the kernel
    modules we need (with their modules.dep closure, decompressed) and an
    ``/init`` script.  Everything lives in a cache directory outside the repo
    (``$LASTHOP_VM_CACHE`` or ``/var/cache/lasthop-hwsim-vm``); images are keyed
    by the sha256 of their inputs, so a second call only checks a manifest.

``run(script, files={}, timeout=120)``
    Boots ``qemu-system-x86_64 -enable-kvm -cpu host -m 512 -nographic
    -no-reboot`` with that kernel and initramfs (TCG software emulation instead
    when /dev/kvm cannot run a stock kernel, see ``kvm_problem``).  The
    guest mounts a 9p share (a temp dir holding the caller's files) at /host,
    loads ``mac80211_hwsim radios=2``, moves the second radio into network
    namespace ``sta``, starts hostapd (open network, 5 GHz channel 36 VHT80 in
    country US; 2.4 GHz channel 6 HT20 as a fallback) on wlan0, connects wlan1
    with ``iw connect``, waits for the station to show up at the AP, sets
    192.168.77.1/24 (AP) and 192.168.77.2/24 (station), pings both ways, then
    runs ``script`` with ``sh`` in /host and powers off.  Returns
    ``(exit_code, console_text)``: the script's exit code (125 if the wifi
    setup failed, -1 if the VM died or timed out) and everything the guest
    printed on its serial console.  The script's own output sits between the
    lines ``==== lasthop-vm: script begin ====`` and ``==== lasthop-vm: script
    end rc=N ====`` (see ``script_output``).  Files the script writes to
    /host/out/ are copied to ``out_dir`` if one is given.

``available()``
    ``None`` if the VM can run here, else a one-line reason to skip tests.

CLI
---
    python3 tests/vm/hwsim_vm.py prepare [--kernel bookworm|bookworm-backports]
    python3 tests/vm/hwsim_vm.py run -- 'iw dev'
    python3 tests/vm/hwsim_vm.py run --file lasthop-live=/path/to/bin -- '/host/lasthop-live --help'
    python3 tests/vm/hwsim_vm.py record-nl80211     # regenerates reference/nl80211/
    python3 tests/vm/hwsim_vm.py [--kernel K] check-txq   # hwsim iTXQ support?
    python3 tests/vm/hwsim_vm.py available

Environment: LASTHOP_VM_CACHE (cache dir), LASTHOP_VM_KERNEL (bookworm-backports,
the default, or bookworm), LASTHOP_VM_ACCEL (auto, kvm or tcg), LASTHOP_VM_SMP.

Python 3.11 standard library only.  Needs root (apt-get, the 9p share), Debian
apt/dpkg-deb, and qemu-system-x86 (installed with apt-get if missing).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TextIO

from vm_image import (  # the boot image, a sibling module
    DEFAULT_CACHE, DEFAULT_KERNEL, HERE, KERNELS, REPO, cache_root, log, prepare,
)


# Prepended to the script of run(host_root=True): the host's userland (Python, iperf3, the
# project's build) under the VM's kernel, for what the host's kernel lacks (tcp_dctcp).
HOST_CHROOT = r"""host_mount() {
    [ -d /hostroot/tmp/host ] && return 0
    mkdir -p /hostroot /mnt/host-tmp
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot /hostroot || return 125
    for d in proc sys dev; do mount --bind /$d /hostroot/$d || return 125; done
    mount -t devpts devpts /hostroot/dev/pts 2>/dev/null
    mount --bind /hostroot/tmp /mnt/host-tmp || return 125
    mount -t tmpfs tmpfs /hostroot/tmp && mount -t tmpfs tmpfs /hostroot/run || return 125
    mkdir -p /hostroot/tmp/host /hostroot/run/netns && mount --bind /host /hostroot/tmp/host || return 125
}
host_keep() {
    # A host path under /tmp (hidden by the fresh tmpfs): bound back in, read-only as the rest.
    host_mount || return $?
    case "$1" in
        /tmp/*) mkdir -p "/hostroot$1" && mount --bind "/mnt/host-tmp/${1#/tmp/}" "/hostroot$1" ;;
    esac
}
host_chroot() {
    host_mount || return $?
    chroot /hostroot /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/tmp LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 MPLCONFIGDIR=/tmp "$@"
}
"""



# --------------------------------------------------------------------------
# qemu
# --------------------------------------------------------------------------

def _qemu_binary() -> str | None:
    return shutil.which("qemu-system-x86_64")


def ensure_qemu() -> str:
    """Path of qemu-system-x86_64, installing Debian's qemu-system-x86 if missing."""
    q = _qemu_binary()
    if q:
        return q
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError("qemu-system-x86_64 not found and cannot apt-get install qemu-system-x86")
    log("installing qemu-system-x86 (apt-get install --no-install-recommends)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    r = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends",
                        "qemu-system-x86"], env=env, text=True, capture_output=True)
    if r.returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], capture_output=True)
        r = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends",
                            "qemu-system-x86"], env=env, text=True, capture_output=True)
    q = _qemu_binary()
    if not q:
        raise RuntimeError("apt-get install qemu-system-x86 failed: "
                           + (r.stderr.strip().splitlines() or ["?"])[-1])
    return q


_cpu_cache: dict[str, str] = {}


def _cpu_model(qemu: str) -> str:
    """'host', unless this (nested) KVM refuses the host's
    IA32_ARCH_CAPABILITIES MSR ("failed to set MSR 0x10a"), as some cloud
    hypervisors do: then 'host,-arch-capabilities'."""
    if qemu not in _cpu_cache:
        _cpu_cache[qemu] = "host"
        for cpu in ("host", "host,-arch-capabilities"):
            r = subprocess.run([qemu, "-enable-kvm", "-cpu", cpu, "-m", "64", "-display", "none",
                                "-no-reboot", "-nic", "none", "-nodefaults", "-S",
                                "-monitor", "stdio", "-serial", "none"],
                               input="quit\n", capture_output=True, text=True, timeout=30)
            # -S: the vCPU is set up (where the MSR error hits), nothing runs,
            # and the monitor's "quit" ends qemu
            if "failed to set MSR" not in r.stderr:
                _cpu_cache[qemu] = cpu
                break
    return _cpu_cache[qemu]


def kvm_problem() -> str | None:
    """None if /dev/kvm can run an unmodified kernel at native speed, else why not."""
    if not os.path.exists("/dev/kvm"):
        return "no /dev/kvm"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "/dev/kvm is not accessible to this user"
    try:
        flags = set(re.search(r"^flags\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
                    .group(1).split())
    except (OSError, AttributeError):
        flags = set()
    if os.path.exists("/sys/module/kvm_pvm") and not flags & {"vmx", "svm"}:
        # PVM ("pagetable-based virtual machine") provides /dev/kvm inside a VM
        # without hardware virtualization; it runs only PVM-enabled guest
        # kernels fast and emulates everything else instruction by instruction
        # (a stock kernel does not get past its decompressor in minutes).
        return "/dev/kvm is PVM (kvm_pvm, no VT-x/AMD-V): stock kernels crawl"
    return None


KVM_STALL_S = 30.0
BOOT_PANIC_RETRIES = 2   # boots again after a guest panic before /init
_kvm_stalled: list[str] = []   # set when a KVM boot never reached /init


def choose_accel(qemu: str) -> tuple[list[str], str]:
    """qemu accelerator arguments and a note on why: KVM when it is real,
    else TCG (software emulation, slower but correct).  $LASTHOP_VM_ACCEL=
    kvm|tcg forces one."""
    want = os.environ.get("LASTHOP_VM_ACCEL", "auto")
    problem = kvm_problem() or (_kvm_stalled[-1] if _kvm_stalled else None)
    if want == "kvm" or (want == "auto" and problem is None):
        return ["-enable-kvm", "-cpu", _cpu_model(qemu)], "kvm"
    return ["-accel", "tcg,thread=multi", "-cpu", "max"], f"tcg ({problem or 'forced'})"


_available_cache: dict[str, str | None] = {}


def available(cache_dir: str | os.PathLike | None = None) -> str | None:
    """None if the VM can run here, else a one-line reason.  May install qemu
    and run prepare() (downloads, minutes the first time)."""
    key = str(cache_root(cache_dir))
    if key in _available_cache:
        return _available_cache[key]
    reason = None
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        reason = "hwsim VM needs an x86_64 Linux host"
    elif not os.path.exists("/dev/kvm"):
        reason = "no /dev/kvm"
    elif not os.access("/dev/kvm", os.R_OK | os.W_OK):
        reason = "/dev/kvm is not accessible to this user"
    elif not shutil.which("dpkg-deb") or not shutil.which("apt-get"):
        reason = "no apt-get/dpkg-deb to fetch the Debian kernel and tools"
    else:
        try:
            ensure_qemu()
        except Exception as e:  # noqa: BLE001 - reason for a skip
            reason = str(e).splitlines()[0]
    if reason is None:
        try:
            prepare(cache_dir)
        except Exception as e:  # noqa: BLE001
            reason = "cannot prepare the VM image: " + (str(e).splitlines() or [type(e).__name__])[0]
    _available_cache[key] = reason
    return reason


# Timings and clean script output of the last run() in this process.
last_run: dict = {}

SCRIPT_BEGIN = "==== lasthop-vm: script begin ===="
_ANSI_RE = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|c)")
_END_RE = re.compile(r"^==== lasthop-vm: script end rc=(-?\d+) ====$", re.M)


def script_output(console: str) -> str:
    """The part of a run()'s console text printed while the script ran."""
    start = console.find(SCRIPT_BEGIN)
    if start < 0:
        return ""
    body = console[start + len(SCRIPT_BEGIN) + 1:]
    m = _END_RE.search(body)
    return body[: m.start()] if m else body


def run(script: str, files: dict[str, str | os.PathLike] | None = None, timeout: float = 120,
        *, out_dir: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None,
        kernel: str | None = None, wifi: bool = True, echo: "bool | TextIO" = False,
        memory_mb: int = 512, smp: int | None = None, host_root: bool = False) -> tuple[int, str]:
    """Boot the VM, set up AP + station (unless wifi=False), run `script`
    with sh in /host, power off.  Returns (exit_code, console_text).

    files: guest name -> host path; each is copied to /host/<name> (mode kept).
    out_dir: files the script writes under /host/out/ are copied there.
    echo: also stream the console while it runs (True: to stderr; or a file).
    smp: virtual CPUs (default: $LASTHOP_VM_SMP or 1).
    host_root: also share the host's / read-only (9p tag `hostroot`); the script's
    `host_chroot CMD...` (HOST_CHROOT) runs CMD in it under the VM's kernel, with the
    VM's /proc, /sys, /dev, fresh /tmp and /run, and the share at /tmp/host;
    `host_keep PATH` brings a host path under /tmp back into view.
    exit_code: the script's; 125 if the wifi setup failed; -1 if the VM
    crashed or timed out (the console text says which)."""
    man = prepare(cache_dir, kernel)
    qemu = ensure_qemu()
    share = Path(tempfile.mkdtemp(prefix="lasthop-vm-"))
    try:
        meta = _fill_share(share, script, files, host_root)
        append = "console=ttyS0 quiet panic=-1 rdinit=/init"
        if not wifi:
            append += " lasthop.wifi=0"
        stream = sys.stderr if echo is True else (echo or None)
        lines: list[str] = []
        boot = _boot(qemu, man, share, append, lines, timeout=timeout, memory_mb=memory_mb,
                     smp=smp, host_root=host_root, stream=stream)
        console = "\n".join(lines) + "\n"
        code = -1
        exit_file = meta / "exit"
        if exit_file.exists() and exit_file.read_text().strip().lstrip("-").isdigit():
            code = int(exit_file.read_text().strip())
        else:
            m = re.findall(r"^LASTHOP_VM_EXIT=(-?\d+)$", console, re.M)
            if m:
                code = int(m[-1])
        if boot["timed_out"]:
            console += f"[hwsim_vm] TIMEOUT: VM killed after {timeout} s\n"
            code = -1
        elif code == -1:
            console += f"[hwsim_vm] VM exited (qemu rc={boot['returncode']}) without an exit code\n"
        if out_dir is not None:
            _copy_tree(share / "out", Path(out_dir))
        marks = boot["marks"]
        last_run.clear()
        last_run.update({
            "boot_to_init_s": round(marks.get("init", -1), 2),
            "boot_to_script_s": round(marks.get("script", -1), 2),
            "total_s": round(marks["total"], 2),
            "script_output": (meta / "script.out").read_text(errors="replace")
            if (meta / "script.out").exists() else script_output(console),
            "kernel_release": man["kernel_release"],
            "accel": boot["accel"],
        })
        return code, console
    finally:
        shutil.rmtree(share, ignore_errors=True)


def _fill_share(share: Path, script: str, files: dict[str, str | os.PathLike] | None,
                host_root: bool) -> Path:
    """Put the script and the caller's files in the directory the guest mounts at /host;
    return its metadata directory (the script, its output and exit code)."""
    meta = share / ".lasthop"
    meta.mkdir()
    body = script if script.endswith("\n") else script + "\n"
    (meta / "script.sh").write_text(HOST_CHROOT + body if host_root else body)
    for name, src in (files or {}).items():
        if "/" in name or name.startswith("."):
            raise ValueError(f"file name {name!r} must be a plain name")
        shutil.copy2(src, share / name)
    (share / "out").mkdir()
    return meta


def _copy_tree(src: Path, dst: Path) -> None:
    """Copy the files under `src` to `dst`, keeping their relative paths."""
    dst.mkdir(parents=True, exist_ok=True)
    for p in sorted(src.rglob("*")):
        if p.is_file():
            t = dst / p.relative_to(src)
            t.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, t)


def _boot(qemu: str, man: dict, share: Path, append: str, lines: list[str], *, timeout: float,
          memory_mb: int, smp: int | None, host_root: bool, stream: "TextIO | None") -> dict:
    """Boot the VM until it powers off (or `timeout`), its console appended to `lines`.
    A KVM that does not reach /init soon is given up for TCG; a kernel that panics before
    /init is booted again. Returns timed_out, the qemu returncode, the accelerator used and
    the instants (s from boot) /init and the script started, and the total."""
    proc = None
    panics_before_init = 0
    try:
        while True:
            accel, why = choose_accel(qemu)
            cmd = [qemu, *accel, "-m", str(memory_mb),
                   "-smp", str(smp or os.environ.get("LASTHOP_VM_SMP", "1")),
                   "-nographic", "-no-reboot", "-nic", "none",
                   "-kernel", man["kernel"], "-initrd", man["initramfs"], "-append", append,
                   "-virtfs", f"local,path={share},mount_tag=host,security_model=none,id=host"]
            if host_root:
                cmd += ["-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,id=hostroot,"
                        "readonly=on,multidevs=remap"]
            if stream:
                log(f"booting {man['kernel_release']} with {why}")
            t0 = time.monotonic()
            first_line = len(lines)
            marks: dict[str, float] = {}
            init_seen = threading.Event()
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT)

            def reader(proc: subprocess.Popen = proc, t0: float = t0,
                       marks: dict = marks, init_seen: threading.Event = init_seen) -> None:
                assert proc.stdout
                for raw in proc.stdout:
                    line = raw.decode("utf-8", "replace").rstrip("\r\n").replace("\r", "")
                    line = _ANSI_RE.sub("", line)  # SeaBIOS clears the screen
                    lines.append(line)
                    if stream:
                        print(line, file=stream, flush=True)
                    if "lasthop-vm:" in line:
                        if "init started" in line:
                            marks.setdefault("init", time.monotonic() - t0)
                            init_seen.set()
                        elif line == SCRIPT_BEGIN:
                            marks.setdefault("script", time.monotonic() - t0)

            th = threading.Thread(target=reader, daemon=True)
            th.start()
            if accel[0] == "-enable-kvm" and os.environ.get("LASTHOP_VM_ACCEL", "auto") == "auto":
                # A stock kernel boots to /init in ~2 s with working KVM; if it
                # is nowhere near that, this KVM is unusable: retry with TCG.
                if not init_seen.wait(min(KVM_STALL_S, timeout)) and proc.poll() is None:
                    proc.kill()
                    proc.wait()
                    th.join(timeout=5)
                    proc.stdout.close()
                    _kvm_stalled.append(f"no /init after {KVM_STALL_S} s with KVM")
                    lines.append(f"[hwsim_vm] KVM boot stalled ({_kvm_stalled[-1]}): retrying with TCG")
                    continue
            timed_out = False
            try:
                proc.wait(timeout=max(1.0, timeout - (time.monotonic() - t0)))
            except subprocess.TimeoutExpired:
                timed_out = True
                proc.kill()
                proc.wait()
            th.join(timeout=5)
            proc.stdout.close()
            if (not timed_out and "init" not in marks and panics_before_init < BOOT_PANIC_RETRIES
                    and any("Kernel panic" in ln for ln in lines[first_line:])):
                # The guest kernel died while booting, before /init and so before
                # anything of the caller's ran (seen: an int3 oops in
                # sched_clock_cpu during static-key patching with two vCPUs under
                # nested KVM).  Nothing of the test has run: boot it again.
                panics_before_init += 1
                lines.append("[hwsim_vm] the guest kernel panicked before /init: booting again")
                continue
            marks["total"] = time.monotonic() - t0
            return {"timed_out": timed_out, "returncode": proc.returncode, "accel": why, "marks": marks}
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()


# --------------------------------------------------------------------------
# record-nl80211: reference captures for the netlink codec
# --------------------------------------------------------------------------

RECORD_SCRIPT = r"""
set -u
OUT=/host/out
modprobe nlmon
ip link add nlmon0 type nlmon
ip link set nlmon0 up

# start a capture of everything on nlmon0 into $OUT/$1.pcap
cap_start() {
    rm -f /tmp/tcpdump.err
    tcpdump -i nlmon0 --immediate-mode -U -Z root -s 0 -w "$OUT/$1.pcap" 2>/tmp/tcpdump.err &
    CAP_PID=$!
    i=0; while ! grep -q 'listening on' /tmp/tcpdump.err 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
    sleep 0.3
}
cap_stop() {
    sleep 0.3
    kill -INT $CAP_PID
    wait $CAP_PID
    cat /tmp/tcpdump.err | grep -v '^tcpdump: listening' >&2
}
# run a command, saving what it printed to $OUT/$TOPIC.txt (after a "$ cmd"
# line, followed by an "[exit N]" line)
rec() {
    if [ -n "${NOCAP:-}" ]; then
        echo "\$ $*    # run after the capture stopped: not in $TOPIC.pcap" >> "$OUT/$TOPIC.txt"
    else
        echo "\$ $*" >> "$OUT/$TOPIC.txt"
    fi
    "$@" > /tmp/rec.out 2>&1
    rc=$?
    cat /tmp/rec.out >> "$OUT/$TOPIC.txt"
    echo "[exit $rc]" >> "$OUT/$TOPIC.txt"
}
# rec, but if the output equals file $1 only say so (naming $2), to keep the
# checked-in text small
rec_same() {
    ref=$1 name=$2; shift 2
    echo "\$ $*" >> "$OUT/$TOPIC.txt"
    "$@" > /tmp/rec.out 2>&1
    rc=$?
    if cmp -s /tmp/rec.out "$ref"; then
        echo "(output identical to that of the same command in $name, not repeated here)" >> "$OUT/$TOPIC.txt"
    else
        cat /tmp/rec.out >> "$OUT/$TOPIC.txt"
    fi
    echo "[exit $rc]" >> "$OUT/$TOPIC.txt"
}

{
    echo "uname: $(uname -a)"
    echo "iw: $(iw --version)"
    echo "hostapd: $(hostapd -v 2>&1 | head -1)"
    echo "tcpdump: $(tcpdump --version 2>&1 | head -1)"
    echo "libpcap: $(tcpdump --version 2>&1 | sed -n 2p)"
    echo "iproute2: $(ip -V)"
    echo "busybox: $(busybox 2>&1 | head -1)"
    echo "ap: $(iw dev wlan0 info | grep -E 'channel' | sed 's/^[[:space:]]*//')"
} > $OUT/environment.txt

# traffic so that tx/rx counters and TXQ stats are non-zero: pings with
# 1400-byte payloads both ways (busybox has no UDP/flood generator)
ip netns exec sta ping -q -c 300 -i 0.01 -s 1400 192.168.77.1 >/dev/null &
ping -q -c 300 -i 0.01 -s 1400 192.168.77.2
wait

TOPIC=station-dump; cap_start $TOPIC
rec iw dev wlan0 station dump
rec iw dev wlan0 station dump -v
cap_stop

TOPIC=survey-dump; cap_start $TOPIC
rec iw dev wlan0 survey dump
cap_stop

# `iw phy phy0 get txq` prints the TXQ limit/memory_limit/quantum (which
# `iw phy info` does not) but costs another full GET_WIPHY dump, so it runs
# after the capture has stopped: text only.
TOPIC=wiphy; cap_start $TOPIC
rec iw phy phy0 info
cap_stop
cp /tmp/rec.out /tmp/wiphy-info.out
NOCAP=1; rec iw phy phy0 get txq; NOCAP=

TOPIC=txq-limit; cap_start $TOPIC
rec iw phy phy0 set txq limit 1234
rec_same /tmp/wiphy-info.out wiphy.txt iw phy phy0 info
cap_stop
NOCAP=1; rec iw phy phy0 get txq; NOCAP=

TOPIC=interface; cap_start $TOPIC
rec iw dev wlan0 info
cap_stop

TOPIC=rtnetlink-link; cap_start $TOPIC
rec ip link set dev wlan0 txqueuelen 777
rec ip -d link show wlan0
cap_stop

TOPIC=rtnetlink-qdisc; cap_start $TOPIC
rec tc qdisc replace dev wlan0 root fq_codel limit 1500
rec tc -s qdisc show dev wlan0
rec tc qdisc del dev wlan0 root
rec tc qdisc replace dev wlan0 root pfifo limit 300
rec tc -s qdisc show dev wlan0
cap_stop

ls -l $OUT
"""


CHECK_TXQ_SCRIPT = r"""
ok=0
echo "\$ iw phy phy0 info | grep TXQS"
iw phy phy0 info | grep TXQS || { echo "(no NL80211_EXT_FEATURE_TXQS)"; ok=1; }
echo "\$ iw phy phy0 set txq limit 1234"
iw phy phy0 set txq limit 1234 || ok=1
echo "\$ iw phy phy0 get txq"
iw phy phy0 get txq || ok=1
iw phy phy0 get txq 2>/dev/null | grep -q 'limit:.*1234' || ok=1
echo "\$ iw dev wlan0 station dump -v | grep -A3 TXQs"
iw dev wlan0 station dump -v | grep -A3 TXQs || { echo "(no per-TID TXQ stats)"; ok=1; }
exit $ok
"""


def record_nl80211(out_dir: str | os.PathLike, timeout: float = 240) -> int:
    out = Path(out_dir)
    tmp = Path(tempfile.mkdtemp(prefix="lasthop-rec-"))
    try:
        code, console = run(RECORD_SCRIPT, timeout=timeout, out_dir=tmp, echo=True)
        if code != 0:
            log(f"recording failed (exit {code})")
            return 1
        out.mkdir(parents=True, exist_ok=True)
        for p in list(out.glob("*.pcap")) + list(out.glob("*.txt")):
            p.unlink()  # README.md stays
        for p in sorted(tmp.iterdir()):
            shutil.copyfile(p, out / p.name)
        log(f"wrote {len(list(tmp.iterdir()))} files to {out} "
            f"(boot-to-script {last_run['boot_to_script_s']} s, total {last_run['total_s']} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.path.insert(0, str(HERE))
    import nlmon_pcap  # noqa: E402 - sibling helper
    (out / "captures.txt").write_text(
        "# generated by `python3 tests/vm/hwsim_vm.py record-nl80211` "
        "(tests/vm/nlmon_pcap.py index)\n" + "\n".join(nlmon_pcap.index(out)) + "\n")
    return nlmon_pcap.main(["check", str(out)])


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", help=f"cache dir (default $LASTHOP_VM_CACHE or {DEFAULT_CACHE})")
    ap.add_argument("--kernel", choices=KERNELS, help=f"kernel to boot (default {DEFAULT_KERNEL})")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="download packages and build the initramfs")
    p.add_argument("--refresh", action="store_true", help="re-resolve package versions with apt")
    sub.add_parser("available", help="print why the VM cannot run here, or 'ok'")
    p = sub.add_parser("run", help="boot the VM and run a shell script")
    p.add_argument("--file", action="append", default=[], metavar="NAME=PATH",
                   help="copy a host file to /host/NAME in the guest")
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--out", help="copy files the script writes to /host/out/ here")
    p.add_argument("--no-wifi", action="store_true", help="skip hwsim/hostapd/station setup")
    p.add_argument("--host-root", action="store_true",
                   help="share the host's / read-only; the script's `host_chroot CMD` runs CMD there")
    p.add_argument("--smp", type=int, default=None, help="virtual CPUs (default 1)")
    p.add_argument("--memory", type=int, default=512, metavar="MB", help="guest memory (default 512)")
    p.add_argument("--quiet", action="store_true",
                   help="print only the script's output (default: the whole console, live)")
    p.add_argument("script", nargs="+", help="shell script (after --)")
    sub.add_parser("check-txq", help="does this kernel's hwsim have intermediate TX queues?")
    p = sub.add_parser("record-nl80211", help="regenerate reference/nl80211/ captures")
    p.add_argument("--out", default=str(REPO / "reference" / "nl80211"))
    a = ap.parse_args(argv)

    if a.cmd == "prepare":
        t0 = time.monotonic()
        man = prepare(a.cache, a.kernel, refresh=a.refresh)
        print(json.dumps({k: man[k] for k in ("kernel_release", "kernel_package",
                                             "kernel", "initramfs")}, indent=1))
        log(f"prepare() took {time.monotonic() - t0:.2f} s")
        return 0
    if a.cmd == "available":
        r = available(a.cache)
        print(r or "ok")
        return 0 if r is None else 1
    if a.cmd == "run":
        files = {}
        for f in a.file:
            name, _, path = f.partition("=")
            files[name] = path
        code, console = run(" ".join(a.script), files, a.timeout, out_dir=a.out,
                            cache_dir=a.cache, kernel=a.kernel, wifi=not a.no_wifi,
                            echo=False if a.quiet else sys.stdout, memory_mb=a.memory,
                            smp=a.smp, host_root=a.host_root)
        if a.quiet:
            sys.stdout.write(last_run.get("script_output", ""))
        log(f"exit code {code}; boot-to-script {last_run.get('boot_to_script_s')} s, "
            f"total {last_run.get('total_s')} s")
        return code if 0 <= code < 256 else 1
    if a.cmd == "check-txq":
        code, console = run(CHECK_TXQ_SCRIPT, cache_dir=a.cache, kernel=a.kernel, timeout=180)
        out = last_run.get("script_output", "")
        sys.stdout.write(out)
        print(f"kernel {last_run.get('kernel_release')}: hwsim intermediate TXQs "
              f"{'SUPPORTED' if code == 0 else 'NOT supported' if code == 1 else f'unknown (exit {code})'}")
        return 0 if code == 0 else 1
    if a.cmd == "record-nl80211":
        if a.cache:
            os.environ["LASTHOP_VM_CACHE"] = a.cache
        if a.kernel:
            os.environ["LASTHOP_VM_KERNEL"] = a.kernel
        return record_nl80211(a.out)
    return 2


if __name__ == "__main__":
    sys.exit(main())
