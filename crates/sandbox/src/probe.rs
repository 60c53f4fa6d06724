//! What this kernel lets an unprivileged process do, found by trying it.
//!
//! `agentls doctor` prints [`Capabilities`]; [`crate::Sandbox`] reads the same struct to
//! decide which layers it can build and which warnings every result carries.

use std::ffi::CString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Whether one isolation feature works here, with a line a human can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureStatus {
    /// True when the feature was tried and worked.
    pub available: bool,
    /// What was found, e.g. "ABI 7" or "unshare(CLONE_NEWUSER): Operation not permitted".
    pub detail: String,
}

impl FeatureStatus {
    fn ok(detail: impl Into<String>) -> Self {
        Self {
            available: true,
            detail: detail.into(),
        }
    }
    fn missing(detail: impl Into<String>) -> Self {
        Self {
            available: false,
            detail: detail.into(),
        }
    }
}

/// The isolation features of this machine, as `agentls doctor` shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Unprivileged user namespaces: the base of every other namespace here.
    pub user_namespaces: FeatureStatus,
    /// Private mounts: overlay, private /tmp, read-only `.git`.
    pub mount_namespace: FeatureStatus,
    /// A network namespace with only loopback: no route leaves the sandbox.
    pub net_namespace: FeatureStatus,
    /// A pid namespace: the command is pid 1, killing it kills everything it started.
    pub pid_namespace: FeatureStatus,
    /// Overlayfs inside a user namespace: the live-buffer view and the change set.
    pub overlayfs: FeatureStatus,
    /// Landlock: writes confined to the workspace and /tmp, no mounts after setup.
    pub landlock: FeatureStatus,
    /// The Landlock ABI version, when Landlock is enabled.
    pub landlock_abi: Option<u32>,
    /// Seccomp filters: keyrings, bpf, mounts (and sockets without a net namespace) denied.
    pub seccomp: FeatureStatus,
    /// A process cap that binds even for root: `pid_max` per pid namespace (Linux 6.14+).
    pub pid_limit: FeatureStatus,
    /// Host Unix sockets out of reach by path: the mount namespace covers every folder
    /// but the system ones, the workspace and toolchains (see `view.rs`); abstract
    /// sockets are the network namespace's own, and Landlock ABI 6+ scopes them too.
    pub unix_sockets: FeatureStatus,
    /// A cgroup per run holding its total memory (and tmpfs pages) to one cap. Without
    /// one, a supervisor samples the run's memory instead (`supervise.rs`): a wall
    /// still, but one a run can pass by what it allocates between two samples.
    pub memory_cap: FeatureStatus,
    /// Where overlay scratch layers work: `/dev/shm` (tmpfs, no sync on teardown) when
    /// it passes the probe, else the system temp dir.
    pub scratch_root: Option<PathBuf>,
}

impl Capabilities {
    /// Features in the order `agentls doctor` prints them.
    pub fn features(&self) -> [(&'static str, &FeatureStatus); 10] {
        [
            ("user namespaces", &self.user_namespaces),
            ("mount namespace", &self.mount_namespace),
            ("network namespace", &self.net_namespace),
            ("pid namespace", &self.pid_namespace),
            ("overlayfs", &self.overlayfs),
            ("landlock", &self.landlock),
            ("seccomp", &self.seccomp),
            ("process limit", &self.pid_limit),
            ("host unix sockets", &self.unix_sockets),
            ("memory cap per run", &self.memory_cap),
        ]
    }

    /// One warning per missing feature, saying what the sandbox does without it.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut warn = |status: &FeatureStatus, consequence: &str| {
            if !status.available {
                out.push(format!("{consequence} ({})", status.detail));
            }
        };
        warn(
            &self.net_namespace,
            "no network namespace: network is denied by seccomp (IP sockets) and Landlock (TCP) only",
        );
        warn(
            &self.mount_namespace,
            "no mount namespace: no private /tmp, `.git` is not read-only, command writes land directly on disk",
        );
        warn(
            &self.overlayfs,
            "no overlayfs: commands see the disk, not unsaved buffers, and their writes land directly on disk",
        );
        warn(
            &self.pid_namespace,
            "no pid namespace: processes that leave the process group may outlive a timeout",
        );
        warn(
            &self.landlock,
            "no Landlock: writes outside the workspace are NOT confined by the kernel",
        );
        warn(
            &self.seccomp,
            "no seccomp: dangerous system calls are not filtered",
        );
        warn(
            &self.unix_sockets,
            "host Unix sockets are reachable by path (no mount namespace to hide their folders)",
        );
        warn(
            &self.memory_cap,
            "no cgroup per run: a supervisor samples the run's memory every 50 ms and stops it at the cap",
        );
        out
    }

    /// True when every layer works: the full sandbox, no warning.
    pub fn is_complete(&self) -> bool {
        self.features().iter().all(|(_, s)| s.available)
    }

    /// True when every layer works but perhaps the cgroup, whose cap the supervisor
    /// holds instead: what [`crate::DegradedMode::Refuse`] asks for.
    pub fn is_isolated(&self) -> bool {
        self.features()
            .iter()
            .filter(|(name, _)| *name != "memory cap per run")
            .all(|(_, s)| s.available)
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, status) in self.features() {
            let mark = if status.available { "ok  " } else { "MISSING" };
            writeln!(f, "{name:<18} {mark} {}", status.detail)?;
        }
        for warning in self.warnings() {
            writeln!(f, "warning: {warning}")?;
        }
        Ok(())
    }
}

