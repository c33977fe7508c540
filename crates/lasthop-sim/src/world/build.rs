//! Building a cell from its spec: the channels and their contenders, the stations with their
//! rate control and per-AC queues, mesh relays, the AP's queues, the WQM sizers, the flows and
//! the wired link. Contenders are added to their medium in a fixed order (the AP's first data
//! EDCAF, the beacon, each station's first, relay radios, then every other AC's) and every
//! random stream is keyed by what it serves, so a cell built from the same spec and seed is the
//! same cell.

use super::*;
use crate::spec::{self, Driver};
use lasthop_wifi::mac::driver::PullDriver;
use lasthop_wifi::mac::firmware::{AqlLimits, Firmware};
use lasthop_wifi::mac::mt76::Mt76;

/// The cell-wide A-MPDU and response parameters.
struct MacParams {
    aggregation: bool,
    /// Block Ack window.
    win: u32,
    max_mpdus: u32,
    /// A-MPDU length cap (octets).
    ampdu_bytes: u32,
    response_len: u32,
    control_rate: u64,
    /// PPDU time limit per access category slot, for the AP's and the stations' A-MPDUs.
    max_ppdu: Vec<[Duration; 2]>,
    /// TXOP limit per slot, the AP's and the stations' (zero: one frame exchange per TXOP).
    txop: Vec<[Duration; 2]>,
    /// The Block Ack's (or Ack's) duration at the control rate.
    response: Duration,
}

impl MacParams {
    fn new(spec: &Spec, plan: &AcPlan, timing: SlotTiming) -> MacParams {
        let (standard, band, m) = (spec.standard(), spec.band(), &spec.mac);
        let qos = standard != Standard::Ofdm;
        let aggregation = m.aggregation;
        let win = if aggregation { m.max_ampdu_mpdus.min(phy::ba_window(standard) as u32) } else { 1 };
        let max_mpdus = if aggregation { m.max_ampdu_mpdus } else { 1 };
        let std_max_bytes = phy::max_ampdu_bytes(standard);
        let ampdu_bytes = if m.max_ampdu_bytes == 0 { std_max_bytes } else { m.max_ampdu_bytes };
        let response_len = if !aggregation {
            frame::ACK
        } else if win > 64 {
            frame::BLOCK_ACK_256
        } else {
            frame::BLOCK_ACK_64
        };
        let control_rate = spec.phy.control_rate_bps;
        let response = phy::legacy_duration(control_rate, response_len, band);
        let max_ppdu = plan
            .acs
            .iter()
            .map(|&ac| wmm::txop_overrides(spec, ac).map(|t| wmm::ppdu_limit(ac, t, qos, Duration(m.max_ppdu_time_ns), timing.sifs, response)))
            .collect();
        let txop = plan.acs.iter().map(|&ac| wmm::txop_overrides(spec, ac).map(|t| wmm::txop_limit(ac, t, qos))).collect();
        MacParams { aggregation, win, max_mpdus, ampdu_bytes, response_len, control_rate, max_ppdu, txop, response }
    }
}

/// Makes the EDCA functions of the cell, each with its backoff stream.
struct Edcafs<'a> {
    spec: &'a Spec,
    plan: &'a AcPlan,
    seed: u64,
}

impl Edcafs<'_> {
    fn rng(&self, id: u64) -> Rng {
        Rng::stream(self.seed, StreamKind::Backoff, id)
    }

    /// Data EDCAF of node `n` (0 = the AP) in slot `k`, with its owner and priority. A node's
    /// first one is created in the order contenders always had (AP, beacon, stations, relay
    /// radios) and draws from the stream it always did; further ones (other ACs) come after
    /// all of those.
    fn data(&self, n: usize, k: usize, first: bool) -> (Edcaf, u32, u8) {
        let ac = self.plan.acs[k];
        let rng = match (first, n) {
            (true, 0) => self.rng(0),
            (true, n) => self.rng(1 + n as u64),
            (false, n) => self.rng((2 << 32) + ((n as u64) << 2) + k as u64),
        };
        (Edcaf::new(wmm::edca_params(self.spec, ac, n == 0), rng), n as u32, ac.rank())
    }
}

