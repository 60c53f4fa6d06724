//! A cgroup per run: one memory cap over all of a run's processes together, an optional
//! CPU quota, and a kill that reaches every process of the run.
//!
//! Per-process rlimits cannot cap a run's total: three processes under a 2 GiB
//! `RLIMIT_DATA` each take 6 GiB. A cgroup can, and it also counts the run's tmpfs pages
//! (the overlay's scratch layer and the private /tmp and /dev/shm), so a disk fill inside
//! the sandbox cannot fill the host's memory past the cap either.
//!
//! cgroup v2 is used where it is the mounted hierarchy and the controllers can be
//! enabled below our own cgroup; else cgroup v1's `memory` and `cpu` hierarchies where
//! they are writable (as for root in many containers); else nothing, and the run says
//! so in its warnings. The command joins the group in its `pre_exec` hook, before it
//! forks anything, by writing `0` to `cgroup.procs` descriptors opened here.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The CFS period the quota is expressed in (the kernel's default, 100 ms).
const CPU_PERIOD_US: u64 = 100_000;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Which cgroup hierarchy holds a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// The unified hierarchy.
    V2,
    /// The legacy per-controller hierarchies.
    V1,
}

impl Version {
    /// `cgroup v2` or `cgroup v1`.
    pub fn label(self) -> &'static str {
        match self {
            Version::V2 => "cgroup v2",
            Version::V1 => "cgroup v1",
        }
    }
}

/// One run's cgroup (or, on v1, its directories in the memory and cpu hierarchies).
/// Dropping it kills whatever is left in it and removes it.
#[derive(Debug)]
pub struct RunCgroup {
    version: Version,
    /// v2: the one directory; v1: memory first, then cpu when a quota is set.
    dirs: Vec<PathBuf>,
    /// `cgroup.procs` of each directory, opened for the child to join through.
    procs: Vec<File>,
}

/// Where runs can get a cgroup on this machine, if anywhere: what `agentls doctor` says.
pub fn support() -> Option<Version> {
    if v2_base().is_some() {
        return Some(Version::V2);
    }
    v1_dir("memory")
        .filter(|d| writable_dir(d))
        .map(|_| Version::V1)
}

impl RunCgroup {
    /// Makes a cgroup capping the total memory at `memory_bytes` and, with
    /// `cpu_millicores`, CPU time at that many thousandths of a core.
    pub fn create(memory_bytes: u64, cpu_millicores: Option<u32>) -> Result<Self, String> {
        let name = format!(
            "agentls-run-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        if let Some(base) = v2_base() {
            match Self::create_v2(&base.join(&name), memory_bytes, cpu_millicores) {
                Ok(cg) => return Ok(cg),
                Err(e) => tracing::debug!("cgroup v2 unusable ({e}); trying v1"),
            }
        }
        Self::create_v1(&name, memory_bytes, cpu_millicores)
    }

    fn create_v2(dir: &Path, memory: u64, cpu: Option<u32>) -> Result<Self, String> {
        fs::create_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let cg = Self {
            version: Version::V2,
            dirs: vec![dir.to_path_buf()],
            procs: Vec::new(),
        };
        write(&dir.join("memory.max"), &memory.to_string())?;
        // Swap would let the run go past the cap on disk-backed memory.
        let _ = write(&dir.join("memory.swap.max"), "0");
        if let Some(m) = cpu {
            let quota = u64::from(m) * CPU_PERIOD_US / 1000;
            write(&dir.join("cpu.max"), &format!("{quota} {CPU_PERIOD_US}"))?;
        }
        cg.with_procs()
    }

