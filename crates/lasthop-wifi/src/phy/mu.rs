//! HE multi-user PPDUs: the HE MU PPDU (downlink OFDMA) and the HE TB PPDU (uplink OFDMA, sent
//! in answer to a Trigger frame), each user on a resource unit ([`super::ru`]).
//!
//! Integer nanoseconds throughout. IEEE 802.11ax-2021 followed:
//!
//! * Fields (§27.3.4) and their durations (Table 27-12, timing-related constants): L-STF 8 µs,
//!   L-LTF 8 µs, L-SIG 4 µs, RL-SIG 4 µs, HE-SIG-A 8 µs (two symbols), HE-SIG-B 4 µs per symbol
//!   (HE MU PPDU only), HE-STF 4 µs (T_HE-STF-NT) in an HE MU PPDU and 8 µs (T_HE-STF-T) in an
//!   HE TB PPDU, then N_HE-LTF HE-LTF symbols and the Data field. N_HE-LTF follows the most
//!   spatial streams on any RU (one user per RU here, no MU-MIMO) with the same mapping as an
//!   HE SU PPDU ([`super::preamble::n_ltf`]).
//! * HE-SIG-B (§27.3.11.8), [`he_sig_b_ns`]: one content channel at 20 MHz, two at 40 MHz and
//!   more, each carrying a Common field and a User Specific field, BCC-encoded at the HE-SIG-B
//!   MCS and padded to whole 4 µs symbols; both content channels last as long as the longer
//!   one (HE-SIG-A signals one symbol count).
//!   - Common field per content channel (the Common field table, Table 27-24): N RU Allocation
//!     subfields of 8 bits (N = 1 at 20 and 40 MHz, 2 at 80 MHz, 4 at 160 MHz), the Center
//!     26-tone RU bit at 80 and 160 MHz, CRC 4 bits, Tail 6 bits: 18, 18, 27, 43 bits.
//!   - User Specific field: User fields of 21 bits, grouped in User Block fields of two User
//!     fields + CRC 4 + Tail 6 = 52 bits; with an odd count the last User Block field holds
//!     one User field, 21 + 10 = 31 bits.
//!   - The HE-SIG-B MCS (HE-SIG-A's SIG-B MCS field, 0..=5) has the VHT-MCS 0..=5 parameters
//!     on the 52 data subcarriers of a 20 MHz content channel: N_DBPS 26, 52, 78, 104, 156, 208.
//!   - Not modelled: SIG-B compression (full-band MU-MIMO, no Common field), SIG-B DCM, and
//!     the limit of 16 HE-SIG-B symbols for receivers without the "Longer Than 16 HE SIG-B OFDM
//!     Symbols Support" capability.
//!   - Users per content channel: the RU allocation decides how the users split between the
//!     two content channels (each carries the users of its own 20 MHz subchannels, the center
//!     26-tone RU of 80 MHz goes to the first); here the fuller one has ceil(n/2) users, the
//!     most even split.
//! * HE-LTF and GI, HE MU PPDU: HE-SIG-A's GI+LTF Size allows 2× HE-LTF with 0.8 or 1.6 µs GI
//!   and 4× HE-LTF with 0.8 or 3.2 µs GI. As for the HE SU PPDU ([`super::timing`]) the model
//!   uses 2× HE-LTF (6.4 µs + GI) with 0.8 and 1.6 µs and 4× (16 µs) with 3.2 µs, so an HE MU
//!   PPDU carrying one user on the full band differs from the HE SU PPDU by HE-SIG-B alone.
//! * HE-LTF and GI, HE TB PPDU: set by the Trigger frame's GI And HE-LTF Type subfield, which
//!   offers only 1× HE-LTF + 1.6 µs GI, 2× HE-LTF + 1.6 µs GI and 4× HE-LTF + 3.2 µs GI: no
//!   0.8 µs GI. A cell on the 0.8 µs GI therefore triggers 2× HE-LTF + 1.6 µs GI
//!   ([`tb_guard_interval`]), the common choice; ns-3.37 does the same (its `CtrlTriggerHeader`
//!   built from a TXVECTOR maps a 0.8 or 1.6 µs GI to 2× HE-LTF + 1.6 µs and 3.2 µs to 4×
//!   HE-LTF; its default-constructed header holds 1× HE-LTF + 1.6 µs).
//! * Data field (§27.3.12, §27.4.3): each user's N_SYM as for the HE SU PPDU (LDPC,
//!   ceil((8·L + 16) / N_DBPS) with its RU's N_DBPS, without the pre-FEC padding a-factor or
//!   the LDPC extra symbol), every user padded to the longest user's N_SYM; T_PE = 0 for the HE
//!   MU PPDU as for HE SU; 6 µs signal extension in 2.4 GHz.
//! * HE TB PPDU length (§27.3.11.5, L-SIG; Equation (27-11) in the drafts ns-3 and MATLAB
//!   cite): L-SIG LENGTH = ceil((TXTIME − SignalExtension − 20 µs) / 4 µs)·3 − 3 − m, with m = 2
//!   for an HE SU or HE TB PPDU (1 for HE MU and HE ER SU). The Trigger frame's UL Length
//!   subfield is that L-SIG LENGTH, and the HE TB PPDU's N_SYM and packet extension fill
//!   exactly the time it implies, 20 µs + 4 µs·(LENGTH + 3 + m)/3 + SignalExtension: a TB PPDU
//!   lasts its preamble and data rounded up to the 4 µs L-SIG grid ([`lsig_round`]). With
//!   LENGTH ≤ 4095 (12 bits) the longest is 4093 ↔ 5.484 ms, aPPDUMaxTime.
//!
//! HE-SIG-B MCS choice ([`sigb_mcs_for`]): the standard leaves it to the AP.
//!
//! When is a user's A-MPDU subframe received? [`super::PrefixClock::with_preamble`] with the
//! PPDU's preamble ([`he_mu_preamble_ns`] or [`he_tb_preamble_ns`]) and the user's vector (for a
//! TB PPDU with the trigger's GI, [`tb_guard_interval`]).

