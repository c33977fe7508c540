//! The emulator's topology in Linux network namespaces (ip-netns(8), namespaces(7)): one named
//! namespace per node (the server and each station), each holding one TUN device
//! (Documentation/networking/tuntap.rst) whose file descriptor stays in this process. The
//! emulator carries packets between those descriptors; programs run inside the namespaces
//! (`ip netns exec`) see an ordinary interface with an address.
//!
//! The devices are created and configured from a short-lived thread that enters each namespace
//! with setns(2): a TUN device is born in the namespace of the thread that opens /dev/net/tun,
//! and the interface ioctls act on the namespace of their socket (netdevice(7)), so no device
//! is moved or renamed and no `ip` runs per node. `ip` creates and deletes the namespaces.
//!
//! With an AP host ([`Topology::with_ap_host`]) a third kind of node sits between them: the
//! namespace `lh-<name>-ap` with `eth0` (the AP end of the wired link) and `wlan0` (the AP's
//! radio towards the cell), IPv4 forwarding on, so real AP software (a buffer sizer, a split
//! proxy) sees and routes every packet as on a real AP.
//!
//! Lifetime: [`build`] claims the state file (state.rs) and starts the reaper (reaper.rs) before
//! creating anything, so neither a failure midway nor a SIGKILL leaves namespaces behind;
//! [`Built::teardown`] (or Drop) removes everything; [`down`] stops a running emulator from
//! another process and removes whatever a crash left.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use crate::ifreq::CtlSocket;
use crate::nsops;
use crate::reaper::{self, Reaper};
use crate::state::{self, Claim, State, StateNode};
use crate::sys::process;
use crate::tun::Tun;

/// The server node's name.
pub const SERVER: &str = "server";

/// Most stations one emulator lays out.
const MAX_STATIONS: usize = 4000;
/// Server address; stations count up from [`FIRST_STATION`] in the same /16.
const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const FIRST_STATION: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 1);
const PREFIX_LEN: u8 = 16;
/// How long processes in a namespace get between SIGTERM and SIGKILL at teardown.
const TEARDOWN_GRACE: Duration = Duration::from_secs(1);
/// Threads that close TUN devices at teardown (see [`close_all`]).
const CLOSE_THREADS: usize = 64;
/// How long `down` waits for a running emulator to tear itself down after SIGTERM.
const DOWN_GRACE: Duration = Duration::from_secs(5);

/// One node of the topology.
#[derive(Clone, Debug)]
pub struct NodePlan {
    /// "server" or "sta0", "sta1", ...
    pub node: String,
    pub netns: String,
    /// The interface name inside the namespace: "eth0" for the server, "wlan0" for stations.
    pub ifname: String,
    pub addr: Ipv4Addr,
}

/// The emulator's layout; nothing exists until [`build`].
#[derive(Clone, Debug)]
pub struct Topology {
    pub name: String,
    pub prefix_len: u8,
    pub mtu: u32,
    /// The server first, then the stations in order.
    pub nodes: Vec<NodePlan>,
    /// The AP host, if the cell has one.
    pub ap: Option<ApPlan>,
}

/// The AP host's namespace and its two interfaces.
#[derive(Clone, Debug)]
pub struct ApPlan {
    pub netns: String,
    /// `eth0`: the wired side, 10.77.0.2/24 (the server is 10.77.0.1).
    pub wired: IfPlan,
    /// `wlan0`: the cell side, 10.77.0.3/16 (every station is in that /16; the longer /24 of
    /// `eth0` keeps the server's address on the wired side).
    pub wifi: IfPlan,
}

/// One interface of the AP host.
#[derive(Clone, Debug)]
pub struct IfPlan {
    pub ifname: String,
    pub addr: Ipv4Addr,
    pub prefix_len: u8,
}

/// The AP host's node name (`lasthop emu exec ap -- ...`).
pub const AP: &str = "ap";
const AP_WIRED_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
const AP_WIFI_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 3);

