//! How a [`crate::Sandbox`] is set up, and what one run asks for.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Resource limits for one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wall time; the whole process group (and pid namespace) is killed past it.
    pub wall_time: Duration,
    /// Bytes of stdout and of stderr kept, each: half from the head, half from the tail.
    pub output_bytes: usize,
    /// Processes (and threads) the command may have at once.
    pub max_processes: u32,
    /// Writable memory per process (`RLIMIT_DATA`: heap and private writable mappings;
    /// unlike `RLIMIT_AS` it ignores address space merely reserved, as V8 and ASan do).
    /// `None` for no limit.
    pub memory_bytes: Option<u64>,
    /// Memory of all the run's processes together, tmpfs pages they write included
    /// (a cgroup per run, where the kernel gives one; see `cgroup.rs`). `None` for no
    /// cap. Half the machine's memory by default.
    pub total_memory_bytes: Option<u64>,
    /// CPU time for the whole run, in thousandths of a core (`1500`: one and a half
    /// cores), with the same cgroup. `None` (the default) for no quota: builds use every
    /// core, and the wall time bounds the rest.
    pub cpu_millicores: Option<u32>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            wall_time: Duration::from_secs(600),
            output_bytes: 256 * 1024,
            max_processes: 1024,
            memory_bytes: Some(16 << 30),
            total_memory_bytes: physical_memory().map(|b| b / 2),
            cpu_millicores: None,
        }
    }
}

/// The machine's memory, in bytes.
fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && size > 0).then(|| pages as u64 * size as u64)
}

impl Limits {
    /// The limits in force, one line each, for `agentls doctor`: what is capped, by
    /// what, and what is not.
    pub fn describe(&self) -> Vec<String> {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let cgroup = crate::cgroup::support();
        vec![
            format!(
                "wall time        {} s per command, then the whole process tree is killed",
                self.wall_time.as_secs()
            ),
            format!(
                "processes        {} at once (pid namespace pid_max and RLIMIT_NPROC)",
                self.max_processes
            ),
            match self.memory_bytes {
                Some(b) => format!(
                    "memory           {:.1} GiB writable per process (RLIMIT_DATA)",
                    gib(b)
                ),
                None => "memory           not capped per process".to_owned(),
            },
            match (self.total_memory_bytes, cgroup) {
                (Some(b), Some(v)) => format!(
                    "memory total     {:.1} GiB for all of a run's processes and their tmpfs pages ({}, a group per run, killed whole)",
                    gib(b),
                    v.label()
                ),
                (Some(b), None) => format!(
                    "memory total     {:.1} GiB for all of a run's processes and its /tmp, measured every 50 ms from /proc (no writable cgroup here), the run stopped past it",
                    gib(b)
                ),
                (None, _) => "memory total     not capped (by configuration)".to_owned(),
            },
            "/tmp             private tmpfs, 1 GiB at most, counted in the memory total".to_owned(),
            "/dev/shm         private tmpfs, 256 MiB at most".to_owned(),
            "/run             an empty tmpfs over the host's (its sockets hidden)".to_owned(),
            "host folders     only system folders, toolchains and the workspace visible; the rest (home, /var, ...) covered, so no host socket is reachable by path".to_owned(),
            "/dev             its own: null, zero, full, random, urandom, tty and a devpts of its own; no host device or terminal".to_owned(),
            match (self.cpu_millicores, cgroup) {
                (Some(m), Some(v)) => format!(
                    "cpu              {:.2} cores for the whole run ({})",
                    f64::from(m) / 1000.0,
                    v.label()
                ),
                (Some(_), None) => "cpu              no quota: no writable cgroup here".to_owned(),
                (None, _) => "cpu              no quota (the wall time bounds a run)".to_owned(),
            },
            format!(
                "output           {} KiB of stdout and of stderr kept, head and tail",
                self.output_bytes / 1024
            ),
        ]
    }
}

/// What to do when the kernel lacks a layer of isolation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DegradedMode {
    /// Run with what works and put a warning in every result.
    #[default]
    Warn,
    /// Refuse to run anything unless every layer works.
    Refuse,
}

/// The sandbox's fixed setup: one per workspace.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Absolute workspace root; the only writable tree besides /tmp.
    pub workspace: PathBuf,
    /// Default limits for every run.
    pub limits: Limits,
    /// Directories (relative to the workspace) whose writes go straight to disk, such
    /// as build outputs; they never show up in the change set.
    pub write_through: Vec<PathBuf>,
    /// Write-through directories created on disk before a run when the manifest beside
    /// them exists (`target` for `Cargo.toml`, ...), so a first build writes straight to
    /// disk instead of into the overlay's scratch layer, which lives in memory.
    pub precreate: Vec<(PathBuf, PathBuf)>,
    /// Also treat paths ignored by the workspace's root `.gitignore` as write-through.
    pub use_gitignore: bool,
    /// Extra absolute paths the command may write (e.g. a shared build cache).
    pub extra_writable: Vec<PathBuf>,
    /// Extra absolute paths the command may read, for toolchains the sandbox does not
    /// find by itself. Besides system folders (`/usr`, `/etc`, `/opt`, ...), the
    /// workspace and these, a command sees only the toolchains named by `PATH`, the
    /// passed-through variables and the usual home folders (`~/.cargo`, `~/.rustup`,
    /// `~/.pyenv`, ...): the rest of the host (home directories, `/var`, `/srv`, ...,
    /// and the sockets in them) is covered by empty folders.
    pub extra_readable: Vec<PathBuf>,
    /// Environment variables passed through from agentls's own environment when they
    /// are set and do not look like secrets (e.g. `CARGO_HOME`, `RUSTUP_HOME`).
    pub env_passthrough: Vec<String>,
    /// What to do on a kernel that lacks a layer.
    pub degraded: DegradedMode,
    /// Run each command as pid 1 of its own pid namespace (the default), so a kill
    /// reaches everything it started, even processes that left its process group.
    /// Costs one more process and a /proc mount per run: under heavy load, several
    /// milliseconds at the median (see the start-up bench); without it, only the
    /// process group is killed.
    pub pid_namespace: bool,
    /// Where per-run scratch directories (overlay upper layers) go. When `None`: where
    /// the probe found overlay to work, `/dev/shm` first, else the system temp dir. A disk-backed
    /// upper costs a filesystem sync when the sandbox's mounts go away (tens of
    /// milliseconds here); tmpfs costs nothing. Must support overlay upper layers with
    /// user xattrs (tmpfs on Linux 6.6+, ext4, xfs, btrfs).
    pub scratch_root: Option<PathBuf>,
}