use super::preamble::{he_ltf_ns, he_mu_preamble_ns, n_ltf, PRE_HE_NS};
use super::timing::{n_sym, signal_extension};
use super::{Band, Standard, TxVector};
use lasthop_core::Duration;

const US: u64 = 1_000;
/// HE-STF in an HE TB PPDU (T_HE-STF-T).
const HE_STF_T_NS: u64 = 8 * US;
/// `m` of the L-SIG LENGTH equation for an HE TB PPDU.
const TB_LSIG_M: u64 = 2;

/// The HE-SIG-B MCS an AP uses for `users`: the lowest user MCS, at most 5 (5 when there are no
/// users). The standard leaves the choice to the AP; this is ns-3.37's rule
/// (`HePhy::GetSigBMode`: the smallest HE-MCS among the users, capped at 5, sent as that
/// VHT-MCS), so that every user can decode HE-SIG-B at least as well as its own data.
pub fn sigb_mcs_for(users: &[(TxVector, u32)]) -> u8 {
    users.iter().map(|(tx, _)| tx.mcs).fold(5, u8::min)
}

/// The most spatial streams of any user (which set the HE-LTF count) and the longest user's
/// N_SYM, for users that are HE and share one channel width.
fn streams_and_symbols(users: &[(TxVector, u32)]) -> (u8, u64) {
    debug_assert!(
        users.iter().all(|(tx, _)| tx.standard == Standard::He
            && tx.channel_width == users[0].0.channel_width
            && tx.validate().is_ok()),
        "multi-user PPDU with users of different widths or not HE: {users:?}"
    );
    let max_nss = users.iter().map(|(tx, _)| tx.nss).max().unwrap_or(1);
    let nsym = users.iter().map(|(tx, bytes)| n_sym(tx, *bytes)).max().unwrap_or(0);
    (max_nss, nsym)
}

/// TXTIME of an HE MU PPDU carrying, for each user, its vector (HE, `ru` set, or `None` for a
/// single user on the full band) and PSDU length in octets: the MU preamble for all users
/// (HE-SIG-B at [`sigb_mcs_for`]) + the longest user's N_SYM × (12.8 µs + GI) + the 2.4 GHz
/// signal extension (T_PE = 0). Every user shares the first user's channel width and GI.
/// No users: zero.
pub fn he_mu_ppdu_duration(users: &[(TxVector, u32)], band: Band) -> Duration {
    let Some((first, _)) = users.first() else {
        return Duration::ZERO;
    };
    debug_assert!(
        users.iter().all(|(tx, _)| tx.guard_interval == first.guard_interval),
        "he_mu_ppdu_duration: users of different GIs: {users:?}"
    );
    let (max_nss, nsym) = streams_and_symbols(users);
    let pre = he_mu_preamble_ns(
        first.channel_width,
        first.guard_interval,
        max_nss,
        users.len() as u32,
        sigb_mcs_for(users),
    );
    Duration(pre + nsym * (12_800 + first.guard_interval as u64) + signal_extension(band))
}

