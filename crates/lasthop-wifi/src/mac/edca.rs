//! EDCA parameters and the backoff state of one EDCA function (EDCAF).
//!
//! IEEE 802.11-2020 §10.23.2: an EDCAF waits until the medium has been idle for
//! AIFS\[AC\] = aSIFSTime + AIFSN\[AC\] × aSlotTime, then counts its backoff counter down by one at
//! each idle slot boundary, freezing while the medium is busy; it transmits when the counter
//! reaches zero. On a failed transmission CW doubles (CW ← 2·(CW+1) − 1, capped at CWmax);
//! on success, or when the retry limit is reached, CW returns to CWmin. A new counter, uniform
//! in [0, CW], is drawn after every transmission attempt (post-backoff), whether or not more
//! traffic is queued, and when a frame arrives at an EDCAF whose counter is zero while the
//! medium is busy (§10.23.2.2 a)); a frame arriving at a zero counter on an idle medium goes
//! once the medium has been idle for AIFS.
//!
//! Default parameter sets: Table 9-155 (dot11EDCATable for non-AP STAs, dot11QAPEDCATable for
//! the AP) with aCWmin = 15, aCWmax = 1023 (OFDM-based PHYs), and its TXOP limits for those
//! PHYs (AC_VI 4.096 ms, AC_VO 2.080 ms, AC_BE/AC_BK 0). Legacy DCF (non-QoS) uses
//! DIFS = aSIFSTime + 2 × aSlotTime, i.e. AIFSN 2, with CWmin 15 and CWmax 1023 (§10.3.2.3).
//! A QoS station runs one EDCAF per access category (§10.2.3.2); EDCAFs of one station that
//! reach zero in the same slot collide internally (`medium.rs`).

use lasthop_core::{Duration, Instant, Rng};

/// Access categories (§10.2.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AccessCategory {
    Bk,
    Be,
    Vi,
    Vo,
}

impl AccessCategory {
    /// In increasing priority (the order of the derived `Ord`): AC_BK < AC_BE < AC_VI < AC_VO.
    pub const ALL: [AccessCategory; 4] = [Self::Bk, Self::Be, Self::Vi, Self::Vo];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "BK" => Some(Self::Bk),
            "BE" => Some(Self::Be),
            "VI" => Some(Self::Vi),
            "VO" => Some(Self::Vo),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Bk => "BK",
            Self::Be => "BE",
            Self::Vi => "VI",
            Self::Vo => "VO",
        }
    }

    /// 0 (AC_BK) ..= 3 (AC_VO): the priority an EDCAF of this AC has over the other EDCAFs of
    /// its station when they collide internally (§10.23.2.4).
    #[inline]
    pub fn rank(self) -> u8 {
        self as u8
    }

    /// The TID a frame of this AC usually carries (Table 10-1 maps UP 1, 2 → AC_BK; 0, 3 →
    /// AC_BE; 4, 5 → AC_VI; 6, 7 → AC_VO): BE 0 and BK 1, VI 5 and VO 6 (the user priorities
    /// Linux gives video and voice, e.g. DSCP EF → 6 as RFC 8325 maps it).
    pub fn tid(self) -> u8 {
        match self {
            Self::Bk => 1,
            Self::Be => 0,
            Self::Vi => 5,
            Self::Vo => 6,
        }
    }

    /// TXOP limit of Table 9-155 (both the non-AP and the AP table) for the OFDM-based PHYs
    /// (OFDM, ERP, HT, VHT, HE): AC_VI 4.096 ms, AC_VO 2.080 ms; AC_BK and AC_BE 0, i.e. one
    /// frame exchange (one MSDU or A-MPDU) per TXOP. `None` for a limit of 0.
    pub fn txop_limit(self) -> Option<Duration> {
        match self {
            Self::Bk | Self::Be => None,
            Self::Vi => Some(Duration::from_micros(4096)),
            Self::Vo => Some(Duration::from_micros(2080)),
        }
    }
}

/// One EDCA parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdcaParams {
    pub cw_min: u32,
    pub cw_max: u32,
    pub aifsn: u32,
}

impl EdcaParams {
    const A_CW_MIN: u32 = 15;
    const A_CW_MAX: u32 = 1023;

