//! PPDU durations (TXTIME), MAC timing constants and aggregation limits.
//!
//! All arithmetic is in integer nanoseconds. Clauses of IEEE 802.11-2020 followed:
//!
//! * Non-HT OFDM, §17.4.3: TXTIME = T_PREAMBLE (16 µs) + T_SIGNAL (4 µs) +
//!   T_SYM (4 µs) · ceil((16 + 8·L + 6) / N_DBPS). In 2.4 GHz (ERP-OFDM, §18.5.3) a 6 µs
//!   signal extension is added.
//! * HT-mixed, §19.4.3: T_LEG_PREAMBLE 16 + L-SIG 4 + HT-SIG 8 + HT-STF 4 +
//!   N_LTF·4 µs, N_LTF from N_SS (1, 2, 4, 4); N_SYM = ceil((8·L + 16 + 6·N_ES) / N_DBPS)
//!   (BCC, no STBC); long GI: 4 µs·N_SYM; short GI: T_SYML·ceil(T_SYMS·N_SYM / T_SYML)
//!   with T_SYMS = 3.6 µs, T_SYML = 4 µs; plus 6 µs signal extension in 2.4 GHz.
//! * VHT SU, §21.4.3: L-STF 8 + L-LTF 8 + L-SIG 4 + VHT-SIG-A 8 + VHT-STF 4 +
//!   N_VHTLTF·4 (N_VHTLTF from N_SS: 1,2,4,4,6,6,8,8) + VHT-SIG-B 4 µs; data as HT with the
//!   same short-GI rounding. VHT is not defined in 2.4 GHz; if asked, the 2.4 GHz signal
//!   extension is applied as for HT (vendor "256-QAM in 2.4 GHz" behaves like HT there).
//! * HE SU, IEEE 802.11ax-2021 §27.4.3: L-STF 8 + L-LTF 8 + L-SIG 4 + RL-SIG 4 +
//!   HE-SIG-A 8 + HE-STF 4 + N_HE-LTF·T_HE-LTF + N_SYM·(12.8 µs + GI) + T_PE + signal
//!   extension (6 µs in 2.4 GHz). N_HE-LTF from N_SS as VHT. HE-LTF: 2× HE-LTF
//!   (6.4 µs + GI) with 0.8/1.6 µs GI; with 3.2 µs GI the standard only allows the 4× HE-LTF
//!   (12.8 + 3.2 = 16 µs) for an HE SU PPDU, so that is used.
//!
//!   **Simplifications**: LDPC with N_SYM = ceil((8·L + 16) / N_DBPS) (no tail bits); the
//!   a-factor of the pre-FEC padding procedure (§27.3.12) and the possible LDPC extra symbol
//!   are not modelled (at most one data symbol too few for some lengths), and the nominal
//!   packet padding is 0 µs so T_PE = 0.
//! * A PSDU of 0 bytes for HT/VHT/HE is an NDP: the data field is absent (TXTIME = preamble,
//!   plus signal extension). For non-HT OFDM a 0-byte PSDU still carries SERVICE+tail.
//! * An HE vector on an RU (`ru: Some`) is timed here as an HE MU PPDU carrying that one user:
//!   the preamble gains HE-SIG-B (one user, HE-SIG-B MCS = min(MCS, 5)) and the data symbols
//!   carry the RU's N_DBPS. PPDUs of several users, and HE TB PPDUs, are in [`super::mu`].
//!
//! MAC timing (PHY characteristics tables of §17.4.4, §18.4.5, §19.4.5, §21.4.5, §27.4.5):
//! aSlotTime 9 µs everywhere (2.4 GHz: the ERP/HT/HE short slot); aSIFSTime 16 µs in 5/6 GHz and
//! 10 µs in 2.4 GHz.
//!
//! Aggregation limits: Block Ack window 64 (HT/VHT, §10.25) or 256 (HE); maximum A-MPDU
//! length 65 535 (HT: 2^(13+3) − 1), 1 048 575 (VHT: 2^(13+7) − 1), 6 500 631 octets (HE:
//! bounded by aPPDUMaxTime at the highest rate); aPPDUMaxTime 10 ms (HT), 5.484 ms (VHT, HE;
//! also the longest non-HT frame: 4095 octets at 6 Mb/s), from the PHY characteristics tables.

