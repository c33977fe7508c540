//! The 802.11 PHY as the MAC sees it: rate tables, PPDU durations (TXTIME), MAC timing
//! constants, aggregation limits and an AWGN error model.
//!
//! Formats modelled (IEEE 802.11-2020 unless noted):
//!
//! * [`Standard::Ofdm`]: non-HT OFDM, Clause 17 (5/6 GHz) and ERP-OFDM, Clause 18 (2.4 GHz,
//!   6 µs signal extension). TXTIME per §17.4.3 / §18.5.3.
//! * [`Standard::Ht`]: HT-mixed format, Clause 19, BCC, no STBC, equal modulation
//!   (MCS 0..=31 as `mcs` 0..=7 per stream plus `nss`). TXTIME per §19.4.3.
//! * [`Standard::Vht`]: VHT SU PPDU, Clause 21, BCC, no STBC. TXTIME per §21.4.3.
//! * [`Standard::He`]: HE SU PPDU, Clause 27 (802.11ax-2021), LDPC, full-band RU
//!   (242/484/996/2×996 tones), no DCM, no STBC. TXTIME per §27.4.3 with the simplifications
//!   documented in [`timing`].
//! * HE multi-user PPDUs (802.11ax-2021): a [`TxVector`] with `ru: Some(size)` is one user's
//!   part of an HE MU PPDU (downlink OFDMA, §27.3.4, HE-SIG-B §27.3.11.8) or of an HE TB PPDU
//!   (uplink OFDMA answering a Trigger frame) on a resource unit of that size ([`ru`]); its
//!   rate follows the RU's data subcarriers. [`mu`] gives the HE-SIG-B length, the MU and TB
//!   preambles, the PPDU durations over all users (§27.4.3) and the TB PPDU's L-SIG LENGTH
//!   (the Trigger frame's UL Length) both ways.
//!
//! Sub-modules: [`rates`] (MCS parameters, N_DBPS, N_ES, validity), [`timing`] (TXTIME, MAC
//! timing, aggregation limits), [`ru`] (resource units), [`mu`] (HE MU and HE TB PPDUs),
//! [`error`] (AWGN bit/packet error model).
//!
//! All durations are integer nanoseconds; floating point appears only in the error model and
//! in [`TxVector::data_rate_f64`].

use lasthop_core::Duration;

pub mod channel;
pub mod error;
pub mod fading;
pub mod mu;
pub mod preamble;
pub mod rates;
pub mod ru;
pub mod timing;

#[cfg(test)]
mod tests;

pub use error::{coded_ber, legacy_success_prob, mpdu_success_prob, q_function, uncoded_ber};
pub use mu::{
    he_mu_ppdu_duration, he_tb_ppdu_duration, he_tb_preamble_ns, lsig_round, sigb_mcs_for, tb_guard_interval,
    tb_txtime_of, ul_length_of,
};
pub use preamble::{he_mu_preamble_ns, he_sig_b_ns};
pub use rates::{CodeRate, LEGACY_RATES};
pub use ru::RuSize;
pub use timing::{
    ba_window, is_legacy_rate, legacy_duration, mac_timing, max_ampdu_bytes, max_mcs, max_nss,
    max_ppdu_time, ppdu_duration, psdu_prefix_time, valid_guard_intervals, valid_widths, MacTiming,
    PrefixClock,
};

/// PHY format (amendment generation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Standard {
    /// 802.11a/g OFDM (Clause 17; ERP-OFDM Clause 18 in 2.4 GHz).
    Ofdm,
    /// 802.11n HT (Clause 19), HT-mixed format.
    Ht,
    /// 802.11ac VHT (Clause 21).
    Vht,
    /// 802.11ax HE (Clause 27), HE SU PPDU.
    He,
}

impl Standard {
    pub const ALL: [Standard; 4] = [Standard::Ofdm, Standard::Ht, Standard::Vht, Standard::He];
    /// Lower-case short name, as used in the reference CSVs.
    pub const fn name(self) -> &'static str {
        match self {
            Standard::Ofdm => "ofdm",
            Standard::Ht => "ht",
            Standard::Vht => "vht",
            Standard::He => "he",
        }
    }
    /// Inverse of [`Standard::name`].
    pub fn from_name(s: &str) -> Option<Standard> {
        match s {
            "ofdm" => Some(Standard::Ofdm),
            "ht" => Some(Standard::Ht),
            "vht" => Some(Standard::Vht),
            "he" => Some(Standard::He),
            _ => None,
        }
    }
}

/// Frequency band. Only 2.4 GHz changes PHY timing (signal extension, SIFS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Band {
    Ghz2_4,
    Ghz5,
    Ghz6,
}

impl Band {
    pub const ALL: [Band; 3] = [Band::Ghz2_4, Band::Ghz5, Band::Ghz6];
    /// "2.4", "5" or "6", as used in the reference CSVs.
    pub const fn name(self) -> &'static str {
        match self {
            Band::Ghz2_4 => "2.4",
            Band::Ghz5 => "5",
            Band::Ghz6 => "6",
        }
    }
    /// Inverse of [`Band::name`].
    pub fn from_name(s: &str) -> Option<Band> {
        match s {
            "2.4" => Some(Band::Ghz2_4),
            "5" => Some(Band::Ghz5),
            "6" => Some(Band::Ghz6),
            _ => None,
        }
    }
}

