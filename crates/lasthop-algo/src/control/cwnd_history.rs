//! History-based initial congestion window, after "Access Latency Reduction in the QUIC
//! Protocol Based on Communication History" (Electronics 2019), §4 and its Algorithm 1.
//!
//! The server observes the congestion window at two events (§4): when it receives a complete
//! client hello in a 0-RTT handshake ([`HistoryEvent::ZeroRttHandshake`]), and when a
//! connection is closed — the paper's example is the close after no communication for a
//! period of time ([`HistoryEvent::IdleTimeout`]); any other close counts the same
//! ([`HistoryEvent::ConnectionClosed`]). Algorithm 1's condition is "receive complete client
//! hello message", which a 1-RTT handshake also meets with its second hello
//! ([`HistoryEvent::FullHandshake`]); the host chooses whether to observe there. Each observation updates an average: "the arithmetic
//! mean or moving average can be used" (§4), so both are kept — the cumulative arithmetic
//! mean of all observations and an exponentially weighted moving average with gain
//! `ewma_gain` — and [`CwndHistoryConfig::average`] picks the one used. When a new
//! connection starts with a 1-RTT handshake (Algorithm 1: "receive inchoate client hello
//! message") its initial window is `Max(cwnd_default, cwnd_average)`
//! ([`CwndHistory::initial_window`]); with no history it is the default. A 0-RTT handshake on a
//! connection whose state is kept continues with that connection's window (§4, Figure 6a),
//! so the host does not ask for an initial window then.
//!
//! The paper keeps one average per server. Here the store is keyed by a peer identity `K`
//! (any `Ord + Clone`: an address, a 16-byte token, a u64); `K = ()` gives the paper's single
//! server-wide average. Memory is bounded: at most `capacity` peers, the least recently used
//! (recorded or looked up) evicted first, and an entry expires `lifetime` after its last
//! observation — checked lazily on lookup and record, and eagerly by [`CwndHistory::purge`].
//! Recency is a logical counter and all maps are `BTreeMap`s, so behaviour is deterministic.
//! [`CwndHistoryConfig::max_initial_window`] optionally caps what history may raise the
//! window to (the default window itself is never lowered).

use alloc::collections::BTreeMap;
use lasthop_core::{Duration, Instant};

/// The events at which the congestion window is observed (§4, Algorithm 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryEvent {
    /// A complete client hello arrived in a 0-RTT handshake (the connection's current window
    /// is observed while data flows, §4 / Figure 6a).
    ZeroRttHandshake,
    /// The complete client hello of a 1-RTT handshake arrived: the client's second hello,
    /// after the server's reject (gQUIC: inchoate CHLO, REJ, complete CHLO, SHLO). Algorithm 1
    /// observes the window at every "complete client hello message"; proto-quic, the paper's
    /// implementation (§5), processes that hello of either handshake in one place
    /// (`QuicCryptoServerStream::FinishProcessingHandshakeMessage`, the branch that answers
    /// with SHLO). The window observed is the new connection's initial one.
    FullHandshake,
    /// The connection was closed; its window is observed before the state is deleted.
    ConnectionClosed,
    /// The connection was closed by the idle timeout ("no communication during a period of
    /// time", §4 / Figure 6b). Treated as [`HistoryEvent::ConnectionClosed`].
    IdleTimeout,
}

/// Which average [`CwndHistory::initial_window`] uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HistoryAverage {
    /// Arithmetic mean of every observation kept for the peer.
    #[default]
    Mean,
    /// Exponentially weighted moving average: `avg += gain · (cwnd − avg)`, the first
    /// observation taken as is.
    Ewma,
}

/// Parameters of a [`CwndHistory`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CwndHistoryConfig {
    /// Average used for the initial window. Default [`HistoryAverage::Mean`].
    pub average: HistoryAverage,
    /// EWMA gain in (0, 1]. Default 1/8 (the weight RFC 6298 gives a new RTT sample).
    pub ewma_gain: f64,
    /// Peers remembered at most (≥ 1); the least recently used is evicted. Default 1024.
    pub capacity: usize,
    /// An entry expires this long after its last observation (> 0). Default 1 h (the
    /// lifetime of Linux's TCP metrics cache, `TCP_METRICS_TIMEOUT`).
    pub lifetime: Duration,
    /// Upper bound on a window raised by history, in bytes (≥ 1). Default none.
    pub max_initial_window: Option<u64>,
}