    /// Table 9-155 defaults. `ap` selects dot11QAPEDCATable. The table's
    /// (aCWmin + 1)/2 − 1 and (aCWmin + 1)/4 − 1 equal aCWmin/2 and aCWmin/4 in integer
    /// arithmetic, since aCWmin = 2^k − 1.
    pub fn default_for(ac: AccessCategory, ap: bool) -> Self {
        let (cmin, cmax) = (Self::A_CW_MIN, Self::A_CW_MAX);
        match (ac, ap) {
            (AccessCategory::Bk, _) => EdcaParams { cw_min: cmin, cw_max: cmax, aifsn: 7 },
            (AccessCategory::Be, false) => EdcaParams { cw_min: cmin, cw_max: cmax, aifsn: 3 },
            (AccessCategory::Be, true) => {
                EdcaParams { cw_min: cmin, cw_max: 4 * (cmin + 1) - 1, aifsn: 3 }
            }
            (AccessCategory::Vi, false) => {
                EdcaParams { cw_min: cmin / 2, cw_max: cmin, aifsn: 2 }
            }
            (AccessCategory::Vi, true) => {
                EdcaParams { cw_min: cmin / 2, cw_max: cmin, aifsn: 1 }
            }
            (AccessCategory::Vo, false) => {
                EdcaParams { cw_min: cmin / 4, cw_max: cmin / 2, aifsn: 2 }
            }
            (AccessCategory::Vo, true) => {
                EdcaParams { cw_min: cmin / 4, cw_max: cmin / 2, aifsn: 1 }
            }
        }
    }

    /// Legacy DCF: DIFS = SIFS + 2 slots.
    pub fn dcf() -> Self {
        EdcaParams { cw_min: Self::A_CW_MIN, cw_max: Self::A_CW_MAX, aifsn: 2 }
    }

    /// Beacon transmission as drivers configure the beacon queue (PIFS, no backoff).
    pub fn beacon() -> Self {
        EdcaParams { cw_min: 0, cw_max: 0, aifsn: 1 }
    }
}

/// The slot and SIFS of the PHY in use (from `phy::mac_timing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotTiming {
    pub slot: Duration,
    pub sifs: Duration,
}

/// Backoff state of one EDCAF.
#[derive(Clone, Debug)]
pub struct Edcaf {
    pub params: EdcaParams,
    cw: u32,
    /// Remaining backoff slots, as of the last time the medium turned busy.
    backoff: u32,
    /// The instant from which this EDCAF counts AIFS (end of the last busy period as it saw
    /// it, extended by EIFS or the Ack timeout where those apply).
    ref_time: Instant,
    /// Consecutive failed attempts since the last success or CW reset.
    failures: u32,
    rng: Rng,
}

impl Edcaf {
    pub fn new(params: EdcaParams, mut rng: Rng) -> Self {
        let backoff = rng.gen_range_inclusive(params.cw_min as u64) as u32;
        Edcaf { params, cw: params.cw_min, backoff, ref_time: Instant::ZERO, failures: 0, rng }
    }

    #[inline]
    pub fn aifs(&self, t: &SlotTiming) -> Duration {
        t.sifs + t.slot * self.params.aifsn as u64
    }

    /// Whether EDCA access is disabled: an MU EDCA parameter set with AIFSN 0 (IEEE
    /// 802.11ax-2021 §9.4.2.245: "the EDCA is disabled for the duration specified by the MU
    /// EDCA Timer"; §26.2.7). Such an EDCAF never contends and its counter does not count
    /// down; the station sends only when triggered, until its parameters are set back.
    #[inline]
    pub fn disabled(&self) -> bool {
        self.params.aifsn == 0
    }

    pub fn cw(&self) -> u32 {
        self.cw
    }
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
    pub fn ref_time(&self) -> Instant {
        self.ref_time
    }
    /// Consecutive failed attempts (the EDCAF's retry count: CW doubles with each).
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Switch to another parameter set (MU EDCA, IEEE 802.11ax-2021 §26.2.7, and back): CW
    /// starts again from the set's CWmin; the backoff counter in progress is kept.
    pub fn set_params(&mut self, params: EdcaParams) {
        self.params = params;
        self.cw = params.cw_min;
        self.failures = 0;
    }

    /// Set the backoff counter (scripted scenarios and tests; the model draws it itself).
    pub fn set_backoff(&mut self, slots: u32) {
        self.backoff = slots;
    }