/// The flows and their endpoints, and the saturated sources per (slot, station).
struct Flows {
    flows: Vec<Flow>,
    tcp: Vec<Option<tcp::TcpConn>>,
    quic: Vec<Option<Box<quic::QuicFlow>>>,
    sat_down: Vec<Option<u32>>,
    sat_up: Vec<Option<u32>>,
}

impl World {
    pub fn new(spec: Spec, seed: u64) -> World {
        let standard = spec.standard();
        let band = spec.band();
        let mt = phy::mac_timing(standard, band);
        let timing = SlotTiming { slot: mt.slot, sifs: mt.sifs };
        let m = &spec.mac;
        let qos = standard != Standard::Ofdm;
        let plan = AcPlan::new(&spec);
        let n_slots = plan.acs.len();
        let n_ac = plan.len();
        let schedule = txq_schedule(&spec);
        let fq_cfg = mac_fq_config(&spec);
        let Radios { chans, ap_data, ap_beacon, stations, mut relays, mac } = Radios::new(&spec, seed, &plan, timing, schedule, fq_cfg);
        let (n_ch, n_sta) = (chans.len(), stations.len());
        let wqm_cfg = wqm_config(&spec, timing, &mac);
        let (wqm, ap_limit) = wqm_hosts(wqm_cfg, &stations, &mut relays, n_ch);
        let mut q = EventQueue::new();
        let fl = new_flows(&spec, seed, &plan, n_sta, &mut q);
        let bins = spec.sim.duration_ns.div_ceil(spec.sim.bin_ns) as usize;
        let bin = spec.sim.bin_ns;
        let aggctl = aggctl::new_host(&spec, seed, bins, bin, &mut q);
        let vwire = vwire::new_host(&spec, seed, &mut q);
        let n_flows = fl.flows.len();
        let ack_lowest = phy::legacy_duration(6_000_000, frame::ACK, band);
        let mut txqs = ap_txqs(&spec, seed, n_sta, n_ac, schedule, fq_cfg);
        for (i, st) in spec.stations.iter().enumerate() {
            // hostapd's `airtime_sta_weight` (spec rules: only under airtime fairness, for
            // stations associated with the AP), in every AC's scheduler as mac80211 keeps it.
            if st.airtime_weight != crate::spec::DEFAULT_AIRTIME_WEIGHT {
                for t in txqs.iter_mut() {
                    t.set_airtime_weight(i as u32, Duration::from_micros(st.airtime_weight as u64));
                }
            }
        }
        if let Some(l) = ap_limit {
            // WQM runs with one AC (spec rules): its queue set is the interface queue.
            txqs[plan.main as usize].set_total_limit(l);
        }
        let (wired_down, wired_up) = (wired_link(&spec, seed, 0), wired_link(&spec, seed, 1));
        World {
            seed,
            q,
            end: Instant(spec.sim.duration_ns),
            warmup: Instant(spec.sim.warmup_ns),
            air: Air {
                standard,
                band,
                timing,
                aggregation: mac.aggregation,
                max_mpdus: mac.max_mpdus,
                max_ppdu: mac.max_ppdu,
                txop: mac.txop,
                response: mac.response,
                retry_limit: m.retry_limit,
                qos,
                control_rate: mac.control_rate,
                response_len: mac.response_len,
                ack_timeout: timing.sifs + timing.slot + RX_PHY_START_DELAY,
                eifs_extra: timing.sifs + ack_lowest,
                beacon_interval: Duration(m.beacon_interval_ns),
                eifs_after_collision: m.eifs_after_collision,
                aggregation_min_rate: m.aggregation_min_rate_bps,
                max_amsdu: if qos { m.max_amsdu_bytes } else { 0 },
                rx_per_subframe: m.rx_delivery != crate::spec::RxDelivery::Ppdu,
                ap_rts: RtsPolicy::from_name(&spec.ap.rts).unwrap_or_default(),
            },
            scratch: Scratch::default(),
            chans,
            beacon_pending: false,
            ac_plan: plan,
            ap_data,
            ap_beacon,
            txqs: PerAc::from_vec(txqs),
            driver: Some(ap_driver(&spec, n_sta)),
            ap_pulls: !spec.ap.driver.hardware_queue(),
            airtime_est: (0, 0, 0), // no frame has 0 bits: the first one computes
            stations,
            relays,
            wqm,
            node_tx_ns: vec![0; (n_sta + 1) * n_ch],
            node_tick: Duration(spec.ap.wqm_interval_ns),
            flows: fl.flows,
            sat_down: fl.sat_down,
            sat_up: fl.sat_up,
            wired_down,
            wired_up,
            server_nic: BitRate(spec.wired.server_nic_bps()),
            server_nic_free: Instant::ZERO,
            pkts: Arena::with_capacity(4096),
            tcp: fl.tcp,
            tcp_dirty: Vec::new(),
            gro_pending: Vec::new(),
            quic: fl.quic,
            quic_dgrams: Vec::new(),
            quic_free: Vec::new(),
            aggctl,
            progress_step: Duration((spec.sim.duration_ns / 200).max(1)),
            capture: None,
            vwire,
            ext: None,
            ofdma: spec.mac.ofdma.as_ref().map(|o| ofdma::Ofdma::new(o, spec.phy.channel_width, spec.stations.len() as u32, n_slots)),
            interference: spec.channel.interference.as_ref().map(|i| Box::new(interference::Interference::new(i, Rng::stream(seed, StreamKind::Channel, 1 << 32)))),
            counters: vec![FlowCounters::default(); n_flows],
            ce_marked: vec![0; n_flows],
            air_ce_threshold: (spec.ap.air_ce_threshold_ns > 0).then_some(Duration(spec.ap.air_ce_threshold_ns)),
            at_ap: Vec::new(),
            ack_filter: super::ack_filter::AckFilter::named(&spec.ap.ack_filter),
            ack_filtered: 0,
            totals: Totals::default(),
            ts: BinnedSeries::new(n_flows, n_sta, bins, bin),
            spec,
        }
    }
}