impl Default for CwndHistoryConfig {
    fn default() -> Self {
        CwndHistoryConfig {
            average: HistoryAverage::Mean,
            ewma_gain: 0.125,
            capacity: 1024,
            lifetime: Duration::from_secs(3600),
            max_initial_window: None,
        }
    }
}

/// A configuration value outside its allowed range (the field and what is allowed).
pub type CwndHistoryConfigError = super::FieldError;

impl CwndHistoryConfig {
    pub fn validate(&self) -> Result<(), CwndHistoryConfigError> {
        let err = |field, allowed| Err(CwndHistoryConfigError { field, allowed });
        if !(self.ewma_gain > 0.0 && self.ewma_gain <= 1.0) {
            return err("ewma_gain", "in (0, 1]");
        }
        if self.capacity == 0 {
            return err("capacity", ">= 1");
        }
        if self.lifetime.is_zero() {
            return err("lifetime", "> 0");
        }
        if self.max_initial_window == Some(0) {
            return err("max_initial_window", ">= 1 byte, or none");
        }
        Ok(())
    }

    /// Build an empty store, after [`validate`](Self::validate).
    pub fn build<K: Ord + Clone>(&self) -> Result<CwndHistory<K>, CwndHistoryConfigError> {
        self.validate()?;
        Ok(CwndHistory::new(*self))
    }
}

/// One peer's history as stored outside the process ([`CwndHistory::export`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeerRecord {
    pub samples: u64,
    pub sum: u128,
    pub ewma: f64,
    pub last_cwnd: u64,
    /// Time since the last observation, at export.
    pub age: Duration,
}

/// What is remembered about one peer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeerHistory {
    samples: u64,
    sum: u128,
    ewma: f64,
    last_cwnd: u64,
    last_update: Instant,
}

impl PeerHistory {
    fn first(now: Instant, cwnd: u64) -> Self {
        PeerHistory { samples: 1, sum: cwnd as u128, ewma: cwnd as f64, last_cwnd: cwnd, last_update: now }
    }

    fn observe(&mut self, now: Instant, cwnd: u64, gain: f64) {
        self.samples += 1;
        self.sum += cwnd as u128;
        self.ewma += gain * (cwnd as f64 - self.ewma);
        self.last_cwnd = cwnd;
        self.last_update = now;
    }

    fn record(&self) -> PeerRecord {
        PeerRecord { samples: self.samples, sum: self.sum, ewma: self.ewma, last_cwnd: self.last_cwnd, age: Duration::ZERO }
    }

    /// Observations folded in.
    pub fn samples(&self) -> u64 {
        self.samples
    }
    /// Arithmetic mean in bytes (rounded down).
    pub fn mean(&self) -> u64 {
        (self.sum / self.samples as u128) as u64
    }
    /// EWMA in bytes (rounded to nearest).
    pub fn ewma(&self) -> u64 {
        (self.ewma + 0.5) as u64
    }
    /// The average `kind` selects.
    pub fn average(&self, kind: HistoryAverage) -> u64 {
        match kind {
            HistoryAverage::Mean => self.mean(),
            HistoryAverage::Ewma => self.ewma(),
        }
    }
    /// The most recent observation.
    pub fn last_cwnd(&self) -> u64 {
        self.last_cwnd
    }
    /// When the most recent observation was made.
    pub fn last_update(&self) -> Instant {
        self.last_update
    }
}

/// Monotone counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CwndHistoryStats {
    /// Observations at 0-RTT handshakes.
    pub records_zero_rtt: u64,
    /// Observations at the complete client hello of 1-RTT handshakes.
    pub records_full_handshake: u64,
    /// Observations at connection close (idle timeouts included).
    pub records_close: u64,
    /// Of those, at idle-timeout close.
    pub records_idle_timeout: u64,
    /// Initial-window lookups that found a live entry.
    pub hits: u64,
    /// Lookups that found none (or only an expired one).
    pub misses: u64,
    /// Hits where the average exceeded the default, so history raised the window.
    pub raised: u64,
    /// Hits where `max_initial_window` lowered the value history proposed.
    pub capped: u64,
    /// Entries dropped to make room (least recently used).
    pub evictions: u64,
    /// Entries dropped because their lifetime had passed.
    pub expirations: u64,
}

