//! Runs the agent's commands isolated, fast, and against what the editor shows.
//!
//! [`Sandbox::run`] takes a [`RunRequest`] (argv, working directory, the open dirty
//! buffers, limits) and returns a [`RunOutcome`]: how it ended, stdout and stderr (head
//! and tail), a [`ChangeSet`] of the files it created, modified or deleted, and a
//! [`DenialHint`] when the failure looks like the sandbox said no. With
//! [`RunRequest::output`], stdout and stderr also stream out as [`OutputChunk`]s while
//! the command runs (raw reads, for the caller to coalesce). [`Policy`] answers
//! allow / ask / forbid per command prefix; the caller does the asking. [`probe`]
//! returns the [`Capabilities`] that `agentls doctor` prints.
//!
//! # The layers (Linux)
//! Set up in the forked child before `exec`, all unprivileged:
//! - **User and network namespace**, prepared once per [`Sandbox`] and joined by each
//!   run (`setns`): the caller's uid/gid mapped to themselves, only `lo` (up, so tests
//!   can use 127.0.0.1), no interface or route leading out. Runs granted the network
//!   get a fresh user namespace and the host's network instead.
//! - **Mount namespace** per run: the workspace is an **overlay** (lower: the dirty
//!   buffers, then the disk; upper: a scratch dir on `/dev/shm`), so the command sees
//!   the editor's buffers and its writes stay in the upper layer, read back as the
//!   change set afterwards. Write-through directories (`target/`, `node_modules/`, and
//!   paths the root `.gitignore` ignores) are bind-mounted from disk so builds stay
//!   incremental; `target/` is created first when `Cargo.toml` exists (likewise
//!   `node_modules/` for `package.json`), and other ignored paths the command creates
//!   are copied to disk after the run; before it, a write-through folder's files with
//!   a hard link outside it get a private copy, and a folder holding a socket or FIFO
//!   is not bound. `.git` (and `.hg`, `.svn`, ...) is a read-only bind, and version-
//!   control paths never enter a change set (dropped, and reported in
//!   [`ChangeSet::dropped`] and the warnings). Every top-level folder but the system
//!   ones (`/usr`, `/etc`, `/opt`, ...) is covered by an empty tmpfs, with the
//!   workspace, granted paths and toolchains put back (`view.rs`): no host socket in a
//!   home folder, `/var` or `/srv` is reachable by path. `/tmp` and
//!   `/dev/shm` are fresh tmpfs (a workspace under /tmp is re-attached). `/dev` is the
//!   sandbox's own: a small tmpfs with null, zero, full, random, urandom and tty bound
//!   from the host, a devpts instance of its own and the `fd`/`std*` links, so no host
//!   disk, kernel log or terminal is there.
//! - **Pid namespace** per run: the command is pid 1; when it exits or is killed, the
//!   kernel kills everything it started. `pid_max` of the namespace caps processes (root
//!   ignores `RLIMIT_NPROC`), plus `RLIMIT_NPROC`, `RLIMIT_DATA`, `RLIMIT_CORE=0`.
//! - **Landlock**: read and execute everywhere, write only beneath the workspace,
//!   /tmp, /dev/shm, a few devices and configured paths; no mounts after setup; signal
//!   and abstract-socket scoping (ABI 6+); ptrace (so `/proc/<pid>/environ`) of
//!   processes outside the sandbox denied. TCP bind/connect denied without a network
//!   namespace (ABI 4+).
//! - **Seccomp** (EPERM, never kill): keyrings, bpf, perf, io_uring, mount calls; IP
//!   sockets too when there is no network namespace.
//! - A clean environment: `PATH`, `HOME`, `LANG`, `TMPDIR=/tmp`, a passthrough list
//!   with secret-looking names (`*KEY*`, `*TOKEN*`, ...) dropped.
//! - Wall time and cancellation kill the whole process group with SIGKILL (and with
//!   it pid 1 of the namespace, so everything). Output keeps head and tail.
//! - A **cgroup per run** (v2, else v1's memory and cpu hierarchies, where writable):
//!   one memory cap over all of the run's processes and the tmpfs pages they write
//!   (the overlay scratch, /tmp, /dev/shm), an optional CPU quota, and a kill of every
//!   member when the run ends. The command joins it before it forks anything. The
//!   scratch layer stays on tmpfs (a disk upper costs an ext4 sync per run, below):
//!   its pages are charged to the run's cgroup, so filling the workspace inside fills
//!   at most the run's memory cap, not the host's memory.
//!   Where no cgroup is writable, a supervisor samples the run's process tree and its
//!   /tmp and /dev/shm from /proc every 50 ms and kills the run past the same cap
//!   (`supervise.rs`).
//!
//! # Findings on this machine (Linux 6.18, run as root, 2 shared cores)
//! - Unprivileged `unshare --user --map-root-user --net --mount` works; overlayfs
//!   mounts inside a user namespace (with `userxattr`, also on tmpfs); Landlock ABI 7;
//!   seccomp available; `pid_max` is per pid namespace (Linux 6.14+).
//! - `RLIMIT_NPROC` is ignored for real root even inside a user namespace (the kernel
//!   exempts `INIT_USER`), hence `pid_max` as the process cap.
//! - Landlock skips rules on mount points hidden by later mounts, so the rules for the
//!   overlaid workspace and the tmpfs dirs are added in the child after mounting.
//! - Mount sources must belong to the mounting namespace: descriptors opened by the
//!   parent fail (`EINVAL`, "failed to clone upperpath"); binds use `open_tree` clones
//!   made in the child before the overlay hides the real directories.
//! - Costs measured (see `examples/layer_cost.rs`): a disk-backed overlay upper made
//!   each run pay an ext4 sync at unmount (~35 ms median), so scratch lives on tmpfs;
//!   creating and tearing down a network namespace costs ~2 ms, so it is prepared once.
//!
//! # Fresh setup, and a pool of one
//! `cargo bench -p agentls-sandbox` (300 runs, same run, load average ~11 on 2 cores
//! from other builds): bare `true` median 1.31 ms (min 0.85); sandboxed `true` median
//! 13-21 ms (min 2.5-3.2 ms); without the pid namespace median 8.5 ms (min 2.1);
//! `bwrap` with an equivalent policy median 28 ms (min 7.9), so agentls is 0.71-0.76x
//! bwrap. The floor (minimum) is ~2 ms of overhead over bare `true`. Under load the
//! median misses the 5 ms target because of the pid namespace: `layer_cost` runs with
//! it off give 2-3.5 ms medians against 4-15 ms with it on, in the same minute. Which
//! part of it (the extra process, the /proc mount, namespace teardown) costs this was
//! not isolated: the machine was too noisy for finer figures.
//! The only part worth pooling was the network namespace (2 ms of set-up and
//! tear-down), which is prepared once per [`Sandbox`] and joined. Mount and pid
//! namespaces stay fresh per run: the overlay must hold this run's buffers and an
//! empty upper layer, and a fresh pid namespace is what guarantees that nothing
//! outlives the run. [`SandboxConfig::pid_namespace`] trades that guarantee for
//! latency under load.
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

pub mod cgroup;
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
mod supervise;
mod view;

pub use config::{
    DegradedMode, DirtyBuffer, Grant, Limits, OutputChunk, OutputSink, OutputStream, RunRequest,
    SandboxConfig,
};
pub use env::looks_secret;
pub use hints::{DenialHint, DenialKind};
pub use layers::{ChangeSet, FileChange};
pub use output::CapturedOutput;
pub use policy::{Decision, Policy, Rule};
pub use probe::{Capabilities, FeatureStatus, landlock_abi, probe, probe_uncached};
pub use run::{RunOutcome, Sandbox, SandboxError, Termination};
pub use tokio_util::sync::CancellationToken;