/// Validate `name` ([a-z0-9]{1,8}) and lay out: namespace `lh-<name>-server` /
/// `lh-<name>-sta<i>`; addresses (inside those namespaces only): server 10.77.0.1, stations from
/// 10.77.1.1 upward, skipping host parts .0 and .255; prefix /16; 1..=4000 stations; MTU 68..=65535.
pub fn plan(name: &str, n_stations: usize, mtu: u32) -> Result<Topology, String> {
    validate_name(name)?;
    if !(1..=MAX_STATIONS).contains(&n_stations) {
        return Err(format!("emu stations = {n_stations}: 1–{MAX_STATIONS}"));
    }
    // 68 is IPv4's minimum MTU (RFC 791); 65535 is the largest IPv4 packet.
    if !(68..=65535).contains(&mtu) {
        return Err(format!("emu mtu = {mtu}: 68–65535"));
    }
    let mut nodes = Vec::with_capacity(n_stations + 1);
    nodes.push(NodePlan {
        node: SERVER.to_string(),
        netns: format!("lh-{name}-{SERVER}"),
        ifname: "eth0".to_string(),
        addr: SERVER_ADDR,
    });
    for i in 0..n_stations {
        nodes.push(NodePlan {
            node: format!("sta{i}"),
            netns: format!("lh-{name}-sta{i}"),
            ifname: "wlan0".to_string(),
            addr: station_addr(i),
        });
    }
    Ok(Topology {
        name: name.to_string(),
        prefix_len: PREFIX_LEN,
        mtu,
        nodes,
        ap: None,
    })
}

fn validate_name(name: &str) -> Result<(), String> {
    let ok = (1..=8).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(format!("emu name = {name:?}: 1–8 characters a-z, 0-9"))
    }
}

/// Station `i`'s address: 254 usable host parts (.1 to .254) per /24, from 10.77.1.1.
fn station_addr(i: usize) -> Ipv4Addr {
    let base = u32::from(FIRST_STATION) & !0xff;
    let (block, host) = (i / 254, i % 254 + 1);
    Ipv4Addr::from(base + (block as u32) * 256 + host as u32)
}

impl Topology {
    /// The same layout with an AP host (namespace `lh-<name>-ap`, see [`ApPlan`]).
    pub fn with_ap_host(mut self) -> Topology {
        self.ap = Some(ApPlan {
            netns: format!("lh-{}-{AP}", self.name),
            wired: IfPlan { ifname: "eth0".into(), addr: AP_WIRED_ADDR, prefix_len: 24 },
            wifi: IfPlan { ifname: "wlan0".into(), addr: AP_WIFI_ADDR, prefix_len: PREFIX_LEN },
        });
        self
    }

    /// Whether `a` is one of the AP host's own addresses.
    pub fn is_ap_addr(&self, a: Ipv4Addr) -> bool {
        self.ap.as_ref().is_some_and(|ap| ap.wired.addr == a || ap.wifi.addr == a)
    }

    /// Every namespace of the layout: the nodes', then the AP host's.
    pub fn namespaces(&self) -> Vec<String> {
        let mut v: Vec<String> = self.nodes.iter().map(|n| n.netns.clone()).collect();
        if let Some(ap) = &self.ap {
            v.push(ap.netns.clone());
        }
        v
    }

    /// The node index (0 = server) that owns `a`, in O(1): the inverse of the address plan.
    pub fn node_index_of_addr(&self, a: Ipv4Addr) -> Option<usize> {
        let idx = if a == SERVER_ADDR {
            0
        } else {
            let off = u32::from(a).checked_sub(u32::from(FIRST_STATION) & !0xff)?;
            let host = (off & 0xff) as usize;
            if !(1..=254).contains(&host) {
                return None;
            }
            (off >> 8) as usize * 254 + host
        };
        (self.nodes.get(idx)?.addr == a).then_some(idx)
    }

