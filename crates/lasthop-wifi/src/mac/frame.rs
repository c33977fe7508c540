//! Frame sizes on the air.
//!
//! IEEE 802.11-2020 §9.2.3 (MAC header), §9.3.1.8 (compressed Block Ack), §9.3.1.2–§9.3.1.4
//! (RTS, CTS, Ack),
//! §9.7 (A-MPDU format: each subframe is a 4-octet MPDU delimiter, the MPDU, and padding to a
//! multiple of 4 octets except after the last subframe). An IP packet is carried in an MSDU
//! behind an 8-octet LLC/SNAP header.

/// QoS Data header: Frame Control, Duration, Address 1–3, Sequence Control, QoS Control.
pub const QOS_DATA_HEADER: u32 = 26;
/// Non-QoS Data header (legacy DCF).
pub const DATA_HEADER: u32 = 24;
pub const LLC_SNAP: u32 = 8;
pub const FCS: u32 = 4;
pub const MPDU_DELIMITER: u32 = 4;
/// Ack frame: FC, Duration, RA, FCS.
pub const ACK: u32 = 14;
/// RTS frame: FC, Duration, RA, TA, FCS (§9.3.1.2).
pub const RTS: u32 = 20;
/// CTS frame: FC, Duration, RA, FCS (§9.3.1.3).
pub const CTS: u32 = 14;
/// Compressed Block Ack with a 64-bit bitmap: FC, Duration, RA, TA, BA Control, SSC, bitmap, FCS.
pub const BLOCK_ACK_64: u32 = 32;
/// Compressed Block Ack with a 256-bit bitmap (HE).
pub const BLOCK_ACK_256: u32 = 56;
/// A typical beacon of a dual-stream 802.11ac/ax AP: header, fixed fields and the usual
/// elements (SSID, rates, TIM, HT/VHT capabilities and operation, RSN, WMM), plus FCS.
pub const BEACON: u32 = 300;

/// MPDU length carrying an IP packet of `ip_bytes` (QoS data or legacy data).
#[inline]
pub const fn mpdu_len(ip_bytes: u32, qos: bool) -> u32 {
    (if qos { QOS_DATA_HEADER } else { DATA_HEADER }) + LLC_SNAP + ip_bytes + FCS
}

/// A-MSDU subframe header: DA, SA, Length (§9.3.2.2.2).
pub const AMSDU_SUBFRAME_HEADER: u32 = 14;
/// Largest A-MSDU a VHT/HE MPDU may carry (§9.2.4.7.3 / Table 9-34: 11454 octets with the
/// largest VHT Maximum MPDU Length); HT allows 3839 or 7935 (the Maximum A-MSDU Length
/// capability).
pub const MAX_AMSDU_VHT: u32 = 11_454;
pub const MAX_AMSDU_HT: u32 = 7_935;
/// The smaller of the two HT Maximum A-MSDU Lengths.
pub const MAX_AMSDU_HT_MIN: u32 = 3_839;

/// Incremental A-MSDU inside one QoS Data MPDU (§9.3.2.2.2): each subframe is the 14-octet
/// subframe header and an MSDU (LLC/SNAP + IP packet), padded to 4 octets except the last.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AmsduLen {
    padded: u32,
    last: u32,
    n: u32,
}

