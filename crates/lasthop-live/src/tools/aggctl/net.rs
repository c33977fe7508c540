//! UDP plumbing for aggctl: sockets with kernel receive timestamps and batched receives
//! (`recvmmsg`). The clocks, waiting and result files are the OS layer's (`crate::sys`).

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// Bind a non-blocking UDP socket; the error is one line naming the address.
pub fn bind(opt: &str, addr: SocketAddr) -> Result<UdpSocket, String> {
    let s = UdpSocket::bind(addr).map_err(|e| format!("--{opt} = {addr}: {e}"))?;
    s.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(s)
}

pub fn set_int(s: &UdpSocket, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> std::io::Result<()> {
    // SAFETY: setsockopt reads one c_int from a valid pointer.
    let r = unsafe { libc::setsockopt(s.as_raw_fd(), level, name, &v as *const _ as *const libc::c_void, std::mem::size_of::<libc::c_int>() as libc::socklen_t) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

pub const BATCH: usize = 64;
const CMSG_SPACE: usize = 64;

/// Batched receives with their kernel timestamps.
pub struct RxBatch {
    bufs: Vec<[u8; 2048]>,
    addrs: Vec<libc::sockaddr_in>,
    ctrl: Vec<[u8; CMSG_SPACE]>,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

/// One received datagram.
pub struct Rx<'a> {
    pub data: &'a [u8],
    pub from: SocketAddr,
    /// Kernel receive timestamp (CLOCK_REALTIME ns), or None if the kernel gave none.
    pub ts_ns: Option<u64>,
}

impl RxBatch {
    pub fn new() -> Self {
        RxBatch {
            bufs: vec![[0u8; 2048]; BATCH],
            // SAFETY: sockaddr_in is plain data; all-zero is a valid value.
            addrs: vec![unsafe { std::mem::zeroed() }; BATCH],
            ctrl: vec![[0u8; CMSG_SPACE]; BATCH],
            iov: Vec::with_capacity(BATCH),
            hdrs: Vec::with_capacity(BATCH),
        }
    }

    /// Receive up to BATCH datagrams without blocking; calls `f` for each; returns how many.
    pub fn recv(&mut self, s: &UdpSocket, mut f: impl FnMut(Rx)) -> usize {
        self.iov.clear();
        self.hdrs.clear();
        for i in 0..BATCH {
            self.iov.push(libc::iovec { iov_base: self.bufs[i].as_mut_ptr() as *mut libc::c_void, iov_len: 2048 });
        }
        for i in 0..BATCH {
            // SAFETY: msghdr is plain data; the pointers set below stay valid during recvmmsg.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_name = &mut self.addrs[i] as *mut _ as *mut libc::c_void;
            h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            h.msg_hdr.msg_iov = &mut self.iov[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = self.ctrl[i].as_mut_ptr() as *mut libc::c_void;
            h.msg_hdr.msg_controllen = CMSG_SPACE as _;
            self.hdrs.push(h);
        }
        // SAFETY: BATCH valid mmsghdr entries whose buffers outlive the call.
        let n = unsafe { libc::recvmmsg(s.as_raw_fd(), self.hdrs.as_mut_ptr(), BATCH as libc::c_uint, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
        if n <= 0 {
            return 0;
        }
        for i in 0..n as usize {
            let h = &self.hdrs[i];
            let a = &self.addrs[i];
            let from = SocketAddr::from((std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)), u16::from_be(a.sin_port)));
            let mut ts_ns = None;
            // SAFETY: walking the control buffer the kernel filled, with the libc CMSG macros.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&h.msg_hdr);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                        let t = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                        ts_ns = Some(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64);
                    }
                    c = libc::CMSG_NXTHDR(&h.msg_hdr, c);
                }
            }
            f(Rx { data: &self.bufs[i][..h.msg_len as usize], from, ts_ns });
        }
        n as usize
    }
}

impl Default for RxBatch {
    fn default() -> Self {
        Self::new()
    }
}

/// "ADDR:PORT" as an IPv4 socket address.
pub fn parse_addr(v: &str) -> Option<SocketAddr> {
    v.trim().parse::<std::net::SocketAddrV4>().ok().map(SocketAddr::V4)
}
