//! MCS parameters, bits per symbol and MCS validity.
//!
//! Follows the modulation-dependent parameter tables of IEEE 802.11-2020:
//! * Non-HT OFDM: §17.3.2.3 rate-dependent parameters (N_BPSC, R, N_DBPS for 6..54 Mb/s,
//!   48 data subcarriers).
//! * HT: §19.5 MCS tables (N_SD = 52 at 20 MHz, 108 at 40 MHz; equal modulation).
//! * VHT: §21.5 MCS tables (N_SD = 52/108/234/468 for 20/40/80/160 MHz).
//! * HE: IEEE 802.11ax-2021 §27.5 MCS tables (full-band RU: 242/484/996/2×996 tones,
//!   N_SD = 234/468/980/1960). A user on a smaller RU of an HE MU or HE TB PPDU (`ru`) has the
//!   RU's N_SD (Table 27-14: 24, 48, 102 for 26, 52, 106 tones; see [`super::ru`]).
//!
//! HE RU rules checked by [`validate`]: an RU only with [`Standard::He`], only one the channel
//! width holds ([`RuSize::count`] > 0), and HE-MCS 10/11 (1024-QAM) only on an RU of 242 tones
//! or more. The last is the model's choice, not a prohibition of 802.11ax-2021: there 1024-QAM
//! on an RU smaller than 242 tones is optional, usable only towards a STA whose HE PHY
//! Capabilities Information field (§9.4.2.248.3) sets "Rx 1024-QAM Support < 242-tone RU"
//! (B75; B74 is the Tx side). The model's stations do not advertise it (Linux's mac80211
//! calls the bits `IEEE80211_HE_PHY_CAP9_{TX,RX}_1024_QAM_LESS_THAN_242_TONE_RU`).
//!
//! N_DBPS = N_SD · N_BPSCS · N_SS · R, kept as an exact fraction (num, den) because for HE
//! 996-tone MCS 9/11 it is not an integer (the tables list the floor).
//!
//! N_ES (number of BCC encoders):
//! * HT (§19.3.11.5): 2 encoders when the MCS's rate exceeds 300 Mb/s at short GI, i.e. when
//!   N_DBPS > 1080 (= 300 Mb/s × 3.6 µs); otherwise 1.
//! * VHT: the N_ES values of the §21.5 tables are reproduced by the rule "one encoder per
//!   600 Mb/s at short GI" — N_ES₀ = ceil(N_DBPS / 2160) — raised to the smallest N_ES ≥ N_ES₀
//!   that divides both N_DBPS and N_CBPS (needed so each encoder gets whole bits; e.g.
//!   80 MHz NSS 7 MCS 2 has N_ES = 3, 160 MHz NSS 7 MCS 9 has 12). The combinations the
//!   standard declares invalid instead of raising N_ES are rejected by [`validate`]:
//!   20 MHz MCS 9 with NSS 1,2,4,5,7,8 (N_DBPS not an integer); 80 MHz MCS 6 with NSS 3 and 7;
//!   80 MHz MCS 9 with NSS 6; 160 MHz MCS 9 with NSS 3.
//! * HE: LDPC (no per-encoder tail bits), so N_ES is reported as 1.

use super::{PhyError, RuSize, Standard, TxVector};

/// Convolutional code rate R.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CodeRate {
    R1_2,
    R2_3,
    R3_4,
    R5_6,
}

impl CodeRate {
    /// (numerator, denominator).
    pub const fn ratio(self) -> (u32, u32) {
        match self {
            CodeRate::R1_2 => (1, 2),
            CodeRate::R2_3 => (2, 3),
            CodeRate::R3_4 => (3, 4),
            CodeRate::R5_6 => (5, 6),
        }
    }
}

/// The eight non-HT OFDM rates (bit/s), index = `TxVector::mcs` for [`Standard::Ofdm`].
pub const LEGACY_RATES: [u64; 8] = [
    6_000_000, 9_000_000, 12_000_000, 18_000_000, 24_000_000, 36_000_000, 48_000_000, 54_000_000,
];

