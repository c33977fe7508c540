//! The WQM analysis: buffer bounds and drain time, "Battling Latency in Modern Wireless
//! Networks" (Showail, Shihada), §IV-A equations (1)–(2) and §IV-B equations (5)–(7).
//!
//! All arithmetic is integer: durations in nanoseconds, rates in bit/s, sizes in octets. Every
//! serialisation time `8·L / R` is rounded up to the next nanosecond ([`BitRate::tx_time`]),
//! and a buffer size in packets is rounded up, because (5) is a lower bound (`B ≥ λ·ARTT`).

use lasthop_core::{BitRate, Bytes, Duration};

/// The system parameters of equations (6) and (7) ("Table 1" of the paper). Defaults are an
/// IEEE 802.11n (HT) link in the 5 GHz band, IEEE 802.11-2012 values:
///
/// | symbol | default | why |
/// |---|---|---|
/// | `T_slot` | 9 µs | aSlotTime, OFDM/HT PHY |
/// | `CW_min` | 16 slots | aCWmin + 1 = 15 + 1, so `T_BO = 15 · 9 / 2 = 67.5 µs` |
/// | `T_DIFS` | 34 µs | aSIFSTime + 2 · aSlotTime |
/// | `T_SIFS` | 16 µs | aSIFSTime, 5 GHz |
/// | `T_PHY` | 48 µs | HT-mixed preamble and header with four HT-LTFs (the 600 Mb/s rate uses four streams): 16 + 4 + 8 + 4 + 4·4 µs |
/// | `T_BACK` | 48 µs | a 32-octet compressed Block Ack at the 6 Mb/s basic rate: ⌈(16 + 8·32 + 6) / 24⌉ = 12 symbols of 4 µs (its preamble is the second `T_PHY`) |
/// | `L_MAC` | 34 octets | per subframe: QoS-data MAC header 26 + FCS 4 + A-MPDU delimiter 4 |
/// | `L_TCP-ACK` | 40 octets | IPv4 + TCP headers of a pure ACK |
///
/// With these values (7) and (6) give the two numbers the paper quotes: about 1.9 ms for a
/// 64-subframe A-MPDU at 600 Mb/s, and about 2.5 ms for one frame at 6.5 Mb/s (the `limit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArttParams {
    /// `T_slot`, the slot time.
    pub t_slot: Duration,
    /// `CW_min`, the minimum contention window in slots (the backoff is uniform over
    /// `0 ..= CW_min − 1` slots).
    pub cw_min: u32,
    /// `T_DIFS`, the distributed inter-frame space.
    pub t_difs: Duration,
    /// `T_SIFS`, the short inter-frame space.
    pub t_sifs: Duration,
    /// `T_PHY`, the duration of the PHY preamble and header of one PPDU.
    pub t_phy: Duration,
    /// `T_BACK`, the time to transmit a MAC Block Ack frame.
    pub t_back: Duration,
    /// Octets of MAC overhead per subframe; `T_MAC = 8 · L_MAC / R`.
    pub l_mac: Bytes,
    /// Octets of one TCP ACK; `T_TCP-ACK = 8 · L_TCP-ACK / R`.
    pub l_tcp_ack: Bytes,
}

impl Default for ArttParams {
    fn default() -> Self {
        ArttParams {
            t_slot: Duration::from_micros(9),
            cw_min: 16,
            t_difs: Duration::from_micros(34),
            t_sifs: Duration::from_micros(16),
            t_phy: Duration::from_micros(48),
            t_back: Duration::from_micros(48),
            l_mac: Bytes(34),
            l_tcp_ack: Bytes(40),
        }
    }
}

impl ArttParams {
    /// Checks the parameters; the error names the field.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.cw_min == 0 {
            return Err("wqm.artt.cw_min: must be at least 1 slot");
        }
        Ok(())
    }
}

/// Mean backoff `T_BO = (CW_min − 1) · T_slot / 2` (§IV-B), in ns rounded up.
pub fn t_bo(p: &ArttParams) -> Duration {
    let slots = p.cw_min.saturating_sub(1) as u64;
    Duration(p.t_slot.as_nanos().saturating_mul(slots).div_ceil(2))
}

/// The per-exchange overhead common to (6) and (7):
/// `T_BO + T_DIFS + 2·T_PHY + T_SIFS + T_BACK`.
fn t_exchange(p: &ArttParams) -> Duration {
    t_bo(p) + p.t_difs + p.t_phy * 2 + p.t_sifs + p.t_back
}

/// Equation (6): the duration of one data exchange carrying an A-MPDU of `k` subframes of
/// `l_data` octets at rate `r` (bit/s):
/// `T_d-DATA = T_BO + T_DIFS + 2·T_PHY + T_SIFS + T_BACK + K · (T_MAC + T_DATA)`.
pub fn t_d_data(p: &ArttParams, r: BitRate, k: u32, l_data: Bytes) -> Duration {
    let per_subframe = r.tx_time(p.l_mac) + r.tx_time(l_data);
    t_exchange(p) + per_subframe * k as u64
}

