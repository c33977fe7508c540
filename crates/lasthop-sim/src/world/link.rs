//! One link's frames as the MAC components of `lasthop_wifi::mac` see them: the A-MPDU builder
//! pulls from it ([`PullSource`]) and the Block Ack scoreboard tells it what became of each
//! MPDU ([`CompletionSink`]). The world keeps the packets, queues and endpoints; these adapters
//! only route the components' questions and verdicts to them.

use super::{mpdu_bytes, Dir, DropWhy, PktRef, World};
use lasthop_core::Instant;
use lasthop_wifi::mac::ampdu::{PullSource, Take};
use lasthop_wifi::mac::blockack::{Originator, Recipient};
use lasthop_wifi::mac::scoreboard::CompletionSink;

/// Station `sta`'s link in `dir`, access category slot `k` (through relay port `port` when a
/// relay forwards it), at `now`.
pub(super) struct LinkIo<'a> {
    pub w: &'a mut World,
    pub sta: u32,
    pub dir: Dir,
    pub k: usize,
    pub port: Option<(u32, u32)>,
    pub now: Instant,
}

impl PullSource<PktRef> for LinkIo<'_> {
    #[inline]
    fn originator(&mut self) -> &mut Originator<PktRef> {
        self.w.stations[self.sta as usize].ac[self.k].orig(self.dir)
    }
    #[inline]
    fn take(&mut self, fits: &dyn Fn(u32) -> bool) -> Take<PktRef> {
        self.w.take_new(self.sta, self.dir, self.k, self.port, self.now, fits)
    }
    #[inline]
    fn ip_len(&self, p: PktRef) -> u32 {
        p.len
    }
    #[inline]
    fn mpdu_len(&self, p: PktRef) -> u32 {
        mpdu_bytes(&self.w.pkts, self.w.qos, p)
    }
    #[inline]
    fn chain(&mut self, tail: PktRef, next: PktRef) {
        let t = &mut self.w.pkts[tail.id as usize];
        t.next = next.id;
        t.next_len = next.len;
    }
    #[inline]
    fn seal_amsdu(&mut self, head: PktRef, mpdu: u32) {
        self.w.pkts[head.id as usize].mpdu = mpdu;
    }
}

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
            for i in 0..self.w.chain_buf.len() {
                self.w.tcp_sent_from(self.sta, self.w.chain_buf[i]);
            }
        }
    }
    /// A downlink frame frees its firmware slot once acknowledged.
    #[inline]
    fn acked(&mut self, p: PktRef) {
        if self.dir == Dir::Down {
            self.w.msdus_into(p);
            for i in 0..self.w.chain_buf.len() {
                self.w.fw_release(self.sta, self.w.chain_buf[i]);
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
        let chain = std::mem::take(&mut w.chain_buf);
        for &q in &chain {
            if dir == Dir::Up {
                w.tcp_sent_from(sta, q);
            } else {
                w.fw_release(sta, q);
            }
            w.drop_pkt(q, DropWhy::Retry);
        }
        w.chain_buf = chain;
    }
}
