//! The AP as a live tool sees it: nl80211 (a kernel's, or the emulator AP host's telemetry
//! socket — the same messages either way) and rtnetlink, behind a few typed calls. This is
//! the sensor/actuator seam of the live tools: everything above it is decision code driven by
//! wall time, everything below it is the OS.

use crate::nl::nl80211::{self as n, Aggregation, InterfaceInfo, StationInfo, SurveyInfo, WiphyInfo};
use crate::nl::rtnl::{self, Link, Qdisc};
use crate::nl::socket::{telemetry_path, Conn, Endpoint, NlError, NETLINK_GENERIC, NETLINK_ROUTE};
use crate::nl::{genl, Msg};
use std::path::{Path, PathBuf};

/// Where nl80211 is answered for this process: `explicit` (a telemetry socket path), else
/// the emulator's AP host socket of this network namespace if there is one, else the kernel.
pub fn nl80211_endpoint(explicit: Option<&Path>) -> Endpoint {
    if let Some(p) = explicit {
        return Endpoint::Unix(p.to_path_buf());
    }
    if let Ok(inode) = crate::sys::nsfs::own_netns_inode() {
        let p = telemetry_path(inode);
        if p.exists() {
            return Endpoint::Unix(p);
        }
    }
    Endpoint::Kernel(NETLINK_GENERIC)
}

/// Describes an endpoint for messages.
pub fn endpoint_text(e: &Endpoint) -> String {
    match e {
        Endpoint::Kernel(_) => "the kernel's nl80211".into(),
        Endpoint::Unix(p) => format!("the emulator's AP-host telemetry ({})", p.display()),
    }
}

/// An nl80211 conversation.
pub struct Nl80211 {
    conn: Conn,
    family: u16,
}

impl Nl80211 {
    /// Open `e` and resolve the nl80211 family. `Ok(None)`: the peer has no nl80211 (a kernel
    /// without wireless).
    pub fn open(e: &Endpoint) -> Result<Option<Nl80211>, String> {
        let mut conn = Conn::open(e).map_err(|err| format!("{}: {err}", endpoint_text(e)))?;
        match conn.transact(genl::get_family(n::FAMILY, 0)) {
            Ok(m) => {
                let fam = m.first().ok_or("no answer to the nl80211 family lookup")?;
                Ok(Some(Nl80211 { family: genl::family_id(fam)?, conn }))
            }
            Err(NlError::Errno(libc::ENOENT, _)) => Ok(None),
            Err(err) => Err(format!("{}: nl80211 family lookup: {err}", endpoint_text(e))),
        }
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.conn.endpoint
    }

    fn ask(&mut self, m: Msg) -> Result<Vec<Msg>, NlError> {
        self.conn.transact(m)
    }

    /// The interface `ifindex` (Err(ENODEV) if nl80211 does not know it: not wireless).
    pub fn interface(&mut self, ifindex: u32) -> Result<InterfaceInfo, NlError> {
        let m = self.ask(n::get_interface(self.family, ifindex, 0))?;
        InterfaceInfo::decode(m.first().ok_or_else(|| NlError::Protocol("no NEW_INTERFACE".into()))?).map_err(NlError::Protocol)
    }

    pub fn interfaces(&mut self) -> Result<Vec<InterfaceInfo>, NlError> {
        self.ask(n::dump_interfaces(self.family, 0))?.iter().map(|m| InterfaceInfo::decode(m).map_err(NlError::Protocol)).collect()
    }

    /// Every phy, merged over the parts of a split dump.
    pub fn wiphys(&mut self) -> Result<Vec<WiphyInfo>, NlError> {
        let mut out: Vec<WiphyInfo> = Vec::new();
        for m in self.ask(n::dump_wiphy(self.family, None, 0))? {
            let idx = WiphyInfo::index_of(&m).map_err(NlError::Protocol)?;
            let w = match out.iter_mut().find(|w| Some(w.index) == idx) {
                Some(w) => w,
                None => {
                    out.push(WiphyInfo::default());
                    out.last_mut().expect("pushed")
                }
            };
            w.merge(&m).map_err(NlError::Protocol)?;
        }
        Ok(out)
    }

