//! When an A-MPDU's new frames are chosen, for a driver that forms aggregates ahead of the
//! air: ath9k builds an A-MPDU when it hands frames to the hardware, from what the link's
//! queue holds at that moment, and keeps at most [`ATH_AGGR_MIN_QDEPTH`] A-MPDUs in the
//! hardware queue (`ath_tx_sched_aggr` in `drivers/net/wireless/ath/ath9k/xmit.c` stops while
//! `axq_ampdu_depth >= ATH_AGGR_MIN_QDEPTH`; a frame's arrival, through mac80211's
//! `wake_tx_queue`, and each transmit completion schedule the queue again). A frame that
//! reaches an idle link so leaves in an A-MPDU of its own, and while one A-MPDU is on the air
//! the next is already fixed: the frames that arrive meanwhile wait for the one formed at its
//! completion. The default formation (ns-3's) builds the A-MPDU at channel access from
//! everything queued.
//!
//! [`HwFormation`] keeps one link's formed A-MPDUs as counts of new frames, first in line
//! (the link's queue serves its frames in order), each at most the frames an A-MPDU holds at
//! the link's last rate (ath9k forms within its length limits and forms the next while the
//! hardware queue has room): sans-IO, told the link's backlog at each arrival, channel access
//! and completion. Retransmissions are not counted: the A-MPDU
//! builder puts them first in whatever A-MPDU goes next (ath9k forms them into the next one
//! it forms).

/// ath9k's `ATH_AGGR_MIN_QDEPTH` (ath9k.h): the A-MPDUs a hardware queue holds before the
/// driver stops forming more.
pub const ATH_AGGR_MIN_QDEPTH: u8 = 2;

/// One link's A-MPDUs formed ahead of the air (see the module).
#[derive(Clone, Copy, Debug, Default)]
pub struct HwFormation {
    /// New frames of each formed A-MPDU not yet on the air, oldest first.
    formed: [u32; ATH_AGGR_MIN_QDEPTH as usize],
    n_formed: u8,
    /// Formed A-MPDUs handed to the air whose exchange has not ended.
    on_air: u8,
    /// New frames the A-MPDU being built may still take.
    left: u32,
    /// Most new frames one A-MPDU holds at the link's last rate (0: not yet known).
    limit: u32,
    /// Octets of the last new frame's subframe (its MPDU and delimiter; 0: none yet).
    frame: u32,
}

impl HwFormation {
    /// A-MPDUs in the hardware queue: on the air or formed behind.
    #[inline]
    pub fn depth(&self) -> u8 {
        self.on_air + self.n_formed
    }

    /// The formed A-MPDUs' new frames, oldest first.
    pub fn formed(&self) -> &[u32] {
        &self.formed[..self.n_formed as usize]
    }

    /// Frames of the queue already in a formed A-MPDU (or in the one being built).
    fn committed(&self) -> u32 {
        self.formed().iter().sum::<u32>() + self.left
    }

    /// While the hardware queue has room, form an A-MPDU of the queued frames not yet formed,
    /// as many as one holds.
    fn form(&mut self, backlog: u32) {
        let mut free = backlog.saturating_sub(self.committed());
        while self.depth() < ATH_AGGR_MIN_QDEPTH && free > 0 {
            let n = if self.limit > 0 { free.min(self.limit) } else { free };
            self.formed[self.n_formed as usize] = n;
            self.n_formed += 1;
            free -= n;
        }
    }

    /// A frame joined the link's queue, which now holds `backlog` new frames.
    pub fn on_enqueue(&mut self, backlog: u32) {
        self.form(backlog);
    }

    /// The link won the medium with `backlog` new frames queued, and its A-MPDU at the rate
    /// chosen may hold `max_mpdus` MPDUs in `max_psdu` octets: its oldest formed A-MPDU goes
    /// (everything queued if none is formed, as after frames were dropped from the queue).
    pub fn begin(&mut self, backlog: u32, max_mpdus: u32, max_psdu: u32) {
        let by_len = max_psdu.checked_div(self.frame).unwrap_or(max_mpdus);
        self.limit = max_mpdus.min(by_len).max(1);
        self.left = if self.n_formed > 0 {
            let first = self.formed[0];
            self.formed.copy_within(1.., 0);
            self.n_formed -= 1;
            first
        } else {
            backlog
        };
        self.on_air += 1;
    }