/// The cell's radios: a channel per hop with its medium's contenders, the AP's EDCAFs, the
/// stations and the mesh relays, and the MAC parameters they share.
struct Radios {
    chans: Vec<Chan>,
    ap_data: PerAc<Ctd>,
    ap_beacon: Ctd,
    stations: Vec<Station>,
    relays: Vec<Relay>,
    mac: MacParams,
}

impl Radios {
    /// Contenders join their medium in the order they always did: the AP's first data EDCAF,
    /// the beacon, each station's first, the relays' radios, then every other AC's.
    fn new(spec: &Spec, seed: u64, plan: &AcPlan, timing: SlotTiming, schedule: TxqSchedule, fq_cfg: MacFqConfig) -> Radios {
        // One medium per hop channel.
        let n_ch = spec.stations.iter().map(|st| st.hop_channel as usize + 1).max().unwrap_or(1);
        let mut media: Vec<Medium> = (0..n_ch).map(|_| Medium::new(timing, CCA_WINDOW)).collect();
        let ed = Edcafs { spec, plan, seed };
        let mut ap_data = vec![None; plan.len()];
        let k0 = plan.node_slots[0][0] as usize;
        let (e, o, pr) = ed.data(0, k0, true);
        ap_data[k0] = Some(Ctd { ch: 0, id: media[0].add(e, o, pr) });
        let ap_beacon = Ctd { ch: 0, id: media[0].add(Edcaf::new(EdcaParams::beacon(), ed.rng(1)), 0, wmm::BEACON_PRIORITY) };
        let mac = MacParams::new(spec, plan, timing);
        let mut stations: Vec<Station> = Vec::with_capacity(spec.stations.len());
        for i in 0..spec.stations.len() {
            stations.push(new_station(spec, seed, i, &ed, &mut media, &mac));
        }
        let relays = new_relays(spec, seed, &mut stations, &ed, &mut media, schedule, fq_cfg);
        // The other ACs' EDCAFs (none when every flow uses one AC).
        for (n, slots) in plan.node_slots.iter().enumerate() {
            for &k in &slots[1..] {
                let k = k as usize;
                let (e, o, pr) = ed.data(n, k, false);
                if n == 0 {
                    ap_data[k] = Some(Ctd { ch: 0, id: media[0].add(e, o, pr) });
                } else {
                    let ch = stations[n - 1].ch;
                    stations[n - 1].ac[k].ctd = Some(Ctd { ch, id: media[ch as usize].add(e, o, pr) });
                }
            }
        }
        let ap_data = PerAc::from_vec(ap_data.into_iter().map(|c| c.expect("the AP carries every AC in use")).collect());
        let chans = media
            .into_iter()
            .map(|medium| Chan { medium, access_gen: 0, pending_access: None, exchange: None, txop: None, busy_ns: 0 })
            .collect();
        Radios { chans, ap_data, ap_beacon, stations, relays, mac }
    }
}