    /// The namespace of node `node` ("server", "sta3", "ap").
    pub fn netns_of(&self, node: &str) -> Option<&str> {
        if node == AP {
            return self.ap.as_ref().map(|a| a.netns.as_str());
        }
        self.nodes
            .iter()
            .find(|n| n.node == node)
            .map(|n| n.netns.as_str())
    }
}

/// The built topology: namespaces exist, each holds its TUN device (named `ifname`,
/// `addr/prefix_len`, up, MTU), `lo` up, IPv6 disabled in the namespace
/// (net.ipv6.conf.{all,default}.disable_ipv6 = 1) so no router solicitations cross the link;
/// `tuns[i]` is node i's TUN device (the descriptor stays in this process; the device lives in
/// the node's namespace); with an AP host, its `eth0` and `wlan0` follow the stations'.
/// The AP host routes (`net.ipv4.ip_forward = 1`), with reverse-path filtering and ICMP
/// redirects off (station-to-station traffic leaves `wlan0` the way it came).
pub struct Built {
    pub topo: Topology,
    pub tuns: Vec<Tun>,
    /// The AP host's `wlan0` interface index inside its namespace (0 without an AP host).
    pub ap_wifi_ifindex: u32,
    namespaces: Vec<String>,
    state_file: PathBuf,
    reaper: Reaper,
    torn_down: bool,
}

/// Build everything (see the module doc). Fails with one line if not root, if `ip` is missing,
/// or if emu `topo.name` is already up; cleans up after an earlier crashed emulator of the same
/// name first. Nothing is left behind on failure.
pub fn build(topo: Topology) -> Result<Built, String> {
    if !process::is_root() {
        return Err(
            "emu up needs root (to create network namespaces and TUN devices); run it with sudo"
                .to_string(),
        );
    }
    nsops::check_ip()?;
    let name = topo.name.clone();
    let pid = std::process::id();
    let state_file = state::path(&name);
    let namespaces: Vec<String> = topo.namespaces();
    // The reaper first: it is harmless until the state file records us, and from then on it
    // covers a crash at any point of the build.
    let mut reaper = Reaper::spawn(&state_file, pid, &namespaces)?;
    let record = State {
        name: name.clone(),
        pid,
        namespaces: namespaces.clone(),
        nodes: topo
            .nodes
            .iter()
            .map(|n| StateNode {
                node: n.node.clone(),
                netns: n.netns.clone(),
                ifname: n.ifname.clone(),
                addr: n.addr,
            })
            .chain(topo.ap.iter().map(|a| StateNode {
                node: AP.to_string(),
                netns: a.netns.clone(),
                ifname: a.wifi.ifname.clone(),
                addr: a.wifi.addr,
            }))
            .collect(),
        started_unix_s: process::now_unix_s(),
        pid_start: process::start_time(pid),
        reaper_pid: Some(reaper.pid()),
    };
    if let Err(e) = claim_name(&name, &state_file, &record) {
        reaper.finish_clean();
        return Err(e);
    }
    let mut built = Built {
        topo,
        tuns: Vec::new(),
        ap_wifi_ifindex: 0,
        namespaces,
        state_file,
        reaper,
        torn_down: false,
    };
    let (tuns, ap_ifindex, done) = create_all(&built.topo);
    built.tuns = tuns;
    built.ap_wifi_ifindex = ap_ifindex;
    match done {
        Ok(()) => Ok(built),
        Err(e) => {
            built.teardown();
            Err(e)
        }
    }
}