    /// Whether the A-MPDU being built may take another new frame.
    #[inline]
    pub fn may_take(&self) -> bool {
        self.left > 0
    }

    /// The A-MPDU being built took a new frame, a subframe of `octets` (MPDU and delimiter).
    #[inline]
    pub fn took(&mut self, octets: u32) {
        self.left -= 1;
        self.frame = octets;
    }

    /// The A-MPDU is built: what it did not take (a rate lower than at its formation, the
    /// Block Ack window) is first in line, and goes with the next formed A-MPDU.
    pub fn built(&mut self) {
        let left = std::mem::take(&mut self.left);
        if left == 0 {
            return;
        }
        if self.n_formed > 0 {
            self.formed[0] += left;
        } else {
            self.formed[0] = left;
            self.n_formed = 1;
        }
    }

    /// The exchange of the A-MPDU on the air ended with `backlog` new frames queued: its place
    /// in the hardware queue is free and the driver forms the next from what waits.
    pub fn on_complete(&mut self, backlog: u32) {
        self.on_air = self.on_air.saturating_sub(1);
        self.form(backlog);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Build the A-MPDU on the air: every new frame it may take (1600 octets each); how many.
    fn take_all(f: &mut HwFormation) -> u32 {
        let mut taken = 0;
        while f.may_take() {
            f.took(1600);
            taken += 1;
        }
        taken
    }

    #[test]
    fn a_burst_to_an_idle_link_leaves_its_first_frames_alone() {
        let mut f = HwFormation::default();
        // Ten frames arrive one after another at an idle link.
        for backlog in 1..=10 {
            f.on_enqueue(backlog);
        }
        assert_eq!(f.formed(), &[1, 1]);
        // The first goes alone, the second alone; the eight behind wait for a completion.
        f.begin(10, 64, 65535);
        assert_eq!(take_all(&mut f), 1);
        f.built();
        f.on_complete(9);
        assert_eq!(f.formed(), &[1, 8]);
        f.begin(9, 64, 65535);
        f.took(1600);
        f.built();
        f.on_complete(8);
        assert_eq!(f.formed(), &[8]);
    }

    #[test]
    fn frames_left_out_of_an_aggregate_go_first_in_the_next() {
        let mut f = HwFormation::default();
        f.on_enqueue(5);
        assert_eq!(f.formed(), &[5]);
        f.begin(5, 64, 65535);
        f.took(1600);
        f.took(1600);
        f.built(); // a lower rate left three behind
        assert_eq!(f.formed(), &[3]);
        f.on_enqueue(4); // one more arrives while the two are on the air: no room
        assert_eq!(f.formed(), &[3]);
        f.on_complete(4);
        assert_eq!(f.formed(), &[3, 1]);
    }

    #[test]
    fn a_deep_queue_keeps_two_full_a_mpdus_formed() {
        let mut f = HwFormation::default();
        f.begin(0, 30, 65535);
        f.built();
        f.on_complete(0);
        f.on_enqueue(1000);
        assert_eq!(f.formed(), &[30, 30]);
        f.begin(1000, 30, 65535);
        assert_eq!(take_all(&mut f), 30);
        f.built();
        f.on_enqueue(971);
        f.on_complete(971);
        assert_eq!(f.formed(), &[30, 30]);
    }

    #[test]
    fn without_a_formed_aggregate_everything_queued_goes() {
        let mut f = HwFormation::default();
        f.begin(7, 64, 65535);
        assert_eq!(take_all(&mut f), 7);
    }

    #[test]
    fn the_queue_never_holds_more_than_two_formed() {
        let mut f = HwFormation::default();
        for backlog in 1..=100 {
            f.on_enqueue(backlog);
            assert!(f.depth() <= ATH_AGGR_MIN_QDEPTH);
        }
        f.begin(100, 64, 65535);
        f.built();
        for backlog in 100..=150 {
            f.on_enqueue(backlog);
            assert!(f.depth() <= ATH_AGGR_MIN_QDEPTH);
        }
    }
}
