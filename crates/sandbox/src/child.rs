//! What runs between `fork` and `exec`: namespaces, mounts, limits, Landlock, seccomp.
//!
//! Everything here executes in the forked child of a multi-threaded parent, so it must
//! be async-signal-safe: raw system calls only, no allocation, no locks, no `tracing`.
//! The parent prepares every string and structure in a [`ChildPlan`] beforehand.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

/// Names of the setup steps, reported to the parent through the error pipe (one byte).
pub(crate) const STEPS: &[&str] = &[
    "setsid",
    "unshare namespaces",
    "write uid/gid maps",
    "make mounts private",
    "mount the workspace overlay",
    "bind a write-through or read-only path",
    "clone a tree kept visible (workspace, granted path, toolchain)",
    "cover a host folder with an empty tmpfs (/tmp, /run, /home, ...)",
    "re-attach a kept tree under its covered folder",
    "bring loopback up",
    "fork into the pid namespace",
    "mount /proc",
    "limit pids",
    "chdir into the working directory",
    "set resource limits",
    "add Landlock rules",
    "enforce Landlock",
    "install the seccomp filter",
    "join the prepared user and network namespaces",
    "join the run's cgroup",
    "make the sandbox's own /dev",
];

const STEP_SETSID: u8 = 0;
const STEP_UNSHARE: u8 = 1;
const STEP_MAPS: u8 = 2;
const STEP_PRIVATE: u8 = 3;
const STEP_OVERLAY: u8 = 4;
const STEP_BIND: u8 = 5;
const STEP_CLONE_KEPT: u8 = 6;
const STEP_MASK: u8 = 7;
/// The private /tmp: 1 GiB at most (tmpfs pages are memory: the run's cgroup, or the
/// supervisor where there is none, counts them against the run's memory cap).
pub(crate) const TMP_OPTIONS: &std::ffi::CStr = c"mode=1777,size=1073741824";
/// The private /dev/shm: 256 MiB at most.
pub(crate) const SHM_OPTIONS: &std::ffi::CStr = c"mode=1777,size=268435456";
/// The empty /run over the host's: 16 MiB at most.
pub(crate) const RUN_OPTIONS: &std::ffi::CStr = c"mode=755,size=16777216";
/// The cover of any other host folder: it holds only mount points and a few links.
pub(crate) const MASK_OPTIONS: &std::ffi::CStr = c"mode=755,size=1048576";
const STEP_REATTACH: u8 = 8;
const STEP_LO: u8 = 9;
const STEP_FORK: u8 = 10;
const STEP_PROC: u8 = 11;
const STEP_PID_MAX: u8 = 12;
const STEP_CHDIR: u8 = 13;
const STEP_RLIMIT: u8 = 14;
const STEP_LANDLOCK_RULES: u8 = 15;
const STEP_LANDLOCK: u8 = 16;
const STEP_SECCOMP: u8 = 17;
const STEP_JOIN: u8 = 18;
const STEP_CGROUP: u8 = 19;
const STEP_DEV: u8 = 20;
/// The devices of the sandbox's own /dev, bound from the host's (a device node made on
/// a tmpfs of a user namespace would not open). A missing one is left out.
pub(crate) const DEVICES: [&std::ffi::CStr; 6] = [
    c"/dev/null",
    c"/dev/zero",
    c"/dev/full",
    c"/dev/random",
    c"/dev/urandom",
    c"/dev/tty",
];
/// The /dev tmpfs holds only nodes, directories and links: 64 KiB.
const DEV_OPTIONS: &std::ffi::CStr = c"mode=755,size=65536";
/// A devpts of the sandbox's own: its terminals are not the host's.
const DEVPTS_OPTIONS: &std::ffi::CStr = c"newinstance,ptmxmode=0666,mode=0620";