/// Claim the state file of `name`, cleaning up after a dead owner (and any namespaces of this
/// name nobody records) first.
fn claim_name(name: &str, state_file: &std::path::Path, record: &State) -> Result<(), String> {
    // Three rounds: a stale file is removed and the claim retried; a second stale file in a row
    // means another `emu up` of this name is racing us.
    for _ in 0..3 {
        match state::claim(state_file, record)? {
            Claim::Claimed => {
                // Namespaces of this name that nobody records (a reaper killed along with its
                // emulator and the state file removed by hand, a manual `ip netns add`).
                let cleaned = nsops::list_namespaces(&ns_prefix(name))
                    .and_then(|leftovers| remove_namespaces(&leftovers));
                if cleaned.is_err() {
                    // Give the name back: nothing of ours exists yet.
                    let _ = std::fs::remove_file(state_file);
                }
                return cleaned;
            }
            Claim::Busy(other) => {
                return Err(format!(
                    "emu {name} is already up (pid {other}); `lasthop emu down --name {name}` first"
                ))
            }
            Claim::Stale(old) => {
                if let Some(old) = &old {
                    reaper::kill_stale(old.reaper_pid, state_file);
                }
                let mut stale = nsops::list_namespaces(&ns_prefix(name))?;
                if let Some(old) = &old {
                    stale.extend(old.namespaces.iter().cloned());
                }
                stale.sort();
                stale.dedup();
                remove_namespaces(&stale)?;
                if let Some(old) = &old {
                    state::remove_if_owned(state_file, old.pid);
                } else {
                    let _ = std::fs::remove_file(state_file);
                }
            }
        }
    }
    Err(format!(
        "emu {name}: the state file {} keeps changing; is another `emu up` of this name running?",
        state_file.display()
    ))
}

/// Stop the processes inside `names` and delete them; Err(one line) if some remain.
fn remove_namespaces(names: &[String]) -> Result<(), String> {
    if names.is_empty() {
        return Ok(());
    }
    nsops::stop_processes(names, TEARDOWN_GRACE);
    let left = nsops::delete_namespaces(names);
    match left.first() {
        None => Ok(()),
        Some(first) => Err(format!(
            "could not delete {} namespace(s) ({first}, ...); try `ip netns del {first}`",
            left.len()
        )),
    }
}

fn ns_prefix(name: &str) -> String {
    format!("lh-{name}-")
}

/// Create the namespaces, then set each one up from a helper thread that enters it. On failure
/// the devices made so far come back with the error, for [`Built::teardown`] to close quickly.
/// Also returns the AP host's `wlan0` interface index (0 without an AP host).
fn create_all(topo: &Topology) -> (Vec<Tun>, u32, Result<(), String>) {
    let names = topo.namespaces();
    if let Err(e) = nsops::add_namespaces(&names) {
        return (Vec::new(), 0, Err(e));
    }
    // A fresh thread: setns(2) changes only the calling thread's namespace, and the thread ends
    // with the work, so no thread of the process stays in a node's namespace.
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut tuns = Vec::with_capacity(topo.nodes.len() + 2);
            for node in &topo.nodes {
                match setup_node(node, topo.prefix_len, topo.mtu) {
                    Ok(tun) => tuns.push(tun),
                    Err(e) => return (tuns, 0, Err(e)),
                }
            }
            let mut ifindex = 0;
            if let Some(ap) = &topo.ap {
                match setup_ap(ap, topo.mtu, &mut tuns) {
                    Ok(i) => ifindex = i,
                    Err(e) => return (tuns, 0, Err(e)),
                }
            }
            (tuns, ifindex, Ok(()))
        })
        .join()
        .unwrap_or_else(|_| {
            (
                Vec::new(),
                0,
                Err("namespace setup thread panicked".to_string()),
            )
        })
    })
}

/// Write `value` to a sysctl under /proc/sys/net of the calling thread's namespace; a missing
/// file (no IPv6 in the kernel) is fine.
fn sysctl(ns: &str, key: &str, value: &str) -> Result<(), String> {
    let path = format!("/proc/sys/net/{key}");
    match std::fs::write(&path, value) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{ns}: write {value} to {path}: {e}")),
    }
}

