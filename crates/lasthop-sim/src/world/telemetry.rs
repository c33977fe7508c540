//! What the cell's AP shows a program running on it: the figures a Linux mac80211 AP reports
//! through nl80211 (station dump, channel survey, the phy's TXQ limit and statistics) and the
//! one knob a buffer sizer turns (the phy-wide TXQ packet limit). The emulator encodes them as
//! nl80211 messages for the AP host's telemetry socket (`lasthop-live/src/nl/`); this module
//! only takes a snapshot of the model, it changes nothing but the limit.
//!
//! Counters here cover the whole run, warm-up included (a kernel's counters start when the
//! station associates), unlike the result file's figures, which start after warm-up.

use super::*;
use lasthop_wifi::phy::{ru, RuSize};

/// Whole-run counters of one direction of a station's link (the transmitter's view).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Data PPDUs sent.
    pub ppdus: u64,
    /// MPDU transmissions, first attempts and retries.
    pub mpdus_attempted: u64,
    /// MPDUs acknowledged (in a Block Ack or Ack that came back).
    pub mpdus_acked: u64,
    /// IP octets of the acknowledged MPDUs (the first MSDU's of an A-MSDU).
    pub bytes_acked: u64,
    /// MPDUs abandoned at the retry limit.
    pub failed: u64,
    /// Airtime of the PPDUs (from channel access to the end of the response).
    pub airtime_ns: u64,
}

impl LinkCounters {
    pub(super) fn on_ppdu(&mut self, attempted: u32, acked: u32, bytes: u64, airtime: Duration) {
        self.ppdus += 1;
        self.mpdus_attempted += attempted as u64;
        self.mpdus_acked += acked as u64;
        self.bytes_acked += bytes;
        self.airtime_ns += airtime.as_nanos();
    }

    /// Retransmissions: failed attempts that were tried again.
    pub fn retries(&self) -> u64 {
        (self.mpdus_attempted - self.mpdus_acked).saturating_sub(self.failed)
    }
}

/// One station as the AP sees it (`iw dev wlan0 station dump`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StationTelemetry {
    pub station: u32,
    /// The AP's current rate to the station (its rate control's choice).
    pub tx_rate: TxVector,
    /// The station's current rate to the AP.
    pub rx_rate: TxVector,
    /// Received signal strength at the AP in dBm: the link's SNR over the channel's noise floor.
    pub signal_dbm: f64,
    /// AP → station.
    pub tx: LinkCounters,
    /// Station → AP.
    pub rx: LinkCounters,
    /// The station's queue at the AP (all access categories).
    pub backlog_packets: u64,
    pub backlog_bytes: u64,
    /// Packets its queue discipline dropped (AQM and its own overflow).
    pub qdisc_drops: u64,
    /// FQ-CoDel: flow queues created so far (nl80211's TXQ "flows"); other disciplines: 0.
    pub flows: u32,
    /// Most full-size MPDUs one A-MPDU at `tx_rate` holds (the aggregate length a buffer sizer
    /// takes as `B_min`; 1 without aggregation).
    pub ampdu_capacity: u32,
    /// Mean MPDUs per downlink PPDU since the previous snapshot that saw a PPDU (0 if none yet).
    pub ampdu_mean: f64,
    /// Goodput the AP expects at `tx_rate` (bit/s): full A-MPDUs of `ampdu_capacity` MPDUs,
    /// each costing AIFS, half the minimum contention window, the PPDU, SIFS and the Block Ack.
    pub expected_throughput_bps: u64,
}

/// The channel the AP's cell is on (`iw dev wlan0 survey dump`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurveyTelemetry {
    pub freq_mhz: u32,
    pub noise_dbm: f64,
    /// Time on the channel: the run so far.
    pub active_ns: u64,
    /// Time the medium was busy (every transmission, the AP's own included).
    pub busy_ns: u64,
    /// Time the AP spent transmitting.
    pub tx_ns: u64,
    /// Time the AP spent receiving stations' data PPDUs.
    pub rx_ns: u64,
}

