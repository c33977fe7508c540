//! The radiotap header of each record (radiotap.org): TSFT, Flags (FCS at end; Bad FCS), Rate
//! (non-HT), Channel, then MCS (HT), A-MPDU status, VHT or HE, each field aligned to its natural
//! size from the start of the header.

use crate::capture::PhyRec;
use lasthop_wifi::phy::{Band, Standard, TxVector};

pub const RT_TSFT: u32 = 0;
pub const RT_FLAGS: u32 = 1;
pub const RT_RATE: u32 = 2;
pub const RT_CHANNEL: u32 = 3;
pub const RT_MCS: u32 = 19;
pub const RT_AMPDU: u32 = 20;
pub const RT_VHT: u32 = 21;
pub const RT_HE: u32 = 23;

const F_FCS: u8 = 0x10;
const F_BADFCS: u8 = 0x40;

/// A radiotap header under construction. Fields must be added in increasing bit order; each is
/// padded to its alignment, counted from the start of the header.
pub struct Radiotap {
    buf: Vec<u8>,
    present: u32,
}

impl Default for Radiotap {
    fn default() -> Self {
        Radiotap::new()
    }
}

impl Radiotap {
    pub fn new() -> Radiotap {
        Radiotap { buf: vec![0; 8], present: 0 }
    }
    pub fn field(&mut self, bit: u32, align: usize, bytes: &[u8]) -> &mut Self {
        debug_assert!(self.present >> bit == 0, "radiotap fields out of order");
        debug_assert!(align.is_power_of_two());
        while self.buf.len() & (align - 1) != 0 {
            self.buf.push(0);
        }
        self.buf.extend_from_slice(bytes);
        self.present |= 1 << bit;
        self
    }
    /// The finished header (version 0, length, present word).
    pub fn finish(mut self) -> Vec<u8> {
        let len = self.buf.len() as u16;
        self.buf[2..4].copy_from_slice(&len.to_le_bytes());
        self.buf[4..8].copy_from_slice(&self.present.to_le_bytes());
        self.buf
    }
}

/// (frequency MHz, channel flags): 2.4 GHz channel 6, 5 GHz channel 36, 6 GHz channel 1; OFDM.
pub(super) fn channel(band: Band) -> (u16, u16) {
    match band {
        Band::Ghz2_4 => (2437, 0x0080 | 0x0040),
        Band::Ghz5 => (5180, 0x0100 | 0x0040),
        Band::Ghz6 => (5955, 0x0100 | 0x0040),
    }
}

/// Per-frame position in an A-MPDU: (reference, is last).
type AmpduPos = Option<(u32, bool)>;

/// The radiotap header of one frame.
pub fn radiotap(start_ns: u64, band: Band, phy: PhyRec, bad_fcs: bool, ampdu: AmpduPos) -> Vec<u8> {
    let mut rt = Radiotap::new();
    rt.field(RT_TSFT, 8, &(start_ns / 1000).to_le_bytes());
    rt.field(RT_FLAGS, 1, &[F_FCS | if bad_fcs { F_BADFCS } else { 0 }]);
    if let PhyRec::Legacy { rate_bps } = phy {
        rt.field(RT_RATE, 1, &[(rate_bps / 500_000) as u8]);
    }
    let (freq, cflags) = channel(band);
    let mut ch = [0u8; 4];
    ch[..2].copy_from_slice(&freq.to_le_bytes());
    ch[2..].copy_from_slice(&cflags.to_le_bytes());
    rt.field(RT_CHANNEL, 2, &ch);
    let (v, ru) = match phy {
        PhyRec::Mcs(v) => (Some(v), None),
        PhyRec::HeRu { v, index, tb } => (Some(v), Some((index, tb))),
        PhyRec::Legacy { .. } => (None, None),
    };
    if let Some(v) = v.filter(|v| v.standard == Standard::Ht) {
        // known: bandwidth, MCS index, GI, HT format, FEC type; flags: BW 20/40, SGI; BCC, mixed.
        let bw = if v.channel_width == 40 { 1 } else { 0 };
        let sgi = if v.guard_interval == 400 { 0x04 } else { 0 };
        rt.field(RT_MCS, 1, &[0x1f, bw | sgi, ht_mcs_index(&v)]);
    }
    if let Some((reference, last)) = ampdu {
        let mut a = [0u8; 8];
        a[..4].copy_from_slice(&reference.to_le_bytes());
        let flags: u16 = 0x0004 | if last { 0x0008 } else { 0 };
        a[4..6].copy_from_slice(&flags.to_le_bytes());
        rt.field(RT_AMPDU, 4, &a);
    }
    if let Some(v) = v.filter(|v| v.standard == Standard::Vht) {
        rt.field(RT_VHT, 2, &vht_field(&v));
    }
    if let Some(v) = v.filter(|v| v.standard == Standard::He) {
        rt.field(RT_HE, 2, &he_field(&v, ru));
    }
    rt.finish()
}

