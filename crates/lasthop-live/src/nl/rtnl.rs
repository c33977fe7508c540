//! rtnetlink (rtnetlink(7), `linux/rtnetlink.h`, `linux/pkt_sched.h`, `linux/gen_stats.h`)
//! for a buffer sizer on an interface without mac80211 TX queues (a relay's radio, a wired
//! egress): a link's `txqueuelen` (`IFLA_TXQLEN`, what `ip link set dev X txqueuelen N`
//! changes) and its root queue discipline — kind, handle, packet limit and queue statistics —
//! and the change of that limit (`tc qdisc change dev X root <kind> limit N`).
//!
//! Packet limits by kind: `pfifo` and `pfifo_head_drop` carry `struct tc_fifo_qopt` (the
//! limit in packets; `bfifo`'s is in bytes), `fq_codel`, `codel` and `pie` a nested
//! `TCA_<KIND>_LIMIT` (type 2), `fq` `TCA_FQ_PLIMIT` (type 1). `pfifo_fast` is bounded by the
//! device's `txqueuelen`; `noqueue`, `mq` and others have no single packet limit.

use super::{AttrWriter, Attrs, Msg, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST};

pub const RTM_NEWLINK: u16 = 16;
pub const RTM_GETLINK: u16 = 18;
pub const RTM_NEWNEIGH: u16 = 28;
pub const RTM_GETNEIGH: u16 = 30;
pub const RTM_NEWQDISC: u16 = 36;
pub const RTM_GETQDISC: u16 = 38;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_TXQLEN: u16 = 13;
const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
const TCA_STATS: u16 = 3;
const TCA_STATS2: u16 = 7;
const TCA_STATS_QUEUE: u16 = 3;
/// `TC_H_ROOT`.
pub const TC_H_ROOT: u32 = 0xffff_ffff;
const IFINFOMSG_LEN: usize = 16;
const TCMSG_LEN: usize = 20;

/// A link as `RTM_NEWLINK` describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Link {
    pub ifindex: u32,
    pub name: String,
    pub mtu: Option<u32>,
    pub txqlen: Option<u32>,
}

fn ifinfomsg(ifindex: u32) -> [u8; IFINFOMSG_LEN] {
    let mut h = [0u8; IFINFOMSG_LEN];
    h[4..8].copy_from_slice(&(ifindex as i32).to_ne_bytes());
    h
}

/// `RTM_GETLINK` for the interface `name`.
pub fn get_link(name: &str, seq: u32) -> Msg {
    let mut w = AttrWriter::with_header(&ifinfomsg(0));
    w.str(IFLA_IFNAME, name);
    Msg::new(RTM_GETLINK, NLM_F_REQUEST, seq, w.finish())
}

/// `RTM_NEWLINK` setting `txqueuelen` of `ifindex` (acknowledged).
pub fn set_txqlen(ifindex: u32, txqlen: u32, seq: u32) -> Msg {
    let mut w = AttrWriter::with_header(&ifinfomsg(ifindex));
    w.u32(IFLA_TXQLEN, txqlen);
    Msg::new(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, seq, w.finish())
}

impl Link {
    pub fn decode(m: &Msg) -> Result<Link, String> {
        if m.ty != RTM_NEWLINK || m.payload.len() < IFINFOMSG_LEN {
            return Err(format!("expected RTM_NEWLINK, got message type {} of {} octets", m.ty, m.payload.len()));
        }
        let mut l = Link { ifindex: i32::from_ne_bytes(m.payload[4..8].try_into().expect("4 octets")) as u32, ..Link::default() };
        for a in Attrs::new(&m.payload[IFINFOMSG_LEN..]) {
            let a = a?;
            match a.ty {
                IFLA_IFNAME => l.name = a.str()?.to_string(),
                IFLA_MTU => l.mtu = Some(a.u32()?),
                IFLA_TXQLEN => l.txqlen = Some(a.u32()?),
                _ => {}
            }
        }
        Ok(l)
    }
}

/// A neighbour-table entry (`RTM_NEWNEIGH`): an IPv4 address and the link-layer address the
/// kernel resolved it to on `ifindex` (`ip neigh`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neighbour {
    pub ifindex: u32,
    pub ipv4: std::net::Ipv4Addr,
    pub lladdr: Vec<u8>,
}

const NDMSG_LEN: usize = 12;
const NDA_DST: u16 = 1;
const NDA_LLADDR: u16 = 2;