use super::rates::{symbol_ns, LEGACY_RATES};
use super::{Band, Standard, TxVector};
use lasthop_core::Duration;

const US: u64 = 1_000;
/// 2.4 GHz signal extension (ERP-OFDM §18.3.2.4, HT, HE).
const SIGNAL_EXTENSION_NS: u64 = 6 * US;
const N_SERVICE: u64 = 16;
const N_TAIL: u64 = 6;

/// The signal extension a PPDU in `band` ends with, ns (6 µs in 2.4 GHz, none elsewhere).
pub fn signal_extension(band: Band) -> u64 {
    match band {
        Band::Ghz2_4 => SIGNAL_EXTENSION_NS,
        Band::Ghz5 | Band::Ghz6 => 0,
    }
}

pub use super::preamble::{he_ltf_ns, n_ltf};
use super::preamble::he_mu_preamble_ns;

/// Preamble duration (everything before the Data field) in ns.
pub fn preamble_ns(tx: &TxVector) -> u64 {
    match tx.standard {
        Standard::Ofdm => 20 * US,
        // L-STF + L-LTF + L-SIG + HT-SIG + HT-STF + HT-LTFs
        Standard::Ht => (16 + 4 + 8 + 4 + 4 * n_ltf(tx.nss)) * US,
        // L-STF + L-LTF + L-SIG + VHT-SIG-A + VHT-STF + VHT-LTFs + VHT-SIG-B
        Standard::Vht => (8 + 8 + 4 + 8 + 4 + 4 * n_ltf(tx.nss) + 4) * US,
        // L-STF + L-LTF + L-SIG + RL-SIG + HE-SIG-A + HE-STF + HE-LTFs
        Standard::He => match tx.ru {
            None => (8 + 8 + 4 + 4 + 8 + 4) * US + n_ltf(tx.nss) * he_ltf_ns(tx.guard_interval),
            // An HE MU PPDU of this one user: HE-SIG-B too.
            Some(_) => he_mu_preamble_ns(tx.channel_width, tx.guard_interval, tx.nss, 1, tx.mcs.min(5)),
        },
    }
}

/// Number of data OFDM symbols for a PSDU of `psdu_bytes` (see the module documentation).
pub fn n_sym(tx: &TxVector, psdu_bytes: u32) -> u64 {
    let ndbps = tx.n_dbps().max(1) as u64;
    let bits = 8 * psdu_bytes as u64;
    match tx.standard {
        Standard::Ofdm => (N_SERVICE + bits + N_TAIL).div_ceil(ndbps),
        _ if psdu_bytes == 0 => 0,
        Standard::Ht | Standard::Vht => {
            (bits + N_SERVICE + N_TAIL * tx.n_es() as u64).div_ceil(ndbps)
        }
        Standard::He => (bits + N_SERVICE).div_ceil(ndbps),
    }
}

/// Time from the start of an HT/VHT/HE PPDU until the receiver holds its first
/// `prefix_bytes` PSDU octets: the preamble and the data symbols that carry SERVICE and those
/// octets. An A-MPDU subframe is delimited by its delimiter and checked by its own FCS, so its
/// MPDU can be passed up at the end of the symbol that carries its last octet (ns-3 does the
/// same, `PhyEntity::ScheduleEndOfMpdus`); the tail, padding and signal extension come only at
/// the end of the PPDU. Short GI symbols are counted at 3.6 µs without the end-of-PPDU
/// rounding. For non-HT OFDM (no A-MPDU) this is the TXTIME of a PSDU of `prefix_bytes`.
pub fn psdu_prefix_time(tx: &TxVector, prefix_bytes: u32, band: Band) -> Duration {
    PrefixClock::new(tx, band).at(prefix_bytes)
}

/// [`psdu_prefix_time`] for many prefixes of one PPDU: the per-vector constants computed once.
#[derive(Clone, Copy, Debug)]
pub struct PrefixClock {
    tx: TxVector,
    band: Band,
    pre: u64,
    ndbps: u64,
    sym: u64,
}

