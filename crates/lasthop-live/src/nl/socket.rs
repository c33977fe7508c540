//! The two transports of one netlink conversation: a kernel netlink socket (netlink(7):
//! `AF_NETLINK`, `NETLINK_GENERIC` for nl80211, `NETLINK_ROUTE` for rtnetlink), and the
//! emulator's AP-host telemetry socket — a `SOCK_SEQPACKET` Unix socket that carries the same
//! datagrams (one or more netlink messages each) and answers nl80211 as a kernel would.
//! Everything above [`Conn::transact`] is shared.

use super::{parse_msgs, Msg, NLMSG_DONE, NLMSG_ERROR, NLM_F_ACK, NLM_F_DUMP};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::Duration;

pub const NETLINK_ROUTE: i32 = 0;
pub const NETLINK_GENERIC: i32 = 16;
const NETLINK_CAP_ACK: libc::c_int = 10;
const NETLINK_EXT_ACK: libc::c_int = 11;
/// Large enough for one kernel dump datagram (the kernel caps them at 32 KiB by default).
const RECV_BUF: usize = 1 << 16;
/// How long a request waits for its answer.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Why a request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NlError {
    /// The peer answered with an error number (and maybe the kernel's extended-ACK text).
    Errno(i32, Option<String>),
    /// The transport failed (the text is the OS error).
    Io(String),
    /// The answer could not be understood.
    Protocol(String),
}

impl std::fmt::Display for NlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NlError::Errno(e, Some(t)) => write!(f, "{} ({t})", super::errno_text(*e)),
            NlError::Errno(e, None) => write!(f, "{}", super::errno_text(*e)),
            NlError::Io(s) | NlError::Protocol(s) => f.write_str(s),
        }
    }
}

impl NlError {
    pub fn errno(&self) -> Option<i32> {
        match self {
            NlError::Errno(e, _) => Some(*e),
            _ => None,
        }
    }
}

/// Where a connection goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// The kernel, on a netlink protocol.
    Kernel(i32),
    /// The emulator's AP-host telemetry socket.
    Unix(std::path::PathBuf),
}

/// One netlink conversation.
pub struct Conn {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
    pub endpoint: Endpoint,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn set_timeout(fd: &OwnedFd) -> io::Result<()> {
    let tv = libc::timeval { tv_sec: TIMEOUT.as_secs() as libc::time_t, tv_usec: 0 };
    for opt in [libc::SO_RCVTIMEO, libc::SO_SNDTIMEO] {
        // SAFETY: a valid timeval for the option's size on a socket we own.
        cvt(unsafe { libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, opt, &tv as *const _ as *const libc::c_void, std::mem::size_of::<libc::timeval>() as libc::socklen_t) })?;
    }
    Ok(())
}

