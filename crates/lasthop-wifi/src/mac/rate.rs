//! Rate control: a fixed rate, an SNR oracle ("ideal") and a Minstrel-HT-style sampler.
//!
//! Minstrel-HT follows the design of the Linux mac80211 `minstrel_ht` rate control algorithm as
//! publicly documented (F. Fietkau's Minstrel-HT description on the linux-wireless wiki and
//! mailing list; the original Minstrel by D. Smithies and the ns-3 `MinstrelHtWifiManager`
//! model documentation). It was written from that design description only; no GPL code was
//! consulted or copied. Design elements kept:
//!
//! * per-rate statistics of attempted and acknowledged MPDUs in the current interval, folded
//!   every `update_interval` (100 ms) into an EWMA of the success probability with 75 % weight
//!   on the old value; the first measurement of a rate initialises its EWMA directly;
//! * expected throughput = data rate × EWMA probability, with rates whose probability is below
//!   10 % counted as zero throughput;
//! * a max-throughput rate (and a second-best one) and a max-probability rate (the highest
//!   throughput among rates ≥ 95 % success, else the most reliable rate);
//! * probing as redesigned in mac80211 in 2021 (commit "minstrel_ht: significantly redesign the
//!   rate probing strategy", whose message describes the design): rates are grouped by
//!   spatial streams (our tables have one width and guard interval, so a group is an NSS), and
//!   each statistics window keeps a small set of rates to probe, refilled at every update, in
//!   three kinds — *INC*: per group, the first rate faster than the current max-throughput
//!   rate; *JUMP*: per group, a random rate faster than it; *SLOW*: rates between max_prob /
//!   max_tp2 and max_tp, to close the gap between them — taken in the ratio 3 INC : 2 JUMP :
//!   1 SLOW; a rate is probed at most once per window, and max_tp / max_tp2 / max_prob are
//!   never probed;
//! * one probe per `sample_interval` (20 ms) per station, whatever the A-MPDU length, so the
//!   cost of probing stays a bounded share of airtime and a cold start at the lowest rate
//!   still gets five probes per window (mac80211 likewise paces its probes in time);
//! * a "sudden death" check: if the max-throughput rate has ≥ 30 attempts in the current
//!   interval with < 25 % delivered, statistics are updated at once instead of waiting for the
//!   timer (mac80211 performs a similar check to drop a failing multi-stream rate quickly).
//!
//! * the multi-rate retry chain (`minstrel_ht_update_rates`): a frame goes at max_tp, and if
//!   none of it is acknowledged (no Block Ack: the whole PPDU lost), its retries go at max_tp,
//!   then max_tp2, then max_prob, each stage a number of tries set as `minstrel_calc_retransmit`
//!   sets it — 2, and more while the tries of an average A-MPDU (the EWMA of MPDUs per PPDU,
//!   1200-byte MPDUs) with their contention (CWmin 15 doubling, 9 µs slots) and overhead (a
//!   6 Mb/s preamble and ACK, 108 µs) fit a 6 ms segment, at most 7 (mac80211's default
//!   `max_retry`); a stage whose success probability is below 20 % gets 2 (`minstrel_ht_set_rate`).
//!   Past the last stage the retries start over at max_tp, as a driver's software retry of an
//!   aggregate (ath9k's) looks the rates up again. A partly acknowledged A-MPDU ends the chain:
//!   its lost MPDUs go in the next one at max_tp. A failed probe is not retried at its rate;
//!   probes wait while a chain is running.
//!
//! Simplifications (documented choices):
//!
//! * the retry stages after the first are sent without the RTS/CTS protection mac80211 asks for
//!   there;
//! * throughput uses the PHY data rate, not airtime including preamble, inter-frame spaces and
//!   Block Ack overhead (mac80211 weighs the per-MPDU duration by the average A-MPDU length);
//! * a probe is one selection: hosts learn of it from [`MinstrelHt::last_was_sample`] (the
//!   simulator sends it as a single MPDU, as drivers keep probe frames out of aggregates);
//! * groups are spatial-stream counts only (one width and guard interval per table), no CCK,
//!   no probability cap at 90 % in the throughput estimate, no EWMV.
//!
//! Everything is sans-IO and deterministic: `now` is passed in and sampling draws from the
//! [`Rng`] the host provides.

use lasthop_core::{Duration, Instant, Rng};

use crate::phy::{max_mcs, max_nss, mpdu_success_prob, valid_guard_intervals, Standard, TxVector};

/// MPDU size (bytes) for which [`IdealRate`] maximises expected throughput.
pub const IDEAL_MPDU_BYTES: u32 = 1500;

/// All valid [`TxVector`]s of `standard` at `channel_width` and `guard_interval` with 1..=max
/// spatial streams, sorted by increasing data rate (ties: fewer streams first).
pub fn rate_table(
    standard: Standard,
    channel_width: u16,
    guard_interval: u16,
    max_streams: u8,
) -> Vec<TxVector> {
    let nss_max = max_streams.clamp(1, max_nss(standard));
    let mut v = Vec::new();
    if !valid_guard_intervals(standard).contains(&guard_interval) {
        return v;
    }
    for nss in 1..=nss_max {
        for mcs in 0..=max_mcs(standard) {
            let tx = TxVector::new(standard, mcs, nss, channel_width, guard_interval);
            if tx.validate().is_ok() {
                v.push(tx);
            }
        }
    }
    v.sort_by(|a, b| {
        a.data_rate_bps()
            .cmp(&b.data_rate_bps())
            .then(a.nss.cmp(&b.nss))
            .then(a.mcs.cmp(&b.mcs))
    });
    v
}