/// How the AP's TXQs take turns (`ap.scheduler`).
fn txq_schedule(spec: &Spec) -> TxqSchedule {
    if spec.ap.scheduler == crate::spec::Scheduler::Airtime {
        TxqSchedule::Airtime { quantum: TxqSchedule::AIRTIME_QUANTUM }
    } else {
        TxqSchedule::RoundRobin
    }
}

/// mac80211's flow queue (FQ-CoDel at the AP and relays): its defaults, with the smaller
/// memory limit mac80211 sets on hardware without VHT (`ieee80211_txq_setup_flows`).
fn mac_fq_config(spec: &Spec) -> MacFqConfig {
    spec.mac_fq_config(if matches!(spec.standard(), Standard::Vht | Standard::He) {
        MacFqConfig::default().memory_limit
    } else {
        MacFqConfig::MEMORY_LIMIT_NO_VHT
    })
}

/// The AP's driver (`ap.driver`), with AQL's limits when `ap.aql` is on.
fn ap_driver(spec: &Spec, n_sta: usize) -> AnyDriver<PktRef> {
    let aql = spec.ap.aql.then_some(AqlLimits { low: spec.ap.aql_limit_low_ns, high: spec.ap.aql_limit_high_ns, threshold: spec.ap.aql_threshold_ns });
    match spec.ap.driver {
        Driver::Firmware => AnyDriver::Firmware(Box::new(Firmware::new(n_sta, spec.ap.hw_queue_limit, aql))),
        Driver::Mt76 => AnyDriver::Mt76(Box::new(Mt76::new(n_sta, spec.ap.hw_queue_limit, aql))),
        Driver::Pull | Driver::Ath9k => AnyDriver::Pull(PullDriver),
    }
}

/// A station's A-MPDU limit as the world keeps it: 0 in the spec (the cell's) is no limit of
/// its own.
fn station_limit(v: u32) -> u32 {
    if v == 0 { u32::MAX } else { v }
}