impl Conn {
    /// A kernel netlink socket for `protocol`, with extended ACKs (error text) and capped
    /// ACKs (no echo of the request).
    pub fn kernel(protocol: i32) -> io::Result<Conn> {
        // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
        let fd = unsafe { OwnedFd::from_raw_fd(cvt(libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, protocol))?) };
        // SAFETY: sockaddr_nl is plain data; zero = let the kernel pick the port id.
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: a valid sockaddr_nl of the right size.
        cvt(unsafe { libc::bind(fd.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t) })?;
        for opt in [NETLINK_EXT_ACK, NETLINK_CAP_ACK] {
            let one: libc::c_int = 1;
            // SAFETY: an int option on our socket. Old kernels lack these: ignored.
            unsafe {
                libc::setsockopt(fd.as_raw_fd(), libc::SOL_NETLINK, opt, &one as *const _ as *const libc::c_void, 4);
            }
        }
        set_timeout(&fd)?;
        Ok(Conn { fd, seq: 1, buf: vec![0; RECV_BUF], endpoint: Endpoint::Kernel(protocol) })
    }

    /// A connection to the emulator's telemetry socket at `path`.
    pub fn unix(path: &Path) -> io::Result<Conn> {
        let fd = unix_socket()?;
        let (sa, len) = unix_addr(path)?;
        // SAFETY: a valid sockaddr_un of `len` octets.
        cvt(unsafe { libc::connect(fd.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, len) })?;
        set_timeout(&fd)?;
        Ok(Conn { fd, seq: 1, buf: vec![0; RECV_BUF], endpoint: Endpoint::Unix(path.to_path_buf()) })
    }

    pub fn open(e: &Endpoint) -> io::Result<Conn> {
        match e {
            Endpoint::Kernel(p) => Conn::kernel(*p),
            Endpoint::Unix(p) => Conn::unix(p),
        }
    }

    fn send(&self, bytes: &[u8]) -> io::Result<()> {
        let r = match self.endpoint {
            Endpoint::Kernel(_) => {
                // SAFETY: sockaddr_nl zeroed = the kernel (port 0).
                let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
                sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
                // SAFETY: buffer and address valid for the call.
                unsafe { libc::sendto(self.fd.as_raw_fd(), bytes.as_ptr() as *const libc::c_void, bytes.len(), 0, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t) }
            }
            // SAFETY: buffer valid for the call.
            Endpoint::Unix(_) => unsafe { libc::send(self.fd.as_raw_fd(), bytes.as_ptr() as *const libc::c_void, bytes.len(), libc::MSG_NOSIGNAL) },
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        if r as usize != bytes.len() {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "short netlink send"));
        }
        Ok(())
    }

    fn recv(&mut self) -> io::Result<Vec<Msg>> {
        loop {
            // SAFETY: the buffer is valid for its length.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), self.buf.as_mut_ptr() as *mut libc::c_void, self.buf.len(), libc::MSG_TRUNC) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                if e.kind() == io::ErrorKind::WouldBlock {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer within 5 s"));
                }
                return Err(e);
            }
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the peer closed the connection"));
            }
            if n as usize > self.buf.len() {
                return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a {n}-octet netlink datagram did not fit {} octets", self.buf.len())));
            }
            return parse_msgs(&self.buf[..n as usize]).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e));
        }
    }

    /// Send `req` (its sequence number is assigned here) and collect the answer: every message
    /// of a dump up to `NLMSG_DONE`, or the reply and acknowledgement of a request. An error
    /// answer is `Err(NlError::Errno)`.
    pub fn transact(&mut self, mut req: Msg) -> Result<Vec<Msg>, NlError> {
        self.seq = self.seq.wrapping_add(1).max(1);
        req.seq = self.seq;
        self.send(&req.encode()).map_err(|e| NlError::Io(e.to_string()))?;
        let dump = req.flags & NLM_F_DUMP == NLM_F_DUMP;
        let ack = req.flags & NLM_F_ACK != 0;
        let mut out = Vec::new();
        loop {
            let msgs = self.recv().map_err(|e| NlError::Io(e.to_string()))?;
            for m in msgs {
                if m.seq != req.seq {
                    continue; // a late answer to an earlier request, or a notification
                }
                match m.ty {
                    NLMSG_ERROR => {
                        let (errno, text) = m.error().map_err(NlError::Protocol)?;
                        if errno != 0 {
                            return Err(NlError::Errno(errno, text));
                        }
                        if !dump {
                            return Ok(out);
                        }
                    }
                    NLMSG_DONE if dump => {
                        // A dump can end with an error code in the DONE payload.
                        let e = m.payload.get(..4).map_or(0, |b| i32::from_ne_bytes(b.try_into().expect("4 octets")));
                        if e < 0 {
                            return Err(NlError::Errno(-e, None));
                        }
                        return Ok(out);
                    }
                    _ => {
                        out.push(m);
                        if !dump && !ack {
                            return Ok(out);
                        }
                    }
                }
            }
        }
    }
}

fn unix_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned at once.
    Ok(unsafe { OwnedFd::from_raw_fd(cvt(libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0))?) })
}

fn unix_addr(path: &Path) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: sockaddr_un is plain data.
    let mut sa: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let b = path.as_os_str().as_bytes();
    if b.len() >= sa.sun_path.len() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("socket path {} is too long", path.display())));
    }
    for (d, s) in sa.sun_path.iter_mut().zip(b) {
        *d = *s as libc::c_char;
    }
    let len = (std::mem::size_of::<libc::sa_family_t>() + b.len() + 1) as libc::socklen_t;
    Ok((sa, len))
}

/// Where the emulator answers nl80211 for the network namespace whose nsfs inode is `inode`
/// (the AP host's telemetry socket; a tool in that namespace finds it from its own inode).
pub fn telemetry_path(inode: u64) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/run/lasthop/emu/nl80211-{inode}.sock"))
}

/// The emulator's side: a listening `SOCK_SEQPACKET` socket (non-blocking) and its clients.
pub struct Listener {
    fd: OwnedFd,
    path: std::path::PathBuf,
    clients: Vec<OwnedFd>,
    buf: Vec<u8>,
}

