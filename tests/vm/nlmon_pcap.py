#!/usr/bin/env python3
"""Decode nlmon captures (pcap, LINKTYPE_NETLINK = 253) and check the
reference captures in reference/nl80211/.  Python 3.11 standard library only.

Record layout (what tcpdump/libpcap write when capturing on an nlmon device)
---------------------------------------------------------------------------
Classic pcap file (magic 0xa1b2c3d4, little-endian on x86), link type 253.
Each record's data is a 16-byte pseudo-header laid out like the Linux
"cooked" (SLL) header, all fields big-endian:

    offset 0   u16  packet type: always 4 (PACKET_OUTGOING) in these captures.
                    The kernel marks tapped skbs PACKET_KERNEL (7, delivered
                    to the kernel) or PACKET_USER (6), but the packet socket
                    sees nlmon's transmit path, which rewrites it.  So the
                    direction is NOT in the record: requests are the messages
                    with NLM_F_REQUEST (0x1) set; the kernel never sets it.
    offset 2   u16  ARPHRD type, 824 = ARPHRD_NETLINK
    offset 4   u16  link-layer address length (0)
    offset 6   8 B  link-layer address (zeros)
    offset 14  u16  netlink protocol: 0 = NETLINK_ROUTE, 16 = NETLINK_GENERIC

followed by the skb's payload: ONE OR MORE netlink messages in host byte
order (little-endian here), each a 16-byte struct nlmsghdr (u32 len, u16 type,
u16 flags, u32 seq, u32 pid) + payload, padded to 4 bytes.  A dump reply skb
usually packs several messages (e.g. NEW_SURVEY_RESULTS x N, or the last one
followed by NLMSG_DONE).  Generic netlink payload starts with a 4-byte genlmsghdr
(u8 cmd, u8 version, u16 reserved); rtnetlink link messages with a 16-byte
struct ifinfomsg, qdisc messages with a 20-byte struct tcmsg.  Attributes are
struct nlattr (u16 len, u16 type with NLA_F_NESTED 0x8000 / NLA_F_NET_BYTEORDER
0x4000 flags) + value, padded to 4.

Usage:
    python3 tests/vm/nlmon_pcap.py dump FILE.pcap      # print every message
    python3 tests/vm/nlmon_pcap.py summary FILE.pcap   # one line per message
    python3 tests/vm/nlmon_pcap.py index [DIR]         # message counts per capture
    python3 tests/vm/nlmon_pcap.py check [DIR]         # check reference/nl80211
Attribute names come from /usr/include/linux/nl80211.h when it is installed
(package linux-libc-dev); otherwise a few built-in names are used.
"""

from __future__ import annotations

import re
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

LINKTYPE_NETLINK = 253
ARPHRD_NETLINK = 824
PACKET_USER, PACKET_KERNEL = 6, 7
NETLINK_ROUTE, NETLINK_GENERIC = 0, 16
NLA_F_NESTED, NLA_F_NET_BYTEORDER = 0x8000, 0x4000
NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xFFFF

NLMSG_TYPES = {1: "NOOP", 2: "ERROR", 3: "DONE", 4: "OVERRUN"}
NLM_FLAGS = [(0x1, "REQUEST"), (0x2, "MULTI"), (0x4, "ACK"), (0x8, "ECHO"),
             (0x10, "DUMP_INTR"), (0x20, "DUMP_FILTERED")]
GET_FLAGS = [(0x100, "ROOT"), (0x200, "MATCH"), (0x400, "ATOMIC")]
NEW_FLAGS = [(0x100, "REPLACE"), (0x200, "EXCL"), (0x400, "CREATE"), (0x800, "APPEND")]

# --- generic netlink controller (linux/genetlink.h) ---
GENL_ID_CTRL = 0x10
CTRL_CMDS = {1: "CTRL_CMD_NEWFAMILY", 2: "CTRL_CMD_DELFAMILY", 3: "CTRL_CMD_GETFAMILY",
             7: "CTRL_CMD_NEWMCAST_GRP"}
CTRL_ATTRS = {1: "CTRL_ATTR_FAMILY_ID", 2: "CTRL_ATTR_FAMILY_NAME", 3: "CTRL_ATTR_VERSION",
              4: "CTRL_ATTR_HDRSIZE", 5: "CTRL_ATTR_MAXATTR", 6: "CTRL_ATTR_OPS",
              7: "CTRL_ATTR_MCAST_GROUPS", 8: "CTRL_ATTR_POLICY", 9: "CTRL_ATTR_OP_POLICY",
              10: "CTRL_ATTR_OP"}