impl PrefixClock {
    pub fn new(tx: &TxVector, band: Band) -> Self {
        Self::with_preamble(tx, band, preamble_ns(tx))
    }

    /// A clock for one user of an HE MU or HE TB PPDU: its subframes are timed with its own
    /// vector (its RU's N_DBPS; for a TB PPDU the trigger's GI, [`super::tb_guard_interval`])
    /// after the PPDU's preamble of `pre_ns` ns ([`super::he_mu_preamble_ns`],
    /// [`super::he_tb_preamble_ns`]), which all users share. HT/VHT/HE only: for non-HT OFDM
    /// [`PrefixClock::at`] is the TXTIME and `pre_ns` is not used.
    pub fn with_preamble(tx: &TxVector, band: Band, pre_ns: u64) -> Self {
        let sym = match (tx.standard, tx.guard_interval) {
            (Standard::Ht | Standard::Vht, 400) => 3_600,
            _ => symbol_ns(tx),
        };
        PrefixClock { tx: *tx, band, pre: pre_ns, ndbps: tx.n_dbps().max(1) as u64, sym }
    }

    /// Time from the PPDU's start until its first `prefix_bytes` PSDU octets are received.
    #[inline]
    pub fn at(&self, prefix_bytes: u32) -> Duration {
        if self.tx.standard == Standard::Ofdm {
            return ppdu_duration(&self.tx, prefix_bytes, self.band);
        }
        let nsym = (N_SERVICE + 8 * prefix_bytes as u64).div_ceil(self.ndbps);
        Duration(self.pre + nsym * self.sym)
    }
}

/// TXTIME of a PPDU carrying `psdu_bytes` with `tx`, in ns (see the module documentation).
///
/// `tx` should satisfy [`TxVector::validate`]; for an invalid vector the result is
/// meaningless (but the function does not panic).
pub fn ppdu_duration(tx: &TxVector, psdu_bytes: u32, band: Band) -> Duration {
    debug_assert!(tx.validate().is_ok(), "ppdu_duration on invalid {tx:?}");
    let nsym = n_sym(tx, psdu_bytes);
    let data = match (tx.standard, tx.guard_interval) {
        (Standard::Ht | Standard::Vht, 400) => {
            // T_SYML * ceil(T_SYMS * N_SYM / T_SYML)
            4 * US * (3_600 * nsym).div_ceil(4 * US)
        }
        _ => nsym * symbol_ns(tx),
    };
    // T_PE = 0 (nominal packet padding 0 µs) for HE.
    Duration(preamble_ns(tx) + data + signal_extension(band))
}

/// True when `rate_bps` is one of the eight non-HT OFDM rates.
pub fn is_legacy_rate(rate_bps: u64) -> bool {
    LEGACY_RATES.contains(&rate_bps)
}

/// TXTIME of a non-HT OFDM PPDU (control frames, beacons, management) of `bytes` octets at
/// `rate_bps` (one of 6..54 Mb/s; N_DBPS = rate · 4 µs).
pub fn legacy_duration(rate_bps: u64, bytes: u32, band: Band) -> Duration {
    debug_assert!(
        is_legacy_rate(rate_bps),
        "not a non-HT OFDM rate: {rate_bps}"
    );
    let ndbps = (rate_bps / 250_000).max(1);
    let nsym = (N_SERVICE + 8 * bytes as u64 + N_TAIL).div_ceil(ndbps);
    Duration(20 * US + 4 * US * nsym + signal_extension(band))
}

/// Slot time and SIFS of a PHY in a band.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacTiming {
    pub slot: Duration,
    pub sifs: Duration,
}

impl MacTiming {
    /// DIFS = SIFS + 2 · slot (§10.3.2.3.5).
    pub fn difs(&self) -> Duration {
        Duration(self.sifs.0 + 2 * self.slot.0)
    }
    /// AIFS(AC) = SIFS + AIFSN · slot (§10.3.2.3.6).
    pub fn aifs(&self, aifsn: u8) -> Duration {
        Duration(self.sifs.0 + aifsn as u64 * self.slot.0)
    }
}

