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

use crate::child::{
    BindPlan, ChildPlan, KeepPlan, LandlockPlan, MASK_OPTIONS, MaskPlan, RUN_OPTIONS, STEPS,
    TMP_OPTIONS,
};
use crate::config::{
    DegradedMode, Limits, OutputChunk, OutputSink, OutputStream, RunRequest, SandboxConfig,
};
use crate::hints::{self, DenialHint};
use crate::layers::{self, ChangeSet, Scratch, WriteThrough};
use crate::output::{Capture, CapturedOutput};
use crate::probe::{Capabilities, probe};
use crate::supervise::{self, Supervisor};
use crate::view::View;

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
    /// The toolchain folders every run sees read-only (see `view.rs`).
    readable: Vec<PathBuf>,
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
        if config.degraded == DegradedMode::Refuse && !caps.is_isolated() {
            return Err(SandboxError::Unavailable(caps.warnings().join("; ")));
        }
        if let Some(base) = config.scratch_root.as_ref().or(caps.scratch_root.as_ref()) {
            layers::remove_stale_scratch(base);
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let named: Vec<String> = config
            .env_passthrough
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .collect();
        let path = std::env::var("PATH").unwrap_or_default();
        let mut readable = crate::view::toolchains(home.as_deref(), &path, &named);
        readable.extend(config.extra_readable.iter().cloned());
        Ok(Self {
            shared: std::sync::OnceLock::new(),
            config,
            workspace,
            caps,
            readable,
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
        let mut warnings = self.run_warnings(&req);
        self.precreate_write_through(layers, &mut warnings);
        let write_through = WriteThrough::new(
            &self.workspace,
            &self.config.write_through,
            self.config.use_gitignore,
        );
        let (scratch, overlaid) = self.prepare_scratch(layers, &req, &mut warnings)?;
        let view = self.view(&req, layers);

        let mut keep_fds: Vec<OwnedFd> = Vec::new();
        let mut plan = self.plan(
            &req,
            &limits,
            layers,
            scratch.as_ref(),
            !overlaid.is_empty(),
            &cwd,
            &write_through,
            &view,
            &mut keep_fds,
            &mut warnings,
        )?;
        let (err_read, err_write) = pipe().map_err(|e| setup("error pipe", e))?;
        // Held until this function returns: if the runner is killed, the kernel closes
        // it and the sandboxed command dies with it.
        let (life_read, _lifeline) = pipe().map_err(|e| setup("lifeline pipe", e))?;
        plan.err_fd = err_write.as_raw_fd();
        plan.lifeline_fd = life_read.as_raw_fd();
        // Dropped (killing what is left in it and removing it) when this function
        // returns, after the process group's kill below.
        let cgroup = self.run_cgroup(&limits, &mut plan, &mut warnings);

        let started = Instant::now();
        let spawned = self.command(&program, &req, plan).spawn();
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
        // Where no cgroup holds the run's total, a supervisor measures it instead.
        let supervisor = match (&cgroup, pgid, limits.total_memory_bytes) {
            (None, Some(root), Some(memory_bytes)) => Some(Supervisor::start(
                root,
                supervise::Caps {
                    memory_bytes,
                    processes: (!(layers.pid && layers.pid_limit)).then_some(limits.max_processes),
                    private_tmp: layers.mount,
                },
            )),
            _ => None,
        };
        let (stdout, stderr) = start_drains(&mut child, limits.output_bytes, req.output.take());
        let termination = wait_for(&mut child, limits.wall_time, cancel).await?;
        kill_the_rest(&mut child, pgid, termination).await;
        let stopped_by = memory_stop(cgroup.as_ref(), supervisor.as_ref(), &limits);
        drop(supervisor);
        if let Some(why) = &stopped_by {
            warnings.push(why.clone());
        }
        drop(cgroup);
        let duration = started.elapsed();
        let stdout = finish_drain(stdout).await;
        let stderr = finish_drain(stderr).await;

        let changes = self
            .collect_changes(scratch, overlaid, write_through)
            .await?;
        report_dropped(&changes, &mut warnings);
        let success = termination == Termination::Exited(0);
        let denial = denial(
            success,
            termination,
            &stdout,
            &stderr,
            stopped_by.as_deref(),
            &view,
        );
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

    /// Warnings every result of this request carries: missing layers, configured
    /// weakenings, grants.
    fn run_warnings(&self, req: &RunRequest) -> Vec<String> {
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
        warnings
    }

    /// Creates the write-through directories whose manifest exists (`target/` beside
    /// `Cargo.toml`), so a first build writes to disk, not to the scratch layer.
    fn precreate_write_through(&self, layers: Layers, warnings: &mut Vec<String>) {
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
    }

    /// The run's scratch directories and buffer layer, with the buffers' texts by
    /// relative path. Only with an overlay: without one, buffers cannot be shown and
    /// writes land on disk, which the warnings already say.
    fn prepare_scratch(
        &self,
        layers: Layers,
        req: &RunRequest,
        warnings: &mut Vec<String>,
    ) -> Result<(Option<Scratch>, HashMap<PathBuf, String>), SandboxError> {
        if !layers.overlay {
            if !req.buffers.is_empty() {
                warnings.push("dirty buffers were not laid over the disk (no overlayfs)".into());
            }
            return Ok((None, HashMap::new()));
        }
        let base = self
            .config
            .scratch_root
            .clone()
            .or_else(|| self.caps.scratch_root.clone())
            .unwrap_or_else(std::env::temp_dir);
        let scratch = Scratch::create(&base).map_err(|e| setup("scratch directory", e))?;
        let overlaid =
            layers::write_buffer_layer(&scratch.buffers, &self.workspace, &req.buffers, warnings)
                .map_err(|e| setup("buffer layer", e))?;
        Ok((Some(scratch), overlaid))
    }

    /// What of the host this run sees (nothing hidden without a mount namespace).
    fn view(&self, req: &RunRequest, layers: Layers) -> View {
        if !layers.mount {
            return View::default();
        }
        let writable: Vec<PathBuf> = std::iter::once(&self.workspace)
            .chain(&self.config.extra_writable)
            .chain(&req.grant.writable)
            .filter(|p| p.exists())
            .cloned()
            .collect();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        View::plan(
            &crate::view::root_dirs(),
            &writable,
            &self.readable,
            home.as_deref(),
        )
    }

    /// The run's cgroup, joined by the child first; `None` (and a warning) where the
    /// kernel gives none, and the supervisor holds the cap instead.
    fn run_cgroup(
        &self,
        limits: &Limits,
        plan: &mut ChildPlan,
        warnings: &mut Vec<String>,
    ) -> Option<crate::cgroup::RunCgroup> {
        let memory = limits.total_memory_bytes?;
        if !self.caps.memory_cap.available {
            return None;
        }
        match crate::cgroup::RunCgroup::create(memory, limits.cpu_millicores) {
            Ok(cg) => {
                plan.cgroup_procs = cg.join_fds();
                Some(cg)
            }
            Err(e) => {
                warnings.push(format!(
                    "no cgroup for this run ({e}): a supervisor samples its memory and stops it at the cap"
                ));
                None
            }
        }
    }

    /// The command, its clean environment, and the child's setup as its `pre_exec`.
    fn command(
        &self,
        program: &str,
        req: &RunRequest,
        mut plan: ChildPlan,
    ) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(program);
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
        cmd
    }

    /// Reads the overlay's upper layer into the change set (off the async threads).
    async fn collect_changes(
        &self,
        scratch: Option<Scratch>,
        overlaid: HashMap<PathBuf, String>,
        write_through: WriteThrough,
    ) -> Result<ChangeSet, SandboxError> {
        let Some(scratch) = scratch else {
            return Ok(ChangeSet::default());
        };
        let ws = self.workspace.clone();
        tokio::task::spawn_blocking(move || {
            let set = layers::collect(&scratch.upper, &ws, &overlaid, &write_through);
            drop(scratch);
            set
        })
        .await
        .map_err(|e| SandboxError::Setup(format!("collecting changes: {e}")))
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

    /// The namespaces of a run: the prepared user and network ones to join (when no
    /// network is granted), the flags to unshare, and the user's id maps for a fresh
    /// user namespace.
    fn namespaces(&self, layers: &Layers) -> (Option<(RawFd, RawFd)>, libc::c_int, Option<IdMaps>) {
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

        (join, unshare_flags, uid_map)
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
        view: &View,
        keep_fds: &mut Vec<OwnedFd>,
        warnings: &mut Vec<String>,
    ) -> Result<ChildPlan, SandboxError> {
        let ws = &self.workspace;

        let (join, unshare_flags, uid_map) = self.namespaces(&layers);
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
            let guarded = layers::guard_write_through(ws, write_through.existing_dirs(ws));
            warnings.extend(guarded.notes);
            for rel in guarded.bind {
                let path = cstring(&ws.join(&rel))?;
                binds.push(BindPlan {
                    source: path.clone(),
                    target: path,
                    readonly: false,
                });
            }
        }
        if layers.mount {
            binds.extend(vcs_binds(ws)?);
        }
        let (masks, keeps) = child_view(view)?;
        let (rlimits, pid_max) = child_limits(&layers, limits);
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
            own_dev: layers.mount,
            dev_fds: [-1; crate::child::DEVICES.len()],
            private_shm: layers.mount,
            masks,
            keeps,
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

/// Read-only binds of the workspace's version-control folders (`.git`, `.hg`, ...),
/// so a write there fails at once. One whose top level holds a socket (git's
/// fsmonitor daemon) is not bound: the overlay shows it, where `connect()` to a lower
/// layer's socket is refused, and writes to it are dropped from the change set.
fn vcs_binds(ws: &Path) -> Result<Vec<BindPlan>, SandboxError> {
    use std::os::unix::fs::FileTypeExt;
    let mut binds = Vec::new();
    for name in layers::VCS_DIRS {
        let dir = ws.join(name);
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let holds_socket = std::fs::read_dir(&dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_type().is_ok_and(|t| t.is_socket() || t.is_fifo()))
        });
        if holds_socket {
            continue;
        }
        let path = cstring(&dir)?;
        binds.push(BindPlan {
            source: path.clone(),
            target: path,
            readonly: true,
        });
    }
    Ok(binds)
}

/// The view's covers and kept trees as the child mounts them.
fn child_view(view: &View) -> Result<(Vec<MaskPlan>, Vec<KeepPlan>), SandboxError> {
    let mut masks = Vec::new();
    for mask in &view.masks {
        let (options, flags) = if mask.dir == Path::new("/tmp") {
            (TMP_OPTIONS, libc::MS_NOSUID | libc::MS_NODEV)
        } else if mask.dir == Path::new("/run") {
            (
                RUN_OPTIONS,
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            )
        } else {
            (
                MASK_OPTIONS,
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            )
        };
        masks.push(MaskPlan {
            dir: cstring(&mask.dir)?,
            options,
            flags,
            dirs: mask
                .dirs
                .iter()
                .map(|d| cstring(d))
                .collect::<Result<_, _>>()?,
            links: mask
                .links
                .iter()
                .map(|(t, l)| Ok((cstring(t)?, cstring(l)?)))
                .collect::<Result<_, SandboxError>>()?,
        });
    }
    let keeps = view
        .keeps
        .iter()
        .map(|k| {
            Ok(KeepPlan {
                tree: cstring(&k.tree)?,
                dirs: k
                    .dirs
                    .iter()
                    .map(|d| cstring(d))
                    .collect::<Result<_, _>>()?,
                file: k.file,
                readonly: k.readonly,
                fd: -1,
            })
        })
        .collect::<Result<_, SandboxError>>()?;
    Ok((masks, keeps))
}

type Drain = Option<tokio::task::JoinHandle<CapturedOutput>>;

/// Reads stdout and stderr on tasks of their own, streaming to `sink` when set.
fn start_drains(
    child: &mut tokio::process::Child,
    limit: usize,
    sink: Option<OutputSink>,
) -> (Drain, Drain) {
    let stdout = child.stdout.take().map(|s| {
        let sink = sink.clone().map(|t| (t, OutputStream::Stdout));
        tokio::spawn(drain(s, limit, sink))
    });
    let stderr = child.stderr.take().map(|s| {
        let sink = sink.clone().map(|t| (t, OutputStream::Stderr));
        tokio::spawn(drain(s, limit, sink))
    });
    (stdout, stderr)
}

/// Waits for the command, its wall time, or the cancellation, whichever comes first.
async fn wait_for(
    child: &mut tokio::process::Child,
    wall_time: Duration,
    cancel: &CancellationToken,
) -> Result<Termination, SandboxError> {
    Ok(tokio::select! {
        status = child.wait() => match status {
            Ok(s) => match (s.code(), s.signal()) {
                (Some(code), _) => Termination::Exited(code),
                (None, Some(sig)) => Termination::Signaled(sig),
                (None, None) => Termination::Exited(-1),
            },
            Err(e) => return Err(setup("wait", e)),
        },
        () = tokio::time::sleep(wall_time) => Termination::TimedOut,
        () = cancel.cancelled() => Termination::Cancelled,
    })
}

/// Kills what is left of the run: always the process group (stragglers without a pid
/// namespace must not outlive the run, and on timeout or cancel this is the kill
/// itself), then the child.
async fn kill_the_rest(
    child: &mut tokio::process::Child,
    pgid: Option<libc::pid_t>,
    termination: Termination,
) {
    if let Some(pgid) = pgid {
        // SAFETY: signalling our own child's process group.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    if matches!(termination, Termination::TimedOut | Termination::Cancelled) {
        let _ = child.kill().await;
    }
}

/// Why the run's memory cap stopped it, if it did: the kernel's kills in the cgroup
/// (after killing everything left in it: also what left the process group and
/// namespace), or the supervisor's.
fn memory_stop(
    cgroup: Option<&crate::cgroup::RunCgroup>,
    supervisor: Option<&Supervisor>,
    limits: &Limits,
) -> Option<String> {
    if let Some(cg) = cgroup {
        cg.kill_all();
        let oom_kills = cg.oom_kills();
        if oom_kills > 0 {
            let cap = limits.total_memory_bytes.unwrap_or(0) as f64 / (1u64 << 30) as f64;
            return Some(format!(
                "the run reached its memory cap ({cap:.2} GiB for all its processes together): the kernel killed {oom_kills} process(es)"
            ));
        }
    }
    supervisor.and_then(Supervisor::stopped).map(|s| s.reason)
}

/// Says in the warnings (which the model reads) what the change set dropped.
fn report_dropped(changes: &ChangeSet, warnings: &mut Vec<String>) {
    for (path, why) in &changes.dropped {
        warnings.push(format!("not in the change set: {} ({why})", path.display()));
    }
}

/// The hint that the failure looks like the sandbox said no, with the evidence.
fn denial(
    success: bool,
    termination: Termination,
    stdout: &CapturedOutput,
    stderr: &CapturedOutput,
    memory_stop: Option<&str>,
    view: &View,
) -> Option<DenialHint> {
    let hidden = |p: &Path| view.hides(p);
    if let Some(hint) = hints::detect(success, &stderr.to_text(), &stdout.to_text(), &hidden) {
        return Some(hint);
    }
    if let Some(why) = memory_stop {
        return Some(DenialHint {
            kind: hints::DenialKind::Resources,
            message: format!("{why}; this command needs less memory at once (fewer parallel jobs)"),
        });
    }
    if matches!(termination, Termination::Signaled(libc::SIGSYS)) {
        return Some(DenialHint {
            kind: hints::DenialKind::Resources,
            message: "this looks like a sandbox denial: a system call was refused".into(),
        });
    }
    None
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

/// A fresh user namespace's uid and gid maps.
type IdMaps = (Vec<u8>, Vec<u8>);

/// The run's resource limits (no core dumps; processes per user namespace; data
/// size) and, in its own pid namespace, its `pid_max`.
fn child_limits(
    layers: &Layers,
    limits: &Limits,
) -> (Vec<(libc::__rlimit_resource_t, u64)>, Option<Vec<u8>>) {
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

    (rlimits, pid_max)
}