/// In the AP host's namespace: IPv6 off, forwarding on, reverse-path filtering and redirects
/// off, `lo` up, `eth0` and `wlan0` with their addresses; pushes both TUNs (eth0 first) and
/// returns wlan0's interface index.
fn setup_ap(ap: &ApPlan, mtu: u32, tuns: &mut Vec<Tun>) -> Result<u32, String> {
    let ns = &ap.netns;
    nsops::enter(ns).map_err(|e| format!("enter namespace {ns}: {e}"))?;
    // `default` before the devices exist, so they are born with it; `all` for the effective
    // value (rp_filter takes the larger of `all` and the device's).
    for key in ["ipv6/conf/all/disable_ipv6", "ipv6/conf/default/disable_ipv6"] {
        sysctl(ns, key, "1")?;
    }
    for key in ["ipv4/conf/all/rp_filter", "ipv4/conf/default/rp_filter", "ipv4/conf/all/send_redirects", "ipv4/conf/default/send_redirects"] {
        sysctl(ns, key, "0")?;
    }
    sysctl(ns, "ipv4/ip_forward", "1")?;
    let ctl = CtlSocket::open().map_err(|e| format!("{ns}: control socket: {e}"))?;
    ctl.set_up("lo").map_err(|e| format!("{ns}: set lo up: {e}"))?;
    let mut ifindex = 0;
    for ifp in [&ap.wired, &ap.wifi] {
        let tun = Tun::create(&ifp.ifname, mtu).map_err(|e| format!("{ns}: {e}"))?;
        ctl.set_ipv4(tun.name(), ifp.addr, ifp.prefix_len)
            .map_err(|e| format!("{ns}: address {}/{} on {}: {e}", ifp.addr, ifp.prefix_len, tun.name()))?;
        ctl.set_up(tun.name()).map_err(|e| format!("{ns}: set {} up: {e}", tun.name()))?;
        let cname = std::ffi::CString::new(tun.name()).map_err(|e| e.to_string())?;
        // SAFETY: a NUL-terminated name; if_nametoindex looks it up in this thread's namespace.
        ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        tuns.push(tun);
    }
    Ok(ifindex)
}

/// In `node`'s namespace: IPv6 off, `lo` up, the TUN device with its address, up.
fn setup_node(node: &NodePlan, prefix_len: u8, mtu: u32) -> Result<Tun, String> {
    let ns = &node.netns;
    nsops::enter(ns).map_err(|e| format!("enter namespace {ns}: {e}"))?;
    // Before the device exists, so it is born with IPv6 off (writing `all` also sets `default`
    // on current kernels; both are written for older ones). /proc/sys/net shows the namespace
    // of the thread that looks. Without IPv6 in the kernel the files are absent: nothing to do.
    for key in ["all", "default"] {
        let path = format!("/proc/sys/net/ipv6/conf/{key}/disable_ipv6");
        match std::fs::write(&path, "1") {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{ns}: write 1 to {path}: {e}")),
        }
    }
    let ctl = CtlSocket::open().map_err(|e| format!("{ns}: control socket: {e}"))?;
    ctl.set_up("lo")
        .map_err(|e| format!("{ns}: set lo up: {e}"))?;
    let tun = Tun::create(&node.ifname, mtu).map_err(|e| format!("{ns}: {e}"))?;
    ctl.set_ipv4(tun.name(), node.addr, prefix_len)
        .map_err(|e| {
            format!(
                "{ns}: address {}/{prefix_len} on {}: {e}",
                node.addr,
                tun.name()
            )
        })?;
    ctl.set_up(tun.name())
        .map_err(|e| format!("{ns}: set {} up: {e}", tun.name()))?;
    Ok(tun)
}

impl Built {
    /// Orderly teardown: SIGTERM the processes inside the namespaces, wait up to 1 s, SIGKILL
    /// the rest, close the TUN devices, delete the namespaces, remove the state file (if it still
    /// records this process), tell the reaper all is clean. Idempotent; Drop calls it too.
    pub fn teardown(&mut self) {
        if self.torn_down {
            return;
        }
        self.torn_down = true;
        nsops::stop_processes(&self.namespaces, TEARDOWN_GRACE);
        // Closing the descriptors removes the (non-persistent) devices before their namespaces.
        close_all(std::mem::take(&mut self.tuns));
        nsops::delete_namespaces(&self.namespaces);
        state::remove_if_owned(&self.state_file, std::process::id());
        self.reaper.finish_clean();
    }
}

