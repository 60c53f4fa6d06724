//! A user and network namespace prepared once per [`crate::Sandbox`] and joined by
//! every run: creating and tearing down a network namespace costs about 2 ms here,
//! joining one costs microseconds.
//!
//! A short-lived helper child creates both namespaces, maps its ids, brings `lo` up and
//! waits; the parent opens `/proc/<pid>/ns/{user,net}` (an open nsfs descriptor keeps
//! a namespace alive) and kills the helper. Runs `setns` into the two and then unshare
//! their own mount, pid, IPC and UTS namespaces, so processes, mounts and /tmp stay
//! per run. What runs share is the loopback interface: two commands running at the
//! same time could reach each other's 127.0.0.1 listeners (never the host's).

use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Descriptors of the prepared namespaces.
#[derive(Debug)]
pub(crate) struct SharedNs {
    pub user: OwnedFd,
    pub net: OwnedFd,
}

/// Creates the namespaces; `None` when the kernel refuses (the caller then creates
/// fresh namespaces per run).
pub(crate) fn prepare() -> io::Result<SharedNs> {
    // SAFETY: geteuid/getegid cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let uid_map = format!("{uid} {uid} 1");
    let gid_map = format!("{gid} {gid} 1");
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and ours.
    let (ready_r, ready_w) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let ready_w_raw = fds[1];
    // SAFETY: the child makes only async-signal-safe calls on buffers prepared above.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: forked child; raw syscalls only, then it waits to be killed.
        unsafe {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0 {
                libc::_exit(1);
            }
            let ok = crate::probe::child_write(b"/proc/self/setgroups\0", b"deny")
                && crate::probe::child_write(b"/proc/self/uid_map\0", uid_map.as_bytes())
                && crate::probe::child_write(b"/proc/self/gid_map\0", gid_map.as_bytes());
            if !ok || crate::child::loopback_up().is_err() {
                libc::_exit(2);
            }
            libc::write(ready_w_raw, b"1".as_ptr().cast(), 1);
            loop {
                libc::pause();
            }
        }
    }
    drop(ready_w);
    let mut byte = [0u8; 1];
    // SAFETY: blocking read of one byte into a live buffer; EOF means the child failed.
    let n = unsafe {
        libc::read(
            std::os::fd::AsRawFd::as_raw_fd(&ready_r),
            byte.as_mut_ptr().cast(),
            1,
        )
    };
    let result = if n == 1 {
        let open = |kind: &str| File::open(format!("/proc/{pid}/ns/{kind}")).map(OwnedFd::from);
        open("user").and_then(|user| {
            Ok(SharedNs {
                user,
                net: open("net")?,
            })
        })
    } else {
        Err(io::Error::other("namespace helper failed"))
    };
    // SAFETY: killing and reaping our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
    result
}