/// (N_BPSC, R) for the non-HT rates (§17.3.2.3).
const LEGACY_PARAMS: [(u32, CodeRate); 8] = [
    (1, CodeRate::R1_2),
    (1, CodeRate::R3_4),
    (2, CodeRate::R1_2),
    (2, CodeRate::R3_4),
    (4, CodeRate::R1_2),
    (4, CodeRate::R3_4),
    (6, CodeRate::R2_3),
    (6, CodeRate::R3_4),
];

/// (N_BPSCS, R) for HT/VHT/HE MCS 0..=11 (HT uses 0..=7, VHT 0..=9).
const MCS_PARAMS: [(u32, CodeRate); 12] = [
    (1, CodeRate::R1_2),
    (2, CodeRate::R1_2),
    (2, CodeRate::R3_4),
    (4, CodeRate::R1_2),
    (4, CodeRate::R3_4),
    (6, CodeRate::R2_3),
    (6, CodeRate::R3_4),
    (6, CodeRate::R5_6),
    (8, CodeRate::R3_4),
    (8, CodeRate::R5_6),
    (10, CodeRate::R3_4),
    (10, CodeRate::R5_6),
];

/// (N_BPSCS, R) of an MCS of a standard, or None when the index does not exist.
pub fn mcs_params(standard: Standard, mcs: u8) -> Option<(u32, CodeRate)> {
    let m = mcs as usize;
    match standard {
        Standard::Ofdm => LEGACY_PARAMS.get(m).copied(),
        _ if mcs > super::max_mcs(standard) => None,
        _ => MCS_PARAMS.get(m).copied(),
    }
}

/// Data subcarriers per stream (N_SD) for a width, 0 when the width is not defined.
pub fn n_sd(standard: Standard, width: u16) -> u32 {
    match (standard, width) {
        (Standard::Ofdm, 20) => 48,
        (Standard::Ht | Standard::Vht, 20) => 52,
        (Standard::Ht | Standard::Vht, 40) => 108,
        (Standard::Vht, 80) => 234,
        (Standard::Vht, 160) => 468,
        (Standard::He, 20) => 234,
        (Standard::He, 40) => 468,
        (Standard::He, 80) => 980,
        (Standard::He, 160) => 1960,
        _ => 0,
    }
}

/// Coded bits per symbol over all streams (N_CBPS = N_SD · N_BPSCS · N_SS); N_SD is the RU's
/// for an HE user on an RU.
pub fn n_cbps(tx: &TxVector) -> u32 {
    let (bpscs, _) = mcs_params(tx.standard, tx.mcs).unwrap_or((0, CodeRate::R1_2));
    let nss = if tx.standard == Standard::Ofdm {
        1
    } else {
        tx.nss as u32
    };
    let nsd = match (tx.standard, tx.ru) {
        (Standard::He, Some(ru)) => ru.n_sd(),
        _ => n_sd(tx.standard, tx.channel_width),
    };
    nsd * bpscs * nss
}

/// N_DBPS as an exact fraction (numerator, denominator).
pub fn n_dbps_exact(tx: &TxVector) -> (u64, u64) {
    let (_, r) = mcs_params(tx.standard, tx.mcs).unwrap_or((0, CodeRate::R1_2));
    let (rn, rd) = r.ratio();
    (n_cbps(tx) as u64 * rn as u64, rd as u64)
}

/// Data-field symbol duration incl. GI, in ns (0 for an undefined GI).
pub fn symbol_ns(tx: &TxVector) -> u64 {
    let gi = tx.guard_interval as u64;
    match tx.standard {
        Standard::Ofdm => 4_000,
        Standard::Ht | Standard::Vht => match gi {
            400 | 800 => 3_200 + gi,
            _ => 0,
        },
        Standard::He => match gi {
            800 | 1600 | 3200 => 12_800 + gi,
            _ => 0,
        },
    }
}

/// Number of BCC encoders (see the module documentation).
pub fn n_es(tx: &TxVector) -> u32 {
    match tx.standard {
        Standard::Ofdm | Standard::He => 1,
        Standard::Ht => {
            if tx.n_dbps() > 1080 {
                2
            } else {
                1
            }
        }
        Standard::Vht => {
            let ndbps = tx.n_dbps();
            let ncbps = n_cbps(tx);
            let mut nes = ndbps.div_ceil(2160).max(1);
            while nes < ndbps && (ndbps / nes * nes != ndbps || ncbps / nes * nes != ncbps) {
                nes += 1;
            }
            nes
        }
    }
}

