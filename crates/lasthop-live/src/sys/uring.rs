//! The emulator's packet I/O through one io_uring (io_uring(7), Linux ≥ 5.19): which devices
//! have packets waiting, without a syscall, and the writes that are due, in one submission.
//!
//! * **Readiness.** One multishot `IORING_OP_POLL_ADD` (POLLIN) per descriptor posts a
//!   completion each time the descriptor becomes readable, so a loop that polls for work reads
//!   a device only when it has a packet, instead of one `read` per device per round that mostly
//!   finds nothing (EAGAIN). The caller reads a ready device until EAGAIN and then marks it
//!   idle ([`Ring::idle`]); a packet that arrives after that posts a new completion.
//! * **Writes.** [`Ring::queue_write`] adds an `IORING_OP_WRITE` per packet; [`Ring::flush`]
//!   submits all of them with one `io_uring_enter` and waits until each has completed (a TUN
//!   write never blocks, so they complete inside the submission), returning each one's result.
//! * **Task work.** The ring is set up with `IORING_SETUP_COOP_TASKRUN | TASKRUN_FLAG`: a
//!   readiness completion is not posted by interrupting the thread (an IPI while it spins) but
//!   at its next entry into the kernel; the kernel flags the submission queue
//!   (`IORING_SQ_TASKRUN`) and [`Ring::reap`] enters it only then. A thread sleeping in
//!   `ppoll` on [`Ring::fd`] is woken as by a signal and sees the ring readable.

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// Submission queue entries (the completion queue has twice as many).
const ENTRIES: u32 = 1024;
/// `user_data` of a write: this bit, and the write's index in the batch.
const WRITE: u64 = 1 << 63;

pub struct Ring {
    ring: IoUring<squeue::Entry, cqueue::Entry>,
    fds: Vec<RawFd>,
    ready: Vec<bool>,
    /// Writes queued since the last flush, and each one's result once it completed.
    results: Vec<i32>,
    pending: usize,
    /// Polls to arm again (their multishot request ended), submitted with the next enter.
    rearm: bool,
}

impl Ring {
    /// A ring watching `fds` for POLLIN; every one starts ready (a packet may be waiting).
    pub fn new(fds: &[RawFd]) -> io::Result<Ring> {
        let ring = IoUring::builder().setup_coop_taskrun().setup_taskrun_flag().setup_single_issuer().build(ENTRIES)?;
        let mut r = Ring { ring, fds: fds.to_vec(), ready: vec![true; fds.len()], results: Vec::with_capacity(ENTRIES as usize), pending: 0, rearm: false };
        for i in 0..fds.len() {
            r.arm(i)?;
        }
        r.ring.submit()?;
        Ok(r)
    }

    /// The ring's own descriptor: readable when a completion is waiting (for ppoll).
    pub fn fd(&self) -> RawFd {
        self.ring.as_raw_fd()
    }

    fn push(&mut self, e: &squeue::Entry) -> io::Result<()> {
        // SAFETY: the entries pushed here reference no memory (polls) or memory the caller of
        // `queue_write` keeps valid until `flush` returns.
        while unsafe { self.ring.submission().push(e) }.is_err() {
            self.ring.submit()?;
        }
        Ok(())
    }

    fn arm(&mut self, i: usize) -> io::Result<()> {
        let e = opcode::PollAdd::new(types::Fd(self.fds[i]), libc::POLLIN as u32).multi(true).build().user_data(i as u64);
        self.push(&e)
    }

    /// Take the completions waiting (entering the kernel first only when task work or an
    /// overflow asks for it): readiness marks devices ready, writes store their results.
    pub fn reap(&mut self) -> io::Result<()> {
        let flags = {
            let sq = self.ring.submission();
            sq.taskrun() || sq.cq_overflow()
        };
        if flags || self.rearm {
            self.rearm = false;
            self.ring.submit()?;
        }
        let mut ended = Vec::new();
        for c in self.ring.completion() {
            let ud = c.user_data();
            if ud & WRITE != 0 {
                self.results[(ud & !WRITE) as usize] = c.result();
                self.pending -= 1;
                continue;
            }
            let i = ud as usize;
            // A readiness event, or the end of the request (an error, an overflowed queue):
            // either way the device may have packets; arm it again if the request ended.
            self.ready[i] = true;
            if !cqueue::more(c.flags()) {
                ended.push(i);
            }
        }
        for i in ended {
            self.arm(i)?;
            self.rearm = true;
        }
        Ok(())
    }

