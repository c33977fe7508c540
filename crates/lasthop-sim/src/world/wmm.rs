//! WMM: access categories with their own queues and EDCA functions at every node.
//!
//! IEEE 802.11-2020 §10.2.3.2 and §10.23.2 (HCF contention-based channel access, EDCA;
//! §10.22.2 in 802.11-2016): a QoS station has one EDCA function (EDCAF) per access category,
//! each with its own parameter set (Table 9-155: dot11EDCATable for non-AP stations,
//! dot11QAPEDCATable for the AP) and its own transmit queue. Every packet belongs to the AC of
//! its flow (`flows[].ac`, default `mac.access_category`); a flow's reverse-direction packets
//! (TCP and QUIC ACKs, echo replies, feedback reports) travel in the same AC, as Linux gives
//! them the same socket priority / DSCP.
//!
//! Which EDCAFs exist is decided once, when the world is built, from the flow list: a node (the
//! AP, a station) gets one per AC that some flow through it uses (a node no flow crosses keeps
//! one, in the first AC in use). A spec whose flows all use one AC therefore builds exactly one
//! data EDCAF per node, as before WMM existed here. The ACs in use are numbered in increasing
//! priority ("slots"); per slot:
//!
//! - the AP keeps one `TxqSet` (per-station queues, mac80211's pull interface; mac80211
//!   schedules the txqs of each AC separately, `ieee80211_next_txq(hw, ac)`, with airtime
//!   deficits per station and AC) behind its own total packet limit `ap.queue_limit` (Linux's
//!   mq root has one child qdisc per hardware queue); under FQ-CoDel the sets share the radio's
//!   one flow queue instead (mac80211's `local->fq`: one table and one limit for every TID);
//! - a station keeps one own transmit queue (`stations[].queue_limit`, `stations[].qdisc`);
//! - every link has one Block Ack agreement per direction (a TID per AC: BE 0, BK 1, VI 5,
//!   VO 6), so sequence numbers, windows and reordering are per AC.
//!
//! Internal collisions (§10.23.2.4): EDCAFs of one station whose backoff ends in the same slot
//! do not collide on the air; the one of the higher-priority AC transmits and the others act
//! as after an external collision — CW doubles (and returns to CWmin at the retry limit) and a
//! new backoff is drawn (`Medium::start_access`, `World::on_access`). No frame is lost: the
//! frames of the losing AC stay queued, and their per-MPDU retry counters do not count the
//! internal collision (they count transmissions on the air).
//!
//! TXOP limits: a TXOP of AC_VI or AC_VO may last 4.096 ms or 2.080 ms (Table 9-155, OFDM-based
//! PHYs). For those ACs the A-MPDU's PPDU time limit is lowered until the whole exchange — the
//! PPDU, SIFS and the Block Ack — fits the TXOP limit (§10.23.2, TXOP limits), and the holder
//! sends further exchanges in the same TXOP while its rest holds them (`exchange/txop.rs`);
//! AC_BE and AC_BK (limit 0: one frame exchange per TXOP) keep `mac.max_ppdu_time`.
//! `mac.txop_limit` (the limit the AP advertises in its EDCA Parameter Set, which the stations
//! use; hostapd's `wmm_ac_*`) and `ap.txop_limit` (the AP's own, hostapd's `tx_queue_data*`,
//! which does not follow the advertised set) set the limit of `mac.access_category` the same way
//! (0 = one frame exchange, no PPDU limit beyond `mac.max_ppdu_time`).
//!
//! `mac.cw_min`, `mac.cw_max` and `mac.aifsn` override the stations' parameters of
//! `mac.access_category` only, `ap.cw_min`, `ap.cw_max` and `ap.aifsn` the AP's. Mesh relays
//! (one interface queue), the firmware driver model and the WQM buffer sizer (each sizing one
//! queue) work in one AC: the spec rules reject a flow through them whose AC
//! is not `mac.access_category` (`spec.rs`), and they use the slot of that AC (`AcPlan::main`).

use super::*;
use lasthop_wifi::mac::formation::HwFormation;

/// Contender priority of the AP's beacon function: above every AC.
pub(super) const BEACON_PRIORITY: u8 = 4;

/// The access categories in use and which nodes use which.
pub(super) struct AcPlan {
    /// The ACs some flow uses (`mac.access_category` if none does), in increasing priority;
    /// slot k is `acs[k]`.
    pub acs: Vec<AccessCategory>,
    /// Slot of each flow.
    pub flow_slot: Vec<u8>,
    /// Slots each node has an EDCAF for (0 = the AP, 1 + s = station s): non-empty,
    /// increasing. The AP carries every flow, so it has all of them.
    pub node_slots: Vec<Vec<u8>>,
    /// Slot of `mac.access_category` (0 if no flow uses it): relays, the firmware and WQM.
    pub main: u8,
    /// Slot by AC rank (`AccessCategory::rank`); meaningful for ACs in use.
    pub slot_of_rank: [u8; 4],
}