    /// When this EDCAF would start transmitting if it has had a frame ready since
    /// `ready_since` and the medium stays idle: at the slot boundary where its counter reaches
    /// zero, or at once if the counter is already zero and the medium has been idle for AIFS
    /// (§10.23.2.4: a frame arriving at an idle EDCAF with a zero counter may be sent
    /// immediately once AIFS has elapsed).
    #[inline]
    pub fn access_time(&self, t: &SlotTiming, ready_since: Instant) -> Instant {
        let count_end = self.ref_time + self.aifs(t) + t.slot * self.backoff as u64;
        if count_end > ready_since {
            count_end
        } else {
            ready_since
        }
    }

    /// The medium turned busy at `busy_start` because of someone else: count the idle slots
    /// that ended before it and freeze the rest.
    #[inline]
    pub fn freeze(&mut self, t: &SlotTiming, busy_start: Instant) {
        if self.disabled() {
            return;
        }
        let start = self.ref_time + self.aifs(t);
        if busy_start > start && self.backoff > 0 {
            let slots = (busy_start - start).as_nanos() / t.slot.as_nanos().max(1);
            self.backoff -= (slots.min(self.backoff as u64)) as u32;
        }
    }

    /// `slots` idle slots have passed since the counter was last brought up to date (the sum
    /// of what [`Edcaf::freeze`] would have counted over several busy periods): the counter
    /// drops by as many, to no lower than zero.
    #[inline]
    pub fn count_down(&mut self, slots: u64) {
        self.backoff -= slots.min(self.backoff as u64) as u32;
    }

    /// The medium is idle from `t` on (as this EDCAF sees it).
    #[inline]
    pub fn set_ref(&mut self, t: Instant) {
        self.ref_time = t;
    }

    /// A transmission attempt succeeded: CW ← CWmin and a new backoff is drawn.
    pub fn on_success(&mut self) {
        self.cw = self.params.cw_min;
        self.failures = 0;
        self.draw();
    }

    /// A frame exchange succeeded within a TXOP that goes on (§10.23.2.8): CW returns to CWmin
    /// as after any success, and the backoff is drawn when the TXOP ends (`on_success`).
    pub fn on_success_in_txop(&mut self) {
        self.cw = self.params.cw_min;
        self.failures = 0;
    }

    /// A transmission attempt failed (collision, or no Ack/Block Ack), or the EDCAF lost an
    /// internal collision to a higher-priority AC of its station (§10.23.2.4: it then behaves
    /// as after an external collision). CW doubles up to CWmax; after `retry_limit`
    /// consecutive failures it resets to CWmin (the frame is dropped by the caller's per-MPDU
    /// retry accounting).
    pub fn on_failure(&mut self, retry_limit: u32) {
        self.failures += 1;
        if self.failures >= retry_limit {
            self.cw = self.params.cw_min;
            self.failures = 0;
        } else {
            self.cw = (2 * (self.cw + 1) - 1).min(self.params.cw_max);
        }
        self.draw();
    }

    /// A frame became ready while the medium is busy and the counter is zero (§10.23.2.2
    /// a)): the backoff procedure is invoked, a new counter drawn from the current CW.
    pub fn on_ready_while_busy(&mut self) {
        if self.backoff == 0 {
            self.draw();
        }
    }

    /// An attempt without acknowledgement by design (beacons): new counter from CWmin.
    pub fn on_unacked(&mut self) {
        self.cw = self.params.cw_min;
        self.draw();
    }

