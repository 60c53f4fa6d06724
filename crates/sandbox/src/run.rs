//! [`Sandbox::run`]: plan the layers, spawn, enforce limits, collect the change set.

use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::child::{BindPlan, ChildPlan, LandlockPlan, STEPS};
use crate::config::{
    DegradedMode, Limits, OutputChunk, OutputSink, OutputStream, RunRequest, SandboxConfig,
};
use crate::hints::{self, DenialHint};
use crate::layers::{self, ChangeSet, Scratch, WriteThrough};
use crate::output::{Capture, CapturedOutput};
use crate::probe::{Capabilities, probe};

/// Why a run could not start (a command that runs and fails is not an error).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The request itself is wrong: empty argv, a cwd outside the workspace, ...
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The workspace is missing or unreadable.
    #[error("workspace {path}: {source}")]
    Workspace {
        /// The configured workspace.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// [`DegradedMode::Refuse`] and a layer is missing.
    #[error("sandbox unavailable: {0}")]
    Unavailable(String),
    /// Preparing the run failed (scratch directories, Landlock ruleset, seccomp).
    #[error("sandbox setup failed: {0}")]
    Setup(String),
    /// The child failed between fork and exec, or the program could not be executed.
    #[error("could not start {program}: {step}: {source}")]
    Spawn {
        /// argv\[0\].
        program: String,
        /// The setup step that failed, or "exec".
        step: String,
        /// The errno.
        source: io::Error,
    },
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it (e.g. the memory limit, or a signal from inside).
    Signaled(i32),
    /// The wall-time limit passed; everything it started was killed.
    TimedOut,
    /// The cancellation token fired; everything it started was killed.
    Cancelled,
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// How it ended.
    pub termination: Termination,
    /// Standard output, head and tail.
    pub stdout: CapturedOutput,
    /// Standard error, head and tail.
    pub stderr: CapturedOutput,
    /// Wall time from spawn to exit.
    pub duration: Duration,
    /// Files changed in the workspace, not written to disk.
    pub changes: ChangeSet,
    /// Set when the failure looks like the sandbox denied something.
    pub denial: Option<DenialHint>,
    /// Degraded layers and ignored inputs, for the user and the model.
    pub warnings: Vec<String>,
}

impl RunOutcome {
    /// True when the command exited with status 0.
    pub fn success(&self) -> bool {
        self.termination == Termination::Exited(0)
    }
}

/// Runs commands isolated in one workspace. Cheap to share (`&self` methods).
#[derive(Debug)]
pub struct Sandbox {
    config: SandboxConfig,
    workspace: PathBuf,
    caps: &'static Capabilities,
    /// Prepared user+network namespaces joined by every run without a network grant;
    /// made on first use, `Err` remembered when the kernel refused.
    shared: std::sync::OnceLock<Result<crate::shared_ns::SharedNs, String>>,
}

/// The layers one run gets, from the capabilities and the grant.
#[derive(Debug, Clone, Copy)]
struct Layers {
    user: bool,
    mount: bool,
    net: bool,
    pid: bool,
    pid_limit: bool,
    overlay: bool,
    landlock: Option<ABI>,
    seccomp: bool,
}