/// Station `i` of the spec: its rate control, error model, per-AC queues and Block Ack
/// agreements, and its first data EDCAF on its hop's medium.
fn new_station(spec: &Spec, seed: u64, i: usize, ed: &Edcafs<'_>, media: &mut [Medium], mac: &MacParams) -> Station {
    let st = &spec.stations[i];
    // Each agreement's window: the originator's, within the buffer its recipient grants in its
    // ADDBA Response (IEEE 802.11-2020 §10.25.2): the station on its downlink, its parent on
    // its uplink (a relay's own grant; the AP's is the cell's).
    let down_win = mac.win.min(station_limit(st.ba_window_rx));
    let up_win = mac.win.min(st.parent.map_or(u32::MAX, |p| station_limit(spec.stations[p as usize].ba_window_rx)));
    let standard = spec.standard();
    let tx = spec.tx_vector(st);
    let ch = st.hop_channel as u16;
    let mut ac: Vec<LinkAc> = (0..ed.plan.len())
        .map(|k| {
            let id = if k == 0 { (2 << 32) + i as u64 } else { (5 << 32) + ((i as u64) << 2) + k as u64 };
            let mut a = LinkAc::new(Spec::station_aqm_config(st).build(Rng::stream(seed, StreamKind::Other, id).next_u64()), down_win, up_win);
            if spec.mac.ampdu_formation == crate::spec::AmpduFormation::Ath9k {
                a.formation = Some(Default::default());
            }
            a
        })
        .collect();
    let k0 = ed.plan.node_slots[1 + i][0] as usize;
    let (e, o, pr) = ed.data(1 + i, k0, true);
    ac[k0].ctd = Some(Ctd { ch, id: media[ch as usize].add(e, o, pr) });
    let psdu_cap = if mac.aggregation { mac.ampdu_bytes } else { u32::MAX };
    let snr = if st.waypoints.is_empty() {
        SnrSource::Fixed(st.snr_db)
    } else {
        let w: Vec<(Instant, f64)> = st.waypoints.iter().map(|&(t, d)| (Instant(t), d)).collect();
        SnrSource::Distance(if st.repeat { Mobility::repeating(w) } else { Mobility::new(w) }, spec.link_budget())
    };
    // Small-scale fading on a link whose errors follow its SNR, from its own stream.
    let snr = match &spec.channel.fading {
        Some(f) if st.error_model == crate::spec::ErrorModel::Snr => {
            let mut rng = Rng::stream(seed, StreamKind::Channel, (2 << 32) + i as u64);
            SnrSource::Faded(Box::new((snr, Fading::new(f.phy_model(), f.doppler_hz, || rng.next_f64()))))
        }
        _ => snr,
    };
    let snr0 = snr.at(Instant::ZERO);
    let rc = |dir: u64| {
        let table = || rate_table(standard, spec.phy.channel_width, spec.phy.guard_interval, st.nss);
        match st.rate_control {
            crate::spec::RateControl::Ideal => RateControl::Ideal(IdealRate::new(table(), snr0)),
            crate::spec::RateControl::Minstrel => {
                let rng = Rng::stream(seed, StreamKind::RateControl, 2 * i as u64 + dir);
                RateControl::MinstrelHt(Box::new(MinstrelHt::new(table(), MinstrelParams::default(), rng, Instant::ZERO)))
            }
            crate::spec::RateControl::Fixed => RateControl::Fixed(tx),
        }
    };
    Station {
        tx,
        psdu_cap,
        ampdu_tx: station_limit(st.ampdu_mpdus_tx),
        rts: RtsPolicy::from_name(&st.rts).unwrap_or_default(),
        err: station_err(st),
        snr,
        succ_cache: (0, 0, 0, 1.0),
        ba_cache: (u64::MAX, 1.0),
        err_rng: Rng::stream(seed, StreamKind::Channel, i as u64),
        rc: [rc(0), rc(1)],
        ac: PerAc::from_vec(ac),
        ch,
        parent: st.parent,
        relay: None,
        entry: i as u32,
        ampdu_hist: [Vec::new(), Vec::new()],
        airtime: [Duration::ZERO; 2],
        rate_sum: [0.0; 2],
        rate_n: [0; 2],
        link: Default::default(),
    }
}

