//! The preamble fields the PPDU formats share (IEEE 802.11-2020 §19.3.9, §21.3.8; 802.11ax-2021
//! §27.3.11): the number of long training fields per spatial streams, the HE-LTF symbol, and an
//! HE MU PPDU's HE-SIG-B and whole preamble. `timing` (single-user PPDUs) and `mu` (multi-user
//! PPDUs) both build on it; see `mu`'s documentation for the HE-SIG-B field counts.

use super::rates::mcs_params;
use super::Standard;

const US: u64 = 1_000;
/// L-STF + L-LTF + L-SIG + RL-SIG + HE-SIG-A.
pub(super) const PRE_HE_NS: u64 = (8 + 8 + 4 + 4 + 8) * US;
/// HE-STF in an HE SU/MU PPDU (T_HE-STF-NT).
const HE_STF_NT_NS: u64 = 4 * US;
const SIG_B_SYMBOL_NS: u64 = 4 * US;
const USER_FIELD_BITS: u64 = 21;
const CRC_TAIL_BITS: u64 = 4 + 6;

/// Number of HT/VHT/HE long training fields for `nss` streams (no STBC, no extension LTFs).
pub fn n_ltf(nss: u8) -> u64 {
    match nss {
        0 | 1 => 1,
        2 => 2,
        3 | 4 => 4,
        5 | 6 => 6,
        _ => 8,
    }
}

/// HE-LTF symbol duration incl. GI (2× HE-LTF; 4× HE-LTF with the 3.2 µs GI).
pub fn he_ltf_ns(gi: u16) -> u64 {
    if gi >= 3200 {
        12_800 + 3_200
    } else {
        6_400 + gi as u64
    }
}

/// Data bits per HE-SIG-B symbol at `sigb_mcs` (VHT-MCS 0..=5 on 52 data subcarriers; a higher
/// value is taken as 5, the highest HE-SIG-B MCS).
pub fn sigb_n_dbps(sigb_mcs: u8) -> u64 {
    let (bpscs, r) =
        mcs_params(Standard::Vht, sigb_mcs.min(5)).unwrap_or((1, super::CodeRate::R1_2));
    let (num, den) = r.ratio();
    52 * bpscs as u64 * num as u64 / den as u64
}

/// Bits of the HE-SIG-B Common field in each content channel of a `width` MHz HE MU PPDU.
pub fn sigb_common_bits(width: u16) -> u64 {
    let (ru_allocations, center_26) = match width {
        0..=40 => (1, 0),
        41..=80 => (2, 1),
        _ => (4, 1),
    };
    8 * ru_allocations + center_26 + CRC_TAIL_BITS
}

/// Bits of an HE-SIG-B User Specific field carrying `n_users` User fields.
pub fn sigb_user_bits(n_users: u32) -> u64 {
    let n = n_users as u64;
    let blocks = n.div_ceil(2);
    n * USER_FIELD_BITS + blocks * CRC_TAIL_BITS
}

/// Duration in ns of the HE-SIG-B field of a `width` MHz HE MU PPDU with `n_users` users at
/// HE-SIG-B MCS `sigb_mcs` (0..=5): the fuller content channel's Common and User Specific
/// field bits over N_DBPS, in 4 µs symbols (see the module documentation).
pub fn he_sig_b_ns(width: u16, n_users: u32, sigb_mcs: u8) -> u64 {
    debug_assert!(sigb_mcs <= 5, "HE-SIG-B MCS {sigb_mcs} (0..=5)");
    let per_channel = if width <= 20 {
        n_users
    } else {
        n_users.div_ceil(2)
    };
    let bits = sigb_common_bits(width) + sigb_user_bits(per_channel);
    bits.div_ceil(sigb_n_dbps(sigb_mcs)) * SIG_B_SYMBOL_NS
}

/// Preamble of an HE MU PPDU (everything before the Data field) in ns: L-STF 8 + L-LTF 8 +
/// L-SIG 4 + RL-SIG 4 + HE-SIG-A 8 µs + HE-SIG-B ([`he_sig_b_ns`]) + HE-STF 4 µs +
/// N_HE-LTF(`max_nss`) HE-LTFs (2× HE-LTF at 0.8/1.6 µs GI, 4× at 3.2 µs).
pub fn he_mu_preamble_ns(width: u16, gi: u16, max_nss: u8, n_users: u32, sigb_mcs: u8) -> u64 {
    PRE_HE_NS
        + he_sig_b_ns(width, n_users, sigb_mcs)
        + HE_STF_NT_NS
        + n_ltf(max_nss) * he_ltf_ns(gi)
}