/// One bind mount to make inside the sandbox's mount namespace.
pub(crate) struct BindPlan {
    /// The real path, cloned (`open_tree`) before the overlay shadows it.
    pub source: CString,
    pub target: CString,
    pub readonly: bool,
}

/// A host folder covered by an empty tmpfs (see `view.rs`).
pub(crate) struct MaskPlan {
    pub dir: CString,
    pub options: &'static std::ffi::CStr,
    pub flags: libc::c_ulong,
    /// Directories made in the cover (the home directory).
    pub dirs: Vec<CString>,
    /// Symbolic links made in the cover, (target, link).
    pub links: Vec<(CString, CString)>,
}

/// A tree beneath a covered folder, cloned before the cover and put back after it.
pub(crate) struct KeepPlan {
    pub tree: CString,
    /// Directories to make in the cover, outermost first; the last is the mount point.
    pub dirs: Vec<CString>,
    /// The mount point is a file.
    pub file: bool,
    pub readonly: bool,
    /// The detached clone, filled in the child (-1 until then).
    pub fd: RawFd,
}

/// Landlock work left for the child: rules on mounts that exist only in its namespace.
pub(crate) struct LandlockPlan {
    pub ruleset_fd: RawFd,
    /// Access rights granted beneath each of `writable`; a subset of the handled set.
    pub write_access: u64,
    pub writable: Vec<CString>,
}

/// Every decision and byte the child needs, computed by the parent.
pub(crate) struct ChildPlan {
    pub err_fd: RawFd,
    /// The read end of a pipe whose write end only the runner holds: when the runner
    /// dies (even by SIGKILL) it reads as hung up, and the intermediate kills the
    /// command. `-1` for none.
    pub lifeline_fd: RawFd,
    /// `cgroup.procs` of the run's cgroup directories: the child writes `0` to each
    /// first, so it and everything it starts are counted and killed with the run.
    pub cgroup_procs: Vec<RawFd>,
    /// Prepared (user, net) namespaces to join before unsharing the rest.
    pub join: Option<(RawFd, RawFd)>,
    pub unshare_flags: libc::c_int,
    pub uid_map: Option<(Vec<u8>, Vec<u8>)>,
    pub make_private: bool,
    /// (target, options) for `mount -t overlay`.
    pub overlay: Option<(CString, CString)>,
    pub binds: Vec<BindPlan>,
    /// One slot per bind, filled in the child (pre-sized: the child must not allocate).
    pub bind_fds: Vec<RawFd>,
    /// Replace /dev with a tmpfs holding [`DEVICES`], a devpts of its own and the usual
    /// links, so no host device (disks, the kernel log, the host's terminals) is there.
    pub own_dev: bool,
    /// One slot per device, filled in the child.
    pub dev_fds: [RawFd; DEVICES.len()],
    /// A private /dev/shm (on the host it is shared, and holds run scratch dirs).
    pub private_shm: bool,
    /// Host folders covered by an empty tmpfs: /tmp, /run and every top-level folder
    /// that is not a system one, so no host socket there is reachable.
    pub masks: Vec<MaskPlan>,
    /// Trees put back beneath the covers, outermost first.
    pub keeps: Vec<KeepPlan>,
    pub loopback_up: bool,
    pub pid_ns: bool,
    pub pid_max: Option<Vec<u8>>,
    pub cwd: CString,
    pub rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
    pub landlock: Option<LandlockPlan>,
    /// seccompiler's `sock_filter` has the kernel's layout, as libc's does.
    pub seccomp: Option<seccompiler::BpfProgram>,
}

/// Reports the failed step to the parent and returns the errno as an error.
fn fail(err_fd: RawFd, step: u8) -> io::Error {
    let err = io::Error::last_os_error();
    let byte = [step];
    // SAFETY: writing one byte from a live stack buffer to a pipe we own.
    unsafe { libc::write(err_fd, byte.as_ptr().cast(), 1) };
    err
}