/// Equation (7): the duration of the exchange carrying the TCP ACKs of that A-MPDU back at rate
/// `r`, with delayed ACKs (one ACK per two segments):
/// `T_d-ACK = T_BO + T_DIFS + 2·T_PHY + T_SIFS + T_BACK + K/2 · (T_MAC + T_TCP-ACK)`.
/// `K/2 · x` is computed as `⌈K · x / 2⌉` ns, so odd `K` (and `K = 1`) keep the half frame.
pub fn t_d_ack(p: &ArttParams, r: BitRate, k: u32) -> Duration {
    let per_ack = r.tx_time(p.l_mac) + r.tx_time(p.l_tcp_ack);
    t_exchange(p) + Duration((per_ack * k as u64).as_nanos().div_ceil(2))
}

/// `ARTT = T_d-DATA + T_d-ACK` (§IV-B, Fig. 3): the round-trip time of one A-MPDU of `k`
/// subframes over a single hop at rate `r`; propagation delay is neglected.
pub fn artt(p: &ArttParams, r: BitRate, k: u32, l_data: Bytes) -> Duration {
    t_d_data(p, r, k, l_data) + t_d_ack(p, r, k)
}

/// The bandwidth-delay product `rate · rtt` in packets of `l_data` octets, rounded up; `B_initial
/// = R · ARTT` of equation (1), and `B ≥ λ · ARTT` of equation (5). At least 1.
pub fn bdp_packets(rate: BitRate, rtt: Duration, l_data: Bytes) -> u32 {
    let bits = rate.bps() as u128 * rtt.as_nanos() as u128;
    let per_packet = (l_data.bits() as u128).max(1) * 1_000_000_000;
    bits.div_ceil(per_packet).clamp(1, u32::MAX as u128) as u32
}

/// Equation (1): `B_initial = R · ARTT`, in packets, with `ARTT` from (6)–(7) at the current
/// rate `r` and the aggregate length `k` in use.
pub fn b_initial(p: &ArttParams, r: BitRate, k: u32, l_data: Bytes) -> u32 {
    bdp_packets(r, artt(p, r, k, l_data), l_data)
}

/// §IV-B: `B_max = λ · ARTT` (equation (5)) at the highest transmission rate `lambda` with
/// A-MPDUs of `k_max` subframes, in packets.
pub fn b_max(p: &ArttParams, lambda: BitRate, k_max: u32, l_data: Bytes) -> u32 {
    bdp_packets(lambda, artt(p, lambda, k_max, l_data), l_data)
}

/// The free-channel fraction `F` as a ratio `free / total` of two durations (kept as integers
/// so the drain time needs no floating point).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeFraction {
    /// Time the channel was free for this station.
    pub free: Duration,
    /// The observation time (`free ≤ total`, `total > 0`).
    pub total: Duration,
}

impl FreeFraction {
    /// `F = 1`: the channel is never taken by anyone else.
    pub const ONE: FreeFraction = FreeFraction {
        free: Duration(1),
        total: Duration(1),
    };

    /// `F` from channel times over one observation period: `active` (time the radio was on the
    /// channel), `busy` (time the medium was sensed busy) and `tx` (this radio's own transmit
    /// time, part of `busy`). Only others' occupancy, `busy − tx`, makes the channel unavailable:
    /// `F = 1 − (busy − tx) / active`. `None` when `active` is zero.
    pub fn from_channel_times(active: Duration, busy: Duration, tx: Duration) -> Option<Self> {
        if active.is_zero() {
            return None;
        }
        let others = (busy - tx).min(active);
        Some(FreeFraction {
            free: active - others,
            total: active,
        })
    }

    /// `F` in parts per million (for reports and tests).
    pub fn ppm(&self) -> u64 {
        if self.total.is_zero() {
            return 0;
        }
        (self.free.as_nanos() as u128 * 1_000_000 / self.total.as_nanos() as u128) as u64
    }
}

/// Equation (2): `T_drain = (BL / R) / F` — the time to empty a backlog of `bl` octets at rate
/// `r` (bit/s) when the channel is free for this station only a fraction `f` of the time.
/// Rounded up to the next ns; `Duration::MAX` when the queue holds data but `R = 0` or `F = 0`.
pub fn t_drain(bl: Bytes, r: BitRate, f: FreeFraction) -> Duration {
    if bl.0 == 0 {
        return Duration::ZERO;
    }
    if r.bps() == 0 || f.free.is_zero() {
        return Duration::MAX;
    }
    // BL·8 / R seconds, divided by free/total: BL·8·1e9·total / (R·free) ns.
    // In u128 from the start: `Bytes::bits` would overflow for backlogs above 2^61 octets.
    let num = (bl.0 as u128 * 8 * 1_000_000_000).saturating_mul(f.total.as_nanos() as u128);
    let den = r.bps() as u128 * f.free.as_nanos() as u128;
    Duration(num.div_ceil(den).min(u64::MAX as u128) as u64)
}