/// The rate of `rates` maximising `data rate × mpdu_success_prob(snr, mpdu_bytes)` (the lowest
/// rate if all are zero). Panics if `rates` is empty.
pub fn best_rate_for_snr(rates: &[TxVector], snr_db: f64, mpdu_bytes: u32) -> TxVector {
    let mut best = rates[0];
    let mut best_tp = -1.0;
    for tx in rates {
        let tp = tx.data_rate_f64() * mpdu_success_prob(tx, snr_db, mpdu_bytes);
        if tp > best_tp {
            best = *tx;
            best_tp = tp;
        }
    }
    best
}

/// An oracle: the best-throughput rate for the SNR it was last told.
#[derive(Clone, Debug, PartialEq)]
pub struct IdealRate {
    rates: Vec<TxVector>,
    snr_db: f64,
    mpdu_bytes: u32,
}

impl IdealRate {
    /// Oracle over `rates` (non-empty), for 1500-byte MPDUs, initial SNR `snr_db`.
    pub fn new(rates: Vec<TxVector>, snr_db: f64) -> IdealRate {
        assert!(!rates.is_empty(), "IdealRate needs at least one rate");
        IdealRate {
            rates,
            snr_db,
            mpdu_bytes: IDEAL_MPDU_BYTES,
        }
    }
    /// Tell the oracle the current SNR.
    pub fn set_snr_db(&mut self, snr_db: f64) {
        self.snr_db = snr_db;
    }
    /// The best rate for the current SNR.
    pub fn select(&self) -> TxVector {
        best_rate_for_snr(&self.rates, self.snr_db, self.mpdu_bytes)
    }
    pub fn rates(&self) -> &[TxVector] {
        &self.rates
    }
}

/// Minstrel-HT parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MinstrelParams {
    /// Statistics update period.
    pub update_interval: Duration,
    /// EWMA weight of the old probability (0.75).
    pub ewma_old_weight: f64,
    /// One probe per this interval (20 ms).
    pub sample_interval: Duration,
    /// Rates below this success probability have zero expected throughput (0.1).
    pub min_useful_prob: f64,
    /// Probability above which a rate counts as reliable for max_prob (0.95).
    pub reliable_prob: f64,
    /// Sudden-death check: minimum attempts at max_tp in the interval (30) …
    pub sudden_death_min_attempts: u32,
    /// … and the delivery ratio below which statistics are updated at once (0.25).
    pub sudden_death_max_ratio: f64,
}

impl Default for MinstrelParams {
    fn default() -> Self {
        MinstrelParams {
            update_interval: Duration::from_millis(100),
            ewma_old_weight: 0.75,
            sample_interval: Duration::from_millis(20),
            min_useful_prob: 0.1,
            reliable_prob: 0.95,
            sudden_death_min_attempts: 30,
            sudden_death_max_ratio: 0.25,
        }
    }
}

/// Per-rate statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateStats {
    /// MPDUs attempted / acknowledged in the current interval.
    pub attempts: u32,
    pub successes: u32,
    /// EWMA of the success probability (meaningful once `has_history`).
    pub prob: f64,
    pub has_history: bool,
    /// Expected throughput (bit/s) from the last update.
    pub throughput: f64,
    /// Totals since creation.
    pub total_attempts: u64,
    pub total_successes: u64,
}

/// The three kinds of probe of the 2021 mac80211 probing design.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleType {
    /// Per group, the first rate faster than max_tp.
    Inc,
    /// Per group, a random rate faster than max_tp.
    Jump,
    /// A rate between max_prob / max_tp2 and max_tp.
    Slow,
}

/// Rates each probe kind may hold per statistics window (mac80211 keeps a small fixed set).
const SAMPLE_RATES_PER_KIND: usize = 5;

/// Order of the probe kinds: every six probes are 3 INC, 2 JUMP, 1 SLOW.
const SAMPLE_CYCLE: [SampleType; 6] = [
    SampleType::Inc,
    SampleType::Jump,
    SampleType::Inc,
    SampleType::Slow,
    SampleType::Inc,
    SampleType::Jump,
];

/// Minstrel-HT's decision variables (indices into the rate table).
#[derive(Clone, Debug)]
pub struct MinstrelVars {
    pub max_tp: usize,
    pub max_tp2: usize,
    pub max_prob: usize,
    pub next_update: Instant,
    /// When the next probe is due.
    pub next_sample: Instant,
    pub last_was_sample: bool,
    /// Rates left to probe in this window, per kind (INC, JUMP, SLOW), first to be taken last.
    pools: [Vec<usize>; 3],
    /// Position in `SAMPLE_CYCLE`.
    cycle_pos: usize,
    /// Group the INC/JUMP pools start from (rotates every window).
    first_group: usize,
    rng: Rng,
    /// PPDUs in a row, since the last with an acknowledged MPDU, of which none was (the
    /// multi-rate retry chain's position); probes are not counted.
    pub failed_in_row: u32,
    /// MPDUs and PPDUs reported since the last statistics update, and the EWMA of MPDUs per
    /// PPDU (mac80211's `avg_ampdu_len`, 1 at the start).
    ampdu_len: u64,
    ampdu_packets: u64,
    pub avg_ampdu_len: f64,
}