fn check(ret: libc::c_int, err_fd: RawFd, step: u8) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(fail(err_fd, step))
    } else {
        Ok(ret)
    }
}

/// The errno of the last failed call.
fn errno() -> libc::c_int {
    // SAFETY: reading this thread's errno.
    unsafe { *libc::__errno_location() }
}

/// Writes all of `data` to the file at `path` (a /proc file), or fails.
///
/// # Safety
/// Must only be called in the forked child; `path` is a valid C string.
unsafe fn write_file(path: &[u8], data: &[u8]) -> bool {
    // SAFETY: `path` is NUL-terminated by the caller's literal.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    // SAFETY: `data` is a live slice; fd is open.
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    n == data.len() as isize
}

/// A detached copy of the mount tree at `path` (`open_tree(OPEN_TREE_CLONE)`), or -1.
///
/// # Safety
/// `path` is a valid C string; raw syscall only.
unsafe fn clone_tree(path: &CString, recursive: bool) -> libc::c_int {
    let mut flags = (libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC) as libc::c_uint;
    if recursive {
        flags |= libc::AT_RECURSIVE as libc::c_uint;
    }
    // SAFETY: a NUL-terminated path; the kernel returns a descriptor or -1.
    unsafe {
        libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) as libc::c_int
    }
}

/// Attaches the detached tree `fd` at `target` and closes `fd`.
///
/// # Safety
/// `fd` comes from [`clone_tree`]; raw syscalls only.
unsafe fn attach_tree(fd: RawFd, target: &std::ffi::CStr) -> libc::c_int {
    // SAFETY: raw syscalls on a descriptor we own and a NUL-terminated path.
    unsafe {
        let r = libc::syscall(
            libc::SYS_move_mount,
            fd,
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            libc::MOVE_MOUNT_F_EMPTY_PATH,
        );
        libc::close(fd);
        r as libc::c_int
    }
}

/// Makes the mount at `target` read-only (this mount only, not those beneath).
///
/// # Safety
/// Raw syscall on a NUL-terminated path.
unsafe fn remount_readonly(target: &std::ffi::CStr) -> libc::c_int {
    // SAFETY: a NUL-terminated path, null data.
    unsafe {
        libc::mount(
            std::ptr::null(),
            target.as_ptr(),
            std::ptr::null(),
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY,
            std::ptr::null(),
        )
    }
}

/// Mounts a fresh tmpfs at `dir`.
///
/// # Safety
/// Raw syscall on NUL-terminated strings.
unsafe fn mount_tmpfs(
    dir: &std::ffi::CStr,
    flags: libc::c_ulong,
    options: &std::ffi::CStr,
) -> libc::c_int {
    // SAFETY: NUL-terminated strings.
    unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            dir.as_ptr(),
            c"tmpfs".as_ptr(),
            flags,
            options.as_ptr().cast(),
        )
    }
}

impl ChildPlan {
    /// Runs the plan. Returns only in the process that will `exec` the command.
    ///
    /// # Safety
    /// Must be called between `fork` and `exec` (a `pre_exec` hook): it forks, mounts
    /// and exits the intermediate process with `_exit`.
    pub(crate) unsafe fn apply(&mut self) -> io::Result<()> {
        // SAFETY (whole function): each step makes only raw syscalls on prepared, live
        // buffers, in this order: the cgroup is joined while still in the parent's
        // namespaces, mounts are made before Landlock forbids them, seccomp comes last.
        unsafe {
            self.join_cgroup()?;
            self.enter_namespaces()?;
            if self.make_private {
                self.make_mounts_private()?;
            }
            self.layer_workspace()?;
            self.clone_kept_trees()?;
            if self.own_dev {
                self.make_dev()?;
            }
            self.cover_host_folders()?;
            self.reattach_kept_trees()?;
            if self.loopback_up {
                loopback_up().map_err(|_| fail(self.err_fd, STEP_LO))?;
            }
            if self.pid_ns {
                self.enter_pid_ns()?;
            }
            check(libc::chdir(self.cwd.as_ptr()), self.err_fd, STEP_CHDIR)?;
            self.set_rlimits()?;
            self.enforce_landlock()?;
            self.install_seccomp()?;
        }
        Ok(())
    }