/// The phy's transmit queues as a whole (`iw phy phy0 info`: "TXQ" lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxqTelemetry {
    /// The packet limit over all stations' queues (`NL80211_ATTR_TXQ_LIMIT`).
    pub limit: u64,
    pub backlog_packets: u64,
    pub backlog_bytes: u64,
    /// Arrivals refused at the limit.
    pub overlimit: u64,
    /// Packets the stations' queue disciplines dropped.
    pub drops: u64,
}

/// A snapshot of the AP.
#[derive(Clone, Debug, PartialEq)]
pub struct ApTelemetry {
    pub now_ns: u64,
    pub stations: Vec<StationTelemetry>,
    pub survey: SurveyTelemetry,
    pub txq: TxqTelemetry,
    /// The largest TXQ limit the model's queues accept (the spec's `ap.queue_limit`).
    pub max_txq_limit: u64,
}

/// A conventional centre frequency for the band (2.4 GHz: channel 6; 5 GHz: 36; 6 GHz: 1).
fn band_freq_mhz(band: Band) -> u32 {
    match band {
        Band::Ghz2_4 => 2437,
        Band::Ghz5 => 5180,
        Band::Ghz6 => 5955,
    }
}

/// Mean MPDUs per PPDU between two histogram snapshots (sum k·n_k / sum n_k).
fn hist_mean(now: &[u64], before: &[u64]) -> Option<f64> {
    let (mut m, mut n) = (0u64, 0u64);
    for (k, (&a, &b)) in now.iter().zip(before).enumerate() {
        let d = a - b;
        m += k as u64 * d;
        n += d;
    }
    (n > 0).then(|| m as f64 / n as f64)
}

/// Per-station state a telemetry reader keeps between snapshots (A-MPDU histogram at the
/// previous snapshot, the last mean seen).
#[derive(Clone, Debug, Default)]
pub struct TelemetryCursor {
    hist: Vec<Vec<u64>>,
    mean: Vec<f64>,
}

impl World {
    /// A snapshot of what the AP reports (see the module doc). `cursor` keeps the A-MPDU
    /// histograms between calls, so `ampdu_mean` covers the PPDUs since the previous call.
    pub fn ap_telemetry(&mut self, cursor: &mut TelemetryCursor) -> ApTelemetry {
        let now = self.q.now();
        let n = self.stations.len();
        cursor.hist.resize(n, Vec::new());
        cursor.mean.resize(n, 0.0);
        let main = self.ac_plan.main as usize;
        let noise = phy::channel::noise_floor_dbm(self.spec.phy.channel_width, self.spec.channel.noise_figure_db);
        let mut stations = Vec::with_capacity(n);
        for s in 0..n {
            let tx_rate = self.stations[s].rc[Dir::Down as usize].current();
            let rx_rate = self.stations[s].rc[Dir::Up as usize].current();
            let cap = self.ampdu_capacity(s as u32, &tx_rate);
            let st = &self.stations[s];
            let (mut backlog_packets, mut backlog_bytes, mut qdisc_drops, mut flows) = (0u64, 0u64, 0u64, 0u32);
            if st.parent.is_none() {
                for t in self.txqs.iter() {
                    backlog_packets += t.len(s as u32) as u64;
                    backlog_bytes += t.sta_backlog_bytes(s as u32);
                    qdisc_drops += t.sta_drops(s as u32);
                    flows += t.sta_flows(s as u32) as u32;
                }
            }
            let h = &st.ampdu_hist[Dir::Down as usize];
            let before = &mut cursor.hist[s];
            if before.len() != h.len() {
                *before = vec![0; h.len()];
            }
            if let Some(m) = hist_mean(h, before) {
                cursor.mean[s] = m;
            }
            before.copy_from_slice(h);
            stations.push(StationTelemetry {
                station: s as u32,
                tx_rate,
                rx_rate,
                signal_dbm: st.snr.at(now) + noise,
                tx: st.link[Dir::Down as usize],
                rx: st.link[Dir::Up as usize],
                backlog_packets,
                backlog_bytes,
                qdisc_drops,
                flows,
                ampdu_capacity: cap,
                ampdu_mean: cursor.mean[s],
                expected_throughput_bps: self.expected_throughput(&tx_rate, cap),
            });
        }
        // The AP's channel: the one its first station's link is on (every AP link shares it).
        let ch = self.stations.iter().find(|s| s.parent.is_none()).map_or(0, |s| s.ch as usize);
        let rx_ns = self.stations.iter().filter(|s| s.parent.is_none()).map(|s| s.link[Dir::Up as usize].airtime_ns).sum();
        let survey = SurveyTelemetry {
            freq_mhz: band_freq_mhz(self.air.band),
            noise_dbm: noise,
            active_ns: now.as_nanos(),
            busy_ns: self.chans[ch].busy_ns,
            tx_ns: self.node_tx_ns[ch],
            rx_ns,
        };
        let txq = TxqTelemetry {
            limit: self.txqs[main].total_limit() as u64,
            backlog_packets: self.txqs.iter().map(|t| t.total_len() as u64).sum(),
            backlog_bytes: self.txqs.iter().map(|t| t.backlog_bytes()).sum(),
            overlimit: self.txqs.iter().map(|t| t.dropped_total_limit()).sum(),
            drops: stations.iter().map(|s| s.qdisc_drops).sum(),
        };
        ApTelemetry { now_ns: now.as_nanos(), stations, survey, txq, max_txq_limit: self.spec.ap.queue_limit as u64 }
    }

