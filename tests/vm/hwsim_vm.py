#!/usr/bin/env python3
"""Boot a real Debian kernel with mac80211_hwsim under qemu and run commands in it.

This is a test harness for lasthop's live network tools: the host container has
no wireless stack, so we boot a small VM that does.

What it does
------------
``prepare(cache_dir)``
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
import fcntl
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TextIO

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

# Part of the image's content key (with the builder's source and the .debs).
BUILD_VERSION = 1

DEFAULT_CACHE = "/var/cache/lasthop-hwsim-vm"

# Kernel choices.  bookworm's 6.1 mac80211_hwsim has no intermediate TX queues
# (no wake_tx_queue op, so no NL80211_EXT_FEATURE_TXQS and `iw phy set txq`
# fails with EOPNOTSUPP); mac80211 moved every driver to iTXQ in 6.2.  The
# newest kernel Debian builds for bookworm is in bookworm-backports (6.12),
# fetched from the same mirror apt is configured with.  See tests/vm/README.md.
KERNELS = ("bookworm-backports", "bookworm")
DEFAULT_KERNEL = "bookworm-backports"

# Userland packages; their lib* dependencies are followed automatically.
USER_PACKAGES = [
    "busybox-static", "dash", "hostapd", "iw", "tcpdump", "iproute2", "wireless-regdb",
    # so binaries built on this (bookworm) host run in the guest:
    "libc6", "libgcc-s1", "libstdc++6",
]
# Binaries whose DT_NEEDED libraries must all resolve inside the image.
BINARIES = ["hostapd", "hostapd_cli", "iw", "tcpdump", "ip", "tc", "bridge", "ss"]

# Kernel modules to include (plus their modules.dep closure).  Missing optional
# ones (built in, or not built at all) are skipped.
MODULES_REQUIRED = ["cfg80211", "mac80211", "mac80211_hwsim", "nlmon",
                    "sch_fq_codel", "sch_pie", "sch_codel", "9p", "9pnet_virtio"]
MODULES_OPTIONAL = ["virtio_pci", "af_packet", "sch_fq", "sch_cake", "sch_netem",
                    "sch_tbf", "sch_htb", "sch_prio", "sch_sfq", "sch_ingress",
                    "veth", "tun", "tcp_dctcp"]

# Parts of packages not worth shipping in the initramfs.
SKIP_PREFIXES = ("usr/share/doc/", "usr/share/man/", "usr/share/locale/",
                 "usr/share/lintian/", "usr/share/bug/", "usr/share/info/",
                 "usr/lib/x86_64-linux-gnu/gconv/", "usr/share/bash-completion/",
                 "etc/init.d/", "usr/lib/systemd/", "etc/default/")

SSID = "lasthop-hwsim"


def log(msg: str) -> None:
    print(f"[hwsim_vm] {msg}", file=sys.stderr, flush=True)


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    return Path(cache_dir or os.environ.get("LASTHOP_VM_CACHE") or DEFAULT_CACHE)


def _sh(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------
# apt: resolving and downloading packages
# --------------------------------------------------------------------------

class Apt:
    """apt-get/apt-cache, either the system's configuration or a private one
    (own sources.list, lists and cache under the cache dir) for suites the
    system is not configured with."""

    def __init__(self, opts: list[str] | None = None, private_root: Path | None = None):
        self.opts = ["-o", "APT::Sandbox::User=root"] + (opts or [])
        self.private_root = private_root
        self._updated = False

    @classmethod
    def system(cls) -> "Apt":
        return cls()

    @classmethod
    def private(cls, root: Path, sources_line: str) -> "Apt":
        (root / "lists" / "partial").mkdir(parents=True, exist_ok=True)
        (root / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        (root / "sources.list.d").mkdir(parents=True, exist_ok=True)
        src = root / "sources.list"
        if not src.exists() or src.read_text() != sources_line + "\n":
            src.write_text(sources_line + "\n")
        opts = ["-o", f"Dir::Etc::SourceList={src}",
                "-o", f"Dir::Etc::SourceParts={root / 'sources.list.d'}",
                "-o", f"Dir::State::Lists={root / 'lists'}",
                "-o", f"Dir::Cache={root / 'cache'}"]
        return cls(opts, private_root=root)

    def update(self) -> None:
        log("apt-get update" + (" (private sources)" if self.private_root else ""))
        _sh(["apt-get", *self.opts, "-q", "update"])
        self._updated = True

    def show(self, names: list[str]) -> dict[str, dict[str, str]]:
        """Candidate version records of packages (name -> control fields)."""
        for attempt in (0, 1):
            r = subprocess.run(["apt-cache", *self.opts, "show", "--no-all-versions", *names],
                               text=True, capture_output=True)
            recs = {}
            for para in r.stdout.split("\n\n"):
                fields = _parse_control(para)
                if "Package" in fields:
                    recs[fields["Package"]] = fields
            missing = [n for n in names if n not in recs]
            if not missing:
                return recs
            if attempt == 0 and not self._updated:
                self.update()
                continue
            raise RuntimeError(f"apt cannot find packages {missing}: {r.stderr.strip()}")
        raise AssertionError

    def depends_target(self, name: str) -> str:
        """For a metapackage like linux-image-amd64: the package it depends on."""
        rec = self.show([name])[name]
        deps = _parse_depends(rec.get("Depends", ""))
        if not deps:
            raise RuntimeError(f"{name} has no Depends")
        return deps[0]

    def download(self, names: list[str], dest: Path) -> dict[str, Path]:
        """Download the candidate .debs of names into dest (skipping ones
        already there, checked by SHA256).  Returns name -> path."""
        try:
            return self._download(names, dest)
        except subprocess.CalledProcessError:
            if self._updated:
                raise
            self.update()  # stale package lists: the old version is gone
            return self._download(names, dest)

    def _download(self, names: list[str], dest: Path) -> dict[str, Path]:
        recs = self.show(names)
        out, todo = {}, []
        for n in names:
            rec = recs[n]
            # apt-get download spells the version's epoch colon as %3a
            arch = rec.get("Architecture", "amd64")
            path = dest / f"{n}_{rec['Version'].replace(':', '%3a')}_{arch}.deb"
            out[n] = path
            if not (path.exists() and _sha256_file(path) == rec.get("SHA256", "")):
                todo.append(n)
        if todo:
            dest.mkdir(parents=True, exist_ok=True)
            log(f"downloading {len(todo)} package(s): {' '.join(todo)}")
            _sh(["apt-get", *self.opts, "-q", "download",
                 *[f"{n}={recs[n]['Version']}" for n in todo]], cwd=dest)
            for n in todo:
                if not out[n].exists():
                    cands = list(dest.glob(f"{n}_*.deb"))
                    raise RuntimeError(f"download of {n} produced no {out[n].name} ({cands})")
        return out


def _parse_control(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if line[:1] in (" ", "\t") and key:
            fields[key] += "\n" + line.strip()
        elif ":" in line:
            key, _, val = line.partition(":")
            fields[key] = val.strip()
    return fields


def _parse_depends(text: str) -> list[str]:
    """Package names of a Depends field, first alternative of each."""
    names = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        first = item.split("|")[0].strip()
        name = re.split(r"[\s(\[]", first, maxsplit=1)[0].split(":")[0]
        names.append(name)
    return names


def _system_debian_uri() -> str:
    """The URI of the Debian archive the system's apt uses for bookworm."""
    r = subprocess.run(["apt-get", "indextargets", "--format", "$(REPO_URI) $(RELEASE)"],
                       text=True, capture_output=True)
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == "bookworm":
            return parts[0].rstrip("/")
    raise RuntimeError("apt is not configured with a Debian bookworm archive")