    fn create_v1(name: &str, memory: u64, cpu: Option<u32>) -> Result<Self, String> {
        let memory_base = v1_dir("memory").ok_or("no cgroup v1 memory hierarchy")?;
        let mem_dir = memory_base.join(name);
        fs::create_dir(&mem_dir).map_err(|e| format!("{}: {e}", mem_dir.display()))?;
        let mut cg = Self {
            version: Version::V1,
            dirs: vec![mem_dir.clone()],
            procs: Vec::new(),
        };
        write(&mem_dir.join("memory.limit_in_bytes"), &memory.to_string())?;
        // Where swap accounting exists, swap counts against the same cap.
        if mem_dir.join("memory.memsw.limit_in_bytes").exists() {
            write(
                &mem_dir.join("memory.memsw.limit_in_bytes"),
                &memory.to_string(),
            )?;
        }
        if let Some(m) = cpu {
            let cpu_base = v1_dir("cpu").ok_or("no cgroup v1 cpu hierarchy")?;
            let cpu_dir = cpu_base.join(name);
            fs::create_dir(&cpu_dir).map_err(|e| format!("{}: {e}", cpu_dir.display()))?;
            cg.dirs.push(cpu_dir.clone());
            write(
                &cpu_dir.join("cpu.cfs_period_us"),
                &CPU_PERIOD_US.to_string(),
            )?;
            let quota = u64::from(m) * CPU_PERIOD_US / 1000;
            write(&cpu_dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
        }
        cg.with_procs()
    }

    fn with_procs(mut self) -> Result<Self, String> {
        for dir in &self.dirs {
            let path = dir.join("cgroup.procs");
            let f = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            self.procs.push(f);
        }
        Ok(self)
    }

    /// The hierarchy in use.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The directories, for tests and logs.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Descriptors the child writes `0` to, joining every directory.
    pub(crate) fn join_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// How many processes the kernel killed for going past the cap.
    pub fn oom_kills(&self) -> u64 {
        let Some(dir) = self.dirs.first() else {
            return 0;
        };
        let file = match self.version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        let text = fs::read_to_string(dir.join(file)).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    /// The most memory the run used at once, where the kernel keeps it.
    pub fn peak_bytes(&self) -> Option<u64> {
        let dir = self.dirs.first()?;
        let file = match self.version {
            Version::V2 => "memory.peak",
            Version::V1 => "memory.max_usage_in_bytes",
        };
        fs::read_to_string(dir.join(file)).ok()?.trim().parse().ok()
    }

    /// Kills every process left in the group (v2: `cgroup.kill`; v1: SIGKILL to each
    /// member until none is left, since members may fork while being killed).
    pub fn kill_all(&self) {
        if self.version == Version::V2
            && let Some(dir) = self.dirs.first()
            && write(&dir.join("cgroup.kill"), "1").is_ok()
        {
            return;
        }
        for _ in 0..200 {
            let mut any = false;
            for dir in &self.dirs {
                let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                for pid in procs
                    .lines()
                    .filter_map(|l| l.trim().parse::<libc::pid_t>().ok())
                {
                    any = true;
                    // SAFETY: a plain signal to a pid read from our own run's cgroup.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            if !any {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.kill_all();
        self.procs.clear();
        for dir in &self.dirs {
            // A killed process leaves its group a moment after the signal.
            for _ in 0..200 {
                match fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            if dir.exists() {
                tracing::warn!(dir = %dir.display(), "could not remove a run's cgroup");
            }
        }
    }
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    let mut f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(value.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn writable_dir(dir: &Path) -> bool {
    let c = match std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) {
        Ok(c) => c,
        Err(_) => return false,
    };
    // SAFETY: a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Our own cgroup in the unified hierarchy, when it is mounted at /sys/fs/cgroup and
/// can give children the memory controller (enabling it below us if needed).
fn v2_base() -> Option<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    if !root.join("cgroup.controllers").is_file() {
        return None;
    }
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let base = root.join(rel.trim().trim_start_matches('/'));
    let wanted = fs::read_to_string(base.join("cgroup.subtree_control")).ok()?;
    if !wanted.split_whitespace().any(|c| c == "memory") {
        // Fails where our cgroup holds processes and is not the root (the "no internal
        // processes" rule); then v2 is not for us.
        write(&base.join("cgroup.subtree_control"), "+memory +cpu")
            .or_else(|_| write(&base.join("cgroup.subtree_control"), "+memory"))
            .ok()?;
    }
    writable_dir(&base).then_some(base)
}

/// Our own directory in the v1 hierarchy that holds `controller`.
fn v1_dir(controller: &str) -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/self/mounts").ok()?;
    let mount = mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 4 && f[2] == "cgroup" && f[3].split(',').any(|o| o == controller))
            .then(|| PathBuf::from(f[1]))
    })?;
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.trim_start_matches('/').to_owned())
    })?;
    // Inside a cgroup namespace or a container the mount's root may already be our
    // own group; the path from /proc is then not beneath it.
    let own_dir = mount.join(&rel);
    Some(if own_dir.is_dir() { own_dir } else { mount })
}