    /// Joins the run's cgroup first, so everything the command starts is counted.
    unsafe fn join_cgroup(&self) -> io::Result<()> {
        for &fd in &self.cgroup_procs {
            // SAFETY: writing one byte from a static buffer to a descriptor we hold.
            let n = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
            if n != 1 {
                return Err(fail(self.err_fd, STEP_CGROUP));
            }
        }
        Ok(())
    }

    /// A session of its own, the prepared user and network namespaces (or fresh ones),
    /// then the run's own namespaces, and the uid/gid maps of a fresh user namespace.
    unsafe fn enter_namespaces(&self) -> io::Result<()> {
        let e = self.err_fd;
        // SAFETY: raw syscalls on descriptors and buffers the parent prepared.
        unsafe {
            check(libc::setsid(), e, STEP_SETSID)?;
            if let Some((user, net)) = self.join {
                check(libc::setns(user, libc::CLONE_NEWUSER), e, STEP_JOIN)?;
                check(libc::setns(net, libc::CLONE_NEWNET), e, STEP_JOIN)?;
            }
            if self.unshare_flags != 0 {
                check(libc::unshare(self.unshare_flags), e, STEP_UNSHARE)?;
            }
            if let Some((uid_map, gid_map)) = &self.uid_map {
                let ok = write_file(b"/proc/self/setgroups\0", b"deny")
                    && write_file(b"/proc/self/uid_map\0", uid_map)
                    && write_file(b"/proc/self/gid_map\0", gid_map);
                if !ok {
                    return Err(fail(e, STEP_MAPS));
                }
            }
        }
        Ok(())
    }

    /// Nothing mounted here propagates back to the host.
    unsafe fn make_mounts_private(&self) -> io::Result<()> {
        // SAFETY: a static path and null data.
        let r = unsafe {
            libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        };
        check(r, self.err_fd, STEP_PRIVATE)?;
        Ok(())
    }

    /// The overlay of buffers and disk over the workspace, with the write-through and
    /// read-only binds on top. Bind sources are cloned before the overlay hides them
    /// (descriptors opened by the parent belong to its mount namespace and cannot be
    /// mounted here).
    unsafe fn layer_workspace(&mut self) -> io::Result<()> {
        let e = self.err_fd;
        // SAFETY: raw syscalls on the parent's C strings and our own descriptors.
        unsafe {
            for (bind, slot) in self.binds.iter().zip(self.bind_fds.iter_mut()) {
                *slot = check(clone_tree(&bind.source, true), e, STEP_BIND)?;
            }
            if let Some((target, options)) = &self.overlay {
                let r = libc::mount(
                    c"overlay".as_ptr(),
                    target.as_ptr(),
                    c"overlay".as_ptr(),
                    0,
                    options.as_ptr().cast(),
                );
                check(r, e, STEP_OVERLAY)?;
            }
            for (bind, &fd) in self.binds.iter().zip(self.bind_fds.iter()) {
                check(attach_tree(fd, &bind.target), e, STEP_BIND)?;
            }
            for bind in self.binds.iter().filter(|b| b.readonly) {
                check(remount_readonly(&bind.target), e, STEP_BIND)?;
            }
        }
        Ok(())
    }

    /// Detached copies of the trees kept visible, taken before the covers hide them.
    unsafe fn clone_kept_trees(&mut self) -> io::Result<()> {
        for keep in &mut self.keeps {
            // SAFETY: a C string from the parent.
            let fd = unsafe { clone_tree(&keep.tree, true) };
            keep.fd = check(fd, self.err_fd, STEP_CLONE_KEPT)?;
        }
        Ok(())
    }