/// `minstrel_calc_retransmit`'s constants: the segment a stage's tries should fit, the
/// contention window it assumes (CWmin, CWmax) and slot, the overhead per try (a 6 Mb/s
/// preamble and signal with SIFS, 48 µs, and an ACK, 60 µs: `mi->overhead`), the MPDU size of its
/// duration tables and the most tries per stage (mac80211's default `max_retry`).
const MRR_SEGMENT_US: f64 = 6000.0;
const MRR_CW: (u32, u32) = (15, 1023);
const MRR_SLOT_US: f64 = 9.0;
const MRR_OVERHEAD_US: f64 = 108.0;
const MRR_MPDU_BITS: f64 = 1200.0 * 8.0;
const MRR_MAX_TRIES: u32 = 7;

/// Minstrel-HT state for one station.
#[derive(Clone, Debug)]
pub struct MinstrelHt {
    params: MinstrelParams,
    rates: Vec<TxVector>,
    /// Rate indices per group (same NSS), each by increasing data rate.
    groups: Vec<Vec<usize>>,
    stats: Vec<RateStats>,
    vars: MinstrelVars,
}

impl MinstrelHt {
    /// Over `rates` (non-empty; sorted by [`rate_table`] is not required), starting at the
    /// lowest-rate entry, sampling from `rng`, first statistics update at `now + interval`.
    pub fn new(rates: Vec<TxVector>, params: MinstrelParams, rng: Rng, now: Instant) -> Self {
        assert!(!rates.is_empty(), "MinstrelHt needs at least one rate");
        let lowest = (0..rates.len())
            .min_by_key(|&i| rates[i].data_rate_bps())
            .unwrap_or(0);
        let n = rates.len();
        let mut nss: Vec<u8> = rates.iter().map(|r| r.nss).collect();
        nss.sort_unstable();
        nss.dedup();
        let groups = nss
            .iter()
            .map(|&k| {
                let mut g: Vec<usize> = (0..n).filter(|&i| rates[i].nss == k).collect();
                g.sort_by_key(|&i| (rates[i].data_rate_bps(), rates[i].mcs));
                g
            })
            .collect();
        let mut m = MinstrelHt {
            params,
            groups,
            stats: vec![RateStats::default(); n],
            vars: MinstrelVars {
                max_tp: lowest,
                max_tp2: lowest,
                max_prob: lowest,
                next_update: now + params.update_interval,
                next_sample: now,
                last_was_sample: false,
                pools: [Vec::new(), Vec::new(), Vec::new()],
                cycle_pos: 0,
                first_group: 0,
                rng,
                failed_in_row: 0,
                ampdu_len: 0,
                ampdu_packets: 0,
                avg_ampdu_len: 1.0,
            },
            rates,
        };
        m.refill_pools();
        m
    }

    /// Over [`rate_table`]`(standard, width, gi, max_streams)` with default parameters.
    pub fn for_phy(
        standard: Standard,
        channel_width: u16,
        guard_interval: u16,
        max_streams: u8,
        rng: Rng,
        now: Instant,
    ) -> Self {
        MinstrelHt::new(
            rate_table(standard, channel_width, guard_interval, max_streams),
            MinstrelParams::default(),
            rng,
            now,
        )
    }

    pub fn params(&self) -> &MinstrelParams {
        &self.params
    }
    pub fn rates(&self) -> &[TxVector] {
        &self.rates
    }
    pub fn stats(&self) -> &[RateStats] {
        &self.stats
    }
    pub fn vars(&self) -> &MinstrelVars {
        &self.vars
    }
    /// The current max-throughput rate.
    pub fn max_tp_rate(&self) -> TxVector {
        self.rates[self.vars.max_tp]
    }
    /// The second-best throughput rate.
    pub fn max_tp2_rate(&self) -> TxVector {
        self.rates[self.vars.max_tp2]
    }
    /// The max-probability rate.
    pub fn max_prob_rate(&self) -> TxVector {
        self.rates[self.vars.max_prob]
    }
    /// Whether the last [`MinstrelHt::select`] returned a sample rate.
    pub fn last_was_sample(&self) -> bool {
        self.vars.last_was_sample
    }

    /// The rate for the next A-MPDU.
    pub fn select(&mut self, now: Instant) -> TxVector {
        self.handle_timeout(now);
        self.vars.last_was_sample = false;
        if self.vars.failed_in_row > 0 {
            return self.rates[self.retry_stage(self.vars.failed_in_row)];
        }
        if now >= self.vars.next_sample {
            if let Some(i) = self.sample_candidate() {
                self.vars.next_sample = now + self.params.sample_interval;
                self.vars.last_was_sample = true;
                return self.rates[i];
            }
        }
        self.rates[self.vars.max_tp]
    }

