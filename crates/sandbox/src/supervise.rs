//! The memory and process cap of a run where no cgroup can hold it: a supervisor task
//! that measures the run's process tree from /proc and stops it at the cap.
//!
//! Per-process limits (`RLIMIT_DATA`) cannot cap a run's total: three processes under
//! a 2 GiB limit each take 6 GiB. Where the kernel gives a cgroup per run
//! (`cgroup.rs`) it holds the cap; elsewhere this supervisor samples, every
//! [`INTERVAL`], the run's memory:
//! - the anonymous resident memory (`statm`: resident minus shared pages) of every
//!   process of the run: the descendants of the command's first process and every
//!   process of its session (what leaves the tree but keeps the session), and
//! - the pages written to the run's private /tmp and /dev/shm (tmpfs is memory), read
//!   with `statfs` through `/proc/<pid>/root`, inside the run's mount namespace.
//!
//! Past the cap it kills the process group and every process of the tree with
//! SIGKILL. A sample misses what is allocated between two samples, so a run may pass
//! the cap by what it allocates in [`INTERVAL`] before it is stopped (each process
//! stays under `RLIMIT_DATA` meanwhile). Shared file pages (libraries) are not
//! counted: the kernel can drop and re-read them. Without a pid_max per pid namespace
//! the supervisor also stops a run whose tree has more processes than its cap.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How often the tree is measured.
pub(crate) const INTERVAL: Duration = Duration::from_millis(50);

/// Why the supervisor stopped a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stopped {
    /// A line for the run's warnings and denial hint.
    pub reason: String,
}

/// One process of the tree, as /proc shows it.
struct Proc {
    ppid: i32,
    session: i32,
}

/// The caps the supervisor holds a run to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    pub memory_bytes: u64,
    /// `None` where the kernel caps processes itself (pid_max per pid namespace).
    pub processes: Option<u32>,
    /// The run has its own /tmp and /dev/shm (a mount namespace): their pages count.
    pub private_tmp: bool,
}

/// The supervisor of one run; dropping it stops the watch.
pub(crate) struct Supervisor {
    stop: Arc<AtomicBool>,
    stopped: Arc<OnceLock<Stopped>>,
}

impl Supervisor {
    /// Watches the run whose first process is `root` (its process group and session
    /// leader) on a thread of its own, until dropped or until `root` is gone.
    pub(crate) fn start(root: libc::pid_t, caps: Caps) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::new(OnceLock::new());
        let (stop2, stopped2) = (stop.clone(), stopped.clone());
        let watch = move || {
            while !stop2.load(Ordering::Relaxed) {
                std::thread::sleep(INTERVAL);
                let Some(tree) = tree_of(root) else {
                    return;
                };
                if let Some(reason) = over_cap(root, &tree, caps) {
                    // The reason first: the run's waiter reads it as soon as the kill
                    // lets the run end, and must not find it missing.
                    let _ = stopped2.set(Stopped { reason });
                    kill_tree(root, &tree);
                    return;
                }
            }
        };
        if let Err(e) = std::thread::Builder::new()
            .name("agentls-sandbox-supervisor".into())
            .spawn(watch)
        {
            tracing::warn!(error = %e, "no memory supervisor for this run");
        }
        Self { stop, stopped }
    }

    /// Why it stopped the run, if it did.
    pub(crate) fn stopped(&self) -> Option<Stopped> {
        self.stopped.get().cloned()
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Measures the tree; the reason to stop it when it is past a cap.
fn over_cap(root: libc::pid_t, tree: &[libc::pid_t], caps: Caps) -> Option<String> {
    let tmp = if caps.private_tmp {
        tmpfs_bytes(root)
    } else {
        0
    };
    let memory = tree.iter().map(|&p| anon_bytes(p)).sum::<u64>() + tmp;
    if memory > caps.memory_bytes {
        return Some(format!(
            "the run reached its memory cap ({:.2} GiB for all its processes and its /tmp together, measured {:.2} GiB): the sandbox stopped it",
            gib(caps.memory_bytes),
            gib(memory)
        ));
    }
    caps.processes
        .filter(|&max| tree.len() > max as usize)
        .map(|max| {
            format!(
                "the run went past its process cap ({max} at once, {} running): the sandbox stopped it",
                tree.len()
            )
        })
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

/// The pids of the run: `root`, its descendants, and the members of its session.
/// `None` once `root` is gone.
fn tree_of(root: libc::pid_t) -> Option<Vec<libc::pid_t>> {
    let mut procs: HashMap<i32, Proc> = HashMap::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some(p) = read_stat(pid) {
            procs.insert(pid, p);
        }
    }
    if !procs.contains_key(&root) {
        return None;
    }
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (&pid, p) in &procs {
        children.entry(p.ppid).or_default().push(pid);
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        if let Some(kids) = children.get(&tree[i]) {
            tree.extend(kids.iter().copied().filter(|k| *k != root));
        }
        i += 1;
    }
    for (&pid, p) in &procs {
        if p.session == root && !tree.contains(&pid) {
            tree.push(pid);
        }
    }
    Some(tree)
}

/// Parent and session from `/proc/<pid>/stat` (fields after the command name, which
/// may hold spaces and parentheses, so parsing starts at the last `)`).
fn read_stat(pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let _state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let _pgrp = fields.next()?;
    let session = fields.next()?.parse().ok()?;
    Some(Proc { ppid, session })
}

/// Anonymous resident memory of `pid` (resident minus file-backed and shared pages).
fn anon_bytes(pid: i32) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/statm")) else {
        return 0;
    };
    let mut fields = text.split_whitespace().skip(1);
    let resident: u64 = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
    let shared: u64 = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
    resident.saturating_sub(shared) * page_size()
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096)
}

/// Bytes written to the run's private /tmp and /dev/shm, seen from inside its mount
/// namespace.
fn tmpfs_bytes(root: libc::pid_t) -> u64 {
    ["tmp", "dev/shm"]
        .iter()
        .map(|dir| used_bytes(&Path::new(&format!("/proc/{root}/root")).join(dir)))
        .sum()
}

fn used_bytes(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return 0;
    };
    // SAFETY: statfs fills a zeroed struct of the right type.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut st) != 0 {
            return 0;
        }
        (st.f_blocks.saturating_sub(st.f_bfree)) * st.f_bsize as u64
    }
}

/// SIGKILL to the process group and to every process of the tree (those that left the
/// group too).
fn kill_tree(root: libc::pid_t, tree: &[libc::pid_t]) {
    // SAFETY: signals to our own child's group and to processes of its tree.
    unsafe {
        libc::kill(-root, libc::SIGKILL);
        for &pid in tree {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_process_is_measured() {
        let me = std::process::id() as i32;
        let p = read_stat(me).unwrap();
        assert!(p.ppid > 0);
        assert!(anon_bytes(me) > 0);
        assert!(tree_of(me).unwrap().contains(&me));
        assert!(tree_of(i32::MAX).is_none());
    }
}