    /// Empty tmpfs covers over /tmp, /run and the other host folders (see `view.rs`),
    /// and the private /dev/shm. A cover is memory: each is sized.
    unsafe fn cover_host_folders(&self) -> io::Result<()> {
        let e = self.err_fd;
        // SAFETY: raw syscalls on the parent's C strings.
        unsafe {
            if self.private_shm {
                let flags = libc::MS_NOSUID | libc::MS_NODEV;
                if mount_tmpfs(c"/dev/shm", flags, SHM_OPTIONS) < 0 && errno() != libc::ENOENT {
                    return Err(fail(e, STEP_MASK));
                }
            }
            for mask in &self.masks {
                // A folder that vanished since the plan is nothing to hide.
                if mount_tmpfs(&mask.dir, mask.flags, mask.options) < 0 {
                    if errno() == libc::ENOENT {
                        continue;
                    }
                    return Err(fail(e, STEP_MASK));
                }
                for dir in &mask.dirs {
                    if libc::mkdir(dir.as_ptr(), 0o755) < 0 && errno() != libc::EEXIST {
                        return Err(fail(e, STEP_MASK));
                    }
                }
                for (target, link) in &mask.links {
                    check(libc::symlink(target.as_ptr(), link.as_ptr()), e, STEP_MASK)?;
                }
            }
        }
        Ok(())
    }

    /// Puts the kept trees back at their paths, outermost first; toolchains read-only.
    unsafe fn reattach_kept_trees(&self) -> io::Result<()> {
        let e = self.err_fd;
        // SAFETY: raw syscalls on the parent's C strings and our descriptors.
        unsafe {
            for keep in &self.keeps {
                let last = keep.dirs.len().saturating_sub(1);
                for (i, dir) in keep.dirs.iter().enumerate() {
                    let r = if i == last && keep.file {
                        let fd = libc::open(
                            dir.as_ptr(),
                            libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                            0o644,
                        );
                        if fd >= 0 {
                            libc::close(fd);
                        }
                        fd
                    } else {
                        libc::mkdir(dir.as_ptr(), 0o755)
                    };
                    if r < 0 && errno() != libc::EEXIST {
                        return Err(fail(e, STEP_REATTACH));
                    }
                }
                check(attach_tree(keep.fd, &keep.tree), e, STEP_REATTACH)?;
                if keep.readonly {
                    check(remount_readonly(&keep.tree), e, STEP_REATTACH)?;
                }
            }
        }
        Ok(())
    }

    unsafe fn set_rlimits(&self) -> io::Result<()> {
        for &(resource, value) in &self.rlimits {
            let lim = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            // SAFETY: a live struct.
            check(
                unsafe { libc::setrlimit(resource, &lim) },
                self.err_fd,
                STEP_RLIMIT,
            )?;
        }
        Ok(())
    }

    /// Adds the write rules for mounts that exist only here (the workspace, /tmp), then
    /// restricts this process and everything it starts.
    unsafe fn enforce_landlock(&self) -> io::Result<()> {
        let Some(plan) = &self.landlock else {
            return Ok(());
        };
        let e = self.err_fd;
        // SAFETY: raw syscalls on the parent's C strings and descriptors; `attr` is a
        // live, packed struct of the kernel's layout.
        unsafe {
            for path in &plan.writable {
                let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                let fd = check(fd, e, STEP_LANDLOCK_RULES)?;
                let attr = PathBeneathAttr {
                    allowed_access: plan.write_access,
                    parent_fd: fd,
                };
                let r = libc::syscall(
                    libc::SYS_landlock_add_rule,
                    plan.ruleset_fd,
                    LANDLOCK_RULE_PATH_BENEATH,
                    &attr as *const PathBeneathAttr,
                    0,
                );
                libc::close(fd);
                check(r as libc::c_int, e, STEP_LANDLOCK_RULES)?;
            }
            check(
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
                e,
                STEP_LANDLOCK,
            )?;
            let r = libc::syscall(libc::SYS_landlock_restrict_self, plan.ruleset_fd, 0);
            check(r as libc::c_int, e, STEP_LANDLOCK)?;
            libc::close(plan.ruleset_fd);
        }
        Ok(())
    }