/// Mesh relays: the stations others are associated with, each with its interface queue over
/// its next hops and, when its children are on another channel than its own link, a second
/// radio for them.
fn new_relays(spec: &Spec, seed: u64, stations: &mut [Station], ed: &Edcafs<'_>, media: &mut [Medium], schedule: TxqSchedule, fq_cfg: MacFqConfig) -> Vec<Relay> {
    let mut relays: Vec<Relay> = Vec::new();
    for i in 0..stations.len() {
        let Some(par) = stations[i].parent else { continue };
        let par = par as usize;
        let r = match stations[par].relay {
            Some(r) => r as usize,
            None => {
                stations[par].relay = Some(relays.len() as u32);
                relays.push(Relay { sta: par as u32, txqs: TxqSet::new(0, 1, spec.aqm_config(), 0, schedule), children: Vec::new(), down: None });
                relays.len() - 1
            }
        };
        relays[r].children.push(i as u32);
        stations[i].entry = relays[r].children.len() as u32;
    }
    // The pre-4.10 ath9k keeps frames below the queues, at the AP and every relay.
    let ath9k_stage = spec.ap.driver == Driver::Ath9k;
    let main_ac = spec.main_ac();
    for (r, rl) in relays.iter_mut().enumerate() {
        let up_ch = spec.stations[rl.sta as usize].hop_channel;
        let down_ch = spec.stations[rl.children[0] as usize].hop_channel;
        if down_ch != up_ch {
            let e = Edcaf::new(wmm::edca_params(spec, main_ac, false), ed.rng((1 << 32) + rl.sta as u64));
            rl.down = Some(Ctd { ch: down_ch as u16, id: media[down_ch as usize].add(e, 1 + rl.sta, main_ac.rank()) });
        }
        let seed_r = Rng::stream(seed, StreamKind::Other, (1 << 32) + 1 + r as u64).next_u64();
        rl.txqs = TxqSet::with_fq(1 + rl.children.len(), spec.ap.queue_limit as usize, spec.aqm_config(), seed_r, schedule, fq_cfg);
        if ath9k_stage {
            rl.txqs.add_ath9k_stage(spec.ap.ath9k_qdepth as usize);
        }
        if spec.ap.interface_qdisc() {
            rl.txqs.one_qdisc_per_interface();
        }
        rl.txqs.set_dequeue_cost(Duration(spec.ap.dequeue_cost_ns));
    }
    relays
}

/// The WQM buffer sizer's configuration for this cell (`ap.buffer_sizer = "wqm"`).
fn wqm_config(spec: &Spec, timing: SlotTiming, mac: &MacParams) -> Option<WqmConfig> {
    let standard = spec.standard();
    (spec.ap.buffer_sizer == crate::spec::BufferSizer::Wqm).then(|| {
        let p = wmm::edca_params(spec, spec.main_ac(), false);
        let top_rate = spec
            .stations
            .iter()
            .map(|st| match st.rate_control {
                crate::spec::RateControl::Fixed => spec.tx_vector(st).data_rate_bps(),
                _ => rate_table(standard, spec.phy.channel_width, spec.phy.guard_interval, st.nss)
                    .iter()
                    .map(|t| t.data_rate_bps())
                    .max()
                    .unwrap_or(1),
            })
            .max()
            .unwrap_or(1);
        WqmConfig {
            interval: Duration(spec.ap.wqm_interval_ns),
            limit: Duration(spec.ap.wqm_limit_ns),
            variant: match spec.ap.wqm_variant {
                crate::spec::WqmVariant::Aimd => WqmVariant::Aimd,
                crate::spec::WqmVariant::Aiad => WqmVariant::Aiad,
                crate::spec::WqmVariant::Miad => WqmVariant::Miad,
                crate::spec::WqmVariant::Mimd => WqmVariant::Mimd,
            },
            // Equations (6)–(7) with this cell's slot, SIFS, AIFS and CWmin.
            artt: ArttParams {
                t_slot: timing.slot,
                cw_min: p.cw_min + 1,
                t_difs: timing.sifs + timing.slot * p.aifsn as u64,
                t_sifs: timing.sifs,
                ..ArttParams::default()
            },
            top_rate: BitRate(top_rate),
            k_max: mac.max_mpdus.min(mac.win),
            ..WqmConfig::default()
        }
    })
}