    pub fn wiphy(&mut self, index: u32) -> Result<WiphyInfo, NlError> {
        let mut w = WiphyInfo::default();
        for m in self.ask(n::dump_wiphy(self.family, Some(index), 0))? {
            if WiphyInfo::index_of(&m).map_err(NlError::Protocol)? == Some(index) {
                w.merge(&m).map_err(NlError::Protocol)?;
            }
        }
        Ok(w)
    }

    pub fn stations(&mut self, ifindex: u32) -> Result<Vec<StationInfo>, NlError> {
        self.ask(n::dump_stations(self.family, ifindex, 0))?.iter().map(|m| StationInfo::decode(m).map_err(NlError::Protocol)).collect()
    }

    /// The survey entry of the channel in use: the one marked in use, else (drivers such as
    /// mac80211_hwsim mark none) the one on the interface's frequency; None if neither.
    pub fn survey(&mut self, ifindex: u32) -> Result<Option<SurveyInfo>, NlError> {
        let all: Vec<SurveyInfo> = self.ask(n::dump_survey(self.family, ifindex, 0))?.iter().map(|m| SurveyInfo::decode(m).map_err(NlError::Protocol)).collect::<Result<_, _>>()?;
        if let Some(s) = all.iter().find(|s| s.in_use) {
            return Ok(Some(*s));
        }
        let freq = self.interface(ifindex)?.freq_mhz;
        Ok(all.iter().find(|s| Some(s.freq_mhz) == freq).copied())
    }

