//! The server's history store: `CwndHistory` (lasthop-algo) keyed by the client's address
//! prefix, each key's smallest RTT (for the RTT guard), and the file that keeps both across
//! restarts — JSON, written through a temporary file and a rename, so a crash leaves the old
//! file or the new one, never half of one.

use lasthop_algo::control::cwnd_history::{CwndHistory, CwndHistoryConfig, HistoryAverage, HistoryEvent, PeerRecord};
use lasthop_core::{Duration as SimDuration, Instant as SimInstant};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

const FORMAT: &str = "lasthop-quic-history";

pub struct Store {
    pub hist: CwndHistory<String>,
    min_rtt: BTreeMap<String, u64>,
    prefix: u8,
    file: Option<PathBuf>,
    pub dirty: bool,
    pub write_failures: u64,
}

/// The key of `ip` at `prefix` bits (32 or 24; IPv6 addresses use /128 and /56).
pub fn key(ip: IpAddr, prefix: u8) -> String {
    match ip {
        IpAddr::V4(a) => {
            let bits = u32::from(a) & if prefix >= 32 { u32::MAX } else { !(u32::MAX >> prefix) };
            format!("{}/{}", std::net::Ipv4Addr::from(bits), prefix)
        }
        IpAddr::V6(a) => {
            let p: u32 = if prefix >= 32 { 128 } else { 56 };
            let bits = u128::from(a) & !(u128::MAX.checked_shr(p).unwrap_or(0));
            format!("{}/{}", std::net::Ipv6Addr::from(bits), p)
        }
    }
}

fn unix_ns() -> u64 {
    crate::sys::clock::realtime_ns()
}

impl Store {
    pub fn new(cfg: CwndHistoryConfig, prefix: u8, file: Option<PathBuf>) -> Store {
        Store { hist: CwndHistory::new(cfg), min_rtt: BTreeMap::new(), prefix, file, dirty: false, write_failures: 0 }
    }

    pub fn key(&self, ip: IpAddr) -> String {
        key(ip, self.prefix)
    }

    /// Read the file if it exists. Err: one line saying what is wrong with it (the caller
    /// exits 2 and the file is left as it is).
    pub fn load(&mut self, now: SimInstant) -> Result<usize, String> {
        let Some(path) = self.file.clone() else { return Ok(0) };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(format!("--history = {}: {e}", path.display())),
        };
        let bad = |why: &str| format!("--history = {}: {why}; not a history this server wrote (move it away to start afresh)", path.display());
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(&format!("not JSON ({e})")))?;
        if v.get("format").and_then(|f| f.as_str()) != Some(FORMAT) || v.get("version").and_then(|f| f.as_u64()) != Some(1) {
            return Err(bad("no \"format\": \"lasthop-quic-history\", \"version\": 1"));
        }
        if v.get("prefix").and_then(|p| p.as_u64()) != Some(self.prefix as u64) {
            return Err(bad(&format!("it was written with another --history-key than /{}", self.prefix)));
        }
        let written = v.get("written_unix_ns").and_then(|x| x.as_u64()).ok_or_else(|| bad("no written_unix_ns"))?;
        let down = unix_ns().saturating_sub(written);
        let entries = v.get("entries").and_then(|e| e.as_array()).ok_or_else(|| bad("no entries"))?;
        let mut recs = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let f = |k: &str| e.get(k).and_then(|x| x.as_u64()).ok_or_else(|| bad(&format!("entries[{i}].{k} missing or not a whole number")));
            let k = e.get("key").and_then(|x| x.as_str()).ok_or_else(|| bad(&format!("entries[{i}].key missing")))?.to_string();
            let sum: u128 = e.get("sum").and_then(|x| x.as_str()).and_then(|s| s.parse().ok()).ok_or_else(|| bad(&format!("entries[{i}].sum missing")))?;
            let ewma = e.get("ewma").and_then(|x| x.as_f64()).filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| bad(&format!("entries[{i}].ewma missing")))?;
            let samples = f("samples")?;
            if samples == 0 || sum < samples as u128 {
                return Err(bad(&format!("entries[{i}]: samples and sum disagree")));
            }
            let rec = PeerRecord { samples, sum, ewma, last_cwnd: f("last_cwnd")?, age: SimDuration::from_nanos(f("age_ns")?.saturating_add(down)) };
            if let Some(r) = e.get("min_rtt_ns").and_then(|x| x.as_u64()) {
                self.min_rtt.insert(k.clone(), r);
            }
            recs.push((k, rec));
        }
        Ok(self.hist.import(now, recs))
    }

    pub fn min_rtt(&self, k: &str) -> Option<SimDuration> {
        self.min_rtt.get(k).map(|&n| SimDuration::from_nanos(n))
    }

    pub fn record(&mut self, now: SimInstant, k: &str, event: HistoryEvent, cwnd: u64, min_rtt_ns: Option<u64>) {
        self.hist.record(now, &k.to_string(), event, cwnd);
        if let Some(r) = min_rtt_ns.filter(|&r| r > 0) {
            let e = self.min_rtt.entry(k.to_string()).or_insert(r);
            *e = (*e).min(r);
        }
        self.dirty = true;
    }

    /// Write the file (if any) when something changed; a failure is counted, not fatal.
    pub fn save(&mut self, now: SimInstant) -> Option<String> {
        let path = self.file.clone()?;
        if !self.dirty {
            return None;
        }
        let live = self.hist.export(now);
        self.min_rtt.retain(|k, _| live.iter().any(|(x, _)| x == k));
        let entries: Vec<serde_json::Value> = live.iter().map(|(k, r)| serde_json::json!({
            "key": k, "samples": r.samples, "sum": r.sum.to_string(), "ewma": r.ewma, "last_cwnd": r.last_cwnd,
            "age_ns": r.age.as_nanos(), "min_rtt_ns": self.min_rtt.get(k),
        })).collect();
        let doc = serde_json::json!({"format": FORMAT, "version": 1, "prefix": self.prefix, "written_unix_ns": unix_ns(), "entries": entries});
        self.dirty = false;
        match crate::sys::fs::write_atomic(&path, &(doc.to_string() + "\n")) {
            Ok(()) => None,
            Err(e) => {
                self.write_failures += 1;
                Some(e)
            }
        }
    }
}