    /// The outcome of an A-MPDU sent at `tx`: `acked_mpdus` of `attempted_mpdus` acknowledged.
    /// Reports for a rate not in the table are ignored.
    pub fn report(&mut self, now: Instant, tx: TxVector, attempted_mpdus: u32, acked_mpdus: u32) {
        let Some(i) = self.rates.iter().position(|r| *r == tx) else {
            return;
        };
        let acked = acked_mpdus.min(attempted_mpdus);
        if !self.vars.last_was_sample {
            self.vars.failed_in_row = if acked == 0 && attempted_mpdus > 0 { self.vars.failed_in_row + 1 } else { 0 };
        }
        self.vars.ampdu_len += attempted_mpdus as u64;
        self.vars.ampdu_packets += 1;
        let s = &mut self.stats[i];
        s.attempts = s.attempts.saturating_add(attempted_mpdus);
        s.successes = s.successes.saturating_add(acked);
        s.total_attempts += attempted_mpdus as u64;
        s.total_successes += acked as u64;
        let cur = self.stats[self.vars.max_tp];
        if cur.attempts >= self.params.sudden_death_min_attempts
            && (cur.successes as f64) < self.params.sudden_death_max_ratio * cur.attempts as f64
        {
            self.update_stats(now);
        } else {
            self.handle_timeout(now);
        }
    }

    /// The rate of the try after `failed` tries in a row that were lost whole: the stages
    /// max_tp, max_tp2, max_prob, each its number of tries, then from the start again.
    fn retry_stage(&self, failed: u32) -> usize {
        let v = &self.vars;
        let stages = [v.max_tp, v.max_tp2, v.max_prob];
        let tries = stages.map(|i| self.stage_tries(i));
        let mut k = failed % tries.iter().sum::<u32>();
        for (i, &n) in stages.iter().zip(&tries) {
            if k < n {
                return *i;
            }
            k -= n;
        }
        v.max_tp
    }

    /// Tries of a retry stage at rate `i`, as `minstrel_calc_retransmit` and
    /// `minstrel_ht_set_rate` count them (see the module's notes).
    fn stage_tries(&self, i: usize) -> u32 {
        let s = &self.stats[i];
        if !s.has_history || s.prob < 0.2 {
            return 2;
        }
        let data = self.vars.avg_ampdu_len.floor().max(1.0) * MRR_MPDU_BITS / self.rates[i].data_rate_f64() * 1e6;
        let (mut cw, cw_max) = MRR_CW;
        let mut ctime = MRR_SLOT_US * (cw as f64) / 2.0;
        cw = ((cw << 1) | 1).min(cw_max);
        ctime += MRR_SLOT_US * (cw as f64) / 2.0;
        cw = ((cw << 1) | 1).min(cw_max);
        let mut tx = ctime + 2.0 * (MRR_OVERHEAD_US + data);
        let mut n = 2;
        loop {
            tx += MRR_SLOT_US * (cw as f64) / 2.0 + MRR_OVERHEAD_US + data;
            cw = ((cw << 1) | 1).min(cw_max);
            if tx >= MRR_SEGMENT_US {
                break;
            }
            n += 1;
            if n >= MRR_MAX_TRIES {
                break;
            }
        }
        n
    }

    /// When the statistics are next due for an update.
    pub fn poll_timeout(&self) -> Option<Instant> {
        Some(self.vars.next_update)
    }

    /// Update the statistics if due; early calls are no-ops.
    pub fn handle_timeout(&mut self, now: Instant) {
        if now >= self.vars.next_update {
            self.update_stats(now);
        }
    }

    /// The next rate to probe: the kind next in the 3 INC : 2 JUMP : 1 SLOW cycle, or the
    /// following kinds if its pool is empty; `None` once all pools are empty in this window.
    fn sample_candidate(&mut self) -> Option<usize> {
        for k in 0..SAMPLE_CYCLE.len() {
            let kind = SAMPLE_CYCLE[(self.vars.cycle_pos + k) % SAMPLE_CYCLE.len()];
            if let Some(i) = self.vars.pools[kind as usize].pop() {
                self.vars.cycle_pos = (self.vars.cycle_pos + k + 1) % SAMPLE_CYCLE.len();
                return Some(i);
            }
        }
        None
    }