#[derive(Clone, Debug)]
struct Entry {
    hist: PeerHistory,
    /// Position in the recency order (larger = more recent).
    tick: u64,
}

/// Per-peer congestion-window history with LRU eviction and expiry.
#[derive(Clone, Debug)]
pub struct CwndHistory<K> {
    cfg: CwndHistoryConfig,
    entries: BTreeMap<K, Entry>,
    /// Recency order: tick → peer; the first key is the least recently used.
    recency: BTreeMap<u64, K>,
    next_tick: u64,
    stats: CwndHistoryStats,
}

impl<K: Ord + Clone> CwndHistory<K> {
    pub fn new(cfg: CwndHistoryConfig) -> Self {
        debug_assert!(cfg.validate().is_ok());
        CwndHistory {
            cfg,
            entries: BTreeMap::new(),
            recency: BTreeMap::new(),
            next_tick: 0,
            stats: CwndHistoryStats::default(),
        }
    }

    fn expired(&self, h: &PeerHistory, now: Instant) -> bool {
        now.saturating_since(h.last_update) >= self.cfg.lifetime
    }

    fn remove(&mut self, peer: &K) {
        if let Some(e) = self.entries.remove(peer) {
            self.recency.remove(&e.tick);
        }
    }

    /// Make `peer` the most recently used.
    fn touch(&mut self, peer: &K) {
        let tick = self.next_tick;
        if let Some(e) = self.entries.get_mut(peer) {
            self.recency.remove(&e.tick);
            e.tick = tick;
            self.recency.insert(tick, peer.clone());
            self.next_tick += 1;
        }
    }

    /// The live entry for `peer`, dropping it (and counting an expiration) if it has expired.
    fn live(&mut self, now: Instant, peer: &K) -> bool {
        let Some(e) = self.entries.get(peer) else { return false };
        if self.expired(&e.hist, now) {
            self.remove(peer);
            self.stats.expirations += 1;
            return false;
        }
        true
    }

    /// Observe `peer`'s congestion window at `event` (Algorithm 1: "measure the current
    /// congestion window size; calculate average size of congestion window").
    pub fn record(&mut self, now: Instant, peer: &K, event: HistoryEvent, cwnd_bytes: u64) {
        match event {
            HistoryEvent::ZeroRttHandshake => self.stats.records_zero_rtt += 1,
            HistoryEvent::FullHandshake => self.stats.records_full_handshake += 1,
            HistoryEvent::ConnectionClosed => self.stats.records_close += 1,
            HistoryEvent::IdleTimeout => {
                self.stats.records_close += 1;
                self.stats.records_idle_timeout += 1;
            }
        }
        if self.live(now, peer) {
            let gain = self.cfg.ewma_gain;
            if let Some(e) = self.entries.get_mut(peer) {
                e.hist.observe(now, cwnd_bytes, gain);
            }
            self.touch(peer);
        } else {
            if self.entries.len() >= self.cfg.capacity {
                if let Some((_, lru)) = self.recency.pop_first() {
                    self.entries.remove(&lru);
                    self.stats.evictions += 1;
                }
            }
            let entry = Entry { hist: PeerHistory::first(now, cwnd_bytes), tick: self.next_tick };
            self.entries.insert(peer.clone(), entry);
            self.recency.insert(self.next_tick, peer.clone());
            self.next_tick += 1;
        }
        debug_assert_eq!(self.invariants(), Ok(()));
    }

    /// Initial congestion window, in bytes, for a new connection from `peer` that starts with
    /// a 1-RTT handshake (Algorithm 1: `cwnd_initial ← Max(cwnd_default, cwnd_average)`).
    /// With `max_initial_window` set, the average is first capped by it. Without a live entry
    /// the result is `default`.
    pub fn initial_window(&mut self, now: Instant, peer: &K, default: u64) -> u64 {
        if !self.live(now, peer) {
            self.stats.misses += 1;
            debug_assert_eq!(self.invariants(), Ok(()));
            return default;
        }
        self.stats.hits += 1;
        self.touch(peer);
        let avg = self.entries.get(peer).map_or(0, |e| e.hist.average(self.cfg.average));
        let proposed = match self.cfg.max_initial_window {
            Some(cap) if avg > cap => {
                self.stats.capped += 1;
                cap
            }
            _ => avg,
        };
        debug_assert_eq!(self.invariants(), Ok(()));
        if proposed > default {
            self.stats.raised += 1;
            proposed
        } else {
            default
        }
    }