impl AcPlan {
    pub fn new(spec: &Spec) -> AcPlan {
        let main_ac = spec.main_ac();
        let cell = |f: &crate::spec::FlowSpec| f.direction != crate::spec::Direction::Cross;
        let mut used = [false; 4];
        for f in spec.flows.iter().filter(|f| cell(f)) {
            used[spec.flow_ac(f).rank() as usize] = true;
        }
        if !used.contains(&true) {
            used[main_ac.rank() as usize] = true;
        }
        let acs: Vec<AccessCategory> = AccessCategory::ALL.into_iter().filter(|a| used[a.rank() as usize]).collect();
        let mut slot_of_rank = [0u8; 4];
        for (k, a) in acs.iter().enumerate() {
            slot_of_rank[a.rank() as usize] = k as u8;
        }
        let main = if used[main_ac.rank() as usize] { slot_of_rank[main_ac.rank() as usize] } else { 0 };
        let flow_slot = spec
            .flows
            .iter()
            .map(|f| if cell(f) { slot_of_rank[spec.flow_ac(f).rank() as usize] } else { main })
            .collect();
        // Every node on a flow's path uses its AC: the AP, the station, the relays between.
        let n = spec.stations.len() + 1;
        let mut node_used = vec![[false; 4]; n];
        for f in spec.flows.iter().filter(|f| cell(f)) {
            let k = slot_of_rank[spec.flow_ac(f).rank() as usize] as usize;
            node_used[0][k] = true;
            let mut s = Some(f.station);
            while let Some(i) = s {
                node_used[1 + i as usize][k] = true;
                s = spec.stations.get(i as usize).and_then(|st| st.parent);
            }
        }
        // A relay forwards in the main AC even if no flow crosses it yet.
        for st in &spec.stations {
            if let Some(p) = st.parent {
                node_used[1 + p as usize][main as usize] = true;
            }
        }
        let node_slots = node_used
            .iter()
            .map(|u| {
                let v: Vec<u8> = (0..acs.len() as u8).filter(|&k| u[k as usize]).collect();
                if v.is_empty() {
                    vec![0]
                } else {
                    v
                }
            })
            .collect();
        AcPlan { acs, flow_slot, node_slots, main, slot_of_rank }
    }

    pub fn len(&self) -> usize {
        self.acs.len()
    }
}

/// One value per access category slot. The first is stored inline and the others (present
/// only when flows use several ACs) behind it, so the single-AC hot path reads its queues and
/// Block Ack state where it always did, behind one well-predicted branch.
#[derive(Clone, Debug)]
pub(super) struct PerAc<T> {
    first: T,
    rest: Vec<T>,
}

impl<T> PerAc<T> {
    /// From the values of slots 0, 1, …; there must be at least one.
    pub fn from_vec(v: Vec<T>) -> PerAc<T> {
        let mut it = v.into_iter();
        let first = it.next().expect("at least one access category");
        PerAc { first, rest: it.collect() }
    }

    pub fn len(&self) -> usize {
        1 + self.rest.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        std::iter::once(&self.first).chain(self.rest.iter())
    }
}

impl<T> std::ops::Index<usize> for PerAc<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, k: usize) -> &T {
        if k == 0 {
            &self.first
        } else {
            &self.rest[k - 1]
        }
    }
}

impl<T> std::ops::IndexMut<usize> for PerAc<T> {
    #[inline(always)]
    fn index_mut(&mut self, k: usize) -> &mut T {
        if k == 0 {
            &mut self.first
        } else {
            &mut self.rest[k - 1]
        }
    }
}

/// One link's state in one AC: the Block Ack agreements of its TID in both directions, the
/// station's own transmit queue of that AC, and the station's EDCAF for it.
pub(super) struct LinkAc {
    /// The station's EDCAF of this AC on the channel of its link (None: no flow through the
    /// station uses the AC).
    pub ctd: Option<Ctd>,
    /// The station's own transmit queue (leaf stations; `stations.qdisc`).
    pub queue: AnyQdisc<PktRef>,
    /// A frame pulled from a discipline other than FIFO that did not fit the A-MPDU; sent first.
    pub stash: Option<PktRef>,
    pub down_orig: Originator<PktRef>,
    pub down_rcpt: Recipient<PktRef>,
    pub up_orig: Originator<PktRef>,
    pub up_rcpt: Recipient<PktRef>,
    /// Largest PSDU within the A-MPDU cap and this AC's PPDU time limit, per (nss, mcs); 0 =
    /// not computed; empty until the link first sends.
    pub psdu_by_rate: Vec<u32>,
    /// The A-MPDUs its senders formed ahead of the air, [down, up] (`mac.ampdu_formation =
    /// "ath9k"`); None when they are built at channel access.
    pub formation: Option<Box<[HwFormation; 2]>>,
}