/// Probes once per process and caches the answer (a probe forks a few children).
pub fn probe() -> &'static Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(probe_uncached)
}

/// Probes now, ignoring the cache.
pub fn probe_uncached() -> Capabilities {
    let user = try_in_child(libc::CLONE_NEWUSER, None);
    let ns = |flag, name: &str| {
        if !user.available {
            return FeatureStatus::missing("needs user namespaces");
        }
        match try_in_child(libc::CLONE_NEWUSER | flag, None) {
            s if s.available => FeatureStatus::ok(format!("{name} in a user namespace")),
            s => s,
        }
    };
    let mount = ns(libc::CLONE_NEWNS, "unshare(CLONE_NEWNS)");
    let net = ns(libc::CLONE_NEWNET, "unshare(CLONE_NEWNET): loopback only");
    let (pid, pid_limit) = if mount.available {
        probe_pid_ns()
    } else {
        let s = FeatureStatus::missing("needs a mount namespace (for /proc)");
        (s.clone(), s)
    };
    let (overlay, scratch_root) = if mount.available {
        probe_overlay()
    } else {
        (FeatureStatus::missing("needs a mount namespace"), None)
    };
    let abi = landlock_abi();
    let landlock = match abi {
        Some(v) => FeatureStatus::ok(format!("ABI {v}")),
        None => FeatureStatus::missing("not enabled in this kernel (see /sys/kernel/security/lsm)"),
    };
    // SAFETY: PR_GET_SECCOMP only reads this thread's mode.
    let seccomp = if unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } >= 0 {
        FeatureStatus::ok("seccomp-bpf filters")
    } else {
        FeatureStatus::missing(format!(
            "prctl(PR_GET_SECCOMP): {}",
            std::io::Error::last_os_error()
        ))
    };
    let user = if user.available {
        FeatureStatus::ok("unprivileged unshare(CLONE_NEWUSER) with uid/gid maps")
    } else {
        user
    };
    let unix_sockets = if mount.available {
        let abstract_scope = if abi.is_some_and(|v| v >= 6) {
            "; abstract sockets scoped by Landlock and the network namespace"
        } else {
            "; abstract sockets separated by the network namespace"
        };
        FeatureStatus::ok(format!(
            "folders that hold sockets are covered: only system folders, toolchains and the workspace are visible{abstract_scope}"
        ))
    } else {
        FeatureStatus::missing("needs a mount namespace")
    };
    let memory_cap = match crate::cgroup::support() {
        Some(v) => FeatureStatus::ok(format!("{}, a group per run", v.label())),
        None => {
            FeatureStatus::missing("no writable cgroup; a supervisor measures each run from /proc")
        }
    };
    Capabilities {
        unix_sockets,
        memory_cap,
        user_namespaces: user,
        mount_namespace: mount,
        net_namespace: net,
        pid_namespace: pid,
        overlayfs: overlay,
        landlock,
        landlock_abi: abi,
        seccomp,
        pid_limit,
        scratch_root,
    }
}

/// The running kernel's Landlock ABI version, or `None` when Landlock is off.
pub fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query takes no attribute and returns an int.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then_some(v as u32)
}

/// Where scratch layers may go, best first. With a cgroup per run, tmpfs (`/dev/shm`):
/// no sync at unmount, and its pages count against the run's memory cap. Without one a
/// tmpfs layer would be memory nothing caps, so disk first: the user's cache directory.
fn scratch_candidates(cgroup: bool, shm_ok: bool, cache: Option<PathBuf>) -> Vec<PathBuf> {
    let shm = shm_ok.then(|| PathBuf::from("/dev/shm"));
    let mut out: Vec<PathBuf> = if cgroup {
        shm.into_iter().chain(cache).collect()
    } else {
        cache.into_iter().chain(shm).collect()
    };
    out.push(std::env::temp_dir());
    out
}