# --- nl80211 numbers used by the checks (linux/nl80211.h, ISC licence) ---
NL80211_CMD_GET_WIPHY, NL80211_CMD_SET_WIPHY, NL80211_CMD_NEW_WIPHY = 1, 2, 3
NL80211_CMD_GET_INTERFACE, NL80211_CMD_NEW_INTERFACE = 5, 7
NL80211_CMD_GET_STATION, NL80211_CMD_NEW_STATION = 17, 19
NL80211_CMD_GET_SURVEY, NL80211_CMD_NEW_SURVEY_RESULTS = 50, 51
NL80211_ATTR_WIPHY, NL80211_ATTR_IFINDEX, NL80211_ATTR_STA_INFO = 1, 3, 21
NL80211_ATTR_SURVEY_INFO = 84
NL80211_ATTR_TXQ_STATS, NL80211_ATTR_TXQ_LIMIT = 265, 266
NL80211_ATTR_TXQ_MEMORY_LIMIT, NL80211_ATTR_TXQ_QUANTUM = 267, 268
NL80211_STA_INFO_TX_BYTES64, NL80211_STA_INFO_TX_PACKETS = 24, 10
NL80211_STA_INFO_TX_BITRATE, NL80211_STA_INFO_TID_STATS = 8, 31
NL80211_TID_STATS_TXQ_STATS = 6
NL80211_TXQ_STATS_TX_PACKETS = 10
NL80211_SURVEY_INFO_FREQUENCY, NL80211_SURVEY_INFO_NOISE = 1, 2

# enums of nl80211.h we name, and (parent enum, attr) -> enum of the nest
NL80211_ENUMS = {
    "cmd": ("nl80211_commands", "NL80211_CMD_"),
    "attr": ("nl80211_attrs", "NL80211_ATTR_"),
    "sta_info": ("nl80211_sta_info", "NL80211_STA_INFO_"),
    "rate_info": ("nl80211_rate_info", "NL80211_RATE_INFO_"),
    "bss_param": ("nl80211_sta_bss_param", "NL80211_STA_BSS_PARAM_"),
    "tid_stats": ("nl80211_tid_stats", "NL80211_TID_STATS_"),
    "txq_stats": ("nl80211_txq_stats", "NL80211_TXQ_STATS_"),
    "survey_info": ("nl80211_survey_info", "NL80211_SURVEY_INFO_"),
}
NL80211_FALLBACK = {
    "cmd": {1: "GET_WIPHY", 2: "SET_WIPHY", 3: "NEW_WIPHY", 5: "GET_INTERFACE",
            7: "NEW_INTERFACE", 17: "GET_STATION", 19: "NEW_STATION", 50: "GET_SURVEY",
            51: "NEW_SURVEY_RESULTS"},
    "attr": {1: "WIPHY", 2: "WIPHY_NAME", 3: "IFINDEX", 4: "IFNAME", 6: "MAC", 21: "STA_INFO",
             84: "SURVEY_INFO", 174: "SPLIT_WIPHY_DUMP", 265: "TXQ_STATS", 266: "TXQ_LIMIT",
             267: "TXQ_MEMORY_LIMIT", 268: "TXQ_QUANTUM"},
    "sta_info": {8: "TX_BITRATE", 31: "TID_STATS"},
    "tid_stats": {6: "TXQ_STATS"},
    "txq_stats": {10: "TX_PACKETS"},
    "survey_info": {1: "FREQUENCY", 2: "NOISE"},
}
# nests: (enum, attr id) -> enum of its children; "array:X" = nest of
# index-numbered nests of enum X
NL80211_NESTS = {
    ("attr", 21): "sta_info", ("attr", 84): "survey_info", ("attr", 265): "txq_stats",
    ("sta_info", 8): "rate_info", ("sta_info", 14): "rate_info", ("sta_info", 15): "bss_param",
    ("sta_info", 31): "array:tid_stats", ("tid_stats", 6): "txq_stats",
}

# --- rtnetlink (linux/rtnetlink.h, if_link.h, pkt_sched.h, gen_stats.h) ---
RTM_TYPES = {16: "RTM_NEWLINK", 17: "RTM_DELLINK", 18: "RTM_GETLINK", 19: "RTM_SETLINK",
             20: "RTM_NEWADDR", 22: "RTM_GETADDR",
             36: "RTM_NEWQDISC", 37: "RTM_DELQDISC", 38: "RTM_GETQDISC",
             40: "RTM_NEWTCLASS", 42: "RTM_GETTCLASS", 44: "RTM_NEWTFILTER", 46: "RTM_GETTFILTER",
             88: "RTM_NEWSTATS", 90: "RTM_GETSTATS"}