    /// Refill the probe pools from the current max_tp / max_tp2 / max_prob (every window).
    fn refill_pools(&mut self) {
        let v = &mut self.vars;
        let rate = |i: usize| self.rates[i].data_rate_bps();
        let taken = [v.max_tp, v.max_tp2, v.max_prob];
        let tp = rate(v.max_tp);
        let ng = self.groups.len();
        let cap = SAMPLE_RATES_PER_KIND;
        // Per group (starting from a rotating one): INC takes the first rate faster than
        // max_tp; the others faster than it are JUMP candidates.
        let mut inc = Vec::with_capacity(ng);
        let mut above: Vec<Vec<usize>> = Vec::with_capacity(ng);
        for k in 0..ng {
            let g = &self.groups[(v.first_group + k) % ng];
            let mut faster = g.iter().copied().filter(|&i| rate(i) > tp && !taken.contains(&i));
            let Some(first) = faster.next() else { continue };
            inc.push(first);
            above.push(faster.collect());
        }
        inc.truncate(cap);
        // JUMP: a random one of them from each group in turn, until `cap` or none left.
        let mut jump = Vec::with_capacity(cap);
        'fill: loop {
            let mut any = false;
            for g in above.iter_mut().filter(|g| !g.is_empty()) {
                let j = v.rng.gen_range_inclusive(g.len() as u64 - 1) as usize;
                jump.push(g.swap_remove(j));
                any = true;
                if jump.len() == cap {
                    break 'fill;
                }
            }
            if !any {
                break;
            }
        }
        // SLOW: rates strictly between min(max_prob, max_tp2) and max_tp, in random order.
        let lo = rate(v.max_prob).min(rate(v.max_tp2));
        let mut slow: Vec<usize> = (0..self.rates.len())
            .filter(|&i| rate(i) > lo && rate(i) < tp && !taken.contains(&i))
            .collect();
        for k in (1..slow.len()).rev() {
            let j = v.rng.gen_range_inclusive(k as u64) as usize;
            slow.swap(k, j);
        }
        slow.truncate(cap);
        // Pools are popped from the back: keep the first group's candidates last in.
        inc.reverse();
        jump.reverse();
        v.pools = [inc, jump, slow];
        v.first_group = (v.first_group + 1) % ng.max(1);
    }

    fn update_stats(&mut self, now: Instant) {
        let p = self.params;
        if self.vars.ampdu_packets > 0 {
            let cur = self.vars.ampdu_len as f64 / self.vars.ampdu_packets as f64;
            self.vars.avg_ampdu_len = p.ewma_old_weight * self.vars.avg_ampdu_len + (1.0 - p.ewma_old_weight) * cur;
            self.vars.ampdu_len = 0;
            self.vars.ampdu_packets = 0;
        }
        for (s, tx) in self.stats.iter_mut().zip(&self.rates) {
            if s.attempts > 0 {
                let cur = s.successes as f64 / s.attempts as f64;
                s.prob = if s.has_history {
                    p.ewma_old_weight * s.prob + (1.0 - p.ewma_old_weight) * cur
                } else {
                    cur
                };
                s.has_history = true;
                s.attempts = 0;
                s.successes = 0;
            }
            s.throughput = if s.has_history && s.prob >= p.min_useful_prob {
                tx.data_rate_f64() * s.prob
            } else {
                0.0
            };
        }
        // Max throughput (ties: higher probability, then lower index), second best.
        let better = |a: &RateStats, b: &RateStats| {
            a.throughput > b.throughput || (a.throughput == b.throughput && a.prob > b.prob)
        };
        let mut best: Option<usize> = None;
        let mut second: Option<usize> = None;
        for (i, s) in self.stats.iter().enumerate() {
            if !s.has_history {
                continue;
            }
            match best {
                None => best = Some(i),
                Some(b) if better(s, &self.stats[b]) => {
                    second = best;
                    best = Some(i);
                }
                Some(_) => {
                    let replace = match second {
                        None => true,
                        Some(c) => better(s, &self.stats[c]),
                    };
                    if replace {
                        second = Some(i);
                    }
                }
            }
        }
        if let Some(b) = best {
            // Keep the current rate while no measured rate has any useful throughput.
            if self.stats[b].throughput > 0.0 {
                self.vars.max_tp = b;
                self.vars.max_tp2 = second.unwrap_or(b);
            }
        }
        // Max probability: best throughput among reliable rates, else the most reliable.
        let mut mp: Option<usize> = None;
        for (i, s) in self.stats.iter().enumerate() {
            if !s.has_history {
                continue;
            }
            let take = match mp {
                None => true,
                Some(m) => {
                    let c = &self.stats[m];
                    if s.prob >= p.reliable_prob {
                        c.prob < p.reliable_prob || s.throughput > c.throughput
                    } else {
                        c.prob < p.reliable_prob && s.prob > c.prob
                    }
                }
            };
            if take {
                mp = Some(i);
            }
        }
        if let Some(m) = mp {
            self.vars.max_prob = m;
        }
        self.vars.next_update = now + p.update_interval;
        self.refill_pools();
    }
}

/// A rate-control algorithm for one station.
#[derive(Clone, Debug)]
pub enum RateControl {
    /// Always the same rate.
    Fixed(TxVector),
    /// SNR oracle; the host feeds the SNR with [`RateControl::set_snr_db`].
    Ideal(IdealRate),
    /// Minstrel-HT-style sampling rate control.
    MinstrelHt(Box<MinstrelHt>),
}