/// Close TUN devices from up to [`CLOSE_THREADS`] threads at once. Each close unregisters a
/// device, which waits for an RCU grace period (~25 ms here): one by one, 4000 stations would
/// take 100 s; concurrent closes share grace periods (1000 devices: ~1.5 s with 64 threads).
fn close_all(mut tuns: Vec<Tun>) {
    let per_thread = tuns.len().div_ceil(CLOSE_THREADS);
    std::thread::scope(|s| {
        while !tuns.is_empty() {
            let part: Vec<Tun> = tuns.drain(..per_thread.min(tuns.len())).collect();
            s.spawn(move || drop(part));
        }
    });
}

impl Drop for Built {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// `lasthop emu down`: stop emu `name` and remove whatever it left (see the module doc).
/// A running emulator gets SIGTERM and 5 s to tear itself down, then SIGKILL. Returns a one-line
/// summary ("removed 3 namespaces of emu lh" / "emu lh was not up").
pub fn down(name: &str) -> Result<String, String> {
    validate_name(name)?;
    if !process::is_root() {
        return Err("emu down needs root (to delete network namespaces); run it with sudo".into());
    }
    nsops::check_ip()?;
    let state_file = state::path(name);
    let recorded = match state::read(&state_file) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("read {}: {e}", state_file.display())),
    };
    let mut namespaces = nsops::list_namespaces(&ns_prefix(name))?;
    if let Some(Some(s)) = &recorded {
        namespaces.extend(s.namespaces.iter().cloned());
    }
    namespaces.sort();
    namespaces.dedup();
    // Counted now: a running emulator removes its own namespaces when it gets SIGTERM.
    let existed = namespaces.iter().filter(|n| nsops::exists(n)).count();
    if recorded.is_none() && existed == 0 {
        return Ok(format!("emu {name} was not up"));
    }
    let mut killed = false;
    if let Some(Some(s)) = &recorded {
        if s.pid != std::process::id() && s.owner_alive() {
            nsops::signal(s.pid, libc::SIGTERM);
            if !nsops::wait_until(DOWN_GRACE, || !s.owner_alive()) {
                nsops::signal(s.pid, libc::SIGKILL);
                nsops::wait_until(Duration::from_secs(1), || !s.owner_alive());
                killed = true;
            }
        }
        // The emulator is gone; its reaper may be cleaning right now. Stop it and finish the
        // job here, so what is left is known when this returns.
        reaper::kill_stale(s.reaper_pid, &state_file);
    }
    remove_namespaces(&namespaces)?;
    match &recorded {
        Some(Some(s)) => state::remove_if_owned(&state_file, s.pid),
        _ => {
            let _ = std::fs::remove_file(&state_file);
        }
    }
    if existed == 0 {
        return Ok(format!(
            "emu {name} was not up (removed its stale state file)"
        ));
    }
    let plural = if existed == 1 { "" } else { "s" };
    let how = if killed {
        " (its emulator did not exit within 5 s and was killed)"
    } else {
        ""
    };
    Ok(format!(
        "removed {existed} namespace{plural} of emu {name}{how}"
    ))
}

/// The namespace of `node` in the running emu `name`, from its state file; Err(one line) if the
/// emu is not up or has no such node (the message lists the nodes).
pub fn netns_for(name: &str, node: &str) -> Result<String, String> {
    validate_name(name)?;
    let s = match state::read(&state::path(name)) {
        Ok(Some(s)) if s.owner_alive() => s,
        _ => return Err(format!("emu {name} is not up")),
    };
    if let Some(n) = s.nodes.iter().find(|n| n.node == node) {
        return Ok(n.netns.clone());
    }
    let known: Vec<&str> = s.nodes.iter().map(|n| n.node.as_str()).collect();
    let list = if known.len() <= 6 {
        known.join(", ")
    } else {
        format!("{}, …, {}", known[..4].join(", "), known[known.len() - 1])
    };
    Err(format!("emu {name} has no node {node:?} (nodes: {list})"))
}