/// A WQM sizer at every forwarding node (the AP and each relay), each starting at the largest
/// buffer it would choose; the relays' queue limits are set to it, the AP's is returned.
fn wqm_hosts(cfg: Option<WqmConfig>, stations: &[Station], relays: &mut [Relay], n_ch: usize) -> (Vec<Option<Box<WqmHost>>>, Option<usize>) {
    let mut wqm: Vec<Option<Box<WqmHost>>> = (0..=stations.len()).map(|_| None).collect();
    let mut ap_limit = None;
    let Some(cfg) = cfg else { return (wqm, ap_limit) };
    let nodes: Vec<usize> = std::iter::once(0).chain(relays.iter().map(|r| r.sta as usize + 1)).collect();
    for n in nodes {
        let ctl = Wqm::new(cfg, Instant::ZERO).expect("WQM parameters validated with the spec");
        // Until its initial stage has a rate to work with, the buffer is the largest the
        // sizer would choose.
        let start = ctl.b_max() as usize;
        if n == 0 {
            ap_limit = Some(start);
        } else {
            let r = stations[n - 1].relay.expect("a relay") as usize;
            relays[r].txqs.set_total_limit(start);
        }
        wqm[n] = Some(Box::new(WqmHost { ctl, last_busy_ns: vec![0; n_ch], last_tx_ns: vec![0; n_ch] }));
    }
    (wqm, ap_limit)
}

/// The spec's flows with their TCP/QUIC endpoints, and which saturated source feeds each
/// (slot, station) queue.
fn new_flows(spec: &Spec, seed: u64, plan: &AcPlan, n_sta: usize, q: &mut EventQueue<Ev>) -> Flows {
    let n_ac = plan.len();
    let n = spec.flows.len();
    let mut out = Flows {
        flows: Vec::with_capacity(n),
        tcp: Vec::with_capacity(n),
        quic: Vec::with_capacity(n),
        sat_down: vec![None; n_sta * n_ac],
        sat_up: vec![None; n_sta * n_ac],
    };
    // Saturated downlink sources share their AC's queue set (its limit) equally.
    let mut n_sat_down = vec![0usize; n_ac];
    for (i, f) in spec.flows.iter().enumerate() {
        if f.pattern == spec::Pattern::Saturated && f.direction == spec::Direction::Down {
            n_sat_down[plan.flow_slot[i] as usize] += 1;
        }
    }
    for (i, f) in spec.flows.iter().enumerate() {
        let k = plan.flow_slot[i] as usize;
        let pattern = match f.pattern {
            spec::Pattern::Cbr => Pattern::Cbr,
            spec::Pattern::Poisson => Pattern::Poisson,
            spec::Pattern::Tcp => Pattern::Tcp,
            spec::Pattern::Quic => Pattern::Quic,
            spec::Pattern::Ping => Pattern::Ping,
            spec::Pattern::Aggctl => Pattern::Aggctl,
            spec::Pattern::Saturated => Pattern::Saturated,
            spec::Pattern::External => Pattern::External,
        };
        let cross = f.direction == spec::Direction::Cross;
        let dir = if f.direction == spec::Direction::Up { Dir::Up } else { Dir::Down };
        let sta = f.station as usize;
        let sat_target = match dir {
            _ if pattern != Pattern::Saturated => 0,
            Dir::Down => {
                // Keyed by the AP's queue the flow's packets enter (its first hop).
                let mut hop = sta;
                while let Some(par) = spec.stations[hop].parent {
                    hop = par as usize;
                }
                out.sat_down[k * n_sta + hop] = Some(i as u32);
                (spec.ap.queue_limit as usize / n_sat_down[k].max(1)).max(1)
            }
            Dir::Up => {
                out.sat_up[k * n_sta + sta] = Some(i as u32);
                spec.stations[sta].queue_limit as usize
            }
        };
        out.quic.push((pattern == Pattern::Quic).then(|| Box::new(quic::new_flow(f, q.add_timer(Ev::QuicTimer(i as u32))))));
        out.tcp.push((pattern == Pattern::Tcp).then(|| {
            let timer = q.add_timer(Ev::TcpTimer(i as u32));
            let sta = &spec.stations[f.station as usize];
            let (gro, counts_below) = (dir == Dir::Down && sta.gro, dir == Dir::Down || sta.tcp_small_queues);
            let seed = Rng::stream(seed, StreamKind::Other, i as u64).next_u64();
            tcp::new_conn(&vwire::server_side(f), dir == Dir::Down, gro, counts_below, seed, timer)
        }));
        out.flows.push(Flow {
            station: f.station,
            cross,
            dir,
            pattern,
            size: f.packet_size,
            rate_bps: f.rate_bps,
            start: Instant(f.start_ns),
            stop: Instant(f.stop_ns),
            k: 0,
            rng: Rng::stream(seed, StreamKind::Traffic, i as u64),
            sat_target,
            ac: k as u8,
        });
    }
    out
}