IFLA = {1: "IFLA_ADDRESS", 2: "IFLA_BROADCAST", 3: "IFLA_IFNAME", 4: "IFLA_MTU", 5: "IFLA_LINK",
        6: "IFLA_QDISC", 7: "IFLA_STATS", 10: "IFLA_MASTER", 13: "IFLA_TXQLEN", 14: "IFLA_MAP",
        16: "IFLA_OPERSTATE", 17: "IFLA_LINKMODE", 18: "IFLA_LINKINFO", 19: "IFLA_NET_NS_PID",
        23: "IFLA_STATS64", 26: "IFLA_AF_SPEC", 27: "IFLA_GROUP", 29: "IFLA_EXT_MASK",
        30: "IFLA_PROMISCUITY", 31: "IFLA_NUM_TX_QUEUES", 32: "IFLA_NUM_RX_QUEUES",
        33: "IFLA_CARRIER", 35: "IFLA_CARRIER_CHANGES", 40: "IFLA_GSO_MAX_SEGS",
        41: "IFLA_GSO_MAX_SIZE", 47: "IFLA_CARRIER_UP_COUNT", 48: "IFLA_CARRIER_DOWN_COUNT",
        50: "IFLA_MIN_MTU", 51: "IFLA_MAX_MTU", 54: "IFLA_PERM_ADDRESS",
        58: "IFLA_GRO_MAX_SIZE", 59: "IFLA_TSO_MAX_SIZE", 60: "IFLA_TSO_MAX_SEGS",
        61: "IFLA_ALLMULTI"}
IFLA_TXQLEN = 13
TCA = {1: "TCA_KIND", 2: "TCA_OPTIONS", 3: "TCA_STATS", 4: "TCA_XSTATS", 5: "TCA_RATE",
       6: "TCA_FCNT", 7: "TCA_STATS2", 8: "TCA_STAB", 10: "TCA_DUMP_INVISIBLE", 11: "TCA_CHAIN",
       12: "TCA_HW_OFFLOAD", 13: "TCA_INGRESS_BLOCK", 14: "TCA_EGRESS_BLOCK",
       15: "TCA_DUMP_FLAGS", 16: "TCA_EXT_WARN_MSG"}
TCA_KIND, TCA_OPTIONS, TCA_STATS2 = 1, 2, 7
TCA_STATS = {1: "TCA_STATS_BASIC", 2: "TCA_STATS_RATE_EST", 3: "TCA_STATS_QUEUE",
             4: "TCA_STATS_APP", 5: "TCA_STATS_RATE_EST64", 7: "TCA_STATS_BASIC_HW",
             8: "TCA_STATS_PKT64"}
FQ_CODEL = {1: "TCA_FQ_CODEL_TARGET", 2: "TCA_FQ_CODEL_LIMIT", 3: "TCA_FQ_CODEL_INTERVAL",
            4: "TCA_FQ_CODEL_ECN", 5: "TCA_FQ_CODEL_FLOWS", 6: "TCA_FQ_CODEL_QUANTUM",
            7: "TCA_FQ_CODEL_CE_THRESHOLD", 8: "TCA_FQ_CODEL_DROP_BATCH_SIZE",
            9: "TCA_FQ_CODEL_MEMORY_LIMIT", 10: "TCA_FQ_CODEL_CE_THRESHOLD_SELECTOR",
            11: "TCA_FQ_CODEL_CE_THRESHOLD_MASK"}
TCA_FQ_CODEL_LIMIT = 2
NLMSGERR_ATTRS = {1: "NLMSGERR_ATTR_MSG", 2: "NLMSGERR_ATTR_OFFS", 3: "NLMSGERR_ATTR_COOKIE",
                  4: "NLMSGERR_ATTR_POLICY", 5: "NLMSGERR_ATTR_MISS_TYPE",
                  6: "NLMSGERR_ATTR_MISS_NEST"}


def _load_nl80211_names() -> dict[str, dict[int, str]]:
    """enum value -> short name, from the installed UAPI header if present."""
    names = {k: dict(v) for k, v in NL80211_FALLBACK.items()}
    for k in NL80211_ENUMS:
        names.setdefault(k, {})
    hdr = Path("/usr/include/linux/nl80211.h")
    if not hdr.exists():
        return names
    src = re.sub(r"/\*.*?\*/", "", hdr.read_text(), flags=re.S)
    src = re.sub(r"^\s*#.*$", "", src, flags=re.M)
    for key, (enum, prefix) in NL80211_ENUMS.items():
        m = re.search(r"enum\s+" + enum + r"\s*\{(.*?)\}", src, re.S)
        if not m:
            continue
        val = -1
        for item in m.group(1).split(","):
            item = item.strip()
            if not item:
                continue
            if "=" in item:
                n, v = (x.strip() for x in item.split("=", 1))
                try:
                    val = int(v, 0)
                except ValueError:
                    continue  # an alias such as X = Y
            else:
                n, val = item, val + 1
            if n.startswith(prefix):
                names[key][val] = n[len(prefix):]
    return names


NL80211_NAMES = _load_nl80211_names()


# --------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------

@dataclass
class Attr:
    type: int
    nested_flag: bool
    value: bytes
    children: list["Attr"] | None = None

    def find(self, t: int) -> "Attr | None":
        return next((c for c in self.children or [] if c.type == t), None)

    def u(self) -> int:
        return int.from_bytes(self.value[:8], "little") if self.value else 0


