//! What `lasthop aggctl` puts on the wire: the paced data packets (sender → receiver) and the
//! authenticated reports (receiver → sender) that carry the estimator's [`AggReport`].
//!
//! Data packet, UDP payload (the rest of the datagram up to `--size` is padding or, in relay
//! mode, the application's datagram), integers little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | magic `"AD"` |
//! | 2 | 1 | version 1 |
//! | 3 | 1 | flags: bit 0 = relayed payload follows the header |
//! | 4 | 4 | session: the sender's random id for this run |
//! | 8 | 8 | seq: per receiver, from 0 |
//! | 16 | 8 | departure: the scheduled departure, CLOCK_REALTIME ns |
//!
//! Report packet ([`REPORT_PKT_LEN`] bytes):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | magic `"AR"` |
//! | 2 | 1 | version 1 |
//! | 3 | 1 | zero |
//! | 4 | 4 | session the receiver last saw |
//! | 8 | 8 | counter: the receiver's report number, strictly increasing (replay guard) |
//! | 16 | 28 | the estimator's [`AggReport`] (its own layout, lasthop-algo `report.rs`) |
//! | 44 | 8 | packets received so far |
//! | 52 | 8 | packets lost so far (sequence gaps) |
//! | 60 | 8 | mean one-way delay in the slot, ns (i64; meaningful when the clocks agree) |
//! | 68 | 16 | tag: HMAC-SHA256 (RFC 2104, FIPS 180-4) over bytes 0..68 with the receiver's key, truncated to 128 bits (RFC 2104 §5) |
//!
//! Keys. The sender holds a master key; the key of the receiver it reaches at `ADDR:PORT` is
//! `HMAC-SHA256(master, "lasthop aggctl v1 receiver " + ADDR:PORT)` (`lasthop aggctl key`
//! prints it). A station holds only its own key, so it cannot produce a report that the sender
//! accepts for another station, even from that station's address; the session and counter
//! make an old report of its own (or a captured one) useless.

use hmac::{Hmac, Mac};
use lasthop_algo::control::aggctl::{AggReport, REPORT_LEN};
use sha2::Sha256;

pub const DATA_MAGIC: [u8; 2] = *b"AD";
pub const REPORT_MAGIC: [u8; 2] = *b"AR";
pub const VERSION: u8 = 1;
pub const DATA_HDR: usize = 24;
pub const FLAG_RELAY: u8 = 1;
const BODY: usize = 68;
pub const TAG_LEN: usize = 16;
pub const REPORT_PKT_LEN: usize = BODY + TAG_LEN;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataHdr {
    pub flags: u8,
    pub session: u32,
    pub seq: u64,
    pub departure_ns: u64,
}

impl DataHdr {
    pub fn write(&self, b: &mut [u8]) {
        b[0..2].copy_from_slice(&DATA_MAGIC);
        b[2] = VERSION;
        b[3] = self.flags;
        b[4..8].copy_from_slice(&self.session.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.departure_ns.to_le_bytes());
    }

    pub fn read(b: &[u8]) -> Option<DataHdr> {
        if b.len() < DATA_HDR || b[0..2] != DATA_MAGIC || b[2] != VERSION {
            return None;
        }
        Some(DataHdr {
            flags: b[3],
            session: u32::from_le_bytes(b[4..8].try_into().ok()?),
            seq: u64::from_le_bytes(b[8..16].try_into().ok()?),
            departure_ns: u64::from_le_bytes(b[16..24].try_into().ok()?),
        })
    }
}

/// A report as the receiver sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReportPkt {
    pub session: u32,
    pub counter: u64,
    pub report: AggReport,
    pub received: u64,
    pub lost: u64,
    pub owd_mean_ns: i64,
}

type HmacSha256 = Hmac<Sha256>;

fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

/// The key of the receiver the sender reaches at `addr` ("10.0.0.2:7450").
pub fn receiver_key(master: &[u8], addr: &str) -> Vec<u8> {
    mac(master, &[b"lasthop aggctl v1 receiver ", addr.as_bytes()]).to_vec()
}

/// Why a report packet was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// Wrong length, magic or version, or an inconsistent report.
    Malformed,
    /// The tag does not match the key of the station it came from.
    Forged,
}