    /// Set the AP's phy-wide TXQ packet limit (`iw phy phy0 set txq limit N`): every access
    /// category's queue set gets `limit`, clamped to `1..=ap.queue_limit` (the queues were
    /// built for that many). Lowering it drops nothing; queued packets above it drain.
    /// Returns the limit now in force.
    pub fn set_ap_txq_limit(&mut self, limit: u64) -> u64 {
        let l = limit.min(usize::MAX as u64) as usize;
        for k in 0..self.txqs.len() {
            self.txqs[k].set_total_limit(l);
        }
        self.txqs[self.ac_plan.main as usize].total_limit() as u64
    }

    /// Goodput of back-to-back full A-MPDUs of `k` MPDUs at `txv` in `mac.access_category`
    /// (bit/s), without collisions or losses.
    fn expected_throughput(&self, txv: &TxVector, k: u32) -> u64 {
        let per = frame::mpdu_len(1500, self.air.qos) + frame::MPDU_DELIMITER;
        let psdu = per * k;
        let ppdu = phy::ppdu_duration(txv, psdu, self.air.band);
        let ac = self.spec.mac.access_category;
        let e = EdcaParams::default_for(ac, true);
        let access = self.air.timing.sifs + self.air.timing.slot * (e.aifsn as u64) + Duration(self.air.timing.slot.as_nanos() * e.cw_min as u64 / 2);
        let resp = phy::legacy_duration(self.air.control_rate, self.air.response_len, self.air.band);
        let cycle = access + ppdu + self.air.timing.sifs + resp;
        if cycle.is_zero() {
            return 0;
        }
        (k as u128 * 1500 * 8 * 1_000_000_000 / cycle.as_nanos() as u128) as u64
    }
}