impl SandboxConfig {
    /// The defaults for a workspace: no network, `target/` and `node_modules/` and
    /// gitignored paths written through, limits from [`Limits::default`].
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            limits: Limits::default(),
            write_through: vec![PathBuf::from("target"), PathBuf::from("node_modules")],
            precreate: vec![
                (PathBuf::from("target"), PathBuf::from("Cargo.toml")),
                (PathBuf::from("node_modules"), PathBuf::from("package.json")),
            ],
            use_gitignore: true,
            extra_writable: Vec::new(),
            extra_readable: Vec::new(),
            env_passthrough: [
                "CARGO_HOME",
                "RUSTUP_HOME",
                "RUSTUP_TOOLCHAIN",
                "GOPATH",
                "GOROOT",
                "JAVA_HOME",
                "VIRTUAL_ENV",
                "PYENV_ROOT",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            degraded: DegradedMode::Warn,
            pid_namespace: true,
            scratch_root: None,
        }
    }
}

/// An open document whose buffer differs from disk, laid over its file for the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirtyBuffer {
    /// Absolute path of the file; buffers outside the workspace are ignored (warned).
    pub path: PathBuf,
    /// The buffer's full text.
    pub text: String,
}

impl DirtyBuffer {
    /// A buffer for `path` with `text`.
    pub fn new(path: impl Into<PathBuf>, text: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            text: text.into(),
        }
    }
}

/// More access than the default, granted by the user after an escalation hint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    /// Share the host's network (no network namespace, no socket filter).
    pub network: bool,
    /// Extra absolute paths writable for this run.
    pub writable: Vec<PathBuf>,
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Program and arguments; the program is looked up in the sandbox's `PATH`.
    pub argv: Vec<String>,
    /// Working directory: relative to the workspace, or absolute inside it. Default: root.
    pub cwd: Option<PathBuf>,
    /// Open documents whose buffer differs from disk.
    pub buffers: Vec<DirtyBuffer>,
    /// Extra environment variables for this run (not filtered: the caller chose them).
    pub env: Vec<(String, String)>,
    /// Limits for this run; the sandbox's defaults when `None`.
    pub limits: Option<Limits>,
    /// Escalated access, after the user agreed.
    pub grant: Grant,
    /// Where stdout and stderr chunks go while the command runs, as they are read
    /// (the head/tail capture in [`crate::RunOutcome`] is kept either way).
    pub output: Option<OutputSink>,
}

/// Which stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl OutputStream {
    /// `"stdout"` or `"stderr"`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        }
    }
}

/// Bytes of one stream, exactly as one read returned them (not split at lines nor at
/// UTF-8 boundaries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    /// The stream.
    pub stream: OutputStream,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Receives [`OutputChunk`]s while a command runs; a receiver that went away is fine.
pub type OutputSink = tokio::sync::mpsc::UnboundedSender<OutputChunk>;

impl RunRequest {
    /// Runs `argv` as is.
    pub fn new<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            argv: argv.into_iter().map(Into::into).collect(),
            cwd: None,
            buffers: Vec::new(),
            env: Vec::new(),
            limits: None,
            grant: Grant::default(),
            output: None,
        }
    }

    /// Runs `script` with `bash -o pipefail -c` (`/bin/sh -c` where there is no bash),
    /// the form agents usually send. With pipefail a pipeline fails when any of its
    /// commands fails: `cargo test | tail` must not read as success when the tests fail.
    pub fn shell(script: impl Into<String>) -> Self {
        if Path::new("/bin/bash").is_file() {
            Self::new([
                "/bin/bash".to_string(),
                "-o".to_string(),
                "pipefail".to_string(),
                "-c".to_string(),
                script.into(),
            ])
        } else {
            Self::new(["/bin/sh".to_string(), "-c".to_string(), script.into()])
        }
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl AsRef<Path>) -> Self {
        self.cwd = Some(cwd.as_ref().to_path_buf());
        self
    }

    /// Adds dirty buffers.
    pub fn buffers(mut self, buffers: impl IntoIterator<Item = DirtyBuffer>) -> Self {
        self.buffers.extend(buffers);
        self
    }

    /// Sets the limits for this run.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = Some(limits);
        self
    }

    /// Grants extra access for this run.
    pub fn grant(mut self, grant: Grant) -> Self {
        self.grant = grant;
        self
    }

    /// Streams the output to `sink` while the command runs.
    pub fn output(mut self, sink: OutputSink) -> Self {
        self.output = Some(sink);
        self
    }
}
