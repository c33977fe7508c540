//! TSO/GSO sending as Linux 3.12–3.18 did it (`net/ipv4/tcp_output.c`, `net/ipv4/tcp.c`), for
//! senders whose bursts matter (switch `TcpSenderConfig::tso_defer`, off by default).
//!
//! A Linux sender with TSO or GSO hands the device one skb of several segments at a time, which
//! leave back to back at the link's rate. Two rules shape those bursts:
//!
//! - **The size goal** (`tcp_xmit_size_goal`, with "TSO packets automatic sizing" of Linux
//!   3.12): the writer fills each skb up to sk_pacing_rate / (2·MSEC_PER_SEC) bytes — half a
//!   millisecond at the pacing rate — at least `tcp_min_tso_segs` (2) segments, at most
//!   `gso_max_size` − 1 − the headers (65,483 bytes: 45 segments of 1448), at most half the
//!   largest window the peer advertised (`tcp_bound_to_half_wnd`), in whole segments. In Linux
//!   3.12–3.18 `tcp_update_pacing_rate` sets sk_pacing_rate to 200 % of cwnd·MSS/SRTT in every
//!   state (the 200 % / 120 % split of slow start and congestion avoidance came later), and
//!   leaves it unlimited before the first RTT sample.
//! - **Deferral** (`tcp_tso_should_defer`, "a kind of TSO Nagle test" by John Heffner), asked in
//!   `tcp_write_xmit` before an skb of more than one segment leaves, when cwnd has room: send
//!   now if the connection is not in the Open state (recovery, loss, CWR or Disorder, i.e. SACKed
//!   or duplicate-acknowledged data outstanding), if the deferral started two or more clock ticks
//!   ago, if the window left (min of the peer's window and (cwnd − packets in flight)·MSS)
//!   takes a full-sized skb (min(gso_max_size, gso_max_segs·MSS) = 65,536 bytes), if the skb is
//!   not the last of the write queue and the window takes all of it, or if the window left is at
//!   least min(peer's window, cwnd·MSS) / `tcp_tso_win_divisor` (3); otherwise wait, with no
//!   timer: the next ACK (or transmit completion) asks again. What is sent is the skb, cut to the
//!   window (`tcp_mss_split_point`, `tso_fragment`); the rest stays at the head of the queue.
//!
//! Simplifications: the skb at the head of the write queue is formed when the head reaches it,
//! with the size goal of that moment (Linux forms it when the application writes, a send
//! buffer's time earlier); a clock tick is 4 ms (`CONFIG_HZ` 250, the kernel's default in
//! kernel/Kconfig.hz) with jiffies counted from time zero.

use lasthop_core::Instant;

/// `sk_gso_max_size` (GSO_MAX_SIZE).
const GSO_MAX_SIZE: u64 = 65_536;
/// IPv4 and TCP headers with the timestamp option: what `tcp_xmit_size_goal` subtracts.
const HEADERS: u64 = 20 + 32;
/// `sysctl_tcp_min_tso_segs`.
const MIN_TSO_SEGS: u64 = 2;
/// `sysctl_tcp_tso_win_divisor`.
const WIN_DIVISOR: u64 = 3;
/// One jiffy at `CONFIG_HZ` 250, ns.
const TICK_NS: u64 = 4_000_000;

/// What the sender tells [`TsoSend::hold`] about the new data it may send now.
#[derive(Clone, Copy, Debug)]
pub(super) struct Window {
    pub snd_nxt: u64,
    /// Bytes the application has written (u64::MAX: endless).
    pub app_written: u64,
    /// The peer's advertised window, bytes (u64::MAX before the first ACK).
    pub rwnd: u64,
    /// Bytes the peer's window leaves from `snd_nxt` (send_win).
    pub send_win: u64,
    /// cwnd − pipe, bytes (> 0: cwnd has room).
    pub cong_win: u64,
    pub cwnd: u64,
    /// sk_pacing_rate as Linux 3.12–3.18 set it (bytes/s), `None` before the first RTT sample.
    pub pacing_rate: Option<u64>,
    /// Linux's TCP_CA_Open.
    pub open: bool,
}

/// The sender's TSO/GSO state: the skb at the head of the write queue and the deferral.
#[derive(Clone, Debug, Default)]
pub(super) struct TsoSend {
    /// End of the skb at the head of the write queue (≤ snd_nxt: none formed yet).
    skb_end: u64,
    /// End of what the last decision to send lets leave without asking again.
    burst_end: u64,
    /// The jiffy at which the current deferral started (`tp->tso_deferred`).
    deferred_since: Option<u64>,
    /// Deferrals begun (`tp->tso_deferred` set from 0): each lasts until the sender sends, however
    /// often it is asked meanwhile.
    pub deferrals: u64,
}

impl TsoSend {
    /// Whether the next new segment must wait: `tcp_tso_should_defer` for the skb at the head.
    pub(super) fn hold(&mut self, now: Instant, mss: u64, w: Window) -> bool {
        if w.snd_nxt < self.burst_end {
            return false;
        }
        if w.snd_nxt >= self.skb_end {
            let left = w.app_written.saturating_sub(w.snd_nxt);
            self.skb_end = w.snd_nxt.saturating_add(size_goal(mss, w.pacing_rate, w.rwnd).min(left));
        }
        let skb_len = self.skb_end - w.snd_nxt;
        let limit = w.send_win.min(w.cong_win);
        let send = skb_len <= mss // one segment: Nagle's business, which is not modelled
            || !w.open
            || self.deferred_since.is_some_and(|t| jiffies(now).saturating_sub(t) > 1)
            || limit >= GSO_MAX_SIZE
            || (self.skb_end < w.app_written && limit >= skb_len)
            || limit >= w.rwnd.min(w.cwnd) / WIN_DIVISOR;
        if send {
            self.deferred_since = None;
            // tcp_mss_split_point: the skb, cut to whole segments of the window (all of the
            // skb if the window takes it).
            let take = if limit >= skb_len { skb_len } else { (limit / mss).max(1) * mss };
            self.burst_end = w.snd_nxt + take;
            return false;
        }
        if self.deferred_since.is_none() {
            self.deferred_since = Some(jiffies(now));
            self.deferrals += 1;
        }
        true
    }
}