@dataclass
class Msg:
    record: int             # index of the pcap record
    direction: str          # "to-kernel" or "to-user"
    protocol: int           # NETLINK_ROUTE / NETLINK_GENERIC / ...
    type: int
    flags: int
    seq: int
    pid: int
    payload: bytes
    family: str = ""        # generic netlink family name ("nlctrl", "nl80211")
    cmd: int | None = None  # generic netlink command
    attrs: list[Attr] = field(default_factory=list)
    error: int | None = None

    def find(self, t: int) -> Attr | None:
        return next((a for a in self.attrs if a.type == t), None)


def parse_attrs(data: bytes) -> list[Attr] | None:
    """Attributes of data, or None if data is not a well-formed attribute list."""
    out, off = [], 0
    while off < len(data):
        if off + 4 > len(data):
            return None
        ln, t = struct.unpack_from("<HH", data, off)
        if ln < 4 or off + ln > len(data):
            return None
        out.append(Attr(t & NLA_TYPE_MASK, bool(t & NLA_F_NESTED), data[off + 4: off + ln]))
        off += (ln + 3) & ~3
    return out


def read_records(path: str | Path) -> list[tuple[int, int, bytes]]:
    """(packet type, netlink protocol, netlink bytes) for each pcap record."""
    data = Path(path).read_bytes()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        raise ValueError(f"{path}: not a classic pcap file")
    linktype, = struct.unpack_from(e + "I", data, 20)
    if linktype != LINKTYPE_NETLINK:
        raise ValueError(f"{path}: link type {linktype}, expected {LINKTYPE_NETLINK}")
    off, recs = 24, []
    while off + 16 <= len(data):
        _ts, _tus, incl, _orig = struct.unpack_from(e + "IIII", data, off)
        rec = data[off + 16: off + 16 + incl]
        off += 16 + incl
        pkttype, hatype, _alen = struct.unpack_from(">HHH", rec, 0)
        proto, = struct.unpack_from(">H", rec, 14)
        if hatype != ARPHRD_NETLINK:
            raise ValueError(f"{path}: record with ARPHRD {hatype}")
        recs.append((pkttype, proto, rec[16:]))
    return recs


def decode_file(path: str | Path) -> list[Msg]:
    families = {GENL_ID_CTRL: "nlctrl"}
    msgs = []
    for i, (pkttype, proto, nl) in enumerate(read_records(path)):
        off = 0
        while off + 16 <= len(nl):
            ln, typ, flags, seq, pid = struct.unpack_from("<IHHII", nl, off)
            if ln < 16 or off + ln > len(nl):
                break
            if pkttype in (PACKET_KERNEL, PACKET_USER):
                direction = "to-kernel" if pkttype == PACKET_KERNEL else "to-user"
            else:  # PACKET_OUTGOING: see the module docstring
                direction = "to-kernel" if flags & 0x1 else "to-user"
            m = Msg(i, direction, proto, typ, flags, seq, pid, nl[off + 16: off + ln])
            _decode_payload(m, families)
            msgs.append(m)
            off += (ln + 3) & ~3
    return msgs


def _decode_payload(m: Msg, families: dict[int, str]) -> None:
    p = m.payload
    if m.type == 2:  # NLMSG_ERROR: s32 error + original header (+ payload/ext attrs)
        m.error, = struct.unpack_from("<i", p, 0)
        olen, = struct.unpack_from("<I", p, 4)
        capped = m.flags & 0x100 or m.error == 0   # NLM_F_CAPPED or an ACK
        rest = p[4 + (16 if capped else olen):]
        m.attrs = parse_attrs(rest) or []
        return
    if m.type < 16:
        return
    if m.protocol == NETLINK_GENERIC:
        m.family = families.get(m.type, f"genl#{m.type}")
        m.cmd = p[0]
        m.attrs = parse_attrs(p[4:]) or []
        if m.type == GENL_ID_CTRL and m.cmd == 1:   # NEWFAMILY: learn id -> name
            fid, name = m.find(1), m.find(2)
            if fid and name:
                families[int.from_bytes(fid.value[:2], "little")] = name.value.rstrip(b"\0").decode()
        if m.family == "nl80211":
            for a in m.attrs:
                _nest80211(a, "attr")
    elif m.protocol == NETLINK_ROUTE:
        hdr = {16: 16, 17: 16, 18: 16, 19: 16, 36: 20, 37: 20, 38: 20}.get(m.type)
        if hdr is not None and len(p) >= hdr:
            m.attrs = parse_attrs(p[hdr:]) or []
            for a in m.attrs:
                if a.nested_flag or (m.type in (36, 37, 38) and a.type == TCA_STATS2):
                    a.children = parse_attrs(a.value)
            if m.type in (36, 37, 38):
                kind = m.find(TCA_KIND)
                opts = m.find(TCA_OPTIONS)
                if opts and kind and kind.value.rstrip(b"\0") == b"fq_codel":
                    opts.children = parse_attrs(opts.value)