/// `$XDG_CACHE_HOME/agentls/sandbox`, else `~/.cache/agentls/sandbox`, created.
fn cache_scratch() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let dir = base.join("agentls/sandbox");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

fn probe_overlay() -> (FeatureStatus, Option<PathBuf>) {
    let candidates = scratch_candidates(
        crate::cgroup::support().is_some(),
        is_writable_tmpfs(Path::new("/dev/shm")),
        cache_scratch(),
    );
    let mut last = FeatureStatus::missing("no scratch directory");
    for base in candidates {
        let status = probe_overlay_in(&base);
        if status.available {
            let detail = format!(
                "overlay mount with userxattr in a user namespace, scratch in {}",
                base.display()
            );
            return (FeatureStatus::ok(detail), Some(base));
        }
        last = status;
    }
    (last, None)
}

/// True for a directory on tmpfs that we may write.
pub(crate) fn is_writable_tmpfs(dir: &Path) -> bool {
    const TMPFS_MAGIC: libc::c_long = 0x0102_1994;
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills a zeroed struct; access only reads the path.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut st) == 0
            && st.f_type as libc::c_long == TMPFS_MAGIC
            && libc::access(c.as_ptr(), libc::W_OK) == 0
    }
}

/// Mounts an overlay whose upper layer is in `base`, and makes an opaque directory in
/// it (rmdir + mkdir over a lower directory), which needs user xattrs on the upper fs.
fn probe_overlay_in(base: &Path) -> FeatureStatus {
    let Ok(dir) = tempfile_dir(base) else {
        return FeatureStatus::missing("could not create a probe directory");
    };
    let mk = |name: &str| {
        let p = dir.join(name);
        std::fs::create_dir_all(&p).map(|()| p)
    };
    let dirs = (mk("lower/d"), mk("upper"), mk("work"), mk("merged"));
    let status = match dirs {
        (Ok(lower_d), Ok(upper), Ok(work), Ok(merged)) => {
            let lower = lower_d.parent().unwrap_or(&lower_d).to_path_buf();
            let options = format!(
                "lowerdir={},upperdir={},workdir={},userxattr",
                lower.display(),
                upper.display(),
                work.display()
            );
            let inner = merged.join("d");
            match (
                CString::new(options),
                CString::new(merged.as_os_str().as_bytes()),
                CString::new(inner.as_os_str().as_bytes()),
            ) {
                (Ok(options), Ok(target), Ok(inner)) => try_in_child(
                    libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
                    Some((target, options, inner)),
                ),
                _ => FeatureStatus::missing("probe path is not a C string"),
            }
        }
        _ => FeatureStatus::missing("could not create probe directories"),
    };
    let _ = std::fs::remove_dir_all(&dir);
    status
}

/// A pid namespace in which /proc can be mounted, and whether its pid_max is settable.
fn probe_pid_ns() -> (FeatureStatus, FeatureStatus) {
    // SAFETY: geteuid/getegid cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let uid_map = format!("{uid} {uid} 1");
    let gid_map = format!("{gid} {gid} 1");
    // SAFETY: the children only make raw syscalls on buffers prepared above, then _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let s = FeatureStatus::missing("fork failed");
        return (s.clone(), s);
    }
    if pid == 0 {
        // SAFETY: forked child; async-signal-safe calls only.
        unsafe {
            let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
            if libc::unshare(flags) != 0 {
                libc::_exit(1);
            }
            let ok = child_write(b"/proc/self/setgroups\0", b"deny")
                && child_write(b"/proc/self/uid_map\0", uid_map.as_bytes())
                && child_write(b"/proc/self/gid_map\0", gid_map.as_bytes());
            if !ok {
                libc::_exit(1);
            }
            let inner = libc::fork();
            if inner < 0 {
                libc::_exit(1);
            }
            if inner > 0 {
                let mut st = 0;
                libc::waitpid(inner, &mut st, 0);
                libc::_exit(if libc::WIFEXITED(st) {
                    libc::WEXITSTATUS(st)
                } else {
                    1
                });
            }
            let private = libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            );
            let proc_ok = private == 0
                && libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                ) == 0;
            if !proc_ok {
                libc::_exit(2);
            }
            libc::_exit(if child_write(b"/proc/sys/kernel/pid_max\0", b"4096") {
                0
            } else {
                3
            });
        }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        255
    };
    let limit_missing = FeatureStatus::missing("pid_max is not per pid namespace (Linux < 6.14)");
    match code {
        0 => (
            FeatureStatus::ok("unshare(CLONE_NEWPID) and a fresh /proc"),
            FeatureStatus::ok("pid_max per pid namespace, plus RLIMIT_NPROC"),
        ),
        3 => (
            FeatureStatus::ok("unshare(CLONE_NEWPID) and a fresh /proc"),
            limit_missing,
        ),
        2 => {
            let s = FeatureStatus::missing("mounting a fresh /proc was refused");
            (s, limit_missing)
        }
        _ => {
            let s = FeatureStatus::missing("unshare(CLONE_NEWPID) was refused");
            (s, limit_missing)
        }
    }
}

