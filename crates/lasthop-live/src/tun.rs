//! One TUN device: raw IP packets between this process and a kernel network stack, following
//! the kernel's Documentation/networking/tuntap.rst.
//!
//! The device is created in the network namespace of the calling thread, is not persistent (it
//! disappears when the file descriptor closes, so a crashed emulator leaves no devices behind)
//! and uses IFF_NO_PI: every read and write is exactly one IP packet with no extra header.
//! The descriptor is non-blocking; the real-time loop waits on it with poll/ppoll.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use crate::ifreq::{CtlSocket, IfReq};

/// `TUNSETIFF` = _IOW('T', 202, int) (include/uapi/linux/if_tun.h).
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
/// `IFF_TUN`: layer-3 device (IP packets, no Ethernet header).
const IFF_TUN: i16 = 0x0001;
/// `IFF_NO_PI`: no 4-byte packet-information prefix on reads and writes.
const IFF_NO_PI: i16 = 0x1000;

/// An open TUN device.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    name: String,
}

/// Transmit queue length of every TUN device (packets).
pub const TX_QUEUE_LEN: u32 = 1000;

impl Tun {
    /// Open /dev/net/tun (O_RDWR|O_NONBLOCK|O_CLOEXEC), TUNSETIFF with IFF_TUN|IFF_NO_PI (not
    /// persistent: the device disappears when the fd closes), set the MTU via SIOCSIFMTU on a
    /// datagram socket. The device is left down and without addresses.
    pub fn create(name: &str, mtu: u32) -> io::Result<Tun> {
        let mut req = IfReq::new(name)?;
        // SAFETY: the path is a NUL-terminated literal; open(2) takes no other pointers.
        let raw = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("open /dev/net/tun: {e}")));
        }
        // SAFETY: `raw` was just returned by open(2) and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        req.set_flags(IFF_TUN | IFF_NO_PI);
        req.ioctl(&fd, TUNSETIFF)
            .map_err(|e| io::Error::new(e.kind(), format!("TUNSETIFF {name}: {e}")))?;
        // The kernel may have completed a `%d` pattern; use the name it chose from here on.
        let name = req.name();
        CtlSocket::open()
            .and_then(|s| s.set_mtu(&name, mtu))
            .map_err(|e| io::Error::new(e.kind(), format!("set MTU {mtu} on {name}: {e}")))?;
        // An Ethernet device's default (TUN's is 500): room for a burst the emulator has not
        // read yet, so a late wake-up does not drop packets before the model sees them.
        CtlSocket::open()
            .and_then(|s| s.set_txqueuelen(&name, TX_QUEUE_LEN))
            .map_err(|e| io::Error::new(e.kind(), format!("set txqueuelen on {name}: {e}")))?;
        Ok(Tun { fd, name })
    }

    /// The device's name (in the namespace it lives in now).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The raw descriptor, for poll/ppoll. It stays owned by this `Tun`.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// One packet into `buf`; Ok(None) when no packet is waiting (EAGAIN). Ok(Some(len)).
    /// A packet longer than `buf` is truncated by the kernel, so `buf` should hold the MTU.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: `buf` is a valid writable region of `buf.len()` bytes for the call.
            let n = unsafe { libc::read(self.fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n >= 0 {
                return Ok(Some(n as usize));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => return Ok(None),
                // A signal that arrived mid-read: the packet is still queued, read it again.
                io::ErrorKind::Interrupted => continue,
                _ => return Err(e),
            }
        }
    }

    /// Write one packet; Ok(false) when the kernel would block (EAGAIN: the packet is dropped
    /// by the caller).
    pub fn send(&self, pkt: &[u8]) -> io::Result<bool> {
        loop {
            // SAFETY: `pkt` is a valid readable region of `pkt.len()` bytes for the call.
            let n = unsafe { libc::write(self.fd(), pkt.as_ptr().cast(), pkt.len()) };
            if n >= 0 {
                // A TUN write takes the whole packet or fails; never a short write.
                return Ok(true);
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => return Ok(false),
                io::ErrorKind::Interrupted => continue,
                _ => return Err(e),
            }
        }
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