/// The GI of an HE TB PPDU triggered by a cell on guard interval `gi`: 1.6 µs for 0.8 µs (a TB
/// PPDU has no 0.8 µs GI; the trigger asks for 2× HE-LTF + 1.6 µs GI), otherwise `gi`.
pub fn tb_guard_interval(gi: u16) -> u16 {
    gi.max(1600)
}

/// Preamble of an HE TB PPDU in ns: L-STF 8 + L-LTF 8 + L-SIG 4 + RL-SIG 4 + HE-SIG-A 8 +
/// HE-STF 8 µs + N_HE-LTF(`nss`) HE-LTFs, at the TB GI [`tb_guard_interval`]`(gi)` (2× HE-LTF,
/// 8 µs each, at 1.6 µs; 4× HE-LTF, 16 µs, at 3.2 µs). `nss` is the most streams of any user
/// (the trigger sets one HE-LTF count for all).
pub fn he_tb_preamble_ns(gi: u16, nss: u8) -> u64 {
    PRE_HE_NS + HE_STF_T_NS + n_ltf(nss) * he_ltf_ns(tb_guard_interval(gi))
}

/// `txtime` rounded up to the L-SIG grid: 20 µs + 4 µs·ceil((txtime − 20 µs − SE) / 4 µs) + SE,
/// SE the 2.4 GHz signal extension (the time an L-SIG LENGTH can state).
pub fn lsig_round(txtime: Duration, band: Band) -> Duration {
    let se = signal_extension(band);
    let k = txtime.0.saturating_sub(20 * US + se).div_ceil(4 * US);
    Duration(20 * US + 4 * US * k + se)
}

/// The L-SIG LENGTH of an HE TB PPDU of `txtime`, which is the Trigger frame's UL Length:
/// ceil((TXTIME − SE − 20 µs) / 4 µs)·3 − 3 − 2 (m = 2). The subfield has 12 bits: a TXTIME
/// up to aPPDUMaxTime (5.484 ms) gives at most 4093. (A TXTIME of 24 µs + SE or less, shorter
/// than any HE PPDU, gives 0.)
pub fn ul_length_of(txtime: Duration, band: Band) -> u16 {
    let se = signal_extension(band);
    let k = txtime.0.saturating_sub(20 * US + se).div_ceil(4 * US);
    (3 * k).saturating_sub(3 + TB_LSIG_M).min(u16::MAX as u64) as u16
}

/// The TXTIME of the HE TB PPDU a Trigger frame with UL Length `ul_length` asks for:
/// 20 µs + 4 µs·ceil((UL Length + 3 + 2) / 3) + SE. Inverse of [`ul_length_of`] on the L-SIG
/// grid: `tb_txtime_of(ul_length_of(t)) == lsig_round(t)`.
pub fn tb_txtime_of(ul_length: u16, band: Band) -> Duration {
    let k = (ul_length as u64 + 3 + TB_LSIG_M).div_ceil(3);
    Duration(20 * US + 4 * US * k + signal_extension(band))
}

/// TXTIME of the HE TB PPDU that carries every user's PSDU (vector with its RU, octets), the
/// length a Trigger frame's UL Length requests so that the longest user fits: the TB preamble
/// ([`he_tb_preamble_ns`] with the most streams) plus the longest user's N_SYM × (12.8 µs +
/// TB GI) plus SE, rounded up to the L-SIG grid ([`lsig_round`]; the rest is packet
/// extension). The GI is [`tb_guard_interval`] of the first user's. No users: zero.
pub fn he_tb_ppdu_duration(users: &[(TxVector, u32)], band: Band) -> Duration {
    let Some((first, _)) = users.first() else {
        return Duration::ZERO;
    };
    let gi = tb_guard_interval(first.guard_interval);
    let (max_nss, nsym) = streams_and_symbols(users);
    let raw = he_tb_preamble_ns(gi, max_nss) + nsym * (12_800 + gi as u64) + signal_extension(band);
    lsig_round(Duration(raw), band)
}