impl Sandbox {
    /// A sandbox for `config.workspace`; probes the kernel once per process.
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        Self::with_capabilities(config, probe())
    }

    /// A sandbox using the given capabilities (tests pass reduced ones to exercise
    /// degraded modes).
    pub fn with_capabilities(
        config: SandboxConfig,
        caps: &'static Capabilities,
    ) -> Result<Self, SandboxError> {
        let workspace =
            config
                .workspace
                .canonicalize()
                .map_err(|source| SandboxError::Workspace {
                    path: config.workspace.clone(),
                    source,
                })?;
        if !workspace.is_dir() {
            return Err(SandboxError::Workspace {
                path: workspace,
                source: io::Error::other("not a directory"),
            });
        }
        if config.degraded == DegradedMode::Refuse && !caps.is_complete() {
            return Err(SandboxError::Unavailable(caps.warnings().join("; ")));
        }
        if let Some(base) = config.scratch_root.as_ref().or(caps.scratch_root.as_ref()) {
            layers::remove_stale_scratch(base);
        }
        Ok(Self {
            shared: std::sync::OnceLock::new(),
            config,
            workspace,
            caps,
        })
    }

    /// The canonical workspace root.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// What this machine allows, as `agentls doctor` prints it.
    pub fn capabilities(&self) -> &Capabilities {
        self.caps
    }

    fn layers(&self, req: &RunRequest) -> Layers {
        let c = self.caps;
        let user = c.user_namespaces.available;
        let mount = user && c.mount_namespace.available;
        Layers {
            user,
            mount,
            net: user && c.net_namespace.available && !req.grant.network,
            pid: mount && c.pid_namespace.available && self.config.pid_namespace,
            pid_limit: c.pid_limit.available,
            overlay: mount && c.overlayfs.available,
            landlock: c.landlock_abi.map(|v| ABI::from(v.min(7) as i32)),
            seccomp: c.seccomp.available,
        }
    }

    /// Runs one command and waits for it (or its time limit, or `cancel`).
    pub async fn run(
        &self,
        mut req: RunRequest,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome, SandboxError> {
        let Some(program) = req.argv.first().cloned() else {
            return Err(SandboxError::InvalidRequest("empty command".into()));
        };
        let limits = req
            .limits
            .clone()
            .unwrap_or_else(|| self.config.limits.clone());
        let cwd = self.resolve_cwd(req.cwd.as_deref())?;
        let layers = self.layers(&req);
        let mut warnings = self.caps.warnings();
        if !self.config.pid_namespace {
            warnings.push(
                "pid namespace off by configuration: processes that leave the process group may outlive a timeout"
                    .into(),
            );
        }
        if req.grant.network {
            warnings.push("network granted for this run".into());
        }

        // Scratch and buffer layer (only with an overlay; without one, buffers cannot
        // be shown and writes land on disk, which the warnings already say).
        for (dir, manifest) in &self.config.precreate {
            let (dir, manifest) = (self.workspace.join(dir), self.workspace.join(manifest));
            // A planted link (`target -> /outside`) is neither followed nor in the way:
            // it is left alone, not bound, and its writes stay in the overlay.
            let planted = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink());
            if planted {
                warnings.push(format!(
                    "{} is a symbolic link: it is not written through (its writes reach the workspace like any others)",
                    dir.display()
                ));
            } else if layers.overlay
                && manifest.is_file()
                && std::fs::symlink_metadata(&dir).is_err()
                && let Err(e) = std::fs::create_dir(&dir)
            {
                warnings.push(format!(
                    "could not create write-through {}: {e}",
                    dir.display()
                ));
            }
        }
        let write_through = WriteThrough::new(
            &self.workspace,
            &self.config.write_through,
            self.config.use_gitignore,
        );
        let mut overlaid = HashMap::new();
        let scratch = if layers.overlay {
            let base = self
                .config
                .scratch_root
                .clone()
                .or_else(|| self.caps.scratch_root.clone())
                .unwrap_or_else(std::env::temp_dir);
            let scratch = Scratch::create(&base).map_err(|e| setup("scratch directory", e))?;
            overlaid = layers::write_buffer_layer(
                &scratch.buffers,
                &self.workspace,
                &req.buffers,
                &mut warnings,
            )
            .map_err(|e| setup("buffer layer", e))?;
            Some(scratch)
        } else {
            if !req.buffers.is_empty() {
                warnings.push("dirty buffers were not laid over the disk (no overlayfs)".into());
            }
            None
        };

        let mut keep_fds: Vec<OwnedFd> = Vec::new();
        let plan = self.plan(
            &req,
            &limits,
            layers,
            scratch.as_ref(),
            !overlaid.is_empty(),
            &cwd,
            &write_through,
            &mut keep_fds,
        )?;
        let (err_read, err_write) = pipe().map_err(|e| setup("error pipe", e))?;
        // Held until this function returns: if the runner is killed, the kernel closes
        // it and the sandboxed command dies with it.
        let (life_read, _lifeline) = pipe().map_err(|e| setup("lifeline pipe", e))?;
        let mut plan = plan;
        plan.err_fd = err_write.as_raw_fd();
        plan.lifeline_fd = life_read.as_raw_fd();
        // Dropped (killing what is left in it and removing it) when this function
        // returns, after the process group's kill below.
        let cgroup = match limits.total_memory_bytes {
            Some(memory) => match crate::cgroup::RunCgroup::create(memory, limits.cpu_millicores) {
                Ok(cg) => {
                    plan.cgroup_procs = cg.join_fds();
                    Some(cg)
                }
                Err(e) => {
                    warnings.push(format!(
                        "the run's total memory is not capped (no cgroup: {e}); each process is limited on its own"
                    ));
                    None
                }
            },
            None => None,
        };

        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&req.argv[1..])
            .env_clear()
            .envs(self.environment())
            .envs(req.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // SAFETY: `ChildPlan::apply` makes only async-signal-safe raw system calls on
        // buffers prepared here, as `pre_exec` requires.
        unsafe {
            cmd.pre_exec(move || plan.apply());
        }
        let started = Instant::now();
        let spawned = cmd.spawn();
        drop(err_write);
        drop(life_read);
        drop(keep_fds);
        let mut child = spawned.map_err(|source| {
            let step = read_step(&err_read).unwrap_or_else(|| "exec".to_string());
            SandboxError::Spawn {
                program: program.clone(),
                step,
                source,
            }
        })?;
        let pgid = child.id().map(|p| p as libc::pid_t);

        let out_limit = limits.output_bytes;
        let sink = req.output.take();
        let stdout = child.stdout.take().map(|s| {
            let sink = sink.clone().map(|t| (t, OutputStream::Stdout));
            tokio::spawn(drain(s, out_limit, sink))
        });
        let stderr = child.stderr.take().map(|s| {
            let sink = sink.clone().map(|t| (t, OutputStream::Stderr));
            tokio::spawn(drain(s, out_limit, sink))
        });
        drop(sink);

        let termination = tokio::select! {
            status = child.wait() => match status {
                Ok(s) => match (s.code(), s.signal()) {
                    (Some(code), _) => Termination::Exited(code),
                    (None, Some(sig)) => Termination::Signaled(sig),
                    (None, None) => Termination::Exited(-1),
                },
                Err(e) => return Err(setup("wait", e)),
            },
            () = tokio::time::sleep(limits.wall_time) => Termination::TimedOut,
            () = cancel.cancelled() => Termination::Cancelled,
        };
        // Always: stragglers in the group (without a pid namespace) must not outlive
        // the run, and on timeout or cancel this is the kill itself.
        if let Some(pgid) = pgid {
            // SAFETY: signalling our own child's process group.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        if matches!(termination, Termination::TimedOut | Termination::Cancelled) {
            let _ = child.kill().await;
        }
        let mut oom_kills = 0;
        if let Some(cg) = &cgroup {
            // Everything of the run, also what left the process group and namespace.
            cg.kill_all();
            oom_kills = cg.oom_kills();
            if oom_kills > 0 {
                let cap = limits.total_memory_bytes.unwrap_or(0) as f64 / (1u64 << 30) as f64;
                warnings.push(format!(
                    "the run reached its memory cap ({cap:.2} GiB for all its processes together): the kernel killed {oom_kills} process(es)"
                ));
            }
        }
        let duration = started.elapsed();
        let stdout = finish_drain(stdout).await;
        let stderr = finish_drain(stderr).await;

        let changes = match scratch {
            Some(scratch) => {
                let ws = self.workspace.clone();
                tokio::task::spawn_blocking(move || {
                    let set = layers::collect(&scratch.upper, &ws, &overlaid, &write_through);
                    drop(scratch);
                    set
                })
                .await
                .map_err(|e| SandboxError::Setup(format!("collecting changes: {e}")))?
            }
            None => ChangeSet::default(),
        };
        let success = termination == Termination::Exited(0);
        let mut denial = hints::detect(success, &stderr.to_text(), &stdout.to_text());
        if denial.is_none() && oom_kills > 0 {
            denial = Some(DenialHint {
                kind: hints::DenialKind::Resources,
                message: format!(
                    "the sandbox's memory cap killed {oom_kills} process(es) of this command: use less memory at once (fewer parallel jobs)"
                ),
            });
        }
        if denial.is_none() && matches!(termination, Termination::Signaled(libc::SIGSYS)) {
            denial = Some(DenialHint {
                kind: hints::DenialKind::Resources,
                message: "this looks like a sandbox denial: a system call was refused".into(),
            });
        }
        Ok(RunOutcome {
            termination,
            stdout,
            stderr,
            duration,
            changes,
            denial,
            warnings,
        })
    }

    fn resolve_cwd(&self, cwd: Option<&Path>) -> Result<PathBuf, SandboxError> {
        let joined = match cwd {
            None => return Ok(self.workspace.clone()),
            Some(p) if p.is_absolute() => p.to_path_buf(),
            Some(p) => self.workspace.join(p),
        };
        if joined.components().any(|c| c == Component::ParentDir) {
            return Err(SandboxError::InvalidRequest(format!(
                "cwd {} contains `..`",
                joined.display()
            )));
        }
        let real = joined
            .canonicalize()
            .map_err(|e| SandboxError::InvalidRequest(format!("cwd {}: {e}", joined.display())))?;
        if !real.starts_with(&self.workspace) {
            return Err(SandboxError::InvalidRequest(format!(
                "cwd {} is outside the workspace",
                joined.display()
            )));
        }
        Ok(real)
    }

    fn environment(&self) -> Vec<(String, String)> {
        let home = std::env::var("HOME").unwrap_or_else(|_| "/tmp".to_string());
        crate::env::build(
            |k| std::env::var(k).ok(),
            &self.config.env_passthrough,
            &home,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        req: &RunRequest,
        limits: &Limits,
        layers: Layers,
        scratch: Option<&Scratch>,
        has_buffers: bool,
        cwd: &Path,
        write_through: &WriteThrough,
        keep_fds: &mut Vec<OwnedFd>,
    ) -> Result<ChildPlan, SandboxError> {
        let ws = &self.workspace;

        // Join the prepared user+net namespaces when we may (no network grant), else
        // make fresh ones for this run.
        let join = if layers.user && layers.net {
            let shared = self
                .shared
                .get_or_init(|| crate::shared_ns::prepare().map_err(|e| e.to_string()));
            match shared {
                Ok(ns) => Some((ns.user.as_raw_fd(), ns.net.as_raw_fd())),
                Err(e) => {
                    tracing::debug!(error = %e, "no prepared namespaces; fresh ones per run");
                    None
                }
            }
        } else {
            None
        };
        let mut unshare_flags = 0;
        if layers.user {
            unshare_flags |= libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
            if join.is_none() {
                unshare_flags |= libc::CLONE_NEWUSER;
            }
        }
        if layers.mount {
            unshare_flags |= libc::CLONE_NEWNS;
        }
        if layers.net && join.is_none() {
            unshare_flags |= libc::CLONE_NEWNET;
        }
        if layers.pid {
            unshare_flags |= libc::CLONE_NEWPID;
        }
        // SAFETY: geteuid/getegid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let uid_map = (layers.user && join.is_none()).then(|| {
            (
                format!("{uid} {uid} 1").into_bytes(),
                format!("{gid} {gid} 1").into_bytes(),
            )
        });

        let mut overlay = None;
        let mut binds = Vec::new();
        if let (true, Some(s)) = (layers.overlay, scratch) {
            let lower = if has_buffers {
                format!("{}:{}", overlay_escape(&s.buffers), overlay_escape(ws))
            } else {
                overlay_escape(ws)
            };
            let options = format!(
                "lowerdir={lower},upperdir={},workdir={},userxattr",
                overlay_escape(&s.upper),
                overlay_escape(&s.work)
            );
            overlay = Some((cstring(ws)?, cstring_str(&options)?));
            for rel in write_through.existing_dirs(ws) {
                let path = cstring(&ws.join(&rel))?;
                binds.push(BindPlan {
                    source: path.clone(),
                    target: path,
                    readonly: false,
                });
            }
        }
        if layers.mount {
            let git = ws.join(".git");
            if git.exists() {
                let path = cstring(&git)?;
                binds.push(BindPlan {
                    source: path.clone(),
                    target: path,
                    readonly: true,
                });
            }
        }
        // Writable trees under /tmp must survive the private /tmp: the workspace, and
        // paths the config or the request grant. A tree inside another is carried along.
        let mut under_tmp: Vec<&Path> = Vec::new();
        if layers.mount {
            let candidates = std::iter::once(ws.as_path())
                .chain(self.config.extra_writable.iter().map(PathBuf::as_path))
                .chain(req.grant.writable.iter().map(PathBuf::as_path));
            for path in candidates {
                if path.starts_with("/tmp") && path != Path::new("/tmp") && path.exists() {
                    under_tmp.push(path);
                }
            }
            under_tmp.sort_by_key(|p| p.components().count());
            let mut outermost: Vec<&Path> = Vec::new();
            for path in under_tmp {
                if !outermost.iter().any(|o| path.starts_with(o)) {
                    outermost.push(path);
                }
            }
            under_tmp = outermost;
        }
        let writable_under_run = std::iter::once(ws.as_path())
            .chain(self.config.extra_writable.iter().map(PathBuf::as_path))
            .chain(req.grant.writable.iter().map(PathBuf::as_path))
            .any(|p| p.starts_with("/run") || p.starts_with("/var/run"));
        let mut reattach = Vec::new();
        for tree in under_tmp {
            let mut dirs = Vec::new();
            let mut acc = PathBuf::from("/tmp");
            for c in tree
                .strip_prefix("/tmp")
                .unwrap_or(Path::new(""))
                .components()
            {
                acc.push(c);
                dirs.push(cstring(&acc)?);
            }
            reattach.push((cstring(tree)?, dirs));
        }

        let mut rlimits = vec![(libc::RLIMIT_CORE, 0)];
        if layers.user {
            // Counted per user namespace: this limits the sandbox, not the user's session.
            rlimits.push((libc::RLIMIT_NPROC, u64::from(limits.max_processes)));
        }
        if let Some(mem) = limits.memory_bytes {
            rlimits.push((libc::RLIMIT_DATA, mem));
        }
        // pid_max is per pid namespace since Linux 6.14, and binds even for root, whom
        // RLIMIT_NPROC does not. After pids wrap, the kernel skips the first 300.
        let pid_max = (layers.pid && layers.pid_limit).then(|| {
            (u64::from(limits.max_processes) + 301)
                .to_string()
                .into_bytes()
        });

        let mut writable: Vec<PathBuf> =
            vec![ws.clone(), PathBuf::from("/tmp"), PathBuf::from("/dev/shm")];
        writable.retain(|p| p.exists());
        let landlock = match layers.landlock {
            Some(abi) => {
                let extra: Vec<&PathBuf> = self
                    .config
                    .extra_writable
                    .iter()
                    .chain(&req.grant.writable)
                    .collect();
                let (fd, write_access) =
                    landlock_ruleset(abi, !layers.net && !req.grant.network, &extra)?;
                let ruleset_fd = fd.as_raw_fd();
                keep_fds.push(fd);
                Some(LandlockPlan {
                    ruleset_fd,
                    write_access,
                    writable: writable
                        .iter()
                        .map(|p| cstring(p))
                        .collect::<Result<_, _>>()?,
                })
            }
            None => None,
        };
        let seccomp = if layers.seccomp {
            Some(
                crate::seccomp::filter(!layers.net && !req.grant.network)
                    .map_err(|e| SandboxError::Setup(format!("seccomp: {e}")))?,
            )
        } else {
            None
        };

        Ok(ChildPlan {
            err_fd: -1,
            lifeline_fd: -1,
            cgroup_procs: Vec::new(),
            join,
            unshare_flags,
            uid_map,
            make_private: layers.mount,
            overlay,
            bind_fds: vec![-1; binds.len()],
            binds,
            private_tmp: layers.mount,
            own_dev: layers.mount,
            dev_fds: [-1; crate::child::DEVICES.len()],
            hide_run: layers.mount && !writable_under_run,
            reattach_fds: vec![-1; reattach.len()],
            reattach,
            loopback_up: layers.net && join.is_none(),
            pid_ns: layers.pid,
            pid_max,
            cwd: cstring(cwd)?,
            rlimits,
            landlock,
            seccomp,
        })
    }
}

