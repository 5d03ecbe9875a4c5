//! The ivshmem server: QEMU's `ivshmem-doorbell` connects to a Unix socket (`-chardev
//! socket,path=...`) and expects, in this order, 8-byte little-endian messages, file
//! descriptors passed with `SCM_RIGHTS`:
//!
//! 1. the protocol version, 0 (no descriptor);
//! 2. its own peer id (no descriptor);
//! 3. -1 with the shared memory's descriptor;
//! 4. for each peer, itself included, `peer id` with one eventfd per vector, vector 0 first:
//!    a peer's eventfds are what a doorbell write to that peer signals; the VM's own are its
//!    MSI-X vectors' triggers.
//!
//! Ref: QEMU `docs/specs/ivshmem-spec.rst` ("Server-side protocol"). QEMU makes the eventfds
//! it receives non-blocking, which changes the shared file description: the device model's
//! copies too (it polls before it reads).

use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

/// What the server hands the VM.
pub struct Offer<'a> {
    /// The VM's peer id.
    pub guest_peer: u16,
    /// The shared memory (BAR2).
    pub shared_memory: BorrowedFd<'a>,
    /// `(peer id, its eventfds by vector)` for every peer, the VM's own included.
    pub peers: Vec<(u16, Vec<BorrowedFd<'a>>)>,
}

fn send(stream: &UnixStream, value: i64, fd: Option<BorrowedFd<'_>>) -> Result<(), String> {
    let bytes = value.to_le_bytes();
    let iov = [IoSlice::new(&bytes)];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds;
    if let Some(fd) = fd {
        fds = [fd];
        if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err("ivshmem server: no room for SCM_RIGHTS".into());
        }
    }
    let n = sendmsg(stream.as_fd(), &iov, &mut control, SendFlags::empty())
        .map_err(|e| format!("ivshmem server: sendmsg of {value}: {e}"))?;
    if n != 8 {
        return Err(format!("ivshmem server: sent {n} of 8 bytes of {value}"));
    }
    Ok(())
}

/// Binds the listening socket at `path` (before QEMU starts: it connects at start-up).
///
/// # Errors
/// The bind's error, naming the path.
pub fn listen(path: &Path) -> Result<UnixListener, String> {
    let l = UnixListener::bind(path).map_err(|e| format!("bind {}: {e}", path.display()))?;
    l.set_nonblocking(true)
        .map_err(|e| format!("ivshmem server: set_nonblocking: {e}"))?;
    Ok(l)
}

/// Accepts the VM's connection (waiting at most `timeout`) and sends it the offer. Returns
/// the connection, which must stay open while the VM runs (closing it is a peer's
/// disconnection).
///
/// # Errors
/// A timeout or a failed send, saying which.
pub fn serve(
    listener: &UnixListener,
    offer: &Offer<'_>,
    timeout: Duration,
) -> Result<UnixStream, String> {
    let start = Instant::now();
    let stream = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if start.elapsed() > timeout {
                    return Err(format!(
                        "ivshmem server: QEMU did not connect within {timeout:?}"
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(format!("ivshmem server: accept: {e}")),
        }
    };
    stream
        .set_nonblocking(false)
        .map_err(|e| format!("ivshmem server: set_nonblocking: {e}"))?;
    send(&stream, 0, None)?;
    send(&stream, i64::from(offer.guest_peer), None)?;
    send(&stream, -1, Some(offer.shared_memory))?;
    for (peer, fds) in &offer.peers {
        for fd in fds {
            send(&stream, i64::from(*peer), Some(*fd))?;
        }
    }
    Ok(stream)
}

/// An eventfd (its counter starts at 0).
///
/// # Errors
/// The system's error.
pub fn eventfd() -> Result<OwnedFd, String> {
    rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC)
        .map_err(|e| format!("eventfd: {e}"))
}