impl RateControl {
    /// The rate for the next A-MPDU.
    pub fn select(&mut self, now: Instant) -> TxVector {
        match self {
            RateControl::Fixed(tx) => *tx,
            RateControl::Ideal(i) => i.select(),
            RateControl::MinstrelHt(m) => m.select(now),
        }
    }
    /// The rate the next A-MPDU would normally use, without sampling or state change (for
    /// airtime estimates such as mac80211's airtime queue limit).
    pub fn current(&self) -> TxVector {
        match self {
            RateControl::Fixed(tx) => *tx,
            RateControl::Ideal(i) => i.select(),
            RateControl::MinstrelHt(m) => m.max_tp_rate(),
        }
    }
    /// Whether the last `select` returned a probe (Minstrel-HT sampling).
    pub fn last_was_sample(&self) -> bool {
        matches!(self, RateControl::MinstrelHt(m) if m.last_was_sample())
    }
    /// The outcome of an A-MPDU (ignored by `Fixed` and `Ideal`).
    pub fn report(&mut self, now: Instant, tx: TxVector, attempted_mpdus: u32, acked_mpdus: u32) {
        if let RateControl::MinstrelHt(m) = self {
            m.report(now, tx, attempted_mpdus, acked_mpdus);
        }
    }
    /// Oracle input: the current SNR (used only by `Ideal`).
    pub fn set_snr_db(&mut self, snr_db: f64) {
        if let RateControl::Ideal(i) = self {
            i.set_snr_db(snr_db);
        }
    }
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self {
            RateControl::MinstrelHt(m) => m.poll_timeout(),
            _ => None,
        }
    }
    pub fn handle_timeout(&mut self, now: Instant) {
        if let RateControl::MinstrelHt(m) = self {
            m.handle_timeout(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::channel::{LinkBudget, Mobility};
    use crate::phy::Band;
    use lasthop_core::rng::StreamKind;

    fn vht80() -> Vec<TxVector> {
        rate_table(Standard::Vht, 80, 800, 1)
    }

    fn expected_tp(tx: &TxVector, snr: f64) -> f64 {
        tx.data_rate_f64() * mpdu_success_prob(tx, snr, IDEAL_MPDU_BYTES)
    }

    #[test]
    fn rate_table_is_valid_and_sorted() {
        let t = vht80();
        assert_eq!(t.len(), 10);
        assert!(t
            .windows(2)
            .all(|w| w[0].data_rate_bps() <= w[1].data_rate_bps()));
        // VHT 20 MHz 1 SS has no MCS 9.
        assert_eq!(rate_table(Standard::Vht, 20, 800, 1).len(), 9);
        assert_eq!(rate_table(Standard::Ht, 40, 400, 2).len(), 16);
        assert!(rate_table(Standard::Vht, 80, 3200, 1).is_empty());
    }

    #[test]
    fn ideal_picks_mcs9_high_and_lower_as_snr_drops() {
        let mut rc = RateControl::Ideal(IdealRate::new(vht80(), 45.0));
        assert_eq!(rc.select(Instant::ZERO).mcs, 9);
        let mut prev = 9;
        let mut seen_low = false;
        let mut snr = 45.0;
        while snr >= 0.0 {
            rc.set_snr_db(snr);
            let m = rc.select(Instant::ZERO).mcs;
            assert!(m <= prev, "MCS rose from {prev} to {m} at {snr} dB");
            prev = m;
            seen_low |= m <= 1;
            snr -= 1.0;
        }
        assert!(seen_low);
        rc.set_snr_db(20.0);
        let m20 = rc.select(Instant::ZERO).mcs;
        assert!((2..9).contains(&m20), "{m20}");
    }

    #[test]
    fn fixed_is_fixed() {
        let tx = TxVector::new(Standard::Vht, 4, 1, 80, 800);
        let mut rc = RateControl::Fixed(tx);
        rc.report(Instant::ZERO, tx, 32, 0);
        assert_eq!(rc.select(Instant(1_000_000_000)), tx);
        assert_eq!(rc.poll_timeout(), None);
    }

    /// A-MPDUs of 32 MPDUs every 1 ms; `snr_at(t)` gives the SNR. Calls `check(t, m)` every ms.
    fn run(
        seed: u64,
        rates: Vec<TxVector>,
        ms: u64,
        snr_at: impl Fn(Instant) -> f64,
        mut check: impl FnMut(Instant, &MinstrelHt),
    ) -> MinstrelHt {
        let mut m = MinstrelHt::new(
            rates,
            MinstrelParams::default(),
            Rng::stream(seed, StreamKind::Other, 1),
            Instant::ZERO,
        );
        let mut chan = Rng::stream(seed, StreamKind::Channel, 1);
        let mut samples = 0u32;
        for k in 0..ms {
            let now = Instant(k * 1_000_000);
            if let Some(t) = m.poll_timeout() {
                if t <= now {
                    m.handle_timeout(now);
                }
            }
            let tx = m.select(now);
            samples += m.last_was_sample() as u32;
            let p = mpdu_success_prob(&tx, snr_at(now), IDEAL_MPDU_BYTES);
            let acked = (0..32).filter(|_| chan.bernoulli(p)).count() as u32;
            m.report(now, tx, 32, acked);
            check(now, &m);
        }
        // At most one probe per 20 ms.
        assert!(samples as u64 <= ms / 20 + 1, "{samples} samples in {ms}");
        m
    }

    #[test]
    fn minstrel_converges_at_fixed_snr() {
        for seed in 1..=3 {
            for snr in [15.0, 25.0, 35.0] {
                let rates = vht80();
                let ideal = expected_tp(&best_rate_for_snr(&rates, snr, IDEAL_MPDU_BYTES), snr);
                let m = run(seed, rates, 500, |_| snr, |_, _| {});
                let got = expected_tp(&m.max_tp_rate(), snr);
                assert!(
                    got >= 0.9 * ideal,
                    "seed {seed} snr {snr}: max_tp {:?} {got} vs ideal {ideal}",
                    m.max_tp_rate()
                );
                // The max-prob rate is reliable.
                let mp = m.max_prob_rate();
                assert!(
                    mpdu_success_prob(&mp, snr, IDEAL_MPDU_BYTES) > 0.5,
                    "{mp:?}"
                );
            }
        }
    }

    #[test]
    fn minstrel_converges_with_two_streams() {
        let snr = 30.0;
        let rates = rate_table(Standard::Vht, 80, 800, 2);
        let ideal = expected_tp(&best_rate_for_snr(&rates, snr, IDEAL_MPDU_BYTES), snr);
        let m = run(7, rates, 500, |_| snr, |_, _| {});
        let got = expected_tp(&m.max_tp_rate(), snr);
        assert!(got >= 0.9 * ideal, "{:?} {got} vs {ideal}", m.max_tp_rate());
    }

    #[test]
    fn minstrel_follows_snr_step_from_mobility() {
        // SNR 35 dB for 500 ms, then 15 dB: a distance step on a 5 GHz / 80 MHz link.
        let lb = LinkBudget::default_for(Band::Ghz5, 80);
        let (d_near, d_far) = (lb.distance_for_snr(35.0), lb.distance_for_snr(15.0));
        let step = Instant(500_000_000);
        let mob = Mobility::new(vec![(Instant::ZERO, d_near), (step, d_near), (step, d_far)]);
        let snr_at = |t: Instant| lb.snr_db(mob.distance_at(t));
        assert!((snr_at(Instant::ZERO) - 35.0).abs() < 1e-6);
        assert!((snr_at(step) - 15.0).abs() < 1e-6);
        for seed in 1..=3 {
            let rates = vht80();
            let ideal15 = expected_tp(&best_rate_for_snr(&rates, 15.0, IDEAL_MPDU_BYTES), 15.0);
            let mut adapted_at: Option<Instant> = None;
            let mut ok_before = false;
            let m = run(seed, rates, 1000, snr_at, |now, m| {
                let snr = snr_at(now);
                let ideal = expected_tp(&best_rate_for_snr(m.rates(), snr, IDEAL_MPDU_BYTES), snr);
                let got = expected_tp(&m.max_tp_rate(), snr);
                if now == Instant(499_000_000) {
                    ok_before = got >= 0.9 * ideal;
                }
                if now >= step {
                    if got >= 0.9 * ideal15 {
                        adapted_at.get_or_insert(now);
                    } else {
                        adapted_at = None;
                    }
                }
            });
            assert!(ok_before, "seed {seed}: not converged before the step");
            let at = adapted_at
                .unwrap_or_else(|| panic!("seed {seed}: never adapted: {:?}", m.max_tp_rate()));
            let lag = at - step;
            assert!(
                lag <= Duration::from_millis(300),
                "seed {seed}: adapted after {lag:?}"
            );
        }
    }

    #[test]
    fn minstrel_tracks_a_walk() {
        // 1 m <-> 23 m at 1 m/s (5 GHz, 80 MHz, defaults): one 44 s round trip, SNR ~61..14 dB.
        let lb = LinkBudget::default_for(Band::Ghz5, 80);
        let mob = Mobility::back_and_forth(Instant::ZERO, 1.0, 23.0, 1.0);
        let snr_at = |t: Instant| lb.snr_db(mob.distance_at(t));
        let (mut got, mut ideal) = (0.0, 0.0);
        run(11, vht80(), 44_000, snr_at, |now, m| {
            let snr = snr_at(now);
            got += expected_tp(&m.max_tp_rate(), snr);
            ideal += expected_tp(&best_rate_for_snr(m.rates(), snr, IDEAL_MPDU_BYTES), snr);
        });
        assert!(got >= 0.9 * ideal, "{:.3}", got / ideal);
    }

    /// Probing after the 2021 design: one probe per 20 ms; at a cold start (max_tp = the
    /// lowest rate, no history) every probe is faster than max_tp, the first INC probes are
    /// the next rate of each stream group, and no rate is probed twice in one window.
    #[test]
    fn probes_are_paced_and_climb_from_a_cold_start() {
        let rates = rate_table(Standard::Vht, 80, 800, 2);
        let mut m = MinstrelHt::new(rates.clone(), MinstrelParams::default(), Rng::from_seed(3), Instant::ZERO);
        let lowest = m.max_tp_rate();
        let mut probes = Vec::new();
        // 1 ms selections for one window; nothing reported, so max_tp stays put.
        for k in 0..100 {
            let tx = m.select(Instant(k * 1_000_000));
            if m.last_was_sample() {
                probes.push((k, tx));
            }
        }
        assert_eq!(probes.iter().map(|p| p.0).collect::<Vec<_>>(), vec![0, 20, 40, 60, 80]);
        assert!(probes.iter().all(|(_, tx)| tx.data_rate_bps() > lowest.data_rate_bps()));
        // INC comes first: the next faster rate in the first group (1 stream: MCS 1).
        assert_eq!((probes[0].1.nss, probes[0].1.mcs), (1, 1));
        // INC of the second group is the third probe (cycle INC, JUMP, INC, …): 2 streams MCS 0.
        assert_eq!((probes[2].1.nss, probes[2].1.mcs), (2, 0));
        let mut seen: Vec<TxVector> = probes.iter().map(|p| p.1).collect();
        seen.sort_by_key(|t| (t.nss, t.mcs));
        seen.dedup();
        assert_eq!(seen.len(), probes.len(), "a rate probed twice in one window: {probes:?}");
    }

    /// Once max_tp sits in the middle of the table, SLOW probes go between max_prob and max_tp
    /// and INC/JUMP above it.
    #[test]
    fn slow_probes_close_the_gap_below_max_tp() {
        let rates = vht80();
        let mut m = MinstrelHt::new(rates.clone(), MinstrelParams::default(), Rng::from_seed(9), Instant::ZERO);
        // Every rate up to MCS 6 works, MCS 7 and up fail; MCS 0 perfectly (the only reliable
        // one, so max_prob), the rest at 80 %.
        let ok = |tx: &TxVector| match tx.mcs {
            0 => 1.0,
            1..=6 => 0.8,
            _ => 0.0,
        };
        let mut chan = Rng::from_seed(4);
        let mut kinds = (0u32, 0u32);
        for k in 0..3000u64 {
            let now = Instant(k * 1_000_000);
            let tx = m.select(now);
            if m.last_was_sample() && k > 1000 {
                let tp = m.max_tp_rate().data_rate_bps();
                if tx.data_rate_bps() > tp {
                    kinds.0 += 1;
                } else {
                    kinds.1 += 1;
                    assert!(tx.data_rate_bps() > m.max_prob_rate().data_rate_bps().min(m.max_tp2_rate().data_rate_bps()));
                }
            }
            let acked = (0..32).filter(|_| chan.bernoulli(ok(&tx))).count() as u32;
            m.report(now, tx, 32, acked);
        }
        assert_eq!((m.max_tp_rate().mcs, m.max_prob_rate().mcs), (6, 0));
        assert!(kinds.0 > 0 && kinds.1 > 0, "probes above / below max_tp: {kinds:?}");
    }

    #[test]
    fn deterministic() {
        let go = || {
            let mut v = Vec::new();
            run(5, vht80(), 300, |_| 25.0, |_, m| v.push(m.vars().max_tp));
            v
        };
        assert_eq!(go(), go());
    }

    #[test]
    fn enum_dispatches_to_minstrel() {
        let m = MinstrelHt::for_phy(Standard::Vht, 80, 800, 1, Rng::from_seed(1), Instant::ZERO);
        let mut rc = RateControl::MinstrelHt(Box::new(m));
        assert_eq!(rc.poll_timeout(), Some(Instant(100_000_000)));
        let tx = rc.select(Instant::ZERO);
        rc.report(Instant::ZERO, tx, 32, 32);
        rc.handle_timeout(Instant(100_000_000));
        assert_eq!(rc.poll_timeout(), Some(Instant(200_000_000)));
    }

    #[test]
    fn a_ppdu_lost_whole_is_retried_down_the_rate_table_then_from_its_top() {
        // Learn a link whose best rate is not its most reliable, then lose every PPDU: the
        // retries go max_tp, max_tp2, max_prob (each its tries), then max_tp again; one
        // acknowledged MPDU ends the chain.
        let mut m = run(3, vht80(), 300, |_| 40.0, |_, _| {});
        let now = Instant(300_000_000);
        m.vars.next_update = now + Duration::from_millis(100);
        m.vars.next_sample = now + Duration::from_millis(20);
        (m.vars.max_tp, m.vars.max_tp2, m.vars.max_prob) = (9, 8, 6);
        let first = m.select(now);
        // A probe is due from here on: the chain holds it back.
        m.vars.next_sample = now;
        let v = m.vars.clone();
        assert_eq!(first, m.rates[v.max_tp]);
        assert!(v.max_tp != v.max_prob, "a table of distinct stages: {:?}", (v.max_tp, v.max_tp2, v.max_prob));
        let tries = [v.max_tp, v.max_tp2, v.max_prob].map(|i| m.stage_tries(i));
        // mac80211: at least two tries a stage, at most max_retry; 32-MPDU A-MPDUs fill the
        // 6 ms segment with two.
        assert!(tries.iter().all(|&n| (2..=MRR_MAX_TRIES).contains(&n)), "{tries:?}");
        let mut seq = vec![first];
        for _ in 0..(tries.iter().sum::<u32>() + 2) {
            let tx = *seq.last().unwrap();
            m.report(now, tx, 32, 0);
            seq.push(m.select(now));
            assert!(!m.last_was_sample(), "no probe while a chain runs");
        }
        let mut want = Vec::new();
        for (i, n) in [v.max_tp, v.max_tp2, v.max_prob].iter().zip(tries) {
            want.extend(std::iter::repeat_n(m.rates[*i], n as usize));
        }
        want.extend([m.rates[v.max_tp], m.rates[v.max_tp]]);
        assert_eq!(&seq[..want.len()], &want[..]);
        // A partly acknowledged A-MPDU ends the chain.
        let tx = *seq.last().unwrap();
        m.report(now, tx, 32, 1);
        assert_eq!(m.vars.failed_in_row, 0);
    }

    #[test]
    fn short_ppdus_get_more_tries_a_stage() {
        // minstrel_calc_retransmit: tries fit a 6 ms segment. A one-MPDU PPDU at VHT80 MCS 9
        // takes about 25 µs + 108 µs of overhead, and the doubling contention windows' halves
        // (67, 139, 283, 571, 1147, 2299 µs) make six tries 5.3 ms and a seventh over 6 ms; a
        // 64-MPDU A-MPDU (1.58 ms of data) gets three (5.5 ms; a fourth would end at 7.8).
        let mut m = run(5, vht80(), 300, |_| 40.0, |_, _| {});
        let i = m.vars.max_tp;
        assert_eq!(m.rates[i].mcs, 9);
        m.vars.avg_ampdu_len = 1.0;
        assert_eq!(m.stage_tries(i), 6);
        m.vars.avg_ampdu_len = 64.0;
        assert_eq!(m.stage_tries(i), 3);
    }
}
