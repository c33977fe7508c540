"""Build the VM's boot image: a Debian kernel and a gzip'd newc initramfs holding the
userland tools, their libraries, the kernel modules and the ``/init`` script
(``prepare``), in a cache outside the repo keyed by the sha256 of the inputs.
``hwsim_vm.py`` boots it; tests/vm/README.md says what is in it and why.

Python 3.11 standard library only.
"""

from __future__ import annotations

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
import time
from pathlib import Path

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
    for fn in (_build_image, _userland_entries, _check_libraries, _kernel, _module_closure,
               _write_cpio, _dep_closure, elf_modinfo, _merged, _decompress_module, Cpio):
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
    entries = _userland_entries(trees)
    found_bins = _check_libraries(entries)
    release, moddir = _kernel(kdir, out)
    closure, mod_files, newdep, aliases = _module_closure(moddir, release)
    raw = _write_cpio(entries, moddir, release, mod_files, newdep, aliases)
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


def _userland_entries(trees: dict[str, Path]) -> dict[str, tuple[str, object]]:
    """The userland's files by guest path: ("file", src) or ("link", target)."""
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
    return entries


def _check_libraries(entries: dict[str, tuple[str, object]]) -> dict[str, str]:
    """Check that every binary's libraries are in the image; return where each binary is."""
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
    return found_bins


def _kernel(kdir: Path, out: Path) -> tuple[str, Path]:
    """Copy the kernel to out/vmlinuz; return its release and its modules' directory."""
    boot = kdir / "boot"
    vmlinuz = next(boot.glob("vmlinuz-*"))
    release = vmlinuz.name[len("vmlinuz-"):]
    shutil.copyfile(vmlinuz, out / "vmlinuz")
    moddir = kdir / "lib" / "modules" / release
    if not moddir.exists():
        moddir = kdir / "usr" / "lib" / "modules" / release
    return release, moddir


def _module_closure(moddir: Path, release: str
                    ) -> tuple[list[str], dict[str, bytes], list[str], list[str]]:
    """The wanted modules and what they depend on: their order, their files by guest
    path (decompressed), the lines of modules.dep and of modules.alias."""
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
    return closure, mod_files, newdep, aliases


def _write_cpio(entries: dict[str, tuple[str, object]], moddir: Path, release: str,
                mod_files: dict[str, bytes], newdep: list[str], aliases: list[str]) -> bytes:
    """The initramfs, uncompressed: the /init, the userland, the modules and their indexes."""
    kmods = f"usr/lib/modules/{release}"
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
    return cp.finish()