impl AmsduLen {
    /// A-MSDU length (the MPDU's frame body) if an IP packet of `ip_bytes` were appended.
    #[inline]
    pub fn with(&self, ip_bytes: u32) -> u32 {
        let prev = if self.n == 0 { 0 } else { (self.padded + self.last + 3) & !3 };
        prev + AMSDU_SUBFRAME_HEADER + LLC_SNAP + ip_bytes
    }
    #[inline]
    pub fn push(&mut self, ip_bytes: u32) {
        if self.n > 0 {
            self.padded = (self.padded + self.last + 3) & !3;
        }
        self.last = AMSDU_SUBFRAME_HEADER + LLC_SNAP + ip_bytes;
        self.n += 1;
    }
    /// The frame body length (0 when empty).
    #[inline]
    pub fn len(&self) -> u32 {
        self.padded + self.last
    }
    #[inline]
    pub fn count(&self) -> u32 {
        self.n
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// The QoS Data MPDU carrying this A-MSDU.
    #[inline]
    pub fn mpdu_len(&self) -> u32 {
        QOS_DATA_HEADER + self.len() + FCS
    }
}

/// Length of an A-MPDU subframe that is not the last one.
#[inline]
pub const fn subframe_len_padded(mpdu: u32) -> u32 {
    (MPDU_DELIMITER + mpdu + 3) & !3
}

/// Incremental A-MPDU length: all subframes but the last are padded to 4 octets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AmpduLen {
    padded: u32,
    last: u32,
    n: u32,
}

impl AmpduLen {
    /// PSDU length if `mpdu` were appended.
    #[inline]
    pub fn with(&self, mpdu: u32) -> u32 {
        let prev = if self.n == 0 { 0 } else { self.padded + subframe_len_padded(self.last) };
        prev + MPDU_DELIMITER + mpdu
    }
    #[inline]
    pub fn push(&mut self, mpdu: u32) {
        if self.n > 0 {
            self.padded += subframe_len_padded(self.last);
        }
        self.last = mpdu;
        self.n += 1;
    }
    /// Current PSDU length (0 when empty).
    #[inline]
    pub fn len(&self) -> u32 {
        if self.n == 0 {
            0
        } else {
            self.padded + MPDU_DELIMITER + self.last
        }
    }
    #[inline]
    pub fn count(&self) -> u32 {
        self.n
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// The largest PSDU (≤ `cap` octets) whose PPDU at `tx` fits in `max_time` (binary search on
/// the PPDU duration of §19.4.3 / §21.4.3 / §27.4.3 through [`crate::phy::ppdu_duration`]).
pub fn max_psdu_for_time(tx: &crate::phy::TxVector, band: crate::phy::Band, max_time: lasthop_core::Duration, cap: u32) -> u32 {
    let (mut lo, mut hi) = (0u32, cap.min(16_000_000));
    if crate::phy::ppdu_duration(tx, hi, band) <= max_time {
        return hi;
    }
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if crate::phy::ppdu_duration(tx, mid, band) <= max_time {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Most MPDUs of full-size (1500-octet IP) packets one A-MPDU of `max_psdu` octets holds,
/// within `[1, max_mpdus]`: the aggregate length a buffer sizer takes as its lower bound
/// (WQM's `B_min`). The simulator and the live tools both use it.
pub fn full_size_mpdus(max_psdu: u32, qos: bool, max_mpdus: u32) -> u32 {
    let per = mpdu_len(1500, qos) + MPDU_DELIMITER;
    (max_psdu / per).clamp(1, max_mpdus.max(1))
}

#[cfg(test)]
mod tests {
    #[test]
    fn amsdu_pads_all_but_the_last_subframe() {
        use super::*;
        let mut a = AmsduLen::default();
        assert_eq!(a.with(1500), 14 + 8 + 1500);
        a.push(1500);
        // 1522 padded to 1524, then the second subframe.
        assert_eq!(a.with(41), 1524 + 14 + 8 + 41);
        a.push(41);
        assert_eq!(a.len(), 1524 + 63);
        assert_eq!(a.mpdu_len(), 26 + 1524 + 63 + 4);
        assert_eq!(a.count(), 2);
    }

    use super::*;
    #[test]
    fn sizes() {
        assert_eq!(mpdu_len(1500, true), 1538);
        assert_eq!(subframe_len_padded(1538), 1544);
        let mut a = AmpduLen::default();
        assert_eq!(a.with(1538), 1542);
        a.push(1538);
        a.push(1538);
        assert_eq!(a.len(), 1544 + 1542);
        assert_eq!(a.count(), 2);
    }
}
