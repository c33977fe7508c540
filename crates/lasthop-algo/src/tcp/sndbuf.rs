//! The socket send buffer of a Linux TCP sender, sans-IO: how much of a writing application's
//! data the kernel holds (`sk_sndbuf`, autotuned from the congestion window) and when a writer
//! blocked on a full buffer wakes again. A bulk writer (iperf) keeps the buffer full, so each
//! byte waits there behind the buffer's content before it is first sent: with Linux's default
//! ceiling of 4 MiB, about 4 MiB over the connection's rate from `write()` to the network.
//! This is the end-host latency of Im et al., "I sent it: where does slow data go to wait?"
//! (EuroSys 2019), which the aggctl paper (§IV.F) cites for BBR's ~75 ms.
//!
//! As Linux 4.9 (`net/ipv4/tcp.c`, `tcp_input.c`, `net/core/stream.c`), with its defaults
//! (`tcp_wmem` = 4096 16384 4194304, no `SO_SNDBUF`):
//! - `tcp_init_buffer_space` → `tcp_sndbuf_expand` at establishment: sk_sndbuf =
//!   min(f · max(TCP_INIT_CWND, cwnd) · per_mss, tcp_wmem[2]), never shrinking, with f the
//!   controller's `sndbuf_expand` (2; BBR's 3, `crate::cc::CcConfig::sndbuf_expand`); per_mss =
//!   roundup_pow_of_two(MSS + MAX_TCP_HEADER + SKB_DATA_ALIGN(sizeof(skb_shared_info))) +
//!   SKB_DATA_ALIGN(sizeof(sk_buff)) (x86-64: 1448 + 320 + 320 → 4096, + 256 = 4352).
//! - `tcp_check_space` → `tcp_new_space` on an ACK that freed buffer space while the writer
//!   waits (SOCK_QUEUE_SHRUNK, SOCK_NOSPACE): `tcp_should_expand_sndbuf` (not
//!   cwnd-limited: packets_out < snd_cwnd) expands as above, then `sk_stream_write_space`
//!   wakes the writer once `sk_stream_is_writeable`: free space ≥ half the memory queued
//!   (`sk_stream_min_wspace`).
//! - `tcp_sendmsg` copies while `sk_stream_memory_free` (memory queued < sk_sndbuf), one skb
//!   of up to the size goal at a time (TSO: 63,712 bytes, 44 segments under gso_max_size), then
//!   sets SOCK_NOSPACE and sleeps. Each skb is charged its truesize: its payload plus
//!   SKB_TRUESIZE(MAX_TCP_HEADER) = 896 bytes (x86-64). The memory queued is that of every
//!   byte written and not yet cumulatively acknowledged (the write and retransmit queues).

/// Linux's `tcp_wmem[2]` default: the autotuned send buffer's ceiling, bytes of memory.
pub const WMEM_MAX: u64 = 4_194_304;
/// Linux's `TCP_INIT_CWND`.
const INIT_CWND: u64 = 10;
/// MAX_TCP_HEADER + SKB_DATA_ALIGN(sizeof(struct skb_shared_info)), x86-64.
const HEADER_AND_SHINFO: u64 = 320 + 320;
/// SKB_DATA_ALIGN(sizeof(struct sk_buff)), x86-64.
const SKB: u64 = 256;
/// SKB_TRUESIZE(MAX_TCP_HEADER): an skb's charge beyond its payload.
const SKB_OVERHEAD: u64 = 320 + SKB + 320;
/// The TSO size goal's ceiling (`gso_max_size` 65,536 less MAX_TCP_HEADER).
const GSO_BYTES: u64 = 65_536 - 320;

/// A Linux TCP socket's send buffer with a writer that always has data (a bulk application).
#[derive(Clone, Debug)]
pub struct SendBuffer {
    mss: u64,
    per_mss: u64,
    /// The controller's `sndbuf_expand` factor.
    expand: u64,
    /// sk_sndbuf, bytes of memory.
    sndbuf: u64,
    /// The writer sleeps on a full buffer (SOCK_NOSPACE).
    waiting: bool,
    /// Payload per skb (the size goal).
    size_goal: u64,
}

impl SendBuffer {
    /// The buffer of a new connection with segments of `mss` payload bytes, an initial window
    /// of `initial_cwnd` segments and a controller provisioning `expand` windows
    /// (`CcConfig::sndbuf_expand`).
    pub fn linux(mss: u32, initial_cwnd: u32, expand: u32) -> SendBuffer {
        let mss = mss.max(1) as u64;
        let per_mss = (mss + HEADER_AND_SHINFO).next_power_of_two() + SKB;
        let size_goal = (GSO_BYTES / mss).max(1) * mss;
        let expand = expand.max(1) as u64;
        let mut b = SendBuffer { mss, per_mss, expand, sndbuf: 16_384, waiting: false, size_goal };
        b.expand(initial_cwnd as u64);
        b
    }