impl LinkAc {
    /// `down_win`, `up_win`: the windows of the link's two Block Ack agreements.
    pub fn new(queue: AnyQdisc<PktRef>, down_win: u32, up_win: u32) -> LinkAc {
        LinkAc {
            ctd: None,
            queue,
            stash: None,
            down_orig: Originator::new(down_win),
            down_rcpt: Recipient::new(down_win),
            up_orig: Originator::new(up_win),
            up_rcpt: Recipient::new(up_win),
            psdu_by_rate: Vec::new(),
            formation: None,
        }
    }

    /// The originator of `dir`.
    #[inline]
    pub fn orig(&mut self, dir: Dir) -> &mut Originator<PktRef> {
        match dir {
            Dir::Down => &mut self.down_orig,
            Dir::Up => &mut self.up_orig,
        }
    }

    /// The Block Ack agreement of `dir`: its originator and recipient.
    #[inline]
    pub fn agreement(&mut self, dir: Dir) -> (&mut Originator<PktRef>, &mut Recipient<PktRef>) {
        match dir {
            Dir::Down => (&mut self.down_orig, &mut self.down_rcpt),
            Dir::Up => (&mut self.up_orig, &mut self.up_rcpt),
        }
    }

    /// The station's own queue of this AC holds nothing (queued, stashed or to retransmit).
    #[inline]
    pub fn up_idle(&self) -> bool {
        self.queue.is_empty() && self.stash.is_none() && !self.up_orig.has_retx()
    }
}

/// Whether data EDCAF `id` belongs to a station that sent one of `txs` (a sibling AC of a
/// transmitter, which does not receive that PPDU and so never defers EIFS after it). The AP's
/// beacon function keeps deferring like any bystander, as it did before WMM.
pub(super) fn own_data_ppdu(medium: &Medium, txs: &[Tx], id: ContenderId) -> bool {
    let c = medium.get(id);
    c.priority < BEACON_PRIORITY && txs.iter().any(|t| medium.get(t.contender).owner == c.owner)
}

/// The contenders that do not defer EIFS after `txs`: the transmitters and their stations'
/// other data EDCAFs (`own_data_ppdu`). Looked up by owner, so the cost is that of the
/// transmitting stations, not of the cell.
pub(super) fn eifs_exempt(medium: &Medium, txs: &[Tx]) -> Vec<ContenderId> {
    let mut out: Vec<ContenderId> = txs.iter().map(|t| t.contender).collect();
    for t in txs {
        for &id in medium.owned_by(medium.get(t.contender).owner) {
            if !out.contains(&id) && own_data_ppdu(medium, txs, id) {
                out.push(id);
            }
        }
    }
    out
}

/// The EDCA parameters of an EDCAF of `ac` at the AP (`ap`) or a station: Table 9-155 (DCF
/// for `ofdm`); for `mac.access_category` only, at a station `mac.cw_min`, `mac.cw_max`,
/// `mac.aifsn` (the EDCA Parameter Set the AP advertises, hostapd's `wmm_ac_*`) override them,
/// and at the AP `ap.cw_min`, `ap.cw_max`, `ap.aifsn` (its own, hostapd's `tx_queue_data*`,
/// which hostapd sets apart from the advertised set: "used by the access point when
/// transmitting frames to the clients").
pub(super) fn edca_params(spec: &Spec, ac: AccessCategory, ap: bool) -> EdcaParams {
    if spec.standard() == Standard::Ofdm {
        return EdcaParams::dcf();
    }
    let mut p = EdcaParams::default_for(ac, ap);
    if ac == spec.main_ac() {
        let (cw_min, cw_max, aifsn) = if ap {
            (spec.ap.cw_min, spec.ap.cw_max, spec.ap.aifsn)
        } else {
            (spec.mac.cw_min, spec.mac.cw_max, spec.mac.aifsn)
        };
        p.cw_min = cw_min.unwrap_or(p.cw_min);
        p.cw_max = cw_max.unwrap_or(p.cw_max);
        p.aifsn = aifsn.unwrap_or(p.aifsn);
    }
    p
}

/// The PPDU time limit of an A-MPDU in `ac`: `max_ppdu`, and for an AC with a TXOP limit
/// (Table 9-155, or `txop` for `mac.access_category`) the longest PPDU whose exchange — PPDU,
/// SIFS, `response` — fits it.
pub(super) fn ppdu_limit(ac: AccessCategory, txop: Option<Duration>, qos: bool, max_ppdu: Duration, sifs: Duration, response: Duration) -> Duration {
    match txop.or(ac.txop_limit()).filter(|t| !t.is_zero()) {
        Some(txop) if qos => max_ppdu.min(Duration(txop.0.saturating_sub((sifs + response).0))),
        _ => max_ppdu,
    }
}