/// aSlotTime and aSIFSTime (see the module documentation). The standard does not change them
/// between OFDM, HT, VHT and HE in a given band (2.4 GHz assumes the short slot).
pub fn mac_timing(_standard: Standard, band: Band) -> MacTiming {
    let sifs = match band {
        Band::Ghz2_4 => 10 * US,
        Band::Ghz5 | Band::Ghz6 => 16 * US,
    };
    MacTiming {
        slot: Duration(9 * US),
        sifs: Duration(sifs),
    }
}

/// Block Ack window (maximum buffer size) in MPDUs; 1 for non-HT (no aggregation).
pub fn ba_window(standard: Standard) -> u16 {
    match standard {
        Standard::Ofdm => 1,
        Standard::Ht | Standard::Vht => 64,
        Standard::He => 256,
    }
}

/// Maximum A-MPDU length in octets (0: no A-MPDU for non-HT).
pub fn max_ampdu_bytes(standard: Standard) -> u32 {
    match standard {
        Standard::Ofdm => 0,
        Standard::Ht => 65_535,
        Standard::Vht => 1_048_575,
        Standard::He => 6_500_631,
    }
}

/// aPPDUMaxTime (for non-HT: the longest possible frame, 4095 octets at 6 Mb/s = 5.484 ms).
pub fn max_ppdu_time(standard: Standard) -> Duration {
    match standard {
        Standard::Ht => Duration(10_000 * US),
        Standard::Ofdm | Standard::Vht | Standard::He => Duration(5_484 * US),
    }
}

/// Channel widths (MHz) defined for a standard.
pub fn valid_widths(standard: Standard) -> &'static [u16] {
    match standard {
        Standard::Ofdm => &[20],
        Standard::Ht => &[20, 40],
        Standard::Vht | Standard::He => &[20, 40, 80, 160],
    }
}

/// Guard intervals (ns) defined for a standard.
pub fn valid_guard_intervals(standard: Standard) -> &'static [u16] {
    match standard {
        Standard::Ofdm => &[800],
        Standard::Ht | Standard::Vht => &[400, 800],
        Standard::He => &[800, 1600, 3200],
    }
}

/// Highest `mcs` value (Ofdm: rate index 7; HT: 7 per stream; VHT 9; HE 11).
pub fn max_mcs(standard: Standard) -> u8 {
    match standard {
        Standard::Ofdm | Standard::Ht => 7,
        Standard::Vht => 9,
        Standard::He => 11,
    }
}

/// Highest number of spatial streams.
pub fn max_nss(standard: Standard) -> u8 {
    match standard {
        Standard::Ofdm => 1,
        Standard::Ht => 4,
        Standard::Vht | Standard::He => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subframe's delivery time: preamble + ceil((16 + 8·L) / N_DBPS) symbols, never after the
    /// PPDU's end, and the whole PSDU ends within one symbol (tail, SGI rounding) of TXTIME.
    #[test]
    fn prefix_time_is_preamble_plus_symbols() {
        // VHT 80 MHz MCS 9, 2 streams, long GI: N_DBPS = 2 · 1560 = 3120 bits per 4 µs.
        let tx = TxVector::new(Standard::Vht, 9, 2, 80, 800);
        let pre = preamble_ns(&tx);
        assert_eq!(pre, 44_000);
        assert_eq!(psdu_prefix_time(&tx, 1544, Band::Ghz5).as_nanos(), pre + 4_000 * (16 + 8 * 1544u64).div_ceil(3120));
        for psdu in [1544u32, 10_000, 98_000] {
            let end = ppdu_duration(&tx, psdu, Band::Ghz5);
            let pre_end = psdu_prefix_time(&tx, psdu, Band::Ghz5);
            assert!(pre_end <= end && end.as_nanos() - pre_end.as_nanos() <= 4_000, "{psdu}: {pre_end:?} {end:?}");
        }
        // Short GI: 3.6 µs per symbol without the end rounding.
        let sgi = TxVector::new(Standard::Ht, 7, 1, 20, 400);
        let n = (16 + 8 * 3000u64).div_ceil(sgi.n_dbps() as u64);
        assert_eq!(psdu_prefix_time(&sgi, 3000, Band::Ghz5).as_nanos(), preamble_ns(&sgi) + 3_600 * n);
    }
}
