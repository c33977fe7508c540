//! Split uploads: a TCP upload (`flows[].split` on a station → server flow) ends at the AP's
//! proxy, as the live proxy's transparent listener takes every TCP connection a station opens
//! (`lasthop-live vwire`, its uplink spliced through unshaped).
//!
//! The station's sender (the flow's `cc`: its own stack) talks to a receiver *in the AP*, whose
//! ACKs enter the AP's queue for the station, so that connection sees the WiFi hop only; a
//! sender in the AP (`split_wired_cc`) carries the bytes to the server's receiver on the wired
//! uplink. The flow's `World::tcp` entry keeps the station's sender and the server's receiver,
//! served by the world's TCP host as for an end-to-end flow; this module holds the two
//! endpoints in the AP.
//!
//! The window the AP's receiver advertises is the least of
//! - `vwire.window_clamp`, the proxy's `TCP_WINDOW_CLAMP` on its sockets (Linux
//!   `tcp_set_window_clamp`: the advertised window never exceeds it), when set;
//! - the relay buffer's room: `vwire.relay_buffer` less the bytes delivered in order and not yet
//!   acknowledged by the server;
//! - its own buffer less its out-of-order bytes.
//!
//! The flow's goodput is what the server's receiver delivers; its one-way delay is the WiFi
//! leg's, from the station's sender to the proxy.
//!
//! The clamp bounds what the station may have in flight, so its upload holds at most that much
//! in the station's own queue: the reply of a ping from that station waits behind no more.
//! A window update goes to the station when the window has at least doubled (and grown by two
//! segments) since it was last advertised, as for the downloads' wired side.

use super::Advert;
use crate::engine::{EventQueue, TimerId};
use crate::spec::{FlowSpec, VwireSpec};
use crate::world::{Dir, Ev, PktRef, TcpMeta, World};
use lasthop_algo::tcp::{ack_ip_len, data_ip_len, TcpReceiver, TcpReceiverConfig, TcpSender, TcpSenderConfig};
use lasthop_core::Instant;

/// One split upload's endpoints in the AP.
pub(in crate::world) struct UpConn {
    flow: u32,
    sta: u32,
    /// Station → AP connection, AP end.
    rx: TcpReceiver,
    /// AP → server connection, AP end.
    tx: TcpSender,
    /// Bytes written into `tx`.
    written: u64,
    relay_buffer: u64,
    /// What the AP's receiver last advertised to the station.
    adv: Advert,
    timer: TimerId,
}

impl UpConn {
    /// Bytes delivered in order by the AP's receiver and not yet acknowledged by the server.
    fn backlog(&self) -> u64 {
        self.rx.delivered() - self.tx.stats().app_bytes_acked
    }

    /// The window the AP's receiver advertises (the module's three bounds).
    fn window(&self) -> u64 {
        self.rx.rwnd().min(self.relay_buffer.saturating_sub(self.backlog()))
    }
}

/// The AP's endpoints of split upload `f` (flow index `i`), the AP's sender seeded by `seed`.
pub(super) fn new_conn(f: &FlowSpec, i: u32, v: &VwireSpec, seed: u64, q: &mut EventQueue<Ev>) -> UpConn {
    let mss = f.packet_size.saturating_sub(lasthop_algo::tcp::IP_TCP_HEADERS).max(64);
    let wired = super::server_side_of(f);
    let (cc, _, pace) = crate::world::tcp::cc_config(&wired, seed);
    let tx = TcpSender::new(TcpSenderConfig { mss, cc, pacing: pace, ..TcpSenderConfig::default() }, Instant(f.start_ns));
    let clamp = if v.window_clamp_bytes == 0 { v.relay_buffer_bytes } else { v.window_clamp_bytes.min(v.relay_buffer_bytes) };
    let rx = TcpReceiver::new(TcpReceiverConfig { mss, rwnd: clamp, ..TcpReceiverConfig::default() });
    UpConn {
        flow: i,
        sta: f.station,
        rx,
        tx,
        written: 0,
        relay_buffer: v.relay_buffer_bytes,
        adv: Advert::new(clamp, mss as u64),
        timer: q.add_timer(Ev::Vwire(i)),
    }
}

impl World {
    fn up_conn(&mut self, c: usize) -> &mut UpConn {
        &mut self.vwire.as_deref_mut().expect("vwire host").ups[c]
    }

    /// A station's data segment of split upload `c` reached the AP: it ends at the proxy.
    pub(in crate::world) fn vwire_up_data(&mut self, c: usize, p: PktRef, t: Instant) {
        let pk = self.pkts[p.id as usize];
        let TcpMeta::Data { mut seg, .. } = pk.tcp else { unreachable!("ACK on the uplink of a split upload") };
        seg.ecn = pk.ecn;
        self.up_conn(c).rx.handle_segment(t, &seg);
        // The flow's one-way delay: the WiFi leg, from the station's write to the proxy (the
        // downloads' split flows measure theirs from the proxy to the station).
        if t >= self.warmup {
            self.record_delay(p.flow as usize, t, (t - pk.created).as_nanos());
        }
        self.release(p);
        let now = self.q.now().max(t);
        self.vwire_up_pump(c, now);
    }

    /// The server's ACK of split upload `c` reached the AP: it ends at the proxy.
    pub(in crate::world) fn vwire_up_ack(&mut self, c: usize, p: PktRef, now: Instant) {
        let pk = self.pkts[p.id as usize];
        let TcpMeta::Ack { ack, .. } = pk.tcp else { unreachable!("data on the wired downlink of a split upload") };
        self.up_conn(c).tx.handle_ack(now, &ack);
        self.release(p);
        self.vwire_up_pump(c, now);
    }

    /// Split upload `c`'s timer (delayed ACK, the AP's sender's retransmission and pacing).
    pub(in crate::world) fn vwire_up_timer(&mut self, c: usize, now: Instant) {
        let uc = self.up_conn(c);
        uc.rx.handle_timeout(now);
        uc.tx.handle_timeout(now);
        self.vwire_up_pump(c, now);
    }

    /// Relay what the AP's receiver delivered into its sender (unshaped), send what that sender
    /// may on the wired uplink, ACK the station with the window, re-arm the timer.
    fn vwire_up_pump(&mut self, c: usize, now: Instant) {
        let uc = self.up_conn(c);
        let fresh = uc.rx.delivered() - uc.written;
        if fresh > 0 {
            uc.tx.app_write(fresh);
            uc.written += fresh;
        }
        let f = uc.flow;
        while let Some(seg) = self.up_conn(c).tx.poll_transmit(now, 0) {
            let p = self.alloc_control(f, data_ip_len(seg.len), now);
            self.pkts[p.id as usize].tcp = TcpMeta::Data { seg, rev: false };
            self.wired_send(p, Dir::Up, now);
        }
        loop {
            let uc = self.up_conn(c);
            let w = uc.window();
            let Some(ack) = uc.adv.next_ack(&mut uc.rx, now, w) else { break };
            let sta = uc.sta;
            let p = self.alloc_control(f, ack_ip_len(ack.n_sack), now);
            self.pkts[p.id as usize].tcp = TcpMeta::Ack { ack, rev: false };
            self.ap_enqueue(sta, p, now);
        }
        let uc = self.up_conn(c);
        if let Some(t) = [uc.rx.poll_timeout(), uc.tx.poll_timeout()].into_iter().flatten().min() {
            let timer = uc.timer;
            self.q.set_timer(timer, t.max(now));
        }
    }

}