    /// `peer`'s history if it has not expired at `now` (no recency update, no statistics).
    pub fn peek(&self, now: Instant, peer: &K) -> Option<&PeerHistory> {
        self.entries.get(peer).map(|e| &e.hist).filter(|h| !self.expired(h, now))
    }

    /// Drop every expired entry; returns how many.
    pub fn purge(&mut self, now: Instant) -> usize {
        let lifetime = self.cfg.lifetime;
        let mut dropped = 0;
        let recency = &mut self.recency;
        self.entries.retain(|_, e| {
            let keep = now.saturating_since(e.hist.last_update) < lifetime;
            if !keep {
                recency.remove(&e.tick);
                dropped += 1;
            }
            keep
        });
        self.stats.expirations += dropped as u64;
        debug_assert_eq!(self.invariants(), Ok(()));
        dropped
    }

    /// Peers remembered (expired entries not yet purged included).
    /// Every live entry, least recently used first, as plain records a host can store
    /// (a server that restarts keeps its history: [`CwndHistory::import`]).
    pub fn export(&self, now: Instant) -> alloc::vec::Vec<(K, PeerRecord)> {
        self.recency
            .values()
            .filter_map(|k| self.entries.get(k).filter(|e| !self.expired(&e.hist, now)).map(|e| {
                let age = now.saturating_since(e.hist.last_update);
                (k.clone(), PeerRecord { age, ..e.hist.record() })
            }))
            .collect()
    }

    /// Load records in the order [`CwndHistory::export`] gives them (least recently used
    /// first), as if they had just been observed in that order; records beyond `capacity`
    /// evict the oldest as usual. `now` is the host's current time, and each record's age is
    /// kept: an entry `age` old expires `lifetime − age` from now. Returns the entries loaded.
    pub fn import(&mut self, now: Instant, records: impl IntoIterator<Item = (K, PeerRecord)>) -> usize {
        let mut n = 0;
        for (k, r) in records {
            if r.samples == 0 || r.age >= self.cfg.lifetime {
                continue;
            }
            self.remove(&k);
            if self.entries.len() >= self.cfg.capacity {
                if let Some((_, lru)) = self.recency.pop_first() {
                    self.entries.remove(&lru);
                    self.stats.evictions += 1;
                }
            }
            let last_update = Instant::from_nanos(now.as_nanos().saturating_sub(r.age.as_nanos()));
            let hist = PeerHistory { samples: r.samples, sum: r.sum, ewma: r.ewma, last_cwnd: r.last_cwnd, last_update };
            self.entries.insert(k.clone(), Entry { hist, tick: self.next_tick });
            self.recency.insert(self.next_tick, k);
            self.next_tick += 1;
            n += 1;
        }
        debug_assert_eq!(self.invariants(), Ok(()));
        n
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn config(&self) -> &CwndHistoryConfig {
        &self.cfg
    }

    pub fn stats(&self) -> CwndHistoryStats {
        self.stats
    }

    /// Internal consistency; checked under debug assertions after every change.
    pub fn invariants(&self) -> Result<(), &'static str> {
        if self.entries.len() != self.recency.len() {
            return Err("cwnd history: entry and recency counts differ");
        }
        if self.entries.len() > self.cfg.capacity {
            return Err("cwnd history: above capacity");
        }
        for (k, e) in &self.entries {
            if self.recency.get(&e.tick) != Some(k) {
                return Err("cwnd history: recency order does not point back to the entry");
            }
            if e.tick >= self.next_tick || e.hist.samples == 0 {
                return Err("cwnd history: entry with a future tick or no samples");
            }
        }
        Ok(())
    }
}

/// What [`rtt_guard`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuardVerdict {
    /// History did not raise the window (or there is no recorded RTT): nothing to guard.
    NotRaised,
    /// The handshake RTT is within the tolerance of the recorded one: history's window stands.
    Kept,
    /// The handshake RTT grew beyond the tolerance: the default window is used.
    Reverted,
}