/// The transmit parameters that determine rate and duration (a subset of the TXVECTOR).
///
/// * `Ofdm`: `mcs` is the index 0..=7 of 6, 9, 12, 18, 24, 36, 48, 54 Mb/s; `nss` 1; width 20;
///   gi 800.
/// * `Ht`: `mcs` 0..=7 per stream (HT MCS index = 8·(nss−1) + mcs), `nss` 1..=4, width 20/40,
///   gi 800/400.
/// * `Vht`: `mcs` 0..=9, `nss` 1..=8, width 20/40/80/160, gi 800/400.
/// * `He`: `mcs` 0..=11, `nss` 1..=8, width 20/40/80/160, gi 800/1600/3200; `ru` `None` for
///   the full-band HE SU PPDU, or the RU of this user in an HE MU or HE TB PPDU (MCS 10 and 11
///   only on RUs of 242 tones or more, see [`TxVector::validate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TxVector {
    pub standard: Standard,
    pub mcs: u8,
    pub nss: u8,
    /// MHz (the whole PPDU's bandwidth, also for a user on an RU).
    pub channel_width: u16,
    /// ns.
    pub guard_interval: u16,
    /// HE only: `None` is the full-band HE SU PPDU (and every non-HE PPDU); `Some(size)` is this
    /// user's part of an HE MU PPDU or HE TB PPDU on an RU of that size, whose data subcarriers
    /// set N_CBPS, N_DBPS and the rate. Alone (in [`ppdu_duration`], [`psdu_prefix_time`],
    /// [`PrefixClock::new`]) such a vector is timed as an HE MU PPDU carrying only this user;
    /// the functions of [`mu`] time a PPDU of several users.
    pub ru: Option<RuSize>,
}

/// Why a [`TxVector`] is not a legal combination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhyError {
    /// "mcs" | "nss" | "channel_width" | "guard_interval" | "standard" | "ru".
    pub field: &'static str,
    /// Human-readable description of what is allowed.
    pub allowed: String,
}

impl core::fmt::Display for PhyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "invalid {}: allowed {}", self.field, self.allowed)
    }
}

impl std::error::Error for PhyError {}

impl TxVector {
    /// Non-HT OFDM at legacy rate index `mcs` (0 = 6 Mb/s … 7 = 54 Mb/s).
    pub const fn ofdm(mcs: u8) -> TxVector {
        TxVector {
            standard: Standard::Ofdm,
            mcs,
            nss: 1,
            channel_width: 20,
            guard_interval: 800,
            ru: None,
        }
    }
    /// Shorthand constructor.
    pub const fn new(
        standard: Standard,
        mcs: u8,
        nss: u8,
        channel_width: u16,
        gi: u16,
    ) -> TxVector {
        TxVector {
            standard,
            mcs,
            nss,
            channel_width,
            guard_interval: gi,
            ru: None,
        }
    }

    /// This vector for one user of an HE MU or HE TB PPDU on an RU of `ru` tones (the
    /// channel width stays the PPDU's).
    pub const fn with_ru(self, ru: RuSize) -> TxVector {
        TxVector { ru: Some(ru), ..self }
    }

    /// Check that the combination exists in the standard's MCS tables.
    pub fn validate(&self) -> Result<(), PhyError> {
        rates::validate(self)
    }

    /// Data bits per OFDM symbol over all spatial streams (N_DBPS), on the RU when `ru` is set.
    /// For HE 996-tone and 2×996-tone RUs with rate 5/6 and 256/1024-QAM, N_CBPS·R is not an
    /// integer; the standard's tables then list floor(N_CBPS·R), which is what is returned
    /// (and what TXTIME uses). The exact rate is in [`TxVector::data_rate_f64`].
    pub fn n_dbps(&self) -> u32 {
        let (num, den) = rates::n_dbps_exact(self);
        (num / den) as u32
    }

    /// Coded bits per OFDM symbol over all spatial streams (N_CBPS).
    pub fn n_cbps(&self) -> u32 {
        rates::n_cbps(self)
    }

    /// Number of BCC encoders (N_ES); 1 for OFDM and HE (LDPC, no tail bits per encoder).
    pub fn n_es(&self) -> u32 {
        rates::n_es(self)
    }

    /// Data-field OFDM symbol duration including the guard interval.
    pub fn symbol_duration(&self) -> Duration {
        Duration(rates::symbol_ns(self))
    }

    /// Data rate in bit/s, rounded down: floor(N_CBPS·R · 1e9 / T_SYM (ns)).
    pub fn data_rate_bps(&self) -> u64 {
        let (num, den) = rates::n_dbps_exact(self);
        let sym = rates::symbol_ns(self);
        if den == 0 || sym == 0 {
            return 0;
        }
        ((num as u128 * 1_000_000_000) / (den as u128 * sym as u128)) as u64
    }

    /// Exact data rate in bit/s (N_CBPS·R / T_SYM).
    pub fn data_rate_f64(&self) -> f64 {
        let (num, den) = rates::n_dbps_exact(self);
        let sym = rates::symbol_ns(self);
        if den == 0 || sym == 0 {
            return 0.0;
        }
        num as f64 * 1e9 / (den as f64 * sym as f64)
    }

    /// Modulation bits per subcarrier per stream (N_BPSCS) and code rate of this MCS.
    pub fn modulation(&self) -> (u32, CodeRate) {
        rates::mcs_params(self.standard, self.mcs).unwrap_or((1, CodeRate::R1_2))
    }
}