/// Builds the Landlock ruleset the child will enforce: read and execute everywhere,
/// full access to a few devices and the extra paths; the child adds the workspace and
/// the private temp dirs once they are mounted (Landlock ignores rules on mount points
/// hidden by later mounts). Returns the ruleset and the write mask for the child.
fn landlock_ruleset(
    abi: ABI,
    deny_tcp: bool,
    extra: &[&PathBuf],
) -> Result<(OwnedFd, u64), SandboxError> {
    let ll = |e: landlock::RulesetError| SandboxError::Setup(format!("landlock: {e}"));
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(ll)?;
    if deny_tcp && abi >= ABI::V4 {
        // No rule grants any port: TCP bind and connect are denied outright.
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(ll)?;
    }
    if abi >= ABI::V6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(ll)?;
    }
    let devices = [
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        // Not /dev/pts: the host's terminals are there. Commands run without one.
    ];
    let full: Vec<PathBuf> = devices
        .iter()
        .map(PathBuf::from)
        .chain(extra.iter().map(|p| (*p).clone()))
        .filter(|p| p.exists())
        .collect();
    let created = ruleset
        .create()
        .map_err(ll)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(ll)?
        .add_rules(path_beneath_rules(&full, all))
        .map_err(ll)?;
    let fd: Option<OwnedFd> = created.into();
    let fd = fd.ok_or_else(|| SandboxError::Setup("landlock: no ruleset descriptor".into()))?;
    Ok((fd, all.bits()))
}