impl World {
    /// Add the PPDUs of the exchange starting at `now` that the captured node sends or is the
    /// addressed receiver of to the capture. Reads the world, changes nothing else.
    pub(super) fn record_exchange(&mut self, now: Instant, txs: &[Tx], collision: bool, response_sent: bool) {
        use crate::capture::TcpRec;
        let Some(cap) = self.capture.as_deref_mut() else { return };
        let ampdu = self.air.aggregation || matches!(self.air.standard, Standard::Vht | Standard::He);
        let control = PhyRec::Legacy { rate_bps: self.air.control_rate };
        for tx in txs {
            if tx.kind == TxKind::Beacon {
                let seq = self.totals.beacons;
                let phy = PhyRec::Legacy { rate_bps: BEACON_RATE };
                cap.single(now.as_nanos(), PpduKind::Beacon { seq }, Node::Ap, Node::Broadcast, phy, collision, !collision);
                continue;
            }
            // Where the users' RUs sit (a capture convention: the model's channel is flat).
            let mut ru_index = Vec::new();
            if tx.users.iter().any(|u| u.txv.ru.is_some()) {
                let sizes: Vec<RuSize> = tx.users.iter().map(|u| u.txv.ru.unwrap_or(RuSize::full_band(u.txv.channel_width))).collect();
                ru::place(tx.users[0].txv.channel_width, &sizes, &mut ru_index);
            }
            // One record per user, each with the Block Ack/Ack its recipient sent back.
            for (ui, u) in tx.users.iter().enumerate() {
                let (sta, dir, v) = (u.sta, u.dir, u.txv);
                if !cap.involves(sta) {
                    continue;
                }
                let parent = match self.stations[sta as usize].parent {
                    None => Node::Ap,
                    Some(par) => Node::Station(par),
                };
                let (t, r) = match dir {
                    Dir::Down => (parent, Node::Station(sta)),
                    Dir::Up => (Node::Station(sta), parent),
                };
                let phy = if v.standard == Standard::Ofdm {
                    PhyRec::Legacy { rate_bps: phy::LEGACY_RATES[v.mcs as usize] }
                } else if v.ru.is_some() {
                    PhyRec::HeRu { v, index: ru_index[ui], tb: dir == Dir::Up }
                } else {
                    PhyRec::Mcs(v)
                };
                let pkts = &self.pkts;
                let mpdus = u.mpdus.iter().map(|&(seq, p, ok)| {
                    let pk = &pkts[p.id as usize];
                    // Sequence numbers as on the wire: byte offsets mod 2^32.
                    let tcp = match pk.tcp {
                        TcpMeta::None | TcpMeta::Quic { .. } | TcpMeta::Aggctl { .. } | TcpMeta::External { .. } => TcpRec::None,
                        TcpMeta::Data { seg, rev } => {
                            TcpRec::Data { seq: seg.seq as u32, len: seg.len, rev, retransmit: seg.retransmit, cwr: seg.cwr }
                        }
                        TcpMeta::Ack { ack, rev } => TcpRec::Ack {
                            ack: ack.cum_ack as u32,
                            sack: ack.sack.map(|(s, e)| (s as u32, e as u32)),
                            n_sack: ack.n_sack,
                            rwnd: ack.rwnd.min(u32::MAX as u64) as u32,
                            rev,
                            ece: ack.ece,
                            accecn: ack.accecn.map(|f| (f.ace, f.eceb)),
                        },
                    };
                    let sent_ms = (pk.created.as_nanos() / 1_000_000) as u32;
                    MpduRec { seq, flow: pk.flow, ip_len: p.len, retry: pk.retries > 0 || pk.ghost, ok, sent_ms, tcp, ecn: pk.ecn.bits() }
                });
                // A protected PPDU: its RTS, then the CTS and the data if the CTS came back.
                let mut start = now;
                if let Some(rts) = tx.rts {
                    let Some(i) = cap.single(now.as_nanos(), PpduKind::Rts, t, r, control, collision, rts.cts) else { return };
                    if !rts.cts {
                        continue;
                    }
                    cap.single((rts.end + self.air.timing.sifs).as_nanos(), PpduKind::Cts { rts: i }, r, t, control, false, true);
                    start = rts.data;
                }
                let Some(idx) = cap.data(start.as_nanos(), t, r, phy, ampdu, collision, mpdus) else { return };
                if response_sent && u.mpdus.iter().any(|m| m.2) {
                    let at = (tx.ppdu_end + self.air.timing.sifs).as_nanos();
                    let kind = if self.air.aggregation { PpduKind::BlockAck { data: idx } } else { PpduKind::Ack { data: idx } };
                    cap.single(at, kind, r, t, control, false, u.acked);
                }
            }
        }
    }
}