/// HT MCS index: mcs + 8·(nss − 1).
pub fn ht_mcs_index(v: &TxVector) -> u8 {
    v.mcs + 8 * (v.nss.max(1) - 1)
}

/// Radiotap VHT field (12 octets): known = GI + bandwidth, SGI flag, bandwidth code, user 0
/// MCS/NSS, BCC.
pub fn vht_field(v: &TxVector) -> [u8; 12] {
    let mut f = [0u8; 12];
    f[..2].copy_from_slice(&0x0044u16.to_le_bytes());
    f[2] = if v.guard_interval == 400 { 0x04 } else { 0 };
    f[3] = match v.channel_width {
        40 => 1,
        80 => 4,
        160 => 11,
        _ => 0,
    };
    f[4] = (v.mcs << 4) | (v.nss & 0x0f);
    f
}

/// Radiotap HE field (six little-endian u16): HE SU, MCS, coding (LDPC), bandwidth and GI
/// known; NSTS = nss. A user on an RU (`ru`: its index among the RUs of its size, and whether it
/// rode an HE TB PPDU) is marked HE_MU (data1 format 2) or HE_TRIG (3), with its RU size in place
/// of the bandwidth (data5 "data BW/RU allocation" 4..=10: 26- to 2×996-tone RU) and the index in
/// data2's RU allocation offset (bits 8–13, known bit 14) as mt76 writes it
/// (`mt76_connac3_mac_decode_he_radiotap_ru`: the RU's number within its size).
pub fn he_field(v: &TxVector, ru: Option<(u32, bool)>) -> [u8; 12] {
    let format: u16 = match ru {
        Some((_, true)) => 3,
        Some((_, false)) => 2,
        None if v.ru.is_some() => 2,
        None => 0,
    };
    let data1: u16 = format | 0x0020 | 0x0080 | 0x4000;
    let data2: u16 = match ru {
        Some((index, _)) if index < 64 => 0x0002 | 0x4000 | ((index as u16) << 8),
        _ => 0x0002,
    };
    let data3: u16 = ((v.mcs as u16 & 0x0f) << 8) | 0x2000;
    let data4: u16 = 0;
    let bw: u16 = match v.channel_width {
        40 => 1,
        80 => 2,
        160 => 3,
        _ => 0,
    };
    let gi: u16 = match v.guard_interval {
        1600 => 1,
        3200 => 2,
        _ => 0,
    };
    let bw = match v.ru {
        Some(ru) => 4 + lasthop_wifi::phy::RuSize::ALL.iter().position(|&r| r == ru).unwrap_or(0) as u16,
        None => bw,
    };
    let data5: u16 = bw | (gi << 4);
    let data6: u16 = v.nss as u16 & 0x0f;
    let mut f = [0u8; 12];
    for (i, d) in [data1, data2, data3, data4, data5, data6].into_iter().enumerate() {
        f[2 * i..2 * i + 2].copy_from_slice(&d.to_le_bytes());
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields_at(rt: &[u8]) -> (u16, u32) {
        (u16::from_le_bytes([rt[2], rt[3]]), u32::from_le_bytes([rt[4], rt[5], rt[6], rt[7]]))
    }

    #[test]
    fn radiotap_layouts() {
        // Legacy: hdr 8, TSFT 8..16, flags 16, rate 17, channel 18..22.
        let rt = radiotap(1_234_567, Band::Ghz5, PhyRec::Legacy { rate_bps: 24_000_000 }, false, None);
        assert_eq!(fields_at(&rt), (22, 0b1111));
        assert_eq!(rt[0], 0);
        assert_eq!(u64::from_le_bytes(rt[8..16].try_into().unwrap()), 1234);
        assert_eq!(rt[16], 0x10);
        assert_eq!(rt[17], 48);
        assert_eq!(u16::from_le_bytes([rt[18], rt[19]]), 5180);
        // HT in an A-MPDU: flags 16, channel 18..22 (1 pad byte at 17), MCS 22..25,
        // A-MPDU aligned to 4 → 28..36.
        let ht = TxVector::new(Standard::Ht, 7, 2, 40, 400);
        let rt = radiotap(0, Band::Ghz5, PhyRec::Mcs(ht), true, Some((9, true)));
        assert_eq!(fields_at(&rt), (36, 0b1011 | 1 << RT_MCS | 1 << RT_AMPDU));
        assert_eq!(rt[16], 0x50);
        assert_eq!(rt[17], 0, "pad");
        assert_eq!(&rt[22..25], &[0x1f, 0x05, 15]);
        assert_eq!(u32::from_le_bytes(rt[28..32].try_into().unwrap()), 9);
        assert_eq!(u16::from_le_bytes([rt[32], rt[33]]), 0x000c);
        // VHT in an A-MPDU: A-MPDU 24..32, VHT 32..44.
        let vht = TxVector::new(Standard::Vht, 9, 2, 80, 800);
        let rt = radiotap(0, Band::Ghz5, PhyRec::Mcs(vht), false, Some((1, false)));
        assert_eq!(fields_at(&rt), (44, 0b1011 | 1 << RT_AMPDU | 1 << RT_VHT));
        assert_eq!(u16::from_le_bytes([rt[28], rt[29]]), 0x0004);
        assert_eq!(u16::from_le_bytes([rt[32], rt[33]]), 0x0044);
        assert_eq!(rt[35], 4);
        assert_eq!(rt[36], 0x92);
        // HE without A-MPDU: channel 18..22, HE 22..34.
        let he = TxVector::new(Standard::He, 11, 2, 160, 3200);
        let rt = radiotap(0, Band::Ghz6, PhyRec::Mcs(he), false, None);
        assert_eq!(fields_at(&rt), (34, 0b1011 | 1 << RT_HE));
        assert_eq!(u16::from_le_bytes([rt[26], rt[27]]), 0x2b00);
        assert_eq!(u16::from_le_bytes([rt[30], rt[31]]), 0x0023);
        // An HE MU user on the 6th 106-tone RU: format 2, RU offset 5 known, data5's RU size 6;
        // the same RU in an HE TB PPDU: format 3.
        let user = TxVector::new(Standard::He, 7, 1, 80, 800).with_ru(lasthop_wifi::phy::RuSize::Tones106);
        let rt = radiotap(0, Band::Ghz5, PhyRec::HeRu { v: user, index: 5, tb: false }, false, None);
        assert_eq!(u16::from_le_bytes([rt[22], rt[23]]) & 0x0003, 2);
        assert_eq!(u16::from_le_bytes([rt[24], rt[25]]), 0x0002 | 0x4000 | 5 << 8);
        assert_eq!(u16::from_le_bytes([rt[30], rt[31]]) & 0x000f, 6);
        let rt = radiotap(0, Band::Ghz5, PhyRec::HeRu { v: user, index: 5, tb: true }, false, None);
        assert_eq!(u16::from_le_bytes([rt[22], rt[23]]) & 0x0003, 3);
        // Every present field's offset honours its alignment (TSFT 8, channel 2, A-MPDU 4).
        for (off, align) in [(8usize, 8usize), (18, 2), (24, 4), (32, 2)] {
            assert_eq!(off % align, 0);
        }
    }
}