def _nest80211(a: Attr, enum: str) -> None:
    sub = NL80211_NESTS.get((enum, a.type))
    if sub is None:
        if a.nested_flag:
            a.children = parse_attrs(a.value)
        return
    a.children = parse_attrs(a.value)
    if sub.startswith("array:"):
        for c in a.children or []:
            c.children = parse_attrs(c.value)
            for cc in c.children or []:
                _nest80211(cc, sub[6:])
    else:
        for c in a.children or []:
            _nest80211(c, sub)


# --------------------------------------------------------------------------
# printing
# --------------------------------------------------------------------------

def _flags(m: Msg) -> str:
    table = list(NLM_FLAGS)
    if m.type == 2:
        table += [(0x100, "CAPPED"), (0x200, "ACK_TLVS")]
    elif m.flags & 0x1:  # request: GET-style or NEW-style modifiers
        if m.protocol == NETLINK_GENERIC:
            cname = (CTRL_CMDS.get(m.cmd, "") if m.family == "nlctrl"
                     else NL80211_NAMES["cmd"].get(m.cmd, "") if m.family == "nl80211" else "")
            is_get = "GET" in cname
        else:
            is_get = RTM_TYPES.get(m.type, "").startswith("RTM_GET")
        table += GET_FLAGS if is_get else NEW_FLAGS
    names = [n for bit, n in table if m.flags & bit]
    rest = m.flags & ~sum(bit for bit, _ in table)
    if rest:
        names.append(hex(rest))
    return "|".join(names) or "0"


def msg_title(m: Msg) -> str:
    if m.type in NLMSG_TYPES:
        what = "NLMSG_" + NLMSG_TYPES[m.type]
        if m.error is not None:
            what += f" error={m.error}"
    elif m.protocol == NETLINK_GENERIC:
        if m.family == "nlctrl":
            cname = CTRL_CMDS.get(m.cmd, f"cmd#{m.cmd}")
        elif m.family == "nl80211":
            cname = "NL80211_CMD_" + NL80211_NAMES["cmd"].get(m.cmd, f"#{m.cmd}")
        else:
            cname = f"cmd#{m.cmd}"
        what = f"{m.family}(0x{m.type:x}) {cname}({m.cmd})"
    else:
        what = RTM_TYPES.get(m.type, f"type#{m.type}") + f"({m.type})"
    proto = {NETLINK_ROUTE: "route", NETLINK_GENERIC: "generic"}.get(m.protocol, str(m.protocol))
    return (f"#{m.record:<3} {m.direction:9} {proto:7} {what} flags={_flags(m)} "
            f"seq={m.seq} pid={m.pid} len={16 + len(m.payload)}")


def _val(v: bytes) -> str:
    text = v.rstrip(b"\0")
    if (len(v) > 1 and v[-1:] == b"\0" and text and all(32 <= c < 127 for c in text)
            and (len(v) not in (2, 4, 8) or len(text) >= 3)):
        return repr(text.decode())
    if len(v) in (1, 2, 4, 8):
        n = int.from_bytes(v, "little")
        s = str(n)
        if n >= 1 << (8 * len(v) - 1):
            s += f" (s{8 * len(v)} {n - (1 << 8 * len(v))})"
        return f"u{8 * len(v)} {s}"
    h = v[:24].hex()
    return f"{len(v)} B {h}{'...' if len(v) > 24 else ''}"


def _attr_name(m: Msg, enum: str | None, t: int) -> str:
    if m.family == "nl80211" and enum:
        base = enum[6:] if enum.startswith("array:") else enum
        n = NL80211_NAMES.get(base, {}).get(t)
        return n or f"#{t}"
    if m.family == "nlctrl" and enum == "attr":
        return CTRL_ATTRS.get(t, f"#{t}")
    if m.protocol == NETLINK_ROUTE and enum == "attr":
        if m.type in (16, 17, 18, 19):
            return IFLA.get(t, f"#{t}")
        if m.type in (36, 37, 38):
            return TCA.get(t, f"#{t}")
    if enum == "tca_stats":
        return TCA_STATS.get(t, f"#{t}")
    if enum == "fq_codel":
        return FQ_CODEL.get(t, f"#{t}")
    if enum == "err":
        return NLMSGERR_ATTRS.get(t, f"#{t}")
    return f"#{t}"