/// VHT combinations the standard's tables mark "not valid" although N_DBPS is an integer:
/// (width, nss, mcs).
const VHT_INVALID: [(u16, u8, u8); 4] = [(80, 3, 6), (80, 7, 6), (80, 6, 9), (160, 3, 9)];

fn list(xs: &[u16]) -> String {
    let v: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    v.join(", ")
}

/// See [`TxVector::validate`].
pub fn validate(tx: &TxVector) -> Result<(), PhyError> {
    let s = tx.standard;
    let name = match s {
        Standard::Ofdm => "non-HT OFDM",
        Standard::Ht => "HT",
        Standard::Vht => "VHT",
        Standard::He => "HE",
    };
    if tx.ru.is_some() && s != Standard::He {
        return Err(PhyError {
            field: "ru",
            allowed: format!(
                "no RU for {name} (resource units exist only in HE MU and HE TB PPDUs)"
            ),
        });
    }
    if tx.mcs > super::max_mcs(s) {
        let what = if s == Standard::Ofdm {
            "non-HT OFDM rate index 0..=7 (6, 9, 12, 18, 24, 36, 48, 54 Mb/s)".to_string()
        } else if s == Standard::Ht {
            "HT MCS 0..=7 per stream (HT MCS index = 8*(nss-1) + mcs)".to_string()
        } else {
            format!("{name} MCS 0..={}", super::max_mcs(s))
        };
        return Err(PhyError {
            field: "mcs",
            allowed: what,
        });
    }
    if tx.nss == 0 || tx.nss > super::max_nss(s) {
        return Err(PhyError {
            field: "nss",
            allowed: format!("{name} NSS 1..={}", super::max_nss(s)),
        });
    }
    let widths = super::valid_widths(s);
    if !widths.contains(&tx.channel_width) {
        return Err(PhyError {
            field: "channel_width",
            allowed: format!("{name} channel width in MHz: {}", list(widths)),
        });
    }
    let gis = super::valid_guard_intervals(s);
    if !gis.contains(&tx.guard_interval) {
        return Err(PhyError {
            field: "guard_interval",
            allowed: format!("{name} guard interval in ns: {}", list(gis)),
        });
    }
    if let Some(ru) = tx.ru {
        if ru.count(tx.channel_width) == 0 {
            let fit: Vec<&str> = RuSize::ALL
                .iter()
                .filter(|r| r.count(tx.channel_width) > 0)
                .map(|r| r.name())
                .collect();
            return Err(PhyError {
                field: "ru",
                allowed: format!(
                    "an RU that fits {} MHz, in tones: {}",
                    tx.channel_width,
                    fit.join(", ")
                ),
            });
        }
        if tx.mcs >= 10 && ru < RuSize::Tones242 {
            return Err(PhyError {
                field: "mcs",
                allowed: format!("HE MCS 0..=9 on a {}-tone RU (MCS 10 and 11, 1024-QAM, need an RU of 242 tones or more)", ru.name()),
            });
        }
    }
    if s == Standard::Vht {
        let (num, den) = n_dbps_exact(tx);
        let listed = VHT_INVALID.contains(&(tx.channel_width, tx.nss, tx.mcs));
        if num % den != 0 || listed {
            let allowed = match (tx.channel_width, tx.mcs) {
                (20, _) => "VHT MCS 0..=9; MCS 9 is not defined at 20 MHz with NSS 1,2,4,5,7,8",
                (80, 6) => "VHT MCS 0..=9; MCS 6 is not defined at 80 MHz with NSS 3,7",
                (80, _) => "VHT MCS 0..=9; MCS 9 is not defined at 80 MHz with NSS 6",
                _ => "VHT MCS 0..=9; MCS 9 is not defined at 160 MHz with NSS 3",
            };
            return Err(PhyError {
                field: "mcs",
                allowed: allowed.to_string(),
            });
        }
    }
    Ok(())
}