/// `tcp_xmit_size_goal` of Linux 3.12–3.18, bytes.
fn size_goal(mss: u64, pacing_rate: Option<u64>, rwnd: u64) -> u64 {
    let ceiling = GSO_MAX_SIZE - 1 - HEADERS;
    let gso = pacing_rate.map_or(ceiling, |r| (r / 2000).max(MIN_TSO_SEGS * mss)).min(ceiling);
    let goal = if rwnd != u64::MAX && rwnd / 2 > 536 { gso.min(rwnd / 2) } else { gso };
    (goal / mss).max(1) * mss
}

fn jiffies(now: Instant) -> u64 {
    now.as_nanos() / TICK_NS
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_core::Duration;

    const MSS: u64 = 1448;

    fn window(snd_nxt: u64, cong_win: u64, cwnd: u64) -> Window {
        Window {
            snd_nxt,
            app_written: u64::MAX,
            rwnd: u64::MAX,
            send_win: u64::MAX,
            cong_win,
            cwnd,
            pacing_rate: Some(75_000_000), // 600 Mb/s: a goal of 37,500 bytes → 25 segments
            open: true,
        }
    }

    #[test]
    fn size_goal_is_half_a_millisecond_of_pacing_in_whole_segments() {
        assert_eq!(size_goal(MSS, Some(75_000_000), u64::MAX), 25 * MSS);
        assert_eq!(size_goal(MSS, Some(1_000), u64::MAX), 2 * MSS); // tcp_min_tso_segs
        assert_eq!(size_goal(MSS, None, u64::MAX), 45 * MSS); // gso_max_size − 1 − headers
        assert_eq!(size_goal(MSS, Some(u64::MAX), 40_000), 13 * MSS); // half the peer's window
    }

    #[test]
    fn a_bulk_sender_waits_for_room_for_a_whole_skb_then_sends_it() {
        let mut t = TsoSend::default();
        let now = Instant::from_nanos(1_000_000_000);
        // cwnd of 1000 segments, room for 10: under the skb (25) and under cwnd/3: wait.
        assert!(t.hold(now, MSS, window(0, 10 * MSS, 1000 * MSS)));
        assert_eq!(t.deferrals, 1);
        // Room for the whole skb: it leaves, all 25 segments without asking again.
        assert!(!t.hold(now, MSS, window(0, 25 * MSS, 1000 * MSS)));
        for k in 1..25 {
            assert!(!t.hold(now, MSS, window(k * MSS, (25 - k) * MSS, 1000 * MSS)));
        }
        // The next skb, with the window used up but one segment: wait again, a second deferral.
        assert!(t.hold(now, MSS, window(25 * MSS, MSS, 1000 * MSS)));
        assert!(t.hold(now, MSS, window(25 * MSS, 2 * MSS, 1000 * MSS)));
        assert_eq!(t.deferrals, 2, "one per deferral begun, not per question");
    }

    #[test]
    fn a_third_of_the_window_is_enough_and_the_skb_is_cut_to_it() {
        let mut t = TsoSend::default();
        let now = Instant::from_nanos(0);
        // cwnd 30 segments, room for 10 = cwnd/3: send 10 of the skb's 25.
        assert!(!t.hold(now, MSS, window(0, 10 * MSS, 30 * MSS)));
        assert_eq!(t.burst_end, 10 * MSS);
        // The rest of the skb (15 segments, the head now) waits for room.
        assert!(t.hold(now, MSS, window(10 * MSS, 2 * MSS, 30 * MSS)));
    }

    #[test]
    fn deferral_ends_after_two_ticks_and_outside_the_open_state() {
        let mut t = TsoSend::default();
        let t0 = Instant::from_nanos(4_000_000 * 10 + 3_900_000); // late in jiffy 10
        assert!(t.hold(t0, MSS, window(0, 2 * MSS, 1000 * MSS)));
        // Jiffy 11: one tick later, still waiting; jiffy 12: two ticks, send.
        assert!(t.hold(t0 + Duration::from_millis(1), MSS, window(0, 2 * MSS, 1000 * MSS)));
        assert!(!t.hold(t0 + Duration::from_nanos(4_100_000), MSS, window(0, 2 * MSS, 1000 * MSS)));
        let mut t = TsoSend::default();
        assert!(!t.hold(t0, MSS, Window { open: false, ..window(0, 2 * MSS, 1000 * MSS) }));
    }

    #[test]
    fn the_last_skb_of_the_queue_waits_for_a_third_of_the_window() {
        let mut t = TsoSend::default();
        let now = Instant::from_nanos(0);
        // 5 segments left to write; room for all of them but less than cwnd/3: the tail waits
        // (it may still grow, in Linux's view)...
        let w = Window { app_written: 5 * MSS, ..window(0, 5 * MSS, 100 * MSS) };
        assert!(t.hold(now, MSS, w));
        // ...and goes once a third of the window is free.
        assert!(!t.hold(now, MSS, Window { cong_win: 34 * MSS, ..w }));
    }
}
