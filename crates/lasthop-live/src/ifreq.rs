//! Interface configuration through the classic `SIOC*IF*` ioctls on a datagram socket, as
//! described in netdevice(7): MTU, IPv4 address and netmask, the UP flag.
//!
//! Ioctls act on the network namespace the socket was created in, which is the namespace of the
//! calling thread at creation time. That lets a thread that has entered a namespace with
//! setns(2) configure its devices without spawning `ip` once per namespace.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `IFNAMSIZ` from include/uapi/linux/if.h: names are at most 15 bytes plus the NUL.
pub(crate) const IFNAMSIZ: usize = 16;

/// `struct ifreq` (include/uapi/linux/if.h): the name, then a 24-byte union (its largest
/// member is `struct ifmap`), 40 bytes in all on 64-bit Linux. The union is kept as bytes and
/// written through the typed setters below; the kernel copies it with copy_from_user, so the
/// byte array's alignment of 1 is fine.
#[repr(C)]
pub(crate) struct IfReq {
    name: [u8; IFNAMSIZ],
    ifru: [u8; 24],
}

const _: () = assert!(std::mem::size_of::<IfReq>() == 40);

impl IfReq {
    /// A zeroed request for `name`; InvalidInput if the name does not fit or holds a NUL.
    pub(crate) fn new(name: &str) -> io::Result<IfReq> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() >= IFNAMSIZ || bytes.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("interface name {name:?}: 1–{} bytes, no NUL", IFNAMSIZ - 1),
            ));
        }
        let mut req = IfReq {
            name: [0; IFNAMSIZ],
            ifru: [0; 24],
        };
        req.name[..bytes.len()].copy_from_slice(bytes);
        Ok(req)
    }

    /// The name as the kernel left it (TUNSETIFF may fill in a `%d` pattern).
    pub(crate) fn name(&self) -> String {
        let end = self.name.iter().position(|&b| b == 0).unwrap_or(IFNAMSIZ);
        String::from_utf8_lossy(&self.name[..end]).into_owned()
    }

    /// `ifr_flags` (a `short`).
    pub(crate) fn set_flags(&mut self, flags: i16) {
        self.ifru[..2].copy_from_slice(&flags.to_ne_bytes());
    }

    pub(crate) fn flags(&self) -> i16 {
        i16::from_ne_bytes([self.ifru[0], self.ifru[1]])
    }

    /// `ifr_mtu` (an `int`).
    fn set_int(&mut self, v: i32) {
        self.ifru[..4].copy_from_slice(&v.to_ne_bytes());
    }

    /// `ifr_addr` / `ifr_netmask` as a `struct sockaddr_in`: family (host order), port 0,
    /// address (network order), 8 bytes of zero.
    fn set_sockaddr_in(&mut self, a: Ipv4Addr) {
        self.ifru = [0; 24];
        self.ifru[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        self.ifru[4..8].copy_from_slice(&a.octets());
    }

    /// ioctl(fd, request, &mut self).
    pub(crate) fn ioctl(&mut self, fd: &impl AsRawFd, request: libc::c_ulong) -> io::Result<()> {
        // SAFETY: `self` is a live, writable 40-byte `struct ifreq`, the size every request
        // used in this crate (TUNSETIFF, SIOC[GS]IF*) reads and writes.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, self as *mut IfReq) };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

/// An AF_INET datagram socket used only as the handle for interface ioctls; it belongs to the
/// network namespace of the thread that opened it.
pub(crate) struct CtlSocket(OwnedFd);

impl CtlSocket {
    pub(crate) fn open() -> io::Result<CtlSocket> {
        // SAFETY: plain socket(2) call; no pointers.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by socket(2) and is owned by nobody else.
        Ok(CtlSocket(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub(crate) fn set_mtu(&self, ifname: &str, mtu: u32) -> io::Result<()> {
        let mtu = i32::try_from(mtu)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "MTU out of range"))?;
        let mut req = IfReq::new(ifname)?;
        req.set_int(mtu);
        req.ioctl(&self.0, libc::SIOCSIFMTU)
    }

    /// The device's transmit queue length (packets the kernel holds before the emulator reads
    /// them): SIOCSIFTXQLEN, netdevice(7).
    pub(crate) fn set_txqueuelen(&self, ifname: &str, qlen: u32) -> io::Result<()> {
        let qlen = i32::try_from(qlen)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "queue length out of range"))?;
        let mut req = IfReq::new(ifname)?;
        req.set_int(qlen);
        req.ioctl(&self.0, libc::SIOCSIFTXQLEN)
    }

    /// Address, then netmask: SIOCSIFADDR alone gives a point-to-point device a /32, and the
    /// netmask turns it into `addr/prefix_len` with the on-link prefix route once the device is up.
    pub(crate) fn set_ipv4(&self, ifname: &str, addr: Ipv4Addr, prefix_len: u8) -> io::Result<()> {
        let mut req = IfReq::new(ifname)?;
        req.set_sockaddr_in(addr);
        req.ioctl(&self.0, libc::SIOCSIFADDR)?;
        let mask = u32::MAX
            .checked_shl(32 - u32::from(prefix_len.min(32)))
            .unwrap_or(0);
        let mut req = IfReq::new(ifname)?;
        req.set_sockaddr_in(Ipv4Addr::from(mask));
        req.ioctl(&self.0, libc::SIOCSIFNETMASK)
    }

    /// Read-modify-write of the flags so nothing but IFF_UP changes.
    pub(crate) fn set_up(&self, ifname: &str) -> io::Result<()> {
        let mut req = IfReq::new(ifname)?;
        req.ioctl(&self.0, libc::SIOCGIFFLAGS)?;
        let flags = req.flags() | libc::IFF_UP as i16;
        req.set_flags(flags);
        req.ioctl(&self.0, libc::SIOCSIFFLAGS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ifreq_layout_and_names() {
        assert!(IfReq::new("").is_err());
        assert!(IfReq::new("0123456789abcdef").is_err());
        let mut r = IfReq::new("wlan0").unwrap();
        assert_eq!(r.name(), "wlan0");
        r.set_flags(0x1001);
        assert_eq!(r.flags(), 0x1001);
        r.set_sockaddr_in(Ipv4Addr::new(10, 77, 1, 1));
        assert_eq!(&r.ifru[4..8], &[10, 77, 1, 1]);
    }
}