pub fn config(ewma: bool, size: usize, lifetime: std::time::Duration) -> CwndHistoryConfig {
    CwndHistoryConfig {
        average: if ewma { HistoryAverage::Ewma } else { HistoryAverage::Mean },
        capacity: size,
        lifetime: SimDuration::from_nanos(lifetime.as_nanos() as u64),
        ..CwndHistoryConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_by_prefix() {
        assert_eq!(key("10.1.2.3".parse().unwrap(), 32), "10.1.2.3/32");
        assert_eq!(key("10.1.2.3".parse().unwrap(), 24), "10.1.2.0/24");
    }

    #[test]
    fn a_saved_store_loads_back_and_a_foreign_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("lh-quic-hist-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("h.json");
        let cfg = config(false, 16, std::time::Duration::from_secs(3600));
        let mut s = Store::new(cfg, 32, Some(f.clone()));
        let t = SimInstant::from_nanos(5_000_000_000);
        s.record(t, "10.0.0.2/32", HistoryEvent::ConnectionClosed, 100_000, Some(8_000_000));
        s.record(t, "10.0.0.2/32", HistoryEvent::ConnectionClosed, 50_000, Some(9_000_000));
        assert!(s.save(t).is_none());
        let mut r = Store::new(cfg, 32, Some(f.clone()));
        assert_eq!(r.load(SimInstant::ZERO), Ok(1));
        assert_eq!(r.hist.initial_window(SimInstant::ZERO, &"10.0.0.2/32".to_string(), 14_000), 75_000);
        assert_eq!(r.min_rtt("10.0.0.2/32"), Some(SimDuration::from_millis(8)));
        let mut other = Store::new(cfg, 24, Some(f.clone()));
        assert!(other.load(SimInstant::ZERO).unwrap_err().contains("another --history-key"));
        std::fs::write(&f, "{\"entries\": []}").unwrap();
        assert!(r.load(SimInstant::ZERO).unwrap_err().contains("not a history"));
        std::fs::write(&f, "garbage").unwrap();
        assert!(r.load(SimInstant::ZERO).unwrap_err().contains("not JSON"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