def kernel_apt(kernel: str, cache: Path) -> Apt:
    if kernel == "bookworm":
        return Apt.system()
    if kernel == "bookworm-backports":
        uri = _system_debian_uri()
        line = (f"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
                f"{uri} bookworm-backports main")
        return Apt.private(cache / "apt-bookworm-backports", line)
    raise ValueError(f"unknown kernel choice {kernel!r} (one of {KERNELS})")


# --------------------------------------------------------------------------
# ELF: DT_NEEDED of a binary (to check every library is in the image)
# --------------------------------------------------------------------------

def elf_needed(path: Path) -> list[str] | None:
    """DT_NEEDED entries of a 64-bit little-endian ELF file, None if not ELF."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    e_phoff, = struct.unpack_from("<Q", data, 0x20)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dyn = [], None
    for i in range(e_phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:
            dyn = (p_offset, p_filesz)
    if dyn is None:
        return []

    def v2o(vaddr: int) -> int:
        for va, off, sz in loads:
            if va <= vaddr < va + sz:
                return vaddr - va + off
        raise ValueError("vaddr not in a PT_LOAD segment")

    strtab, needed = None, []
    for i in range(dyn[1] // 16):
        tag, val = struct.unpack_from("<qQ", data, dyn[0] + i * 16)
        if tag == 0:
            break
        if tag == 5:
            strtab = v2o(val)
        elif tag == 1:
            needed.append(val)
    if strtab is None:
        return []
    return [data[strtab + n: data.index(b"\0", strtab + n)].decode() for n in needed]


def elf_modinfo(data: bytes) -> dict[str, list[str]]:
    """key=value strings of a kernel module's .modinfo section (key -> values)."""
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def sh(i: int) -> tuple[int, int, int]:
        name, _t, _f, _a, off, size = struct.unpack_from("<IIQQQQ", data, e_shoff + i * e_shentsize)
        return name, off, size

    _, stroff, _ = sh(e_shstrndx)
    info: dict[str, list[str]] = {}
    for i in range(e_shnum):
        name, off, size = sh(i)
        if data[stroff + name: data.index(b"\0", stroff + name)] == b".modinfo":
            for item in data[off: off + size].split(b"\0"):
                k, _, v = item.decode(errors="replace").partition("=")
                if k:
                    info.setdefault(k, []).append(v)
    return info