async fn drain<R: tokio::io::AsyncRead + Unpin>(
    mut r: R,
    limit: usize,
    mut sink: Option<(OutputSink, OutputStream)>,
) -> CapturedOutput {
    let mut cap = Capture::new(limit);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                cap.push(&buf[..n]);
                if let Some((tx, stream)) = &sink {
                    let chunk = OutputChunk {
                        stream: *stream,
                        data: buf[..n].to_vec(),
                    };
                    if tx.send(chunk).is_err() {
                        // Nobody listens any more; keep capturing.
                        sink = None;
                    }
                }
            }
        }
    }
    cap.finish()
}

async fn finish_drain(task: Option<tokio::task::JoinHandle<CapturedOutput>>) -> CapturedOutput {
    let Some(mut task) = task else {
        return CapturedOutput::default();
    };
    // Everything in the sandbox is dead by now; a pipe still open after this long
    // belongs to something that escaped the kill, and we stop waiting for it.
    match tokio::time::timeout(Duration::from_secs(5), &mut task).await {
        Ok(Ok(out)) => out,
        _ => {
            task.abort();
            CapturedOutput::default()
        }
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn read_step(fd: &OwnedFd) -> Option<String> {
    let mut b = [0u8; 1];
    // SAFETY: reading one byte into a live buffer from our non-blocking pipe.
    let n = unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr().cast(), 1) };
    (n == 1).then(|| {
        STEPS
            .get(usize::from(b[0]))
            .map_or("setup", |s| s)
            .to_string()
    })
}

fn setup(what: &str, e: io::Error) -> SandboxError {
    SandboxError::Setup(format!("{what}: {e}"))
}

/// A path for overlay's mount options, where `\`, `,` and `:` separate values.
fn overlay_escape(p: &Path) -> String {
    let mut out = String::new();
    for ch in p.to_string_lossy().chars() {
        if matches!(ch, '\\' | ',' | ':') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

fn cstring(p: &Path) -> Result<CString, SandboxError> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| SandboxError::InvalidRequest(format!("path {} contains NUL", p.display())))
}

fn cstring_str(s: &str) -> Result<CString, SandboxError> {
    CString::new(s).map_err(|_| SandboxError::InvalidRequest(format!("{s:?} contains NUL")))
}