def _route_header(m: Msg) -> str | None:
    p = m.payload
    if m.protocol != NETLINK_ROUTE:
        return None
    if m.type in (16, 17, 18, 19) and len(p) >= 16:
        fam, _pad, typ, idx, flags, change = struct.unpack_from("<BBHiII", p, 0)
        return f"ifinfomsg family={fam} type={typ} index={idx} flags=0x{flags:x} change=0x{change:x}"
    if m.type in (36, 37, 38) and len(p) >= 20:
        fam, _p1, _p2, idx, handle, parent, info = struct.unpack_from("<BBHiIII", p, 0)
        return (f"tcmsg family={fam} ifindex={idx} handle=0x{handle:x} "
                f"parent=0x{parent:x} info={info}")
    return None


def format_msg(m: Msg, max_depth: int = 8) -> list[str]:
    out = [msg_title(m)]
    hdr = _route_header(m)
    if hdr:
        out.append("  " + hdr)

    def walk(attrs: list[Attr], enum: str | None, depth: int) -> None:
        for a in attrs:
            name = _attr_name(m, enum, a.type)
            if a.children is not None and depth < max_depth:
                out.append(f"{'  ' * depth}{name}({a.type}) nest {len(a.value)} B")
                if m.family == "nl80211":
                    sub = NL80211_NESTS.get((enum or "", a.type))
                    if sub and sub.startswith("array:"):
                        for c in a.children:
                            out.append(f"{'  ' * (depth + 1)}[{c.type}] nest")
                            walk(c.children or [], sub[6:], depth + 2)
                        continue
                    walk(a.children, sub, depth + 1)
                elif m.protocol == NETLINK_ROUTE and a.type == TCA_STATS2 and m.type in (36, 38):
                    walk(a.children, "tca_stats", depth + 1)
                elif m.protocol == NETLINK_ROUTE and a.type == TCA_OPTIONS and m.type in (36, 38):
                    walk(a.children, "fq_codel", depth + 1)
                else:
                    walk(a.children, None, depth + 1)
            else:
                out.append(f"{'  ' * depth}{name}({a.type}) {_val(a.value)}")

    walk(m.attrs, "err" if m.type == 2 else "attr", 1)
    return out


# --------------------------------------------------------------------------
# checks of reference/nl80211
# --------------------------------------------------------------------------

class Checker:
    def __init__(self) -> None:
        self.failures: list[str] = []
        self.notes: list[str] = []

    def ok(self, cond: bool, what: str) -> bool:
        (self.notes if cond else self.failures).append(("ok   " if cond else "FAIL ") + what)
        return cond


def _nl80211(msgs: list[Msg], cmd: int, direction: str) -> list[Msg]:
    return [m for m in msgs if m.family == "nl80211" and m.cmd == cmd and m.direction == direction]


def _has_lookup(c: Checker, name: str, msgs: list[Msg]) -> None:
    req = [m for m in msgs if m.family == "nlctrl" and m.cmd == 3 and m.direction == "to-kernel"]
    rep = [m for m in msgs if m.family == "nlctrl" and m.cmd == 1 and m.direction == "to-user"]
    c.ok(bool(req) and bool(rep), f"{name}: CTRL_CMD_GETFAMILY request + NEWFAMILY reply "
                                  f"({len(req)}/{len(rep)})")


def _read_txt(d: Path, name: str) -> str:
    p = d / f"{name}.txt"
    return p.read_text() if p.exists() else ""


def index(d: Path) -> list[str]:
    """Per capture: message count and the messages by direction and kind."""
    out = []
    for p in sorted(d.glob("*.pcap")):
        msgs = decode_file(p)
        recs = len(read_records(p))
        out.append(f"{p.name}: {recs} pcap records, {len(msgs)} netlink messages")
        counts: dict[str, int] = {}
        for m in msgs:
            t = msg_title(m).split(" flags=")[0].split(None, 1)[1]
            t = re.sub(r"error=-?\d+", lambda e: e.group(0), t)
            counts[t] = counts.get(t, 0) + 1
        for t, n in counts.items():
            out.append(f"  {n:4} x {' '.join(t.split())}")
    return out