impl Listener {
    /// Listen at `path` (an existing socket file there is replaced), mode 0660.
    pub fn bind(path: &Path) -> io::Result<Listener> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)?;
        }
        let _ = std::fs::remove_file(path);
        let fd = unix_socket()?;
        let (sa, len) = unix_addr(path)?;
        // SAFETY: a valid sockaddr_un of `len` octets.
        cvt(unsafe { libc::bind(fd.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, len) })?;
        // SAFETY: listen(2) on our socket.
        cvt(unsafe { libc::listen(fd.as_raw_fd(), 16) })?;
        set_nonblocking(&fd)?;
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660));
        Ok(Listener { fd, path: path.to_path_buf(), clients: Vec::new(), buf: vec![0; RECV_BUF] })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Descriptors to poll for input: the listener first, then each client.
    pub fn poll_fds(&self) -> impl Iterator<Item = libc::c_int> + '_ {
        std::iter::once(self.fd.as_raw_fd()).chain(self.clients.iter().map(|c| c.as_raw_fd()))
    }

    /// Accept new clients, read every waiting request, and answer each with `handle`
    /// (which returns the messages to send back, in order). Clients that hang up, send
    /// garbage or cannot take an answer are dropped. Never blocks.
    pub fn serve(&mut self, handle: &mut dyn FnMut(&Msg) -> Vec<Msg>) {
        loop {
            // SAFETY: accept4 on our listening socket; no peer address wanted.
            let c = unsafe { libc::accept4(self.fd.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) };
            if c < 0 {
                break;
            }
            // SAFETY: a new descriptor we own.
            self.clients.push(unsafe { OwnedFd::from_raw_fd(c) });
        }
        let mut i = 0;
        while i < self.clients.len() {
            let fd = self.clients[i].as_raw_fd();
            let mut keep = true;
            loop {
                // SAFETY: the buffer is valid for its length.
                let n = unsafe { libc::recv(fd, self.buf.as_mut_ptr() as *mut libc::c_void, self.buf.len(), libc::MSG_DONTWAIT) };
                if n < 0 {
                    keep = io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock;
                    break;
                }
                if n == 0 {
                    keep = false;
                    break;
                }
                let Ok(reqs) = parse_msgs(&self.buf[..n as usize]) else {
                    keep = false;
                    break;
                };
                for r in &reqs {
                    let answer = handle(r);
                    if !send_chunked(fd, &answer) {
                        keep = false;
                        break;
                    }
                }
                if !keep {
                    break;
                }
            }
            if keep {
                i += 1;
            } else {
                self.clients.swap_remove(i);
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Send messages in datagrams of at most 32 KiB (as the kernel splits dumps). The socket is
/// non-blocking; a client whose buffer is full waits up to 1 s per datagram, then is dropped.
fn send_chunked(fd: libc::c_int, msgs: &[Msg]) -> bool {
    let mut dgram = Vec::with_capacity(4096);
    let flush = |d: &mut Vec<u8>| -> bool {
        if d.is_empty() {
            return true;
        }
        for _ in 0..1000 {
            // SAFETY: the buffer is valid for its length.
            let r = unsafe { libc::send(fd, d.as_ptr() as *const libc::c_void, d.len(), libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
            if r >= 0 {
                d.clear();
                return true;
            }
            if io::Error::last_os_error().kind() != io::ErrorKind::WouldBlock {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    };
    for m in msgs {
        let e = m.encode();
        if !dgram.is_empty() && dgram.len() + e.len() > 32 << 10 && !flush(&mut dgram) {
            return false;
        }
        dgram.extend_from_slice(&e);
    }
    flush(&mut dgram)
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: fcntl on our descriptor.
    let fl = cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK) })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nl::genl;

    #[test]
    fn unix_transport_carries_dumps_and_errors() {
        let dir = std::env::temp_dir().join(format!("lh-nl-{}", std::process::id()));
        let path = dir.join("t.sock");
        let mut l = Listener::bind(&path).unwrap();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let d2 = done.clone();
        let server = std::thread::spawn(move || {
            while !d2.load(std::sync::atomic::Ordering::SeqCst) {
                l.serve(&mut |m| {
                    if m.ty == genl::GENL_ID_CTRL {
                        vec![genl::new_family(m, "nl80211", 0x1c, 1, 300)]
                    } else if m.flags & NLM_F_DUMP == NLM_F_DUMP {
                        // A dump of 3000 small messages: several datagrams.
                        let mut v: Vec<Msg> = (0..3000).map(|i| Msg { ty: m.ty, flags: super::super::NLM_F_MULTI, seq: m.seq, pid: 0, payload: vec![i as u8; 20] }).collect();
                        v.push(Msg::done_for(m));
                        v
                    } else {
                        vec![Msg::error_for(m, libc::EOPNOTSUPP, "not here")]
                    }
                });
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let mut c = Conn::unix(&path).unwrap();
        let fam = c.transact(genl::get_family("nl80211", 0)).unwrap();
        assert_eq!(genl::family_id(&fam[0]).unwrap(), 0x1c);
        let dump = c.transact(Msg::new(0x1c, super::super::NLM_F_REQUEST | NLM_F_DUMP, 0, vec![1, 0, 0, 0])).unwrap();
        assert_eq!(dump.len(), 3000);
        let e = c.transact(Msg::new(0x1c, super::super::NLM_F_REQUEST | NLM_F_ACK, 0, vec![2, 0, 0, 0])).unwrap_err();
        assert_eq!(e, NlError::Errno(libc::EOPNOTSUPP, Some("not here".into())));
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        server.join().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