fn tempfile_dir(base: &Path) -> std::io::Result<PathBuf> {
    for n in 0..100u32 {
        let p = base.join(format!("agentls-probe-{}-{n}", std::process::id()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free probe directory name"))
}

/// Forks a child that unshares `flags` (mapping its ids when a user namespace is asked
/// for) and optionally mounts an overlay; reports how far it got.
fn try_in_child(flags: libc::c_int, overlay: Option<(CString, CString, CString)>) -> FeatureStatus {
    // SAFETY: geteuid/getegid cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let uid_map = format!("{uid} {uid} 1");
    let gid_map = format!("{gid} {gid} 1");
    // SAFETY: the child only makes raw syscalls on buffers prepared above, then _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return FeatureStatus::missing(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: forked child; async-signal-safe calls only.
        unsafe {
            if libc::unshare(flags) != 0 {
                libc::_exit(10 + errno_code());
            }
            if flags & libc::CLONE_NEWUSER != 0 {
                let ok = child_write(b"/proc/self/setgroups\0", b"deny")
                    && child_write(b"/proc/self/uid_map\0", uid_map.as_bytes())
                    && child_write(b"/proc/self/gid_map\0", gid_map.as_bytes());
                if !ok {
                    libc::_exit(2);
                }
            }
            if let Some((target, options, inner)) = &overlay {
                if libc::mount(
                    c"overlay".as_ptr(),
                    target.as_ptr(),
                    c"overlay".as_ptr(),
                    0,
                    options.as_ptr().cast(),
                ) != 0
                {
                    libc::_exit(3);
                }
                if libc::rmdir(inner.as_ptr()) != 0 || libc::mkdir(inner.as_ptr(), 0o755) != 0 {
                    libc::_exit(4);
                }
            }
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        255
    };
    match code {
        0 => FeatureStatus::ok("works"),
        2 => FeatureStatus::missing("writing /proc/self/uid_map was refused"),
        3 => FeatureStatus::missing("mount -t overlay was refused in a user namespace"),
        4 => FeatureStatus::missing("overlay cannot make opaque directories (no user xattrs?)"),
        c if (10..110).contains(&c) => FeatureStatus::missing(format!(
            "unshare({}) refused: {}",
            flag_names(flags),
            std::io::Error::from_raw_os_error(c - 10)
        )),
        _ => FeatureStatus::missing("the probe child died"),
    }
}

/// errno squeezed into an exit code (all the errnos unshare returns are small).
fn errno_code() -> i32 {
    // SAFETY: reading this thread's errno.
    let e = unsafe { *libc::__errno_location() };
    e.clamp(0, 99)
}

/// Writes `data` to a /proc file; async-signal-safe.
pub(crate) fn child_write(path: &[u8], data: &[u8]) -> bool {
    // SAFETY: path is NUL-terminated; data is a live slice.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        n == data.len() as isize
    }
}

fn flag_names(flags: libc::c_int) -> String {
    let names = [
        (libc::CLONE_NEWUSER, "CLONE_NEWUSER"),
        (libc::CLONE_NEWNS, "CLONE_NEWNS"),
        (libc::CLONE_NEWNET, "CLONE_NEWNET"),
        (libc::CLONE_NEWPID, "CLONE_NEWPID"),
    ];
    names
        .iter()
        .filter(|(f, _)| flags & f != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join("|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_goes_to_disk_when_no_cgroup_caps_tmpfs() {
        let cache = Some(PathBuf::from("/home/u/.cache/agentls/sandbox"));
        let with = scratch_candidates(true, true, cache.clone());
        assert_eq!(with[0], PathBuf::from("/dev/shm"));
        let without = scratch_candidates(false, true, cache.clone());
        assert_eq!(without[0], PathBuf::from("/home/u/.cache/agentls/sandbox"));
        assert_eq!(without[1], PathBuf::from("/dev/shm"));
        assert_eq!(without.last(), Some(&std::env::temp_dir()));
    }
}