/// The wired link in direction `d` (0 = down, 1 = up).
fn wired_link(spec: &Spec, seed: u64, d: u64) -> WiredLink<PktRef> {
    let w = &spec.wired;
    let rng = Rng::stream(seed, StreamKind::Wired, d);
    let loss = if d == 1 { w.loss_up.unwrap_or(w.loss) } else { w.loss };
    if w.qdisc == spec::Qdisc::Fifo {
        WiredLink::new(w.rate_bps, w.delay_ns, w.queue_limit as usize, loss, rng)
    } else {
        let q = spec.wired_aqm_config().build(Rng::stream(seed, StreamKind::Other, (3 << 32) + d).next_u64());
        WiredLink::with_qdisc(w.rate_bps, w.delay_ns, q, loss, rng)
    }
}

/// The AP's per-station queues, one set per access category slot. Under FQ-CoDel the ACs
/// share the radio's one flow queue (mac80211's `local->fq`: one table, one limit, the fattest
/// flow of any station and AC dropped); the other qdiscs are one per hardware queue (the mq
/// root), each with its own limit.
fn ap_txqs(spec: &Spec, seed: u64, n_sta: usize, n_ac: usize, schedule: TxqSchedule, fq_cfg: MacFqConfig) -> Vec<TxqSet<PktRef>> {
    let ath9k_stage = spec.ap.driver == Driver::Ath9k;
    let shared_fq = matches!(spec.aqm_config(), lasthop_algo::aqm::AqmConfig::FqCodel(_))
        .then(|| TxqSet::shared_fq(n_sta, n_ac, spec.ap.queue_limit as usize, Rng::stream(seed, StreamKind::Other, 1 << 32).next_u64(), fq_cfg));
    (0..n_ac)
        .map(|k| {
            let id = if k == 0 { 1 << 32 } else { (4 << 32) + k as u64 };
            let mut t = match &shared_fq {
                Some(fq) => TxqSet::on_shared_fq(n_sta, k, fq, schedule),
                None => TxqSet::with_fq(n_sta, spec.ap.queue_limit as usize, spec.aqm_config(), Rng::stream(seed, StreamKind::Other, id).next_u64(), schedule, fq_cfg),
            };
            t.set_dequeue_cost(Duration(spec.ap.dequeue_cost_ns));
            if ath9k_stage {
                t.add_ath9k_stage(spec.ap.ath9k_qdepth as usize);
            }
            if spec.ap.interface_qdisc() {
                t.one_qdisc_per_interface();
            }
            t
        })
        .collect()
}