    /// Whether device `i` may have a packet waiting.
    pub fn is_ready(&self, i: usize) -> bool {
        self.ready[i]
    }

    /// Device `i` returned EAGAIN: wait for its next readiness completion.
    pub fn idle(&mut self, i: usize) {
        self.ready[i] = false;
    }

    /// Queue a write of `buf` to `fd`; returns its index among this batch's results.
    ///
    /// # Safety
    /// `buf` must stay valid and unchanged until the next [`Ring::flush`] returns.
    pub unsafe fn queue_write(&mut self, fd: RawFd, buf: &[u8]) -> io::Result<usize> {
        let k = self.results.len();
        let e = opcode::Write::new(types::Fd(fd), buf.as_ptr(), buf.len() as u32).build().user_data(WRITE | k as u64);
        self.results.push(i32::MIN);
        self.pending += 1;
        self.push(&e)?;
        Ok(k)
    }

    /// Submit the queued writes in one enter and wait for all of them; their results (bytes
    /// written, or -errno) by index. The batch is empty again after the next call.
    pub fn flush(&mut self) -> io::Result<&[i32]> {
        while self.pending > 0 {
            self.ring.submit_and_wait(1)?;
            self.rearm = false;
            self.reap()?;
        }
        Ok(&self.results)
    }

    /// Forget the last flushed batch's results.
    pub fn clear(&mut self) {
        debug_assert_eq!(self.pending, 0);
        self.results.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe() -> (RawFd, RawFd) {
        let mut p = [0; 2];
        // SAFETY: `p` holds two descriptors for pipe2 to fill.
        assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) }, 0);
        (p[0], p[1])
    }

    fn read_all(fd: RawFd) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 256];
        loop {
            // SAFETY: `buf` is writable for its length.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
    }

    /// Reap until device `i` is ready (or give up after a while; the caller asserts).
    fn wait_ready(ring: &mut Ring, i: usize) {
        for _ in 0..1000 {
            ring.reap().unwrap();
            if ring.is_ready(i) {
                return;
            }
            std::thread::yield_now();
        }
    }

    #[test]
    fn readiness_follows_writes_and_batched_writes_all_complete() {
        let Ok(_) = IoUring::<squeue::Entry, cqueue::Entry>::builder().setup_coop_taskrun().setup_taskrun_flag().setup_single_issuer().build(8) else {
            eprintln!("skipped: io_uring with COOP_TASKRUN is not available here");
            return;
        };
        let (r0, w0) = pipe();
        let (r1, w1) = pipe();
        let mut ring = Ring::new(&[r0, r1]).unwrap();
        // Both start ready; drained, both go idle and stay idle while nothing arrives.
        ring.reap().unwrap();
        assert!(ring.is_ready(0) && ring.is_ready(1));
        ring.idle(0);
        ring.idle(1);
        ring.reap().unwrap();
        assert!(!ring.is_ready(0) && !ring.is_ready(1));
        // A batch of writes into the second pipe: one enter, every result, in order.
        let msgs: Vec<Vec<u8>> = (0..5u8).map(|k| vec![k; 10 + k as usize]).collect();
        for m in &msgs {
            // SAFETY: `msgs` outlives the flush below.
            unsafe { ring.queue_write(w1, m) }.unwrap();
        }
        let res = ring.flush().unwrap().to_vec();
        assert_eq!(res, msgs.iter().map(|m| m.len() as i32).collect::<Vec<_>>());
        ring.clear();
        // Only the device written to turns ready (its completion may need a kernel entry).
        wait_ready(&mut ring, 1);
        assert!(ring.is_ready(1) && !ring.is_ready(0));
        assert_eq!(read_all(r1), msgs.concat());
        ring.idle(1);
        // A write after the drain posts a new readiness completion (the multishot poll lives on).
        // SAFETY: plain write(2) of a local buffer.
        assert_eq!(unsafe { libc::write(w0, b"x".as_ptr().cast(), 1) }, 1);
        wait_ready(&mut ring, 0);
        assert!(ring.is_ready(0) && !ring.is_ready(1));
        for fd in [r0, w0, r1, w1] {
            // SAFETY: descriptors from pipe2 above, closed once.
            unsafe { libc::close(fd) };
        }
    }
}