/// The TXOP limit of `ac` (`txop` as the spec sets it, else Table 9-155's); zero without QoS
/// or where the limit is one frame exchange.
pub(super) fn txop_limit(ac: AccessCategory, txop: Option<Duration>, qos: bool) -> Duration {
    match txop.or(ac.txop_limit()) {
        Some(t) if qos => t,
        _ => Duration::ZERO,
    }
}

/// The TXOP limits of `ac` that the spec sets, for the AP and for the stations
/// (`ap.txop_limit`, hostapd's `tx_queue_data*_burst`; `mac.txop_limit`, the advertised
/// `wmm_ac_*_txop_limit`: `mac.access_category` only, each for its own side). None: Table
/// 9-155's.
pub(super) fn txop_overrides(spec: &Spec, ac: AccessCategory) -> [Option<Duration>; 2] {
    if ac != spec.main_ac() {
        return [None, None];
    }
    [spec.ap.txop_limit_ns.map(Duration), spec.mac.txop_limit_ns.map(Duration)]
}

impl World {
    /// The AC slot of a packet (its flow's).
    #[inline]
    pub(super) fn slot_of(&self, p: PktRef) -> usize {
        if self.ac_plan.acs.len() == 1 {
            return 0;
        }
        self.flows[p.flow as usize].ac as usize
    }

    /// Index of (slot `k`, station `sta`) in the per-slot station tables.
    #[inline]
    pub(super) fn sat_idx(&self, k: usize, sta: u32) -> usize {
        k * self.stations.len() + sta as usize
    }

    /// The AC slot of a data contender (from its priority, the AC's rank).
    #[inline]
    pub(super) fn ctd_slot(&self, c: Ctd) -> usize {
        let prio = self.chans[c.ch as usize].medium.get(c.id).priority;
        self.ac_plan.slot_of_rank[prio.min(3) as usize] as usize
    }

    /// Station `sta`'s EDCAF of slot `k` (which must exist).
    #[inline]
    pub(super) fn sta_ctd(&self, sta: u32, k: usize) -> Ctd {
        self.stations[sta as usize].ac[k].ctd.expect("an EDCAF for a slot a flow uses")
    }

    /// Make sure station `sta` has an EDCAF in slot `k` (a flow added after the world was
    /// built, by a real-time host, in an AC the station had no flow in).
    pub(super) fn ensure_edcaf(&mut self, sta: u32, k: usize) {
        let s = &self.stations[sta as usize];
        if s.ac[k].ctd.is_some() {
            return;
        }
        let (ch, ac) = (s.ch, self.ac_plan.acs[k]);
        let rng = Rng::stream(self.seed, StreamKind::Backoff, (3 << 32) + ((1 + sta as u64) << 2) + k as u64);
        let mut e = Edcaf::new(edca_params(&self.spec, ac, false), rng);
        e.set_ref(self.q.now());
        let id = self.chans[ch as usize].medium.add(e, 1 + sta, ac.rank());
        self.stations[sta as usize].ac[k].ctd = Some(Ctd { ch, id });
    }

    /// The TID of flow `f`'s QoS Data frames: its access category's (`AccessCategory::tid`).
    pub fn flow_tid(&self, f: u32) -> u8 {
        self.ac_plan.acs[self.flows[f as usize].ac as usize].tid()
    }

    /// Internal collisions so far (an EDCAF lost to a higher-priority one of its station).
    pub fn internal_collisions(&self) -> u64 {
        self.totals.internal_collisions
    }

    /// The access categories in use, in increasing priority (the AP has an EDCAF for each).
    pub fn access_categories(&self) -> &[AccessCategory] {
        &self.ac_plan.acs
    }

    /// Data EDCAFs of node `n` (0 = the AP, 1 + s = station s, its relay radio included).
    pub fn node_edcafs(&self, n: usize) -> usize {
        if n == 0 {
            return self.ap_data.len();
        }
        let s = &self.stations[n - 1];
        let radio = s.relay.is_some_and(|r| self.relays[r as usize].down.is_some()) as usize;
        radio + s.ac.iter().filter(|a| a.ctd.is_some()).count()
    }

    /// Contention window of node `n`'s EDCAF of `ac` (None if it has none).
    pub fn edcaf_cw(&self, n: usize, ac: AccessCategory) -> Option<u32> {
        let k = self.ac_plan.acs.iter().position(|&a| a == ac)?;
        let c = if n == 0 { Some(self.ap_data[k]) } else { self.stations[n - 1].ac[k].ctd }?;
        Some(self.chans[c.ch as usize].medium.get(c.id).cw())
    }
}