/// A guard for the history-based window (not in the paper, which assumes the path is as it was
/// when the history was recorded). Before a new 1-RTT connection sends its first application
/// data the server holds one RTT sample, from the handshake. If that sample exceeds the
/// smallest RTT observed by the recorded connections by more than `tolerance` (a fraction:
/// 0.25 = 25 %), a queue has built on the path since — a competing flow, a slower bottleneck
/// — and sending the remembered window at once would overflow it, so the default window is
/// used. Returns the window to use and why. A path that got slower without a standing queue
/// (e.g. a non-responsive flow taking half the rate) is invisible to one RTT sample; the
/// guard cannot catch it.
pub fn rtt_guard(
    history_window: u64,
    default: u64,
    recorded_min_rtt: Option<Duration>,
    handshake_rtt: Duration,
    tolerance: f64,
) -> (u64, GuardVerdict) {
    let Some(rec) = recorded_min_rtt.filter(|r| !r.is_zero()) else {
        return (history_window.max(default), GuardVerdict::NotRaised);
    };
    if history_window <= default {
        return (default, GuardVerdict::NotRaised);
    }
    let limit = rec.as_nanos() as f64 * (1.0 + tolerance.max(0.0));
    if handshake_rtt.as_nanos() as f64 <= limit {
        (history_window, GuardVerdict::Kept)
    } else {
        (default, GuardVerdict::Reverted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_then_import_keeps_averages_order_and_age() {
        let cfg = CwndHistoryConfig { capacity: 3, lifetime: Duration::from_secs(100), ..CwndHistoryConfig::default() };
        let mut a: CwndHistory<u64> = cfg.build().unwrap();
        for (t, peer, w) in [(1, 7u64, 20_000u64), (2, 8, 30_000), (3, 7, 40_000), (4, 9, 50_000)] {
            a.record(s(t), &peer, HistoryEvent::ConnectionClosed, w);
        }
        let out = a.export(s(10));
        assert_eq!(out.iter().map(|(k, _)| *k).collect::<alloc::vec::Vec<_>>(), [8, 7, 9]);
        let mut b: CwndHistory<u64> = cfg.build().unwrap();
        assert_eq!(b.import(s(500), out.clone()), 3);
        assert_eq!(b.export(s(500)), out, "ages carried over to the new clock");
        for p in [7u64, 8, 9] {
            assert_eq!(b.initial_window(s(500), &p, 1), a.initial_window(s(10), &p, 1));
        }
        // Lifetime counts from the original observation: peer 8 (age 8 s) expires at 592 s.
        assert!(b.peek(s(591), &8).is_some() && b.peek(s(593), &8).is_none());
        assert_eq!(b.invariants(), Ok(()));
    }

    const DEFAULT_IW: u64 = 14_720; // RFC 9002 §7.2 with 1472-byte datagrams
    fn s(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000_000)
    }
    fn store(cfg: CwndHistoryConfig) -> CwndHistory<u64> {
        cfg.build().unwrap()
    }

    #[test]
    fn defaults_validate_and_bad_values_name_their_field() {
        assert_eq!(CwndHistoryConfig::default().validate(), Ok(()));
        let d = CwndHistoryConfig::default();
        let bad = |c: CwndHistoryConfig, f: &str| assert_eq!(c.validate().unwrap_err().field, f);
        bad(CwndHistoryConfig { ewma_gain: 0.0, ..d }, "ewma_gain");
        bad(CwndHistoryConfig { ewma_gain: 1.5, ..d }, "ewma_gain");
        bad(CwndHistoryConfig { ewma_gain: f64::NAN, ..d }, "ewma_gain");
        bad(CwndHistoryConfig { capacity: 0, ..d }, "capacity");
        bad(CwndHistoryConfig { lifetime: Duration::ZERO, ..d }, "lifetime");
        bad(CwndHistoryConfig { max_initial_window: Some(0), ..d }, "max_initial_window");
        assert!(CwndHistoryConfig { capacity: 0, ..d }.build::<u64>().is_err());
    }

    #[test]
    fn mean_of_the_observed_windows_becomes_the_initial_window() {
        let mut h = store(CwndHistoryConfig::default());
        // No history: the default (Algorithm 1 starts from cwnd_initial = cwnd_default).
        assert_eq!(h.initial_window(s(0), &7, DEFAULT_IW), DEFAULT_IW);
        h.record(s(1), &7, HistoryEvent::ZeroRttHandshake, 30_000);
        h.record(s(2), &7, HistoryEvent::ZeroRttHandshake, 45_000);
        h.record(s(3), &7, HistoryEvent::IdleTimeout, 21_000);
        let p = h.peek(s(3), &7).unwrap();
        assert_eq!((p.samples(), p.mean(), p.last_cwnd()), (3, 32_000, 21_000));
        assert_eq!(h.initial_window(s(4), &7, DEFAULT_IW), 32_000);
        // Another peer has no history.
        assert_eq!(h.initial_window(s(4), &8, DEFAULT_IW), DEFAULT_IW);
        let st = h.stats();
        assert_eq!((st.records_zero_rtt, st.records_close, st.records_idle_timeout), (2, 1, 1));
        assert_eq!((st.hits, st.misses, st.raised), (1, 2, 1));
    }

    #[test]
    fn default_wins_when_the_average_is_smaller() {
        // The paper's "bad" path: the measured average stays below the default window.
        let mut h = store(CwndHistoryConfig::default());
        h.record(s(0), &1, HistoryEvent::ZeroRttHandshake, 8_000);
        h.record(s(1), &1, HistoryEvent::ConnectionClosed, 10_000);
        assert_eq!(h.peek(s(1), &1).unwrap().mean(), 9_000);
        assert_eq!(h.initial_window(s(2), &1, DEFAULT_IW), DEFAULT_IW);
        assert_eq!((h.stats().hits, h.stats().raised), (1, 0));
    }

    #[test]
    fn ewma_and_mean_differ_as_computed_by_hand() {
        let cfg = CwndHistoryConfig { ewma_gain: 0.25, ..CwndHistoryConfig::default() };
        let mut mean = store(cfg);
        let mut ewma = store(CwndHistoryConfig { average: HistoryAverage::Ewma, ..cfg });
        for h in [&mut mean, &mut ewma] {
            for (t, w) in [(0, 10_000), (1, 20_000), (2, 40_000)] {
                h.record(s(t), &3, HistoryEvent::ConnectionClosed, w);
            }
        }
        // Mean: 70 000 / 3 = 23 333. EWMA: 10 000 → 12 500 → 12 500 + (40 000 − 12 500)/4 = 19 375.
        let p = *mean.peek(s(3), &3).unwrap();
        assert_eq!((p.mean(), p.ewma()), (23_333, 19_375));
        assert_eq!(mean.initial_window(s(3), &3, DEFAULT_IW), 23_333);
        assert_eq!(ewma.initial_window(s(3), &3, DEFAULT_IW), 19_375);
    }

    #[test]
    fn capacity_evicts_the_least_recently_used() {
        let mut h = store(CwndHistoryConfig { capacity: 2, ..CwndHistoryConfig::default() });
        h.record(s(0), &1, HistoryEvent::ConnectionClosed, 20_000);
        h.record(s(1), &2, HistoryEvent::ConnectionClosed, 30_000);
        // Using peer 1 makes peer 2 the least recently used.
        assert_eq!(h.initial_window(s(2), &1, DEFAULT_IW), 20_000);
        h.record(s(3), &3, HistoryEvent::ConnectionClosed, 40_000);
        assert_eq!(h.len(), 2);
        assert!(h.peek(s(3), &2).is_none());
        assert!(h.peek(s(3), &1).is_some() && h.peek(s(3), &3).is_some());
        assert_eq!(h.stats().evictions, 1);
        // Recording for a known peer evicts nothing; the next newcomer evicts peer 1.
        h.record(s(4), &3, HistoryEvent::ZeroRttHandshake, 40_000);
        h.record(s(5), &4, HistoryEvent::ConnectionClosed, 50_000);
        assert!(h.peek(s(5), &1).is_none());
        assert_eq!(h.stats().evictions, 2);
        h.invariants().unwrap();
    }

    #[test]
    fn entries_expire_lazily_and_by_purge() {
        let cfg = CwndHistoryConfig { lifetime: Duration::from_secs(10), ..CwndHistoryConfig::default() };
        let mut h = store(cfg);
        h.record(s(0), &1, HistoryEvent::ConnectionClosed, 50_000);
        assert_eq!(h.initial_window(Instant::from_nanos(9_999_999_999), &1, DEFAULT_IW), 50_000);
        // Lookups do not extend the lifetime; at 10 s the entry is gone.
        assert_eq!(h.initial_window(s(10), &1, DEFAULT_IW), DEFAULT_IW);
        assert_eq!((h.stats().expirations, h.len()), (1, 0));
        // A record after expiry starts a fresh history.
        h.record(s(20), &1, HistoryEvent::ConnectionClosed, 100_000);
        h.record(s(40), &1, HistoryEvent::ConnectionClosed, 20_000);
        assert_eq!(h.peek(s(40), &1).unwrap().samples(), 1);
        assert_eq!(h.stats().expirations, 2);
        // purge drops only the expired.
        h.record(s(45), &2, HistoryEvent::ConnectionClosed, 30_000);
        assert!(h.peek(s(52), &1).is_none()); // peek hides it but does not drop it
        assert_eq!(h.len(), 2);
        assert_eq!(h.purge(s(52)), 1);
        assert_eq!((h.len(), h.stats().expirations), (1, 3));
        assert!(h.peek(s(52), &2).is_some());
        h.invariants().unwrap();
    }

    #[test]
    fn cap_limits_what_history_can_raise_the_window_to() {
        let cfg = CwndHistoryConfig { max_initial_window: Some(20_000), ..CwndHistoryConfig::default() };
        let mut h = store(cfg);
        h.record(s(0), &1, HistoryEvent::ZeroRttHandshake, 32_000);
        assert_eq!(h.initial_window(s(1), &1, DEFAULT_IW), 20_000);
        // The default itself is never lowered by the cap.
        assert_eq!(h.initial_window(s(1), &1, 30_000), 30_000);
        assert_eq!(h.stats().capped, 2);
    }

    #[test]
    fn random_operations_keep_invariants() {
        let cfg = CwndHistoryConfig { capacity: 8, lifetime: Duration::from_secs(30), ..CwndHistoryConfig::default() };
        let mut h = store(cfg);
        let mut rng = lasthop_core::Rng::from_seed(0xC3);
        let mut now = Instant::ZERO;
        for _ in 0..20_000 {
            now += Duration::from_millis(rng.gen_range_inclusive(2_000));
            let peer = rng.gen_range_inclusive(20);
            match rng.gen_range_inclusive(9) {
                0..=4 => {
                    let w = 1_000 + rng.gen_range_inclusive(200_000);
                    h.record(now, &peer, HistoryEvent::ConnectionClosed, w);
                }
                5..=8 => {
                    let iw = h.initial_window(now, &peer, DEFAULT_IW);
                    assert!((DEFAULT_IW..=201_000).contains(&iw));
                }
                _ => {
                    h.purge(now);
                }
            }
            h.invariants().unwrap();
        }
        let st = h.stats();
        assert!(st.evictions > 0 && st.expirations > 0 && st.hits > 0 && st.misses > 0);
    }

    #[test]
    fn works_with_other_key_types() {
        let mut h: CwndHistory<[u8; 16]> = CwndHistoryConfig::default().build().unwrap();
        h.record(s(0), &[1; 16], HistoryEvent::ConnectionClosed, 40_000);
        assert_eq!(h.initial_window(s(1), &[1; 16], DEFAULT_IW), 40_000);
        assert_eq!(h.initial_window(s(1), &[2; 16], DEFAULT_IW), DEFAULT_IW);
        // The paper's single server-wide average.
        let mut g: CwndHistory<()> = CwndHistoryConfig::default().build().unwrap();
        g.record(s(0), &(), HistoryEvent::ZeroRttHandshake, 30_000);
        g.record(s(1), &(), HistoryEvent::ConnectionClosed, 50_000);
        assert_eq!(g.initial_window(s(2), &(), DEFAULT_IW), 40_000);
    }

    #[test]
    fn cwnd_history_rtt_guard_reverts_to_the_default_when_a_queue_has_built() {
        let ms = Duration::from_millis;
        // Within 25 % of the recorded RTT: history's window stands.
        assert_eq!(rtt_guard(60_000, DEFAULT_IW, Some(ms(40)), ms(49), 0.25), (60_000, GuardVerdict::Kept));
        // A standing queue (RTT +50 %): back to the default.
        assert_eq!(rtt_guard(60_000, DEFAULT_IW, Some(ms(40)), ms(60), 0.25), (DEFAULT_IW, GuardVerdict::Reverted));
        // Nothing to guard when history did not raise the window or no RTT was recorded.
        assert_eq!(rtt_guard(9_000, DEFAULT_IW, Some(ms(40)), ms(90), 0.25), (DEFAULT_IW, GuardVerdict::NotRaised));
        assert_eq!(rtt_guard(60_000, DEFAULT_IW, None, ms(90), 0.25), (60_000, GuardVerdict::NotRaised));
    }
}
