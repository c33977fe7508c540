//! What became of a link's MPDUs, as the Block Ack scoreboard tells it ([`CompletionSink`]): an
//! uplink TCP segment leaves its sender's queue once received, a downlink frame frees its
//! firmware slot once acknowledged (`fw_release`), a copy is resent after a lost Block Ack, and
//! an MPDU abandoned at the retry limit is dropped.

use super::*;
use lasthop_wifi::mac::blockack::{Originator, Recipient};
use lasthop_wifi::mac::scoreboard::CompletionSink;

impl CompletionSink<PktRef> for LinkIo<'_> {
    #[inline]
    fn agreement(&mut self) -> (&mut Originator<PktRef>, &mut Recipient<PktRef>) {
        self.w.stations[self.sta as usize].ac[self.k].agreement(self.dir)
    }
    /// An uplink TCP segment has left its sender's queue once received.
    #[inline]
    fn received(&mut self, p: PktRef) {
        if self.dir == Dir::Up {
            self.w.msdus_into(p);
            for i in 0..self.w.scratch.chain.len() {
                self.w.tcp_sent_from(self.sta, self.w.scratch.chain[i]);
            }
        }
    }
    /// A downlink frame frees its firmware slot once acknowledged.
    #[inline]
    fn acked(&mut self, p: PktRef) {
        if self.dir == Dir::Down {
            self.w.msdus_into(p);
            for i in 0..self.w.scratch.chain.len() {
                self.w.fw_release(self.sta, self.w.scratch.chain[i]);
            }
        }
    }
    fn resend_copy(&mut self, p: PktRef) -> PktRef {
        self.w.ghost_copy(p)
    }
    #[inline]
    fn failed_attempt(&mut self, p: PktRef) -> u32 {
        let pk = &mut self.w.pkts[p.id as usize];
        pk.retries += 1;
        pk.retries as u32
    }
    fn abandon(&mut self, p: PktRef) {
        let (w, sta, dir) = (&mut *self.w, self.sta, self.dir);
        w.stations[sta as usize].link[dir as usize].failed += 1;
        w.msdus_into(p);
        let chain = std::mem::take(&mut w.scratch.chain);
        for &q in &chain {
            if dir == Dir::Up {
                w.tcp_sent_from(sta, q);
            } else {
                w.fw_release(sta, q);
            }
            w.drop_pkt(q, DropWhy::Retry);
        }
        w.scratch.chain = chain;
    }
}

impl World {
    /// The firmware is done with a frame of `sta` (acknowledged or dropped).
    #[inline]
    fn fw_release(&mut self, sta: u32, p: PktRef) {
        let aql = self.pkts[p.id as usize].aql as u64;
        if let Some(d) = self.driver.as_mut() {
            d.release(sta, aql);
        }
        self.vwire_tx_done(p);
    }
}