impl ReportPkt {
    pub fn encode(&self, key: &[u8]) -> [u8; REPORT_PKT_LEN] {
        let mut b = [0u8; REPORT_PKT_LEN];
        b[0..2].copy_from_slice(&REPORT_MAGIC);
        b[2] = VERSION;
        b[4..8].copy_from_slice(&self.session.to_le_bytes());
        b[8..16].copy_from_slice(&self.counter.to_le_bytes());
        b[16..16 + REPORT_LEN].copy_from_slice(&self.report.encode());
        b[44..52].copy_from_slice(&self.received.to_le_bytes());
        b[52..60].copy_from_slice(&self.lost.to_le_bytes());
        b[60..68].copy_from_slice(&self.owd_mean_ns.to_le_bytes());
        let t = mac(key, &[&b[..BODY]]);
        b[BODY..].copy_from_slice(&t[..TAG_LEN]);
        b
    }

    /// Check the tag with `key` (in constant time) and parse.
    pub fn decode(b: &[u8], key: &[u8]) -> Result<ReportPkt, Reject> {
        if b.len() != REPORT_PKT_LEN || b[0..2] != REPORT_MAGIC || b[2] != VERSION || b[3] != 0 {
            return Err(Reject::Malformed);
        }
        let mut m = <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC takes any key length");
        m.update(&b[..BODY]);
        m.verify_truncated_left(&b[BODY..]).map_err(|_| Reject::Forged)?;
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let report = AggReport::decode(&b[16..16 + REPORT_LEN]).map_err(|_| Reject::Malformed)?;
        Ok(ReportPkt {
            session: u32::from_le_bytes(b[4..8].try_into().expect("4 bytes")),
            counter: u64_at(8),
            report,
            received: u64_at(44),
            lost: u64_at(52),
            owd_mean_ns: u64_at(60) as i64,
        })
    }
}

/// A key file: the key in hex (16 to 64 bytes), whitespace and `#` comments ignored. Err is
/// what is wrong with it, for a one-line message.
pub fn parse_key(text: &str) -> Result<Vec<u8>, String> {
    let hex: String = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    if hex.is_empty() {
        return Err("empty: it must hold a key of 16 to 64 bytes in hex".into());
    }
    if !hex.len().is_multiple_of(2) || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err("not hex: it must hold a key of 16 to 64 bytes in hex".into());
    }
    let bytes: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digits")).collect();
    if !(16..=64).contains(&bytes.len()) {
        return Err(format!("{} bytes: a key has 16 to 64 bytes", bytes.len()));
    }
    Ok(bytes)
}

pub fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt() -> ReportPkt {
        ReportPkt {
            session: 7,
            counter: 3,
            report: AggReport { seq: 9, aggregates: 10, packets: 320, mean_rate: None, mcs: None },
            received: 1000,
            lost: 2,
            owd_mean_ns: -5,
        }
    }

    #[test]
    fn reports_round_trip_and_any_changed_bit_is_refused() {
        let k = receiver_key(b"0123456789abcdef", "10.0.0.2:7450");
        let b = pkt().encode(&k);
        assert_eq!(ReportPkt::decode(&b, &k), Ok(pkt()));
        for i in 0..b.len() {
            let mut c = b;
            c[i] ^= 0x10;
            assert!(ReportPkt::decode(&c, &k).is_err(), "byte {i}");
        }
        // Another station's key, or the master itself, does not verify.
        let other = receiver_key(b"0123456789abcdef", "10.0.0.3:7450");
        assert_eq!(ReportPkt::decode(&b, &other), Err(Reject::Forged));
        assert_eq!(ReportPkt::decode(&b[..40], &k), Err(Reject::Malformed));
    }

    #[test]
    fn hmac_sha256_matches_rfc4231_case_2() {
        // RFC 4231 §4.3: key "Jefe", data "what do ya want for nothing?".
        let t = mac(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        assert_eq!(to_hex(&t), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    #[test]
    fn key_files() {
        assert_eq!(parse_key("# k\n00112233445566778899aabbccddeeff\n").unwrap().len(), 16);
        assert!(parse_key("").unwrap_err().contains("empty"));
        assert!(parse_key("xyz").unwrap_err().contains("not hex"));
        assert!(parse_key("0011").unwrap_err().contains("2 bytes"));
    }

    #[test]
    fn data_header_round_trips() {
        let h = DataHdr { flags: FLAG_RELAY, session: 0xdead, seq: 1 << 40, departure_ns: 123 };
        let mut b = [0u8; 64];
        h.write(&mut b);
        assert_eq!(DataHdr::read(&b), Some(h));
        assert_eq!(DataHdr::read(&b[..10]), None);
    }
}