    /// The lasthop aggregation extension (None where it is not offered: a real driver).
    pub fn aggregation(&mut self, ifindex: u32) -> Result<Option<Aggregation>, NlError> {
        match self.ask(n::vendor_aggregation(self.family, ifindex, 0)) {
            Ok(m) => m.first().map(Aggregation::decode).transpose().map_err(NlError::Protocol),
            Err(NlError::Errno(libc::EOPNOTSUPP | libc::EINVAL | libc::ENOENT, _)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn set_txq_limit(&mut self, wiphy: u32, limit: u32) -> Result<(), NlError> {
        self.ask(n::set_txq_limit(self.family, wiphy, limit, 0)).map(|_| ())
    }
}

/// An rtnetlink conversation with the kernel.
pub struct Rtnl {
    conn: Conn,
}

impl Rtnl {
    pub fn open() -> Result<Rtnl, String> {
        Ok(Rtnl { conn: Conn::kernel(NETLINK_ROUTE).map_err(|e| format!("rtnetlink: {e}"))? })
    }

    pub fn link(&mut self, name: &str) -> Result<Link, NlError> {
        let mut m = rtnl::get_link(name, 0);
        m.flags |= crate::nl::NLM_F_ACK;
        let r = self.conn.transact(m)?;
        Link::decode(r.first().ok_or_else(|| NlError::Protocol("no RTM_NEWLINK".into()))?).map_err(NlError::Protocol)
    }

    pub fn set_txqlen(&mut self, ifindex: u32, txqlen: u32) -> Result<(), NlError> {
        self.conn.transact(rtnl::set_txqlen(ifindex, txqlen, 0)).map(|_| ())
    }

    /// The IPv4 neighbours on `ifindex` with their link-layer addresses.
    pub fn neighbours(&mut self, ifindex: u32) -> Result<Vec<rtnl::Neighbour>, NlError> {
        let mut out = Vec::new();
        for m in self.conn.transact(rtnl::dump_neighbours(0))? {
            if let Some(n) = rtnl::Neighbour::decode(&m).map_err(NlError::Protocol)? {
                if n.ifindex == ifindex {
                    out.push(n);
                }
            }
        }
        Ok(out)
    }

    /// The root queue discipline of `ifindex`.
    pub fn root_qdisc(&mut self, ifindex: u32) -> Result<Option<Qdisc>, NlError> {
        for m in self.conn.transact(rtnl::dump_qdiscs(0))? {
            let q = Qdisc::decode(&m).map_err(NlError::Protocol)?;
            if q.ifindex == ifindex && q.is_root() {
                return Ok(Some(q));
            }
        }
        Ok(None)
    }

    /// Change the root qdisc `q`'s packet limit (its kind must have one).
    pub fn set_qdisc_limit(&mut self, q: &Qdisc, limit: u32) -> Result<(), NlError> {
        let m = rtnl::change_limit(q, limit, 0).ok_or_else(|| NlError::Protocol(format!("qdisc {} has no packet limit", q.kind)))?;
        self.conn.transact(m).map(|_| ())
    }
}

/// An interface's index in this namespace (None if there is no such interface).
pub fn ifindex(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: a NUL-terminated string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

/// A value to put back when a tool exits: what it changed and what it was.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// The phy's TXQ limit through nl80211 at `socket` (None: the kernel).
    TxqLimit { socket: Option<PathBuf>, wiphy: u32, phy: String, original: u32 },
    /// `txqueuelen` of an interface.
    Txqlen { ifname: String, ifindex: u32, original: u32 },
    /// The packet limit of an interface's root qdisc (restored only if the same qdisc is
    /// still there).
    QdiscLimit { ifname: String, ifindex: u32, qdisc: String, handle: u32, original: u32 },
    /// Something added by commands (firewall rules, policy routes), removed by `undo`.
    Commands { what: String, undo: Vec<Vec<String>> },
}

impl Change {
    pub fn describe(&self) -> String {
        match self {
            Change::TxqLimit { phy, original, .. } => format!("the TXQ limit of {phy} ({original} packets)"),
            Change::Txqlen { ifname, original, .. } => format!("txqueuelen of {ifname} ({original})"),
            Change::QdiscLimit { ifname, qdisc, original, .. } => format!("the {qdisc} limit of {ifname} ({original} packets)"),
            Change::Commands { what, .. } => what.clone(),
        }
    }

    /// Apply `value` to what this change is about.
    pub fn set(&self, value: u32) -> Result<(), String> {
        match self {
            Change::TxqLimit { socket, wiphy, phy, .. } => {
                let e = socket.clone().map_or(Endpoint::Kernel(NETLINK_GENERIC), Endpoint::Unix);
                let mut nl = Nl80211::open(&e)?.ok_or("nl80211 is gone")?;
                nl.set_txq_limit(*wiphy, value).map_err(|err| format!("set the TXQ limit of {phy} to {value}: {err}"))
            }
            Change::Txqlen { ifname, ifindex: idx, .. } => {
                if ifindex(ifname) != Some(*idx) {
                    return Err(format!("{ifname} (index {idx}) is gone"));
                }
                Rtnl::open()?.set_txqlen(*idx, value).map_err(|err| format!("set txqueuelen of {ifname} to {value}: {err}"))
            }
            Change::QdiscLimit { ifname, ifindex: idx, qdisc, handle, .. } => {
                let mut r = Rtnl::open()?;
                let q = r.root_qdisc(*idx).map_err(|e| e.to_string())?;
                match q {
                    Some(q) if q.kind == *qdisc && q.handle == *handle => r.set_qdisc_limit(&q, value).map_err(|err| format!("set the {qdisc} limit of {ifname} to {value}: {err}")),
                    _ => Err(format!("the root {qdisc} of {ifname} was replaced; left as it is")),
                }
            }
            Change::Commands { .. } => Err("nothing to set".into()),
        }
    }

    pub fn original(&self) -> u32 {
        match self {
            Change::TxqLimit { original, .. } | Change::Txqlen { original, .. } | Change::QdiscLimit { original, .. } => *original,
            Change::Commands { .. } => 0,
        }
    }

    /// Put the original value back (or remove what was added).
    pub fn restore(&self) -> Result<(), String> {
        match self {
            Change::Commands { undo, .. } => super::cmd::undo(undo),
            _ => self.set(self.original()),
        }
    }
}