def _dep_closure(mod: str, dep: dict[str, list[str]]) -> list[str]:
    """All (transitive) dependencies of mod, in modules.dep order: a module is
    listed before the ones it needs, and modprobe loads the list from its end."""
    order: list[str] = []

    def visit(m: str) -> None:
        for d in dep.get(m, []):
            if d not in order:
                visit(d)
        if m not in order:
            order.append(m)

    for d in dep[mod]:
        visit(d)
    return order[::-1]


# --------------------------------------------------------------------------
# cpio (newc) writer
# --------------------------------------------------------------------------

class Cpio:
    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.ino = 1

    def _entry(self, name: str, mode: int, data: bytes = b"", nlink: int = 1) -> None:
        nameb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            self.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(nameb), 0))
        self.ino += 1
        self.buf.write(hdr.encode() + nameb)
        self.buf.write(b"\0" * (-(110 + len(nameb)) % 4))
        self.buf.write(data)
        self.buf.write(b"\0" * (-len(data) % 4))

    def dir(self, name: str) -> None:
        self._entry(name, stat.S_IFDIR | 0o755, nlink=2)

    def file(self, name: str, data: bytes, perm: int = 0o644) -> None:
        self._entry(name, stat.S_IFREG | perm, data)

    def symlink(self, name: str, target: str) -> None:
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def finish(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        return self.buf.getvalue()


# --------------------------------------------------------------------------
# The guest's /init
# --------------------------------------------------------------------------

INIT_SCRIPT = r"""#!/bin/sh
# lasthop hwsim VM init (generated by tests/vm/hwsim_vm.py)
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
exec </dev/null

stamp() { echo "lasthop-vm: [$(cut -d' ' -f1 /proc/uptime)] $*"; }
finish() {
    echo "$1" > /host/.lasthop/exit 2>/dev/null
    echo "LASTHOP_VM_EXIT=$1"
    sync
    poweroff -f
    sleep 10
}
diag() {
    echo "---- diagnostics ----"
    iw dev 2>&1; ip netns exec sta iw dev 2>&1
    iw reg get 2>&1 | head -20
    echo "---- hostapd log ----"; cat /tmp/hostapd.log 2>/dev/null | tail -40
    echo "---- dmesg (tail) ----"; dmesg | tail -30
}
fail() { stamp "SETUP FAILED: $*"; diag; finish 125; }

stamp "init started, kernel $(uname -r)"
ip link set lo up
for m in virtio_pci 9pnet_virtio 9p; do modprobe -q $m 2>/dev/null; done
mkdir -p /host
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 host /host || {
    stamp "SETUP FAILED: cannot mount the 9p share"; dmesg | tail -20
    echo "LASTHOP_VM_EXIT=125"; poweroff -f; }
mkdir -p /host/out

WIFI=1
grep -q 'lasthop.wifi=0' /proc/cmdline && WIFI=0

if [ "$WIFI" = 1 ]; then
    modprobe mac80211_hwsim radios=2 || fail "modprobe mac80211_hwsim"
    i=0; while [ ! -e /sys/class/ieee80211/phy1 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
    [ -e /sys/class/ieee80211/phy1 ] || fail "hwsim radios did not appear"
    stamp "mac80211_hwsim loaded"
    i=0; while ! iw reg get 2>/dev/null | grep -q 'country' && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done
    iw reg set US
    ip netns add sta || fail "ip netns add sta"
    iw phy phy1 set netns name sta || fail "move phy1 to netns sta"
    ip link set wlan0 up || fail "wlan0 up"
    ip netns exec sta ip link set lo up
    ip netns exec sta ip link set wlan1 up || fail "wlan1 up"

    cat > /tmp/hostapd-5g.conf <<EOF
interface=wlan0
driver=nl80211
ssid=@SSID@
country_code=US
ieee80211d=1
hw_mode=a
channel=36
ieee80211n=1
ht_capab=[HT40+][SHORT-GI-20][SHORT-GI-40]
ieee80211ac=1
vht_oper_chwidth=1
vht_oper_centr_freq_seg0_idx=42
vht_capab=[SHORT-GI-80]
wmm_enabled=1
EOF
    cat > /tmp/hostapd-2g.conf <<EOF
interface=wlan0
driver=nl80211
ssid=@SSID@
country_code=US
hw_mode=g
channel=6
ieee80211n=1
wmm_enabled=1
EOF
    ap_up() {
        j=0
        while [ $j -lt 50 ]; do
            iw dev wlan0 info 2>/dev/null | grep -q 'type AP' && iw dev wlan0 info | grep -q channel && return 0
            kill -0 $(cat /run/hostapd.pid 2>/dev/null) 2>/dev/null || [ $j -lt 5 ] || return 1
            sleep 0.1; j=$((j+1))
        done
        return 1
    }
    BAND=
    for band in 5g 2g; do
        rm -f /run/hostapd.pid
        stamp "starting hostapd ($band)"
        hostapd -B -P /run/hostapd.pid -f /tmp/hostapd.log /tmp/hostapd-$band.conf >/tmp/hostapd.out 2>&1
        if ap_up; then BAND=$band; break; fi
        stamp "hostapd on $band did not come up:"; cat /tmp/hostapd.out /tmp/hostapd.log 2>/dev/null | tail -15
        kill $(cat /run/hostapd.pid 2>/dev/null) 2>/dev/null; sleep 0.3
        ip link set wlan0 up
    done
    [ -n "$BAND" ] || fail "hostapd did not start"
    FREQ=$(iw dev wlan0 info | sed -n 's/.*channel [0-9]* (\([0-9]*\) MHz).*/\1/p')
    stamp "AP up on wlan0 ($BAND, $(iw dev wlan0 info | grep channel | sed 's/^[[:space:]]*//'))"
    ip netns exec sta iw dev wlan1 connect @SSID@ $FREQ || fail "iw connect"
    i=0; while ! iw dev wlan0 station dump | grep -q '^Station' && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
    iw dev wlan0 station dump | grep -q '^Station' || fail "station did not associate"
    stamp "station associated: $(ip netns exec sta iw dev wlan1 link | head -1)"
    ip addr add 192.168.77.1/24 dev wlan0
    ip netns exec sta ip addr add 192.168.77.2/24 dev wlan1
    ping -c 3 -i 0.2 -w 5 192.168.77.2 >/tmp/ping1 2>&1 ||
        { cat /tmp/ping1; fail "ping AP -> station"; }
    ip netns exec sta ping -c 3 -i 0.2 -w 5 192.168.77.1 >/tmp/ping2 2>&1 ||
        { cat /tmp/ping2; fail "ping station -> AP"; }
    stamp "pings ok both ways"
fi

cd /host
echo "==== lasthop-vm: script begin ===="
stamp "script start"
{ sh /host/.lasthop/script.sh 2>&1 </dev/null; echo $? > /tmp/script.rc; } | tee /host/.lasthop/script.out
rc=$(cat /tmp/script.rc)
echo "==== lasthop-vm: script end rc=$rc ===="
cd /
finish $rc
""".replace("@SSID@", SSID)


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
# prepare
# --------------------------------------------------------------------------

def _extract(deb: Path, cache: Path) -> Path:
    """dpkg-deb -x into a per-.deb directory (cached)."""
    dest = cache / "extract" / deb.stem
    if not (dest / ".done").exists():
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        _sh(["dpkg-deb", "-x", str(deb), str(dest)])
        (dest / ".done").write_text("")
    return dest


def _merged(rel: str) -> str:
    """Map a package path to the usr-merged layout we use in the guest."""
    for top in ("bin/", "sbin/", "lib/", "lib64/"):
        if rel.startswith(top):
            return "usr/" + rel
    return rel


def _decompress_module(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".xz":
        return lzma.decompress(data)
    if path.suffix == ".gz":
        return gzip.decompress(data)
    if path.suffix == ".zst":
        return subprocess.run(["zstd", "-dc"], input=data, capture_output=True, check=True).stdout
    return data


def _module_name(relpath: str) -> str:
    base = relpath.rsplit("/", 1)[-1]
    base = re.sub(r"\.ko(\.(xz|gz|zst))?$", "", base)
    return base.replace("-", "_")


def _prune_images(cache: Path) -> None:
    """Delete images no current-*.json points to (older builder versions)."""
    keep = set()
    for cur in cache.glob("current-*.json"):
        try:
            keep.add(Path(json.loads(cur.read_text())["initramfs"]).parent.name)
        except (ValueError, KeyError, OSError):
            pass
    for img in (cache / "images").glob("*"):
        if img.name not in keep:
            shutil.rmtree(img, ignore_errors=True)


def _builder_hash() -> str:
    """Hash of everything that shapes the image besides the .debs: the init
    script, the package/module lists and the builder functions' source."""
    import inspect
    parts = [str(BUILD_VERSION), INIT_SCRIPT, repr(USER_PACKAGES), repr(BINARIES),
             repr(MODULES_REQUIRED), repr(MODULES_OPTIONAL), repr(SKIP_PREFIXES)]
    for fn in (_build_image, _dep_closure, elf_modinfo, _merged, _decompress_module, Cpio):
        parts.append(inspect.getsource(fn))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def prepare(cache_dir: str | os.PathLike | None = None, kernel: str | None = None,
            refresh: bool = False) -> dict:
    """Make sure a kernel + initramfs are built; return the manifest dict
    (keys: kernel, initramfs, kernel_release, kernel_package, packages, ...).

    Fast path: if the manifest for this kernel choice exists and its files are
    there, nothing is resolved or downloaded (use refresh=True to re-resolve
    the candidate versions with apt)."""
    cache = cache_root(cache_dir)
    kernel = kernel or os.environ.get("LASTHOP_VM_KERNEL") or DEFAULT_KERNEL
    cache.mkdir(parents=True, exist_ok=True)
    current = cache / f"current-{kernel}.json"
    builder = _builder_hash()

    def ready() -> dict | None:
        if current.exists() and not refresh:
            man = json.loads(current.read_text())
            if (man.get("builder") == builder
                    and Path(man["kernel"]).exists() and Path(man["initramfs"]).exists()):
                return man
        return None

    man = ready()
    if man:
        return man
    # one builder at a time (parallel test processes share the cache)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return ready() or _prepare_locked(cache, kernel, current, builder, refresh)


def _prepare_locked(cache: Path, kernel: str, current: Path, builder: str, refresh: bool) -> dict:
    t0 = time.monotonic()
    debs_dir = cache / "debs"
    sysapt = Apt.system()
    kapt = kernel_apt(kernel, cache)
    if refresh and kapt.private_root:
        kapt.update()

    # 1. kernel package
    kpkg = kapt.depends_target("linux-image-amd64")
    kdeb = kapt.download([kpkg], debs_dir)[kpkg]

    # 2. userland packages + lib* dependencies, breadth first
    debs: dict[str, Path] = {}
    todo = list(USER_PACKAGES)
    while todo:
        got = sysapt.download(todo, debs_dir)
        debs.update(got)
        nxt = []
        for deb in got.values():
            ctl = _parse_control(_sh(["dpkg-deb", "-f", str(deb)]).stdout)
            for dep in _parse_depends(ctl.get("Depends", "") + "," + ctl.get("Pre-Depends", "")):
                if re.match(r"^(lib|zlib)", dep) and dep not in debs and dep not in nxt:
                    nxt.append(dep)
        todo = nxt

    key_src = json.dumps({"builder": builder, "kernel": kdeb.name,
                          "debs": sorted(p.name for p in debs.values()),
                          "mods": MODULES_REQUIRED + MODULES_OPTIONAL}, sort_keys=True)
    key = hashlib.sha256(key_src.encode()).hexdigest()[:16]
    img_dir = cache / "images" / key
    manifest_path = img_dir / "manifest.json"
    if manifest_path.exists():
        man = json.loads(manifest_path.read_text())
        current.write_text(json.dumps(man, indent=1))
        return man

    log(f"building initramfs {key} (kernel {kdeb.name}, {len(debs)} userland packages)")
    kdir = _extract(kdeb, cache)
    trees = {name: _extract(deb, cache) for name, deb in debs.items()}

    tmp_dir = Path(tempfile.mkdtemp(prefix="build-", dir=cache))
    try:
        man = _build_image(kdir, trees, debs, kdeb, tmp_dir)
        man["kernel_choice"] = kernel
        man["builder"] = builder
        img_dir.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(img_dir, ignore_errors=True)
        os.replace(tmp_dir, img_dir)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    man["kernel"] = str(img_dir / "vmlinuz")
    man["initramfs"] = str(img_dir / "initramfs.cpio.gz")
    man["prepare_seconds"] = round(time.monotonic() - t0, 1)
    manifest_path.write_text(json.dumps(man, indent=1))
    current.write_text(json.dumps(man, indent=1))
    _prune_images(cache)
    # The extracted kernel package (100-400 MB of modules) is only needed to
    # build an image; the .deb stays in debs/ for the next rebuild.
    for d in (cache / "extract").glob("linux-image-*"):
        shutil.rmtree(d, ignore_errors=True)
    log(f"prepared in {man['prepare_seconds']} s: {man['initramfs']} "
        f"({os.path.getsize(man['initramfs']) // 1024} KiB)")
    return man


def _build_image(kdir: Path, trees: dict[str, Path], debs: dict[str, Path],
                 kdeb: Path, out: Path) -> dict:
    """Write out/vmlinuz and out/initramfs.cpio.gz; return manifest fields."""
    # ---- collect userland files: guest path -> ("file", src) | ("link", target)
    entries: dict[str, tuple[str, object]] = {}
    for name in sorted(trees):
        root = trees[name]
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for fn in sorted(filenames + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]):
                src = Path(dirpath) / fn
                rel = src.relative_to(root).as_posix()
                if rel == ".done":
                    continue
                g = _merged(rel)
                if g.startswith(SKIP_PREFIXES):
                    continue
                if src.is_symlink():
                    entries[g] = ("link", os.readlink(src))
                elif src.is_file():
                    entries[g] = ("file", src)

    # wireless-regdb: Debian installs regulatory.db via update-alternatives;
    # ship the upstream-signed database under the name the kernel loads.
    for fw in ("regulatory.db", "regulatory.db.p7s"):
        up = f"usr/lib/firmware/{fw}-upstream"
        if up in entries:
            entries[f"usr/lib/firmware/{fw}"] = entries[up]

    # busybox applets for everything the packages do not provide
    bb = trees["busybox-static"] / "bin" / "busybox"
    applets = _sh([str(bb), "--list-full"]).stdout.split()
    for a in applets:
        g = _merged(a)
        base = a.rsplit("/", 1)[-1]
        if any(k in entries for k in (f"usr/bin/{base}", f"usr/sbin/{base}")):
            continue
        entries[g] = ("link", "/usr/bin/busybox")
    entries["usr/bin/busybox"] = ("file", bb)
    # Debian's busybox-static is built with FEATURE_SH_STANDALONE: its ash
    # runs its own applets (ip, tc, ...) even where PATH has the real tool.
    # So /bin/sh is dash; `busybox sh` is still there.
    entries["usr/bin/sh"] = ("link", "dash")

    # ---- check every binary's libraries are there
    def resolve(rel: str, depth: int = 0) -> tuple[str, object] | None:
        e = entries.get(rel)
        if e and e[0] == "link" and depth < 10:
            tgt = str(e[1])
            nxt = tgt.lstrip("/") if tgt.startswith("/") else os.path.normpath(
                os.path.join(os.path.dirname(rel), tgt))
            return resolve(_merged(nxt), depth + 1)
        return e

    libdirs = ["usr/lib/x86_64-linux-gnu", "usr/lib64", "usr/lib"]
    missing = []
    found_bins = {}
    for b in BINARIES:
        rel = next((f"{d}/{b}" for d in ("usr/sbin", "usr/bin") if f"{d}/{b}" in entries), None)
        if rel is None:
            missing.append(f"binary {b}")
            continue
        e = resolve(rel)
        if not e or e[0] != "file":
            continue
        found_bins[b] = rel
        seen, stack = set(), [Path(e[1])]
        while stack:
            for lib in elf_needed(stack.pop()) or []:
                if lib in seen:
                    continue
                seen.add(lib)
                le = next((resolve(f"{d}/{lib}") for d in libdirs if resolve(f"{d}/{lib}")), None)
                if le is None:
                    missing.append(f"{lib} (needed by {b})")
                else:
                    stack.append(Path(le[1]))
    if missing:
        raise RuntimeError("initramfs would lack: " + ", ".join(sorted(set(missing))))

    # ---- kernel
    boot = kdir / "boot"
    vmlinuz = next(boot.glob("vmlinuz-*"))
    release = vmlinuz.name[len("vmlinuz-"):]
    shutil.copyfile(vmlinuz, out / "vmlinuz")
    moddir = kdir / "lib" / "modules" / release
    if not moddir.exists():
        moddir = kdir / "usr" / "lib" / "modules" / release
    # Debian's package has no modules.dep (depmod runs at install time):
    # compute it from each module's .modinfo "depends=" field.
    by_name: dict[str, str] = {}
    for p in moddir.rglob("*.ko*"):
        by_name[_module_name(p.name)] = p.relative_to(moddir).as_posix()
    builtin = set()
    if (moddir / "modules.builtin").exists():
        builtin = {_module_name(m) for m in (moddir / "modules.builtin").read_text().split()}
    contents: dict[str, bytes] = {}
    dep: dict[str, list[str]] = {}
    aliases: list[str] = []

    def load(mod: str) -> None:
        if mod in contents:
            return
        contents[mod] = _decompress_module(moddir / mod)
        info = elf_modinfo(contents[mod])
        names = [d for d in ",".join(info.get("depends", [])).split(",") if d]
        dep[mod] = [by_name[_module_name(d)] for d in names]
        # e.g. "rtnl-link-nlmon", so `ip link add type nlmon` autoloads
        aliases.extend(f"alias {a} {_module_name(mod)}" for a in info.get("alias", []))

    wanted: list[str] = []
    absent = []
    for m in MODULES_REQUIRED + MODULES_OPTIONAL:
        if m in by_name:
            wanted.append(by_name[m])
        elif m in MODULES_REQUIRED and m not in builtin:
            absent.append(m)
    if absent:
        raise RuntimeError(f"kernel {release} lacks modules {absent}")
    closure: list[str] = []

    def add(mod: str) -> None:
        if mod in closure:
            return
        load(mod)
        for d in dep[mod]:
            add(d)
        closure.append(mod)

    for m in wanted:
        add(m)
    kmods = f"usr/lib/modules/{release}"
    mod_files: dict[str, bytes] = {}
    newdep = []
    for mod in closure:
        plain = re.sub(r"\.(xz|gz|zst)$", "", mod)
        mod_files[f"{kmods}/{plain}"] = contents[mod]
        deps = " ".join(re.sub(r"\.(xz|gz|zst)$", "", d) for d in _dep_closure(mod, dep))
        newdep.append(f"{plain}: {deps}".rstrip())

    # ---- write the cpio
    cp = Cpio()
    dirs = set()

    def mkdirs(path: str) -> None:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in dirs:
                dirs.add(d)
                cp.dir(d)

    for d in ("usr/bin", "usr/sbin", "usr/lib/x86_64-linux-gnu", "usr/lib64", "proc", "sys",
              "dev", "run", "tmp", "root", "host", "etc", "var", "mnt"):
        mkdirs(d + "/x")
    for top in ("bin", "sbin", "lib", "lib64"):
        cp.symlink(top, f"usr/{top}")
    cp.symlink("var/run", "/run")
    cp.file("init", INIT_SCRIPT.encode(), 0o755)
    cp.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\ntcpdump:x:104:109::/nonexistent:/bin/false\n")
    cp.file("etc/group", b"root:x:0:\ntcpdump:x:109:\n")
    cp.file("etc/hosts", b"127.0.0.1 localhost\n192.168.77.1 ap\n192.168.77.2 sta\n")
    cp.file("etc/nsswitch.conf", b"passwd: files\ngroup: files\nhosts: files\n")
    for g in sorted(entries):
        if g in ("init", "etc/passwd", "etc/group", "etc/hosts", "etc/nsswitch.conf"):
            continue
        kind, what = entries[g]
        mkdirs(g)
        if kind == "link":
            cp.symlink(g, str(what))
        else:
            src = Path(what)
            cp.file(g, src.read_bytes(), stat.S_IMODE(src.stat().st_mode))
    for g, data in mod_files.items():
        mkdirs(g)
        cp.file(g, data)
    mkdirs(f"{kmods}/modules.dep")
    cp.file(f"{kmods}/modules.dep", ("\n".join(newdep) + "\n").encode())
    cp.file(f"{kmods}/modules.alias", ("\n".join(aliases) + "\n").encode())
    for extra in ("modules.builtin", "modules.order", "modules.builtin.modinfo"):
        if (moddir / extra).exists():
            cp.file(f"{kmods}/{extra}", (moddir / extra).read_bytes())
    raw = cp.finish()
    with open(out / "initramfs.cpio.gz", "wb") as f:
        f.write(gzip.compress(raw, compresslevel=6, mtime=0))

    return {
        "kernel_release": release,
        "kernel_package": kdeb.name,
        "packages": sorted(p.name for p in debs.values()),
        "modules": [_module_name(m) for m in closure],
        "initramfs_uncompressed_bytes": len(raw),
        "binaries": found_bins,
    }


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
    proc = None
    try:
        meta = share / ".lasthop"
        meta.mkdir()
        body = script if script.endswith("\n") else script + "\n"
        (meta / "script.sh").write_text(HOST_CHROOT + body if host_root else body)
        for name, src in (files or {}).items():
            if "/" in name or name.startswith("."):
                raise ValueError(f"file name {name!r} must be a plain name")
            shutil.copy2(src, share / name)
        (share / "out").mkdir()
        append = "console=ttyS0 quiet panic=-1 rdinit=/init"
        if not wifi:
            append += " lasthop.wifi=0"
        stream = sys.stderr if echo is True else (echo or None)
        lines: list[str] = []
        panics_before_init = 0
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
            break
        marks["total"] = time.monotonic() - t0
        console = "\n".join(lines) + "\n"
        code = -1
        exit_file = meta / "exit"
        if exit_file.exists() and exit_file.read_text().strip().lstrip("-").isdigit():
            code = int(exit_file.read_text().strip())
        else:
            m = re.findall(r"^LASTHOP_VM_EXIT=(-?\d+)$", console, re.M)
            if m:
                code = int(m[-1])
        if timed_out:
            console += f"[hwsim_vm] TIMEOUT: VM killed after {timeout} s\n"
            code = -1
        elif code == -1:
            console += f"[hwsim_vm] VM exited (qemu rc={proc.returncode}) without an exit code\n"
        if out_dir is not None:
            dst = Path(out_dir)
            dst.mkdir(parents=True, exist_ok=True)
            for p in sorted((share / "out").rglob("*")):
                if p.is_file():
                    t = dst / p.relative_to(share / "out")
                    t.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(p, t)
        last_run.clear()
        last_run.update({
            "boot_to_init_s": round(marks.get("init", -1), 2),
            "boot_to_script_s": round(marks.get("script", -1), 2),
            "total_s": round(marks["total"], 2),
            "script_output": (meta / "script.out").read_text(errors="replace")
            if (meta / "script.out").exists() else script_output(console),
            "kernel_release": man["kernel_release"],
            "accel": why,
        })
        return code, console
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(share, ignore_errors=True)


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
