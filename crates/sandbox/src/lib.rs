//! Runs the agent's commands isolated, fast, and against what the editor shows.
//!
//! [`Sandbox::run`] takes a [`RunRequest`] (argv, working directory, the open dirty
//! buffers, limits) and returns a [`RunOutcome`]: how it ended, stdout and stderr (head
//! and tail), a [`ChangeSet`] of the files it created, modified or deleted, and a
//! [`DenialHint`] when the failure looks like the sandbox said no. [`Policy`] answers
//! allow / ask / forbid per command prefix; the caller does the asking. [`probe`]
//! returns the [`Capabilities`] that `agentls doctor` prints.
//!
//! # The layers (Linux)
//! Set up in the forked child before `exec`, all unprivileged:
//! - **User namespace** mapping the caller's uid/gid to itself, and inside it:
//! - **Network namespace** with only `lo` (brought up, so tests can use 127.0.0.1):
//!   no interface or route leads out.
//! - **Mount namespace**: the workspace is an **overlay** (lower: the dirty buffers,
//!   then the disk; upper: a scratch dir), so the command sees the editor's buffers and
//!   its writes stay in the upper layer, read back as the change set afterwards.
//!   Write-through directories (`target/`, `node_modules/`, and paths the root
//!   `.gitignore` ignores) are bind-mounted from disk so builds stay incremental; ones
//!   the command creates are copied to disk after the run. `.git` is a read-only bind.
//!   `/tmp` and `/dev/shm` are fresh tmpfs.
//! - **Pid namespace**: the command is pid 1; when it exits or is killed, the kernel
//!   kills everything it started. `pid_max` of the namespace caps processes (root
//!   ignores `RLIMIT_NPROC`), plus `RLIMIT_NPROC`, `RLIMIT_DATA`, `RLIMIT_CORE=0`.
//! - **Landlock**: read and execute everywhere, write only beneath the workspace,
//!   /tmp, /dev/shm, a few devices and configured paths; no mounts after setup; signal
//!   and abstract-socket scoping (ABI 6+). TCP bind/connect denied without a net
//!   namespace (ABI 4+).
//! - **Seccomp** (EPERM, never kill): keyrings, bpf, perf, io_uring, mount calls; IP
//!   sockets too when there is no network namespace.
//! - A clean environment: `PATH`, `HOME`, `LANG`, `TMPDIR=/tmp`, a passthrough list
//!   with secret-looking names (`*KEY*`, `*TOKEN*`, ...) dropped.
//! - Wall time and cancellation kill the whole process group with SIGKILL (and with
//!   it pid 1 of the namespace, so everything).
//!
//! # Findings on this machine (Linux 6.18, run as root, 2 cores)
//! Unprivileged `unshare --user --map-root-user --net --mount` works; overlayfs mounts
//! inside a user namespace (with `userxattr`); Landlock ABI 7; seccomp available;
//! per-pid-namespace `pid_max` (Linux 6.14+) works. `RLIMIT_NPROC` is ignored for
//! real root even inside a user namespace (the kernel exempts `INIT_USER`), hence
//! `pid_max`. Landlock skips rules on mount points hidden by later mounts, so rules
//! for the overlaid workspace and the tmpfs dirs are added in the child after mounting.
//!
//! # Fresh setup, not a pool
//! Measured by `cargo bench -p agentls-sandbox` (see the bench for figures): a fresh
//! sandbox per command costs a few milliseconds over bare `true`, inside the budget,
//! so there is no pool: a pool would keep stale overlays of a workspace that changes
//! between commands, and the per-run buffer layer has to be fresh anyway.
//!
//! # Invariants
//! - Nothing runs unconfined silently: every missing layer is a warning in each
//!   [`RunOutcome`], and [`DegradedMode::Refuse`] refuses to run at all.
//! - The command never writes the real workspace except through write-through paths;
//!   its other changes come back as a [`ChangeSet`] for the validated edit path.
//! - Code between fork and exec ([`child`](crate) module) makes raw system calls
//!   only: no allocation, no locks.
//! - No LSP types here; the crate speaks paths, strings and exit codes.
//!
//! ```no_run
//! use agentls_sandbox::{DirtyBuffer, RunRequest, Sandbox, SandboxConfig};
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn demo() -> Result<(), agentls_sandbox::SandboxError> {
//! let sandbox = Sandbox::new(SandboxConfig::new("/home/me/project"))?;
//! let req = RunRequest::shell("cat src/lib.rs && echo more >> src/lib.rs")
//!     .buffers([DirtyBuffer::new("/home/me/project/src/lib.rs", "unsaved text\n")]);
//! let out = sandbox.run(req, &CancellationToken::new()).await?;
//! assert_eq!(out.stdout.to_text(), "unsaved text\n");
//! let change = &out.changes.changes[0];
//! assert_eq!(change.new.as_deref(), Some("unsaved text\nmore\n"));
//! # Ok(()) }
//! ```

mod child;
mod config;
mod env;
mod hints;
mod layers;
mod output;
mod policy;
mod probe;
mod run;
mod seccomp;
mod shared_ns;

pub use config::{DegradedMode, DirtyBuffer, Grant, Limits, RunRequest, SandboxConfig};
pub use env::looks_secret;
pub use hints::{DenialHint, DenialKind};
pub use layers::{ChangeSet, FileChange};
pub use output::CapturedOutput;
pub use policy::{Decision, Policy, Rule};
pub use probe::{Capabilities, FeatureStatus, landlock_abi, probe, probe_uncached};
pub use run::{RunOutcome, Sandbox, SandboxError, Termination};
pub use tokio_util::sync::CancellationToken;
