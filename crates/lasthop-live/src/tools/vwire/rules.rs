//! Transparent interception for the split proxy (Linux TPROXY, Documentation/networking/
//! tproxy.rst): TCP connections that stations open through the WiFi interface are delivered
//! to the proxy's listener with their original addresses, and the proxy's own connections to
//! the servers leave with the stations' addresses, so neither end sees the proxy.
//!
//! In the namespace the proxy runs in (and nowhere else):
//!
//! ```text
//! table ip lasthop_vwire {
//!   chain pre {
//!     type filter hook prerouting priority mangle; policy accept;
//!     meta l4proto tcp socket transparent 1 meta mark set MARK accept      # our sockets' packets
//!     iifname IF fib daddr type local accept                                 # the AP's own services
//!     iifname IF meta l4proto tcp [tcp dport PORTS] tproxy ip to 127.0.0.1:PORT meta mark set MARK accept
//!   }
//! }
//! ip rule add fwmark MARK lookup TABLE pref PREF
//! ip route add local 0.0.0.0/0 dev lo table TABLE
//! ```
//!
//! Each piece is recorded (`statefile.rs`) before it is made and removed on exit or at the next
//! start after a crash. `nft -f` applies the table atomically.

use crate::tools::cmd::run;
use crate::tools::host::Change;
use std::process::{Command, Stdio};

pub const TABLE: &str = "lasthop_vwire";
/// Packet mark and routing table ("LH").
pub const MARK: u32 = 0x4c48;
pub const RT_TABLE: u32 = 0x4c48;
pub const RULE_PREF: u32 = 0x4c48;

/// What interception to install.
pub struct Spec {
    pub wifi_iface: String,
    pub port: u16,
    /// Only connections to these server ports (empty: every TCP connection).
    pub server_ports: Vec<(u16, u16)>,
}


/// Whether `nft` and `ip` exist; the one-line reason if not.
pub fn tools_missing() -> Option<String> {
    for (tool, pkg) in [("nft", "nftables"), ("ip", "iproute2")] {
        if Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
            return Some(format!("no `{tool}` here: install the Debian package {pkg}"));
        }
    }
    None
}

/// Whether our table is already in this namespace's ruleset.
pub fn table_present() -> bool {
    Command::new("nft").args(["list", "table", "ip", TABLE]).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

pub fn ruleset(s: &Spec) -> String {
    let ports = if s.server_ports.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = s.server_ports.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
        format!("tcp dport {{ {} }} ", list.join(", "))
    };
    format!(
        "table ip {TABLE} {{\n  chain pre {{\n    type filter hook prerouting priority mangle; policy accept;\n    meta l4proto tcp socket transparent 1 meta mark set {MARK} accept\n    iifname \"{iface}\" fib daddr type local accept\n    iifname \"{iface}\" meta l4proto tcp {ports}tproxy ip to 127.0.0.1:{port} meta mark set {MARK} accept\n  }}\n}}\n",
        iface = s.wifi_iface,
        port = s.port
    )
}

/// The changes `install` makes, in order, for the state record (their undo commands).
pub fn changes() -> Vec<Change> {
    let t = RT_TABLE.to_string();
    vec![
        Change::Commands { what: format!("the nftables table ip {TABLE}"), undo: vec![vec!["nft".into(), "delete".into(), "table".into(), "ip".into(), TABLE.into()]] },
        Change::Commands { what: format!("the policy rule fwmark {MARK:#x} lookup {RT_TABLE}"), undo: vec![vec!["ip".into(), "rule".into(), "del".into(), "pref".into(), RULE_PREF.to_string()]] },
        Change::Commands { what: format!("the local route of table {RT_TABLE}"), undo: vec![vec!["ip".into(), "route".into(), "flush".into(), "table".into(), t]] },
    ]
}

/// Install the interception; on failure nothing stays installed. Errors are one line.
pub fn install(s: &Spec) -> Result<(), String> {
    run(&["nft", "-f", "-"], Some(&ruleset(s))).map_err(|e| {
        if e.contains("tproxy") || e.contains("No such file") || e.contains("not supported") {
            format!("TPROXY is not available here ({e})")
        } else {
            e
        }
    })?;
    let (mark, table, pref) = (format!("{MARK:#x}"), RT_TABLE.to_string(), RULE_PREF.to_string());
    let steps: [&[&str]; 2] = [&["ip", "rule", "add", "fwmark", &mark, "lookup", &table, "pref", &pref], &["ip", "route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", &table]];
    for (i, step) in steps.iter().enumerate() {
        if let Err(e) = run(step, None) {
            for c in changes().iter().take(i + 1).rev() {
                let _ = c.restore();
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Stop intercepting new connections but keep delivering the proxy's own sockets' packets, so
/// open connections can finish (the proxy's drain on exit).
pub fn stop_intercepting(_s: &Spec) -> Result<(), String> {
    let text = format!("flush chain ip {TABLE} pre\nadd rule ip {TABLE} pre meta l4proto tcp socket transparent 1 meta mark set {MARK} accept\n");
    run(&["nft", "-f", "-"], Some(&text))
}