def check_dir(d: Path) -> Checker:
    c = Checker()
    files = {p.stem: decode_file(p) for p in sorted(d.glob("*.pcap"))}
    for name, msgs in files.items():
        c.ok(len(msgs) > 0, f"{name}.pcap: {len(msgs)} netlink messages")

    msgs = files.get("station-dump", [])
    _has_lookup(c, "station-dump", msgs)
    req = _nl80211(msgs, NL80211_CMD_GET_STATION, "to-kernel")
    rep = _nl80211(msgs, NL80211_CMD_NEW_STATION, "to-user")
    c.ok(bool(req) and bool(req[0].flags & 0x300 == 0x300), "station-dump: GET_STATION dump request")
    c.ok(bool(rep), f"station-dump: {len(rep)} NEW_STATION replies")
    for m in rep:
        si = m.find(NL80211_ATTR_STA_INFO)
        if not c.ok(si is not None and bool(si.children), "station-dump: NL80211_ATTR_STA_INFO nest"):
            continue
        c.ok(si.find(NL80211_STA_INFO_TX_BITRATE) is not None, "station-dump: STA_INFO_TX_BITRATE")
        txp = si.find(NL80211_STA_INFO_TX_PACKETS)
        c.ok(txp is not None and txp.u() > 0, f"station-dump: STA_INFO_TX_PACKETS = {txp.u() if txp else None}")
        tid = si.find(NL80211_STA_INFO_TID_STATS)
        ok = tid is not None and any(
            t.find(NL80211_TID_STATS_TXQ_STATS) is not None for t in tid.children or [])
        c.ok(ok, "station-dump: STA_INFO_TID_STATS with TID_STATS_TXQ_STATS")
        if ok:
            tx = sum((t.find(NL80211_TID_STATS_TXQ_STATS).find(NL80211_TXQ_STATS_TX_PACKETS) or Attr(0, False, b"")).u()
                     for t in tid.children or [] if t.find(NL80211_TID_STATS_TXQ_STATS))
            c.ok(tx > 0, f"station-dump: TXQ_STATS_TX_PACKETS summed over TIDs = {tx}")

    txt = _read_txt(d, "station-dump")
    want = re.findall(r"^\ttx packets:\t(\d+)$", txt, re.M)
    got = [m.find(NL80211_ATTR_STA_INFO).find(NL80211_STA_INFO_TX_PACKETS).u() for m in rep
           if m.find(NL80211_ATTR_STA_INFO) and m.find(NL80211_ATTR_STA_INFO).find(NL80211_STA_INFO_TX_PACKETS)]
    c.ok(bool(want) and [int(x) for x in want] == got,
         f"station-dump: decoded TX_PACKETS {got} == iw's 'tx packets' {want}")

    msgs = files.get("survey-dump", [])
    _has_lookup(c, "survey-dump", msgs)
    rep = _nl80211(msgs, NL80211_CMD_NEW_SURVEY_RESULTS, "to-user")
    c.ok(bool(_nl80211(msgs, NL80211_CMD_GET_SURVEY, "to-kernel")), "survey-dump: GET_SURVEY request")
    c.ok(bool(rep), f"survey-dump: {len(rep)} NEW_SURVEY_RESULTS replies")
    for m in rep:
        si = m.find(NL80211_ATTR_SURVEY_INFO)
        c.ok(si is not None and si.find(NL80211_SURVEY_INFO_FREQUENCY) is not None,
             f"survey-dump: SURVEY_INFO nest with FREQUENCY "
             f"({si.find(NL80211_SURVEY_INFO_FREQUENCY).u() if si and si.find(1) else '?'} MHz, "
             f"fields {sorted(ch.type for ch in si.children or []) if si else []})")

    want = [int(x) for x in re.findall(r"^\tfrequency:\s+(\d+) MHz", _read_txt(d, "survey-dump"), re.M)]
    got = [m.find(NL80211_ATTR_SURVEY_INFO).find(NL80211_SURVEY_INFO_FREQUENCY).u() for m in rep
           if m.find(NL80211_ATTR_SURVEY_INFO) and m.find(NL80211_ATTR_SURVEY_INFO).find(1)]
    c.ok(bool(want) and want == got, f"survey-dump: decoded frequencies {got} == iw's {want}")

    for name, limit in (("wiphy", None), ("txq-limit", 1234)):
        msgs = files.get(name, [])
        _has_lookup(c, name, msgs)
        rep = _nl80211(msgs, NL80211_CMD_NEW_WIPHY, "to-user")
        c.ok(len(rep) > 1, f"{name}: {len(rep)} NEW_WIPHY messages (split dump)")
        for a, n in ((NL80211_ATTR_TXQ_LIMIT, "TXQ_LIMIT"), (NL80211_ATTR_TXQ_MEMORY_LIMIT, "TXQ_MEMORY_LIMIT"),
                     (NL80211_ATTR_TXQ_QUANTUM, "TXQ_QUANTUM"), (NL80211_ATTR_TXQ_STATS, "TXQ_STATS")):
            hits = [m.find(a) for m in rep if m.find(a) is not None]
            val = hits[-1].u() if hits and a != NL80211_ATTR_TXQ_STATS else None
            c.ok(bool(hits), f"{name}: NL80211_ATTR_{n} present" + (f" = {val}" if val is not None else ""))
            if limit and a == NL80211_ATTR_TXQ_LIMIT and hits:
                c.ok(val == limit, f"{name}: TXQ_LIMIT is the value set ({val} == {limit})")
        if limit:
            sets = _nl80211(msgs, NL80211_CMD_SET_WIPHY, "to-kernel")
            acks = [m for m in msgs if m.type == 2 and m.direction == "to-user" and m.error == 0]
            c.ok(bool(sets) and sets[0].find(NL80211_ATTR_TXQ_LIMIT) is not None
                 and sets[0].find(NL80211_ATTR_TXQ_LIMIT).u() == limit,
                 f"{name}: SET_WIPHY request with TXQ_LIMIT={limit}")
            c.ok(bool(acks), f"{name}: NLMSG_ERROR 0 (ACK) replies: {len(acks)}")

    gets = [re.findall(r"^Packet limit:\s+(\d+)", _read_txt(d, n), re.M | re.I) for n in ("wiphy", "txq-limit")]
    c.ok(gets == [["8192"], ["1234"]],
         f"wiphy/txq-limit: `iw phy phy0 get txq` printed packet limits {gets} (before, after)")

    msgs = files.get("interface", [])
    _has_lookup(c, "interface", msgs)
    c.ok(bool(_nl80211(msgs, NL80211_CMD_GET_INTERFACE, "to-kernel"))
         and bool(_nl80211(msgs, NL80211_CMD_NEW_INTERFACE, "to-user")),
         "interface: GET_INTERFACE request + NEW_INTERFACE reply")
    rep = _nl80211(msgs, NL80211_CMD_NEW_INTERFACE, "to-user")
    c.ok(any(m.find(NL80211_ATTR_TXQ_STATS) is not None for m in rep),
         "interface: NEW_INTERFACE carries TXQ_STATS (multicast TXQ)")

    msgs = files.get("rtnetlink-link", [])
    setl = [m for m in msgs if m.protocol == NETLINK_ROUTE and m.type in (16, 19)
            and m.direction == "to-kernel" and m.find(IFLA_TXQLEN)]
    c.ok(bool(setl) and setl[0].find(IFLA_TXQLEN).u() == 777, "rtnetlink-link: request with IFLA_TXQLEN=777")
    newl = [m for m in msgs if m.type == 16 and m.direction == "to-user" and m.find(IFLA_TXQLEN)
            and m.find(IFLA_TXQLEN).u() == 777]
    c.ok(bool(newl), f"rtnetlink-link: RTM_NEWLINK replies/notifications with IFLA_TXQLEN=777: {len(newl)}")

    msgs = files.get("rtnetlink-qdisc", [])
    q = [m for m in msgs if m.protocol == NETLINK_ROUTE and m.type == 36]
    kinds = {(m.direction, m.find(TCA_KIND).value.rstrip(b"\0").decode()) for m in q if m.find(TCA_KIND)}
    c.ok(("to-kernel", "fq_codel") in kinds and ("to-kernel", "pfifo") in kinds,
         f"rtnetlink-qdisc: RTM_NEWQDISC requests for fq_codel and pfifo ({sorted(kinds)})")
    fq = [m for m in q if m.direction == "to-user" and m.find(TCA_KIND)
          and m.find(TCA_KIND).value.rstrip(b"\0") == b"fq_codel" and m.find(TCA_OPTIONS)]
    lim = [m.find(TCA_OPTIONS).find(TCA_FQ_CODEL_LIMIT) for m in fq]
    c.ok(any(x is not None and x.u() == 1500 for x in lim),
         "rtnetlink-qdisc: fq_codel TCA_FQ_CODEL_LIMIT=1500 in a reply")
    c.ok(any(m.find(TCA_STATS2) is not None for m in fq), "rtnetlink-qdisc: fq_codel reply with TCA_STATS2")
    pf = [m for m in q if m.direction == "to-user" and m.find(TCA_KIND)
          and m.find(TCA_KIND).value.rstrip(b"\0") == b"pfifo" and m.find(TCA_OPTIONS)]
    c.ok(any(int.from_bytes(m.find(TCA_OPTIONS).value[:4], "little") == 300 for m in pf),
         "rtnetlink-qdisc: pfifo reply with tc_fifo_qopt.limit=300")
    c.ok(any(m.type == 37 and m.direction == "to-kernel" for m in msgs), "rtnetlink-qdisc: RTM_DELQDISC request")
    return c


def summary(path: Path) -> list[str]:
    """One line per message: direction, family, command/type, flags, length."""
    return [msg_title(m) for m in decode_file(path)]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 2 and argv[0] == "dump":
        for f in argv[1:]:
            print(f"== {f}")
            for m in decode_file(f):
                print("\n".join(format_msg(m)))
        return 0
    if argv and argv[0] == "summary":
        for f in argv[1:]:
            print(f"== {Path(f).name}")
            print("\n".join(summary(Path(f))))
        return 0
    if argv and argv[0] == "index":
        d = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2] / "reference" / "nl80211"
        print("\n".join(index(d)))
        return 0
    if argv and argv[0] == "check":
        d = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2] / "reference" / "nl80211"
        c = check_dir(d)
        for line in c.notes + c.failures:
            print(line)
        print(f"{len(c.notes)} passed, {len(c.failures)} failed")
        return 1 if c.failures else 0
    print(__doc__.split("Usage:")[1].split("Attribute names")[0].rstrip())
    return 2


if __name__ == "__main__":
    sys.exit(main())