    unsafe fn install_seccomp(&self) -> io::Result<()> {
        let Some(filter) = &self.seccomp else {
            return Ok(());
        };
        let e = self.err_fd;
        // SAFETY: `prog` points at the live filter, of the kernel's layout.
        unsafe {
            check(
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
                e,
                STEP_SECCOMP,
            )?;
            let prog = libc::sock_fprog {
                len: filter.len() as libc::c_ushort,
                filter: filter.as_ptr().cast::<libc::sock_filter>().cast_mut(),
            };
            let r = libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &prog as *const libc::sock_fprog,
            );
            check(r as libc::c_int, e, STEP_SECCOMP)?;
        }
        Ok(())
    }

    /// The sandbox's own /dev (see [`ChildPlan::own_dev`]).
    ///
    /// # Safety
    /// In the forked child only, in its own mount namespace.
    unsafe fn make_dev(&mut self) -> io::Result<()> {
        let e = self.err_fd;
        // SAFETY (whole function): raw syscalls on static strings and our descriptors.
        unsafe {
            // Cloned before the tmpfs hides them.
            for (dev, slot) in DEVICES.iter().zip(self.dev_fds.iter_mut()) {
                let fd = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    dev.as_ptr(),
                    (libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC) as libc::c_uint,
                );
                *slot = if fd < 0 { -1 } else { fd as RawFd };
            }
            let r = libc::mount(
                c"tmpfs".as_ptr(),
                c"/dev".as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NOEXEC,
                DEV_OPTIONS.as_ptr().cast(),
            );
            check(r, e, STEP_DEV)?;
            for (dev, &fd) in DEVICES.iter().zip(self.dev_fds.iter()) {
                if fd < 0 {
                    continue;
                }
                let target = libc::open(
                    dev.as_ptr(),
                    libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                    0o666,
                );
                check(target, e, STEP_DEV)?;
                libc::close(target);
                let r = libc::syscall(
                    libc::SYS_move_mount,
                    fd,
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    dev.as_ptr(),
                    libc::MOVE_MOUNT_F_EMPTY_PATH,
                );
                check(r as libc::c_int, e, STEP_DEV)?;
                libc::close(fd);
            }
            check(libc::mkdir(c"/dev/shm".as_ptr(), 0o1777), e, STEP_DEV)?;
            check(libc::mkdir(c"/dev/pts".as_ptr(), 0o755), e, STEP_DEV)?;
            // Without devpts (an old kernel, a refusing policy) there are no terminals,
            // as before; nothing else needs it.
            let r = libc::mount(
                c"devpts".as_ptr(),
                c"/dev/pts".as_ptr(),
                c"devpts".as_ptr(),
                libc::MS_NOSUID | libc::MS_NOEXEC,
                DEVPTS_OPTIONS.as_ptr().cast(),
            );
            if r == 0 {
                check(
                    libc::symlink(c"pts/ptmx".as_ptr(), c"/dev/ptmx".as_ptr()),
                    e,
                    STEP_DEV,
                )?;
            }
            for (target, link) in [
                (c"/proc/self/fd", c"/dev/fd"),
                (c"/proc/self/fd/0", c"/dev/stdin"),
                (c"/proc/self/fd/1", c"/dev/stdout"),
                (c"/proc/self/fd/2", c"/dev/stderr"),
            ] {
                check(libc::symlink(target.as_ptr(), link.as_ptr()), e, STEP_DEV)?;
            }
        }
        Ok(())
    }

    /// Forks once more so the command becomes pid 1 of the fresh pid namespace. The
    /// intermediate process waits and exits with the command's status; when it dies,
    /// the command gets SIGKILL, and when the command (pid 1) dies the kernel kills
    /// everything left in the namespace. So one SIGKILL to the process group ends all.
    ///
    /// # Safety
    /// Only in the forked child.
    unsafe fn enter_pid_ns(&self) -> io::Result<()> {
        let e = self.err_fd;
        // SAFETY: raw syscalls in the forked child.
        unsafe {
            let pid = check(libc::fork(), e, STEP_FORK)?;
            if pid > 0 {
                // The intermediate: hold no descriptor (so the parent sees EOF on its
                // exec-status pipe and on the output pipes), wait, mirror the status.
                // The lifeline stays open: it tells when the runner is gone.
                let life = self.lifeline_fd;
                if life > 0 {
                    libc::syscall(libc::SYS_close_range, 0, (life - 1) as libc::c_uint, 0);
                    libc::syscall(
                        libc::SYS_close_range,
                        (life + 1) as libc::c_uint,
                        libc::c_uint::MAX,
                        0,
                    );
                } else {
                    libc::syscall(libc::SYS_close_range, 0, libc::c_uint::MAX, 0);
                }
                let pidfd = if life > 0 {
                    libc::syscall(libc::SYS_pidfd_open, pid, 0) as libc::c_int
                } else {
                    -1
                };
                let mut status = 0;
                loop {
                    if pidfd >= 0 {
                        // Wait for the command to end or the runner to die, whichever
                        // comes first; a dead runner takes the command with it.
                        let mut fds = [
                            libc::pollfd {
                                fd: pidfd,
                                events: libc::POLLIN,
                                revents: 0,
                            },
                            libc::pollfd {
                                fd: life,
                                events: libc::POLLIN,
                                revents: 0,
                            },
                        ];
                        let n = libc::poll(fds.as_mut_ptr(), 2, -1);
                        if n > 0 && fds[1].revents != 0 && fds[0].revents == 0 {
                            libc::kill(pid, libc::SIGKILL);
                        }
                    }
                    let r = libc::waitpid(pid, &mut status, 0);
                    if r == pid {
                        break;
                    }
                    if r < 0 && *libc::__errno_location() != libc::EINTR {
                        libc::_exit(127);
                    }
                }
                if libc::WIFEXITED(status) {
                    libc::_exit(libc::WEXITSTATUS(status));
                }
                let sig = libc::WTERMSIG(status);
                libc::signal(sig, libc::SIG_DFL);
                libc::kill(libc::getpid(), sig);
                libc::_exit(128 + sig);
            }
            // If the intermediate dies first, the command dies with it. (A death in the
            // window before this call is covered by the process-group kill.)
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            let r = libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            );
            check(r, e, STEP_PROC)?;
            if let Some(max) = &self.pid_max
                && !write_file(b"/proc/sys/kernel/pid_max\0", max)
            {
                return Err(fail(e, STEP_PID_MAX));
            }
        }
        Ok(())
    }
}

const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

/// `struct landlock_path_beneath_attr`, which the kernel declares packed.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Sets IFF_UP on `lo` in the fresh network namespace, so tests inside the sandbox can
/// use 127.0.0.1 while nothing leaves it.
///
/// # Safety
/// Raw syscalls only; callable in the forked child.
pub(crate) unsafe fn loopback_up() -> io::Result<()> {
    // SAFETY: socket/ioctl on a zeroed, properly sized ifreq.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        req.ifr_name[0] = b'l' as libc::c_char;
        req.ifr_name[1] = b'o' as libc::c_char;
        let mut r = libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req);
        if r == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            r = libc::ioctl(sock, libc::SIOCSIFFLAGS, &mut req);
        }
        let err = io::Error::last_os_error();
        libc::close(sock);
        if r < 0 { Err(err) } else { Ok(()) }
    }
}
