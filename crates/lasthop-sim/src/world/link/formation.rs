//! A-MPDUs formed ahead of the air (`mac.ampdu_formation = "ath9k"`,
//! `lasthop_wifi::mac::formation`): each link's formed A-MPDUs, told the link's backlog when a
//! frame joins its queue, when it wins the medium and when its exchange ends. Links without it
//! (`LinkAc::formation` None) build at channel access from everything queued.

use super::*;
use lasthop_wifi::mac::formation::HwFormation;

impl World {
    /// New frames waiting for station `sta`'s link in `dir` and slot `k` where its sender
    /// forms A-MPDUs from: a relay's port, the AP's queue (or its driver stage), the station's
    /// own queue.
    fn link_backlog(&self, sta: u32, dir: Dir, k: usize) -> u32 {
        let n = match (self.relay_port(sta, dir), dir) {
            (Some((r, e)), _) => self.relays[r as usize].txqs.len(e),
            (None, Dir::Down) => self.txqs[k].len(sta),
            (None, Dir::Up) => {
                let a = &self.stations[sta as usize].ac[k];
                a.queue.len_packets() + a.stash.is_some() as usize
            }
        };
        n as u32
    }

    /// The formation state of station `sta`'s link in `dir` and slot `k`, if its sender forms
    /// ahead.
    #[inline]
    fn formation_of(&mut self, sta: u32, dir: Dir, k: usize) -> Option<&mut HwFormation> {
        self.stations[sta as usize].ac[k].formation.as_mut().map(|f| &mut f[dir as usize])
    }

    /// Act on the link's formation state, if its sender forms ahead, with the link's backlog.
    #[inline]
    fn with_formation(&mut self, sta: u32, dir: Dir, k: usize, act: impl FnOnce(&mut HwFormation, u32)) {
        if self.stations[sta as usize].ac[k].formation.is_none() {
            return;
        }
        let backlog = self.link_backlog(sta, dir, k);
        act(self.formation_of(sta, dir, k).expect("checked above"), backlog);
    }

    /// A frame joined the queue of `sta`'s link in `dir`, slot `k` (the driver's
    /// `wake_tx_queue`): with room in the hardware queue, it is formed at once.
    pub(in crate::world) fn formation_enqueued(&mut self, sta: u32, dir: Dir, k: usize) {
        self.with_formation(sta, dir, k, |f, b| f.on_enqueue(b));
    }

    /// The link won the medium, its A-MPDU to hold at most `max_n` MPDUs in `max_psdu` octets:
    /// its oldest formed A-MPDU is the one built now.
    pub(in crate::world) fn formation_begin(&mut self, sta: u32, dir: Dir, k: usize, max_n: usize, max_psdu: u32) {
        self.with_formation(sta, dir, k, |f, b| f.begin(b, max_n as u32, max_psdu));
    }

    /// The A-MPDU is built.
    pub(in crate::world) fn formation_built(&mut self, sta: u32, dir: Dir, k: usize) {
        if let Some(f) = self.formation_of(sta, dir, k) {
            f.built();
        }
    }

    /// The link's exchange ended (its transmit status): the driver forms the next A-MPDU.
    pub(in crate::world) fn formation_complete(&mut self, sta: u32, dir: Dir, k: usize) {
        self.with_formation(sta, dir, k, |f, b| f.on_complete(b));
    }

    /// Whether the A-MPDU being built on `sta`'s link may take another new frame (always, when
    /// its sender builds at channel access).
    #[inline]
    pub(in crate::world) fn formation_may_take(&self, sta: u32, dir: Dir, k: usize) -> bool {
        self.stations[sta as usize].ac[k].formation.as_ref().is_none_or(|f| f[dir as usize].may_take())
    }

    /// The A-MPDU being built took new frame `p`.
    #[inline]
    pub(in crate::world) fn formation_took(&mut self, sta: u32, dir: Dir, k: usize, p: PktRef) {
        let octets = frame::mpdu_len(p.len, self.air.qos) + frame::MPDU_DELIMITER;
        if let Some(f) = self.formation_of(sta, dir, k) {
            f.took(octets);
        }
    }
}
