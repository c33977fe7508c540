"""The code version written into every result file and used in the sweep cache key.

The native module reports `<crate version>+<git>`: the short git hash of the tree it was built
from, `-dirty` when that tree had changes, `unknown` without git (a wheel built from an sdist,
an unpacked archive). Only a clean git hash identifies the code; otherwise the version gets a
source identifier: 12 hex digits of SHA-256 over the native module's GNU build id (a hash of
the linked code, read from its ELF note; the whole file where there is none) and every Python
source of the installed package. So two builds of different code never share a cache key, with
or without git: `0.1.0+unknown.3f9c0a1b2c4d`, `0.1.0+8162e0e-dirty.77aa01b2c3d4`.
"""
from __future__ import annotations

import functools
import re
import struct
from pathlib import Path

__all__ = ["code_version", "identify", "elf_build_id"]

_PACKAGE = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    from . import _native

    return identify(str(_native.version()), Path(_native.__file__), _PACKAGE)


def identify(native_version: str, native_path: Path, package_dir: Path) -> str:
    """`native_version` as is when it names a clean git revision, else with the source
    identifier of `native_path` and the `*.py` files under `package_dir` appended."""
    if re.fullmatch(r"[^+]+\+[0-9a-f]{7,40}", native_version):
        return native_version
    import hashlib  # only here: a clean build (the common case) never loads it

    h = hashlib.sha256()
    bid = elf_build_id(native_path)
    if bid is not None:
        h.update(b"build-id\0" + bid)
    else:
        h.update(b"native\0" + native_path.read_bytes())
    for f in sorted(p for p in package_dir.rglob("*.py") if "__pycache__" not in p.parts):
        h.update(b"\0" + f.relative_to(package_dir).as_posix().encode() + b"\0" + f.read_bytes())
    return f"{native_version}.{h.hexdigest()[:12]}"


def elf_build_id(path: Path) -> bytes | None:
    """The GNU build id of an ELF file (its NT_GNU_BUILD_ID note), or None."""
    try:
        with open(path, "rb") as f:
            ident = f.read(16)
            if ident[:4] != b"\x7fELF":
                return None
            is64, little = ident[4] == 2, ident[5] == 1
            e = "<" if little else ">"
            if is64:
                f.seek(0x28)
                (shoff,) = struct.unpack(e + "Q", f.read(8))
                f.seek(0x3A)
                shentsize, shnum = struct.unpack(e + "HH", f.read(4))
            else:
                f.seek(0x20)
                (shoff,) = struct.unpack(e + "I", f.read(4))
                f.seek(0x2E)
                shentsize, shnum = struct.unpack(e + "HH", f.read(4))
            for i in range(shnum):
                f.seek(shoff + i * shentsize)
                sh = f.read(shentsize)
                if is64:
                    sh_type, = struct.unpack(e + "I", sh[4:8])
                    off, size = struct.unpack(e + "QQ", sh[24:40])
                else:
                    sh_type, = struct.unpack(e + "I", sh[4:8])
                    off, size = struct.unpack(e + "II", sh[16:24])
                if sh_type != 7:  # SHT_NOTE
                    continue
                f.seek(off)
                notes = f.read(size)
                pos = 0
                while pos + 12 <= len(notes):
                    namesz, descsz, ntype = struct.unpack(e + "III", notes[pos:pos + 12])
                    name_end = pos + 12 + ((namesz + 3) & ~3)
                    desc = notes[name_end:name_end + descsz]
                    if ntype == 3 and notes[pos + 12:pos + 12 + namesz].rstrip(b"\0") == b"GNU":
                        return desc
                    pos = name_end + ((descsz + 3) & ~3)
    except (OSError, struct.error):
        return None
    return None