    #[inline]
    fn draw(&mut self) {
        self.backoff = self.rng.gen_range_inclusive(self.cw as u64) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> SlotTiming {
        SlotTiming { slot: Duration::from_micros(9), sifs: Duration::from_micros(16) }
    }

    #[test]
    fn table_9_155_defaults() {
        assert_eq!(EdcaParams::default_for(AccessCategory::Be, false), EdcaParams { cw_min: 15, cw_max: 1023, aifsn: 3 });
        assert_eq!(EdcaParams::default_for(AccessCategory::Be, true), EdcaParams { cw_min: 15, cw_max: 63, aifsn: 3 });
        assert_eq!(EdcaParams::default_for(AccessCategory::Vo, false), EdcaParams { cw_min: 3, cw_max: 7, aifsn: 2 });
        assert_eq!(EdcaParams::default_for(AccessCategory::Vi, true), EdcaParams { cw_min: 7, cw_max: 15, aifsn: 1 });
        assert_eq!(EdcaParams::default_for(AccessCategory::Bk, true).aifsn, 7);
        // The rest of the table: non-AP BK/VI, AP BK/BE/VO.
        assert_eq!(EdcaParams::default_for(AccessCategory::Bk, false), EdcaParams { cw_min: 15, cw_max: 1023, aifsn: 7 });
        assert_eq!(EdcaParams::default_for(AccessCategory::Vi, false), EdcaParams { cw_min: 7, cw_max: 15, aifsn: 2 });
        assert_eq!(EdcaParams::default_for(AccessCategory::Bk, true), EdcaParams { cw_min: 15, cw_max: 1023, aifsn: 7 });
        assert_eq!(EdcaParams::default_for(AccessCategory::Vo, true), EdcaParams { cw_min: 3, cw_max: 7, aifsn: 1 });
        // TXOP limits for OFDM-based PHYs.
        assert_eq!(AccessCategory::Vo.txop_limit(), Some(Duration::from_micros(2080)));
        assert_eq!(AccessCategory::Vi.txop_limit(), Some(Duration::from_micros(4096)));
        assert_eq!(AccessCategory::Be.txop_limit(), None);
        assert_eq!(AccessCategory::Bk.txop_limit(), None);
        // Priority order and TIDs.
        assert!(AccessCategory::ALL.windows(2).all(|w| w[0].rank() < w[1].rank()));
        assert_eq!(AccessCategory::ALL.map(|a| a.tid()), [1, 0, 5, 6]);
    }

    #[test]
    fn access_time_counts_aifs_then_slots() {
        let t = timing();
        let mut e = Edcaf::new(EdcaParams::dcf(), Rng::from_seed(1));
        e.backoff = 5;
        e.set_ref(Instant(1_000_000));
        // DIFS = 16 + 2*9 = 34 us, then 5 slots.
        assert_eq!(e.access_time(&t, Instant::ZERO), Instant(1_000_000 + 34_000 + 45_000));
        // Busy after 3 full slots and a half: 3 slots counted, 2 remain.
        e.freeze(&t, Instant(1_000_000 + 34_000 + 31_500));
        assert_eq!(e.backoff(), 2);
        // Busy before AIFS elapsed: nothing counted.
        e.set_ref(Instant(2_000_000));
        e.freeze(&t, Instant(2_000_000 + 30_000));
        assert_eq!(e.backoff(), 2);
    }

    #[test]
    fn immediate_access_with_zero_counter() {
        let t = timing();
        let mut e = Edcaf::new(EdcaParams::dcf(), Rng::from_seed(1));
        e.backoff = 0;
        e.set_ref(Instant(0));
        assert_eq!(e.access_time(&t, Instant(500_000)), Instant(500_000));
        assert_eq!(e.access_time(&t, Instant(10_000)), Instant(34_000));
    }

    #[test]
    fn cw_doubles_caps_and_resets() {
        let mut e = Edcaf::new(EdcaParams { cw_min: 15, cw_max: 63, aifsn: 3 }, Rng::from_seed(2));
        e.on_failure(7);
        assert_eq!(e.cw(), 31);
        e.on_failure(7);
        assert_eq!(e.cw(), 63);
        e.on_failure(7);
        assert_eq!(e.cw(), 63);
        assert!(e.backoff() <= 63);
        e.on_success();
        assert_eq!(e.cw(), 15);
        for _ in 0..6 {
            e.on_failure(7);
        }
        assert_eq!(e.cw(), 63);
        e.on_failure(7); // 7th consecutive failure: retry limit reached
        assert_eq!(e.cw(), 15);
    }

    /// A success within a TXOP that goes on resets CW without drawing the backoff, which is
    /// drawn once when the TXOP ends; a later failure in it doubles CW from CWmin.
    #[test]
    fn a_success_within_a_txop_resets_cw_and_keeps_the_counter() {
        let mut e = Edcaf::new(EdcaParams { cw_min: 15, cw_max: 1023, aifsn: 3 }, Rng::from_seed(3));
        for _ in 0..3 {
            e.on_failure(7);
        }
        let counter = e.backoff();
        e.on_success_in_txop();
        assert_eq!((e.cw(), e.backoff(), e.failures()), (15, counter, 0));
        e.on_failure(7);
        assert_eq!(e.cw(), 31);
    }
}