    /// `tcp_sndbuf_expand` with a window of `cwnd_segs` segments.
    fn expand(&mut self, cwnd_segs: u64) {
        let sndmem = self.expand * cwnd_segs.max(INIT_CWND) * self.per_mss;
        if self.sndbuf < sndmem {
            self.sndbuf = sndmem.min(WMEM_MAX);
        }
    }

    /// sk_sndbuf, bytes of memory.
    pub fn size(&self) -> u64 {
        self.sndbuf
    }

    /// The memory charged for `payload` bytes held in skbs of the size goal.
    pub fn truesize(&self, payload: u64) -> u64 {
        payload + payload.div_ceil(self.size_goal) * SKB_OVERHEAD
    }

    /// An ACK that freed buffer space (`tcp_check_space`): with the writer waiting, the buffer
    /// grows unless the sender is cwnd-limited (`bytes_out` outstanding against a window of
    /// `cwnd` bytes, both counted in segments as packets_out and snd_cwnd are).
    pub fn handle_ack(&mut self, bytes_out: u64, cwnd: u64) {
        if self.waiting {
            let (packets_out, cwnd_segs) = (bytes_out.div_ceil(self.mss), cwnd / self.mss);
            if packets_out < cwnd_segs {
                self.expand(cwnd_segs);
            }
        }
    }

    /// Payload bytes the writer adds now, with `queued` bytes written and not yet cumulatively
    /// acknowledged and `left` bytes it still has to write: none while it sleeps and the
    /// buffer is not writeable; else skbs of the size goal while the memory queued is below
    /// sk_sndbuf, after which it sleeps.
    pub fn poll_write(&mut self, queued: u64, left: u64) -> u64 {
        let mem = self.truesize(queued);
        if self.waiting && self.sndbuf.saturating_sub(mem) < mem / 2 {
            return 0;
        }
        self.waiting = false;
        let mut add = 0u64;
        while add < left && self.truesize(queued + add) < self.sndbuf {
            add += self.size_goal.min(left - add);
        }
        self.waiting = add < left;
        add
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_twenty_initial_segments_and_grows_to_the_ceiling() {
        let mut b = SendBuffer::linux(1448, 10, 2);
        assert_eq!(b.size(), 2 * 10 * 4352);
        let w = b.poll_write(0, u64::MAX);
        assert!(b.truesize(w) >= b.size() && b.truesize(w - b.size_goal) < b.size(), "fills to sk_sndbuf");
        // Waiting: nothing more until half of the memory is free again.
        assert_eq!(b.poll_write(w, u64::MAX), 0);
        b.handle_ack(100 * 1448, 200 * 1448);
        assert_eq!(b.size(), 2 * 200 * 4352, "not cwnd-limited: expanded");
        b.handle_ack(400 * 1448, 400 * 1448);
        assert_eq!(b.size(), 2 * 200 * 4352, "cwnd-limited: kept");
        b.handle_ack(10 * 1448, 10_000 * 1448);
        assert_eq!(b.size(), WMEM_MAX, "capped at tcp_wmem[2]");
    }

    #[test]
    fn a_sleeping_writer_wakes_when_a_third_of_the_buffer_is_free() {
        let mut b = SendBuffer::linux(1448, 10, 2);
        b.handle_ack(0, 0);
        let full = b.poll_write(0, u64::MAX);
        assert!(full > 0);
        let mut q = full;
        // Acknowledge one segment at a time until the writer wakes.
        while b.poll_write(q, u64::MAX) == 0 {
            q -= 1448;
        }
        let mem = b.truesize(q);
        assert!(b.size() - mem >= mem / 2 && b.size() - b.truesize(q + 1448) < b.truesize(q + 1448) / 2);
    }

    #[test]
    fn a_finite_writer_stops_at_its_last_byte_and_does_not_wait() {
        let mut b = SendBuffer::linux(1448, 10, 2);
        assert_eq!(b.poll_write(0, 5000), 5000);
        assert_eq!(b.poll_write(5000, 0), 0);
        b.handle_ack(0, 100 * 1448);
        assert_eq!(b.size(), 2 * 10 * 4352, "no writer waiting: no expansion");
    }

    #[test]
    fn bbr_provisions_three_windows() {
        let mut b = SendBuffer::linux(1448, 10, crate::cc::CcConfig::Bbr(Default::default()).sndbuf_expand());
        assert_eq!(b.size(), 3 * 10 * 4352);
        b.poll_write(0, u64::MAX);
        b.handle_ack(10 * 1448, 100 * 1448);
        assert_eq!(b.size(), 3 * 100 * 4352);
    }
}