/// `RTM_GETNEIGH` dump of the IPv4 neighbour table.
pub fn dump_neighbours(seq: u32) -> Msg {
    let mut h = [0u8; NDMSG_LEN];
    h[0] = libc::AF_INET as u8;
    Msg::new(RTM_GETNEIGH, NLM_F_REQUEST | NLM_F_DUMP, seq, h.to_vec())
}

impl Neighbour {
    /// None for entries without an IPv4 destination or a link-layer address.
    pub fn decode(m: &Msg) -> Result<Option<Neighbour>, String> {
        if m.ty != RTM_NEWNEIGH || m.payload.len() < NDMSG_LEN {
            return Err(format!("expected RTM_NEWNEIGH, got message type {} of {} octets", m.ty, m.payload.len()));
        }
        let ifindex = i32::from_ne_bytes(m.payload[4..8].try_into().expect("4 octets")) as u32;
        let (mut dst, mut ll) = (None, None);
        for a in Attrs::new(&m.payload[NDMSG_LEN..]) {
            let a = a?;
            match a.ty {
                NDA_DST if a.data.len() == 4 => dst = Some(std::net::Ipv4Addr::new(a.data[0], a.data[1], a.data[2], a.data[3])),
                NDA_LLADDR => ll = Some(a.data.to_vec()),
                _ => {}
            }
        }
        Ok(match (dst, ll) {
            (Some(ipv4), Some(lladdr)) => Some(Neighbour { ifindex, ipv4, lladdr }),
            _ => None,
        })
    }
}

/// A queue discipline as `RTM_NEWQDISC` describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Qdisc {
    pub ifindex: u32,
    pub handle: u32,
    pub parent: u32,
    pub kind: String,
    /// The packet limit, for the kinds that have one (module doc).
    pub limit: Option<u32>,
    /// Queued packets and bytes, drops, overlimits (`gnet_stats_queue` or `tc_stats`).
    pub qlen: Option<u32>,
    pub backlog_bytes: Option<u32>,
    pub drops: Option<u32>,
    pub overlimits: Option<u32>,
}

impl Qdisc {
    pub fn is_root(&self) -> bool {
        self.parent == TC_H_ROOT
    }

    /// Whether this kind's packet limit can be changed here.
    pub fn limit_kind(kind: &str) -> bool {
        matches!(kind, "pfifo" | "pfifo_head_drop" | "fq_codel" | "codel" | "pie" | "fq")
    }

    pub fn decode(m: &Msg) -> Result<Qdisc, String> {
        if m.ty != RTM_NEWQDISC || m.payload.len() < TCMSG_LEN {
            return Err(format!("expected RTM_NEWQDISC, got message type {} of {} octets", m.ty, m.payload.len()));
        }
        let p = &m.payload;
        let u = |o: usize| u32::from_ne_bytes(p[o..o + 4].try_into().expect("4 octets"));
        let mut q = Qdisc { ifindex: u(4), handle: u(8), parent: u(12), ..Qdisc::default() };
        let mut options = None;
        for a in Attrs::new(&p[TCMSG_LEN..]) {
            let a = a?;
            match a.ty {
                TCA_KIND => q.kind = a.str()?.to_string(),
                TCA_OPTIONS => options = Some(a.data.to_vec()),
                TCA_STATS2 => {
                    if let Some(s) = a.nested().find(TCA_STATS_QUEUE)? {
                        // struct gnet_stats_queue { qlen, backlog, drops, requeues, overlimits }
                        let d = s.data;
                        if d.len() >= 20 {
                            let g = |o: usize| u32::from_ne_bytes(d[o..o + 4].try_into().expect("4 octets"));
                            (q.qlen, q.backlog_bytes, q.drops, q.overlimits) = (Some(g(0)), Some(g(4)), Some(g(8)), Some(g(16)));
                        }
                    }
                }
                TCA_STATS if q.qlen.is_none() => {
                    // struct tc_stats { u64 bytes; u32 packets, drops, overlimits, bps, pps, qlen, backlog }
                    let d = a.data;
                    if d.len() >= 36 {
                        let g = |o: usize| u32::from_ne_bytes(d[o..o + 4].try_into().expect("4 octets"));
                        (q.drops, q.overlimits, q.qlen, q.backlog_bytes) = (Some(g(12)), Some(g(16)), Some(g(28)), Some(g(32)));
                    }
                }
                _ => {}
            }
        }
        if let Some(o) = options {
            q.limit = match q.kind.as_str() {
                "pfifo" | "pfifo_head_drop" | "bfifo" => o.get(..4).map(|b| u32::from_ne_bytes(b.try_into().expect("4 octets"))),
                "fq_codel" | "codel" | "pie" => Attrs::new(&o).find(2)?.map(|a| a.u32()).transpose()?,
                "fq" => Attrs::new(&o).find(1)?.map(|a| a.u32()).transpose()?,
                _ => None,
            };
        }
        Ok(q)
    }
}

fn tcmsg(ifindex: u32, handle: u32, parent: u32) -> [u8; TCMSG_LEN] {
    let mut h = [0u8; TCMSG_LEN];
    h[4..8].copy_from_slice(&ifindex.to_ne_bytes());
    h[8..12].copy_from_slice(&handle.to_ne_bytes());
    h[12..16].copy_from_slice(&parent.to_ne_bytes());
    h
}

/// `RTM_GETQDISC` dump (every qdisc; callers pick the interface's root).
pub fn dump_qdiscs(seq: u32) -> Msg {
    Msg::new(RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP, seq, tcmsg(0, 0, 0).to_vec())
}

/// `tc qdisc change dev <ifindex> root <kind> limit <limit>` for the root qdisc `q`;
/// None if its kind has no packet limit here.
pub fn change_limit(q: &Qdisc, limit: u32, seq: u32) -> Option<Msg> {
    if !Qdisc::limit_kind(&q.kind) {
        return None;
    }
    let mut w = AttrWriter::with_header(&tcmsg(q.ifindex, q.handle, TC_H_ROOT));
    w.str(TCA_KIND, &q.kind);
    match q.kind.as_str() {
        "pfifo" | "pfifo_head_drop" => {
            w.bytes(TCA_OPTIONS, &limit.to_ne_bytes());
        }
        "fq" => {
            w.begin(TCA_OPTIONS, true).u32(1, limit).end();
        }
        _ => {
            w.begin(TCA_OPTIONS, true).u32(2, limit).end();
        }
    }
    Some(Msg::new(RTM_NEWQDISC, NLM_F_REQUEST | NLM_F_ACK, seq, w.finish()))
}

/// The answer a kernel gives to [`dump_qdiscs`], for tests: one qdisc.
pub fn encode_qdisc(q: &Qdisc, seq: u32) -> Msg {
    let mut w = AttrWriter::with_header(&tcmsg(q.ifindex, q.handle, q.parent));
    w.str(TCA_KIND, &q.kind);
    if let Some(l) = q.limit {
        match q.kind.as_str() {
            "pfifo" | "pfifo_head_drop" | "bfifo" => {
                w.bytes(TCA_OPTIONS, &l.to_ne_bytes());
            }
            "fq" => {
                w.begin(TCA_OPTIONS, false).u32(1, l).end();
            }
            _ => {
                w.begin(TCA_OPTIONS, false).u32(2, l).end();
            }
        }
    }
    if let (Some(ql), Some(bl), Some(dr), Some(ol)) = (q.qlen, q.backlog_bytes, q.drops, q.overlimits) {
        let mut g = Vec::with_capacity(20);
        for v in [ql, bl, dr, 0, ol] {
            g.extend_from_slice(&v.to_ne_bytes());
        }
        w.begin(TCA_STATS2, false).bytes(TCA_STATS_QUEUE, &g).end();
    }
    Msg::new(RTM_NEWQDISC, super::NLM_F_MULTI, seq, w.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qdisc_round_trip_and_change() {
        for kind in ["pfifo", "fq_codel", "codel", "pie", "fq", "bfifo"] {
            let q = Qdisc { ifindex: 3, handle: 0x8001_0000, parent: TC_H_ROOT, kind: kind.into(), limit: Some(777), qlen: Some(5), backlog_bytes: Some(7500), drops: Some(2), overlimits: Some(1) };
            assert_eq!(Qdisc::decode(&encode_qdisc(&q, 1)).unwrap(), q);
            let ch = change_limit(&q, 99, 2);
            assert_eq!(ch.is_some(), kind != "bfifo", "{kind}");
            if let Some(ch) = ch {
                // The change message reads back as the same root qdisc with the new limit.
                let mut m = ch.clone();
                m.ty = RTM_NEWQDISC;
                let back = Qdisc::decode(&m).unwrap();
                assert_eq!((back.kind.as_str(), back.limit, back.parent, back.handle), (kind, Some(99), TC_H_ROOT, q.handle));
            }
        }
    }

    #[test]
    fn link_messages() {
        let m = set_txqlen(7, 500, 3);
        let mut r = m.clone();
        r.ty = RTM_NEWLINK;
        let l = Link::decode(&r).unwrap();
        assert_eq!((l.ifindex, l.txqlen), (7, Some(500)));
        assert!(Link::decode(&get_link("eth0", 1)).is_err());
    }
}
