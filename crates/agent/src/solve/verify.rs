//! Checking a candidate without writing it anywhere: the syntax tree, the language's
//! compile check where a cheap one exists, then the project's tests, each run in the
//! sandbox with the candidate's text as a buffer laid over the workspace (the overlay
//! of `agentls_sandbox`; writes stay in its scratch layer). The disk and the editor's
//! buffers see nothing of a candidate until it is picked.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentls_index::Language;
use agentls_sandbox::{DirtyBuffer, Limits, RunRequest, Sandbox, SandboxConfig};

/// Longest one check may run.
const CHECK_TIME: Duration = Duration::from_secs(120);

/// Characters of a failing check's output kept (its tail), for the report and the
/// repair round.
const TAIL_CHARS: usize = 1_500;

/// The commands that judge a candidate in this workspace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checks {
    /// The project's tests (`cargo test`, `go test ./...`, `python3 -m unittest`, …).
    pub tests: Option<String>,
}

/// Whether `python3 -m pytest` works here (tasks' tests are often `unittest` files
/// that run under both; pytest is not installed everywhere).
/// Whether `python3` can import pytest.
pub fn has_pytest() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import pytest"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The project's test command, from what the workspace root holds: `cargo test` for
/// Cargo, `go test ./...` for Go, `npm test` for a real test script, `node --test` for
/// JavaScript test files, pytest where installed and `python3 -m unittest` where not.
pub fn detect(root: &Path) -> Checks {
    let has = |name: &str| root.join(name).is_file();
    let tests = if has("Cargo.toml") {
        Some("cargo test --quiet --offline".to_owned())
    } else if has("go.mod") {
        Some("go test ./...".to_owned())
    } else if let Some(npm) = npm_test(root) {
        Some(npm)
    } else if any_file(root, &|n| {
        n.ends_with(".test.js") || n.ends_with(".test.mjs")
    }) {
        Some("node --test".to_owned())
    } else if any_file(root, &|n| n.starts_with("test_") && n.ends_with(".py")) {
        Some(python_tests(root, has_pytest()))
    } else {
        None
    };
    Checks { tests }
}

/// The command that runs a Python project's tests: pytest when `pytest` (installed),
/// else the standard library's unittest discovering the tests directory (`tests`,
/// `test`) or the root. Shared with the harness's final check.
pub fn python_tests(root: &Path, pytest: bool) -> String {
    let dir = ["tests", "test"]
        .into_iter()
        .find(|d| root.join(d).is_dir());
    match (pytest, dir) {
        (true, _) => "python3 -B -m pytest -q".to_owned(),
        (false, Some(d)) => format!("python3 -B -m unittest discover -s {d} -q"),
        (false, None) => "python3 -B -m unittest discover -q".to_owned(),
    }
}

fn npm_test(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("package.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    let script = json["scripts"]["test"].as_str()?;
    // npm's placeholder fails on purpose: it is not a check.
    (!script.is_empty() && !script.contains("no test specified"))
        .then(|| "npm test --silent".to_owned())
}

/// Whether a file whose name `want` accepts is at the root or one level down.
fn any_file(root: &Path, want: &dyn Fn(&str) -> bool) -> bool {
    let names = |dir: &Path| -> Vec<(String, bool)> {
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| {
                        (
                            e.file_name().to_string_lossy().into_owned(),
                            e.path().is_dir(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    names(root).into_iter().any(|(n, is_dir)| {
        want(&n)
            || (is_dir
                && !n.starts_with('.')
                && n != "node_modules"
                && n != "target"
                && names(&root.join(&n)).iter().any(|(m, _)| want(m)))
    })
}

/// The language's own quick check of one file, where it has one that needs no
/// project: Python's compiler, Node's parser. Rust and Go compile in their tests.
fn compile_command(lang: Language, rel: &str) -> Option<String> {
    match lang {
        Language::Python => Some(format!("python3 -B -m py_compile {}", shell_quote(rel))),
        Language::JavaScript => Some(format!("node --check {}", shell_quote(rel))),
        _ => None,
    }
}

/// The dotted module a Python file below the root is imported as (`pkg/mod.py` →
/// `pkg.mod`, `pkg/__init__.py` → `pkg`); `None` where its path names no module.
pub fn python_module(rel: &str) -> Option<String> {
    let module = rel
        .trim_start_matches("./")
        .strip_suffix(".py")?
        .replace('/', ".");
    let module = module
        .strip_suffix(".__init__")
        .unwrap_or(&module)
        .to_owned();
    module
        .split('.')
        .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(module)
}

/// The command that imports a Python file as its module (below the root), where its
/// name is one: `py_compile` passes `def f(x: List[int])` without the import of
/// `List`, loading it does not. An endless loop at import is cut after 10 s.
fn load_command(lang: Language, rel: &str) -> Option<String> {
    if lang != Language::Python {
        return None;
    }
    let module = python_module(rel)?;
    Some(format!(
        "python3 -B -c 'import importlib, signal, sys; signal.alarm(10); sys.path.insert(0, \".\"); importlib.import_module(\"{module}\")' < /dev/null"
    ))
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// How one command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    /// Exit status 0.
    pub ok: bool,
    /// Tests that passed and failed, where the output says.
    pub counts: Option<(u32, u32)>,
    /// The output's tail.
    pub tail: String,
}

/// What the checks said of one text of the target file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Syntax errors (tree-sitter).
    pub syntax_errors: usize,
    /// The compile check: `None` when the language has none here, or the syntax failed.
    pub compiles: Option<bool>,
    /// The tests: `None` when the project has none or an earlier check failed.
    pub tests: Option<Ran>,
}

impl Verdict {
    /// One phrase for people.
    pub fn phrase(&self) -> String {
        if self.syntax_errors > 0 {
            return format!("{} syntax error(s)", self.syntax_errors);
        }
        if self.compiles == Some(false) {
            return "does not compile".to_owned();
        }
        match &self.tests {
            None => "compiles; no tests to run".to_owned(),
            Some(t) if t.ok => "the tests pass".to_owned(),
            Some(Ran {
                counts: Some((p, f)),
                tail,
                ..
            }) if looks_like_build_error(tail) && *p == 0 => {
                let _ = f;
                "does not compile".to_owned()
            }
            Some(Ran {
                counts: Some((p, f)),
                ..
            }) => format!("tests fail ({p} pass, {f} fail)"),
            Some(r) if looks_like_build_error(&r.tail) => "does not compile".to_owned(),
            Some(_) => "the tests fail".to_owned(),
        }
    }

    /// Whether it builds and every check that ran passed.
    pub fn passes(&self) -> bool {
        self.builds() && self.tests.as_ref().is_none_or(|t| t.ok)
    }

    /// Whether it builds: no syntax error, the compile check (if any) passed and the
    /// tests did not fail to build.
    pub fn builds(&self) -> bool {
        self.syntax_errors == 0
            && self.compiles != Some(false)
            && !self
                .tests
                .as_ref()
                .is_some_and(|t| !t.ok && looks_like_build_error(&t.tail))
    }
}

/// Whether a failed test run's output says the code did not build.
fn looks_like_build_error(tail: &str) -> bool {
    [
        "could not compile",
        "error[E",
        "[build failed]",
        "SyntaxError",
        "IndentationError",
        "undefined:",
        "cannot use",
    ]
    .iter()
    .any(|m| tail.contains(m))
}

/// Test counts from the output of the common runners.
pub fn counts(output: &str) -> Option<(u32, u32)> {
    let num_before = |s: &str, word: &str| -> Option<u32> {
        let at = s.find(word)?;
        s[..at]
            .split_whitespace()
            .last()?
            .trim_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .ok()
    };
    // cargo: "test result: FAILED. 3 passed; 1 failed; …" (one line per test binary).
    let mut cargo = None;
    for line in output.lines().filter(|l| l.contains("test result:")) {
        let (p, f) = (
            num_before(line, " passed").unwrap_or(0),
            num_before(line, " failed").unwrap_or(0),
        );
        let (cp, cf) = cargo.unwrap_or((0, 0));
        cargo = Some((cp + p, cf + f));
    }
    if cargo.is_some() {
        return cargo;
    }
    // unittest: "Ran 5 tests" then "OK" or "FAILED (failures=1, errors=2)".
    if let Some(ran) = output.lines().find_map(|l| {
        l.strip_prefix("Ran ")
            .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
    }) {
        let field = |name: &str| -> u32 {
            output
                .find(&format!("{name}="))
                .and_then(|at| {
                    output[at + name.len() + 1..]
                        .split(|c: char| !c.is_ascii_digit())
                        .next()?
                        .parse()
                        .ok()
                })
                .unwrap_or(0)
        };
        let failed = field("failures") + field("errors");
        return Some((ran.saturating_sub(failed), failed));
    }
    // node --test: "# pass 3" / "# fail 1".
    let tap = |name: &str| {
        output
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u32>().ok())
    };
    if let (Some(p), Some(f)) = (tap("# pass "), tap("# fail ")) {
        return Some((p, f));
    }
    // go test: "--- FAIL:" per failed test, "ok" per passing package.
    let go_fail = output.matches("--- FAIL:").count() as u32;
    if go_fail > 0 {
        return Some((output.matches("--- PASS:").count() as u32, go_fail));
    }
    None
}

/// Runs checks for one workspace. Its own sandbox: build caches that outlive a run
/// (Go's) are writable in it, and nothing it runs reaches the network.
pub struct Verifier {
    root: PathBuf,
    sandbox: Option<Arc<Sandbox>>,
    checks: Checks,
    /// The editor's other buffers, laid under each candidate.
    buffers: Vec<DirtyBuffer>,
    /// Whether each file as it was loads ([`load_command`]), once asked.
    loads: tokio::sync::Mutex<Vec<(PathBuf, bool)>>,
    env: Vec<(String, String)>,
    cancel: agentls_model::CancellationToken,
    /// Time spent running checks, in µs.
    spent: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("root", &self.root)
            .field("checks", &self.checks)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// A verifier for `root` with `checks`; `buffers` are the editor's open buffers.
    pub fn new(
        root: &Path,
        checks: Checks,
        buffers: Vec<DirtyBuffer>,
        cancel: agentls_model::CancellationToken,
    ) -> Self {
        let cache = dirs::cache_dir().map(|d| d.join("agentls").join("go-build"));
        let mut config = SandboxConfig::new(root);
        let mut env = Vec::new();
        if let Some(cache) = cache.filter(|c| std::fs::create_dir_all(c).is_ok()) {
            config.extra_writable.push(cache.clone());
            env.push(("GOCACHE".to_owned(), cache.display().to_string()));
        }
        env.push(("GOPATH".to_owned(), "/tmp/gopath".to_owned()));
        env.push(("GOFLAGS".to_owned(), "-mod=mod".to_owned()));
        env.push(("GOTOOLCHAIN".to_owned(), "local".to_owned()));
        let sandbox = match Sandbox::new(config) {
            Ok(sb) => Some(Arc::new(sb)),
            Err(e) => {
                tracing::warn!("solve: no sandbox, candidates are checked for syntax only: {e}");
                None
            }
        };
        Self {
            root: root.to_path_buf(),
            sandbox,
            checks,
            buffers,
            loads: tokio::sync::Mutex::default(),
            env,
            cancel,
            spent: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Time spent running checks so far, in ms.
    pub fn spent_ms(&self) -> f64 {
        self.spent.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1000.0
    }

    /// A verifier for the session's workspace, with the checks [`detect`] finds there.
    pub async fn detected(ctx: &agentls_tools::ToolContext) -> Self {
        let checks = {
            let root = ctx.root.clone();
            tokio::task::spawn_blocking(move || detect(&root))
                .await
                .unwrap_or_default()
        };
        Self::new(&ctx.root, checks, ctx.dirty_buffers(), ctx.cancel.clone())
    }

    /// The checks it runs.
    pub fn checks(&self) -> &Checks {
        &self.checks
    }

    /// Checks `text` as the content of `path` (absolute), laid over the workspace.
    pub async fn verify(&self, path: &Path, lang: Language, text: &str) -> Verdict {
        let syntax_errors = agentls_index::syntax_errors(lang, text).len();
        let mut verdict = Verdict {
            syntax_errors,
            compiles: None,
            tests: None,
        };
        if syntax_errors > 0 {
            return verdict;
        }
        let rel = path
            .strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string();
        if let Some(cmd) = compile_command(lang, &rel)
            && let Some(ran) = self.run(&cmd, &[(path, text)]).await
        {
            verdict.compiles = Some(ran.ok);
            if !ran.ok {
                verdict.tests = Some(ran);
                return verdict;
            }
        }
        // A file that does not load fails it only if the file as it was loads (a
        // script may need its arguments to load at all).
        if let Some(cmd) = load_command(lang, &rel)
            && let Some(ran) = self.run(&cmd, &[(path, text)]).await
            && !ran.ok
            && self.loaded(path, &cmd).await
        {
            verdict.compiles = Some(false);
            verdict.tests = Some(ran);
            return verdict;
        }
        if let Some(cmd) = &self.checks.tests {
            verdict.tests = self.run(cmd, &[(path, text)]).await;
        }
        verdict
    }

    /// Whether `path` as it was loads with `command`, asked once.
    async fn loaded(&self, path: &Path, command: &str) -> bool {
        let mut loads = self.loads.lock().await;
        if let Some((_, ok)) = loads.iter().find(|(p, _)| p == path) {
            return *ok;
        }
        let ok = self.run(command, &[]).await.is_some_and(|r| r.ok);
        loads.push((path.to_path_buf(), ok));
        ok
    }

    /// Checks a change of several files at once (`(absolute path, new text)`): each
    /// file's syntax where its language is known, then the project's tests with all of
    /// them laid over the workspace.
    pub async fn verify_files(&self, files: &[(&Path, &str)]) -> Verdict {
        let syntax_errors = files
            .iter()
            .filter_map(|(path, text)| {
                Language::from_path(path).map(|l| agentls_index::syntax_errors(l, text).len())
            })
            .sum();
        let mut verdict = Verdict {
            syntax_errors,
            compiles: None,
            tests: None,
        };
        if syntax_errors == 0
            && let Some(cmd) = &self.checks.tests
        {
            verdict.tests = self.run(cmd, files).await;
        }
        verdict
    }

    /// Runs `command` in the sandbox with `files` (`(path, text)`) laid over the
    /// workspace; `None` when there is no sandbox or it could not run.
    pub(super) async fn run(&self, command: &str, files: &[(&Path, &str)]) -> Option<Ran> {
        let (ok, all) = self.output(command, files).await?;
        Some(Ran {
            ok,
            counts: counts(&all),
            tail: tail(&all, TAIL_CHARS),
        })
    }

    /// Like [`Verifier::run`], with whether it succeeded and its whole output
    /// (stdout, then stderr).
    pub(super) async fn output(
        &self,
        command: &str,
        files: &[(&Path, &str)],
    ) -> Option<(bool, String)> {
        let sandbox = self.sandbox.as_ref()?;
        let mut buffers: Vec<DirtyBuffer> = self
            .buffers
            .iter()
            .filter(|b| !files.iter().any(|(p, _)| b.path.as_path() == *p))
            .cloned()
            .collect();
        buffers.extend(files.iter().map(|(p, t)| DirtyBuffer::new(*p, *t)));
        let mut req = RunRequest::shell(command.to_owned())
            .buffers(buffers)
            .limits(Limits {
                wall_time: CHECK_TIME,
                ..Limits::default()
            });
        req.env.clone_from(&self.env);
        let t0 = std::time::Instant::now();
        let ran = sandbox.run(req, &self.cancel).await;
        let us = u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.spent
            .fetch_add(us, std::sync::atomic::Ordering::Relaxed);
        match ran {
            Ok(out) => Some((
                out.success(),
                format!("{}\n{}", out.stdout.to_text(), out.stderr.to_text()),
            )),
            Err(e) => {
                tracing::warn!("solve: check `{command}` did not run: {e}");
                None
            }
        }
    }
}

fn tail(s: &str, max: usize) -> String {
    let s = s.trim();
    match s.char_indices().rev().nth(max) {
        Some((i, _)) => format!("…{}", &s[i..]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_files_load_as_their_module() {
        let cmd = load_command(Language::Python, "pkg/mod.py").unwrap();
        assert!(cmd.contains("import_module(\"pkg.mod\")"), "{cmd}");
        let cmd = load_command(Language::Python, "pkg/__init__.py").unwrap();
        assert!(cmd.contains("import_module(\"pkg\")"), "{cmd}");
        assert_eq!(load_command(Language::Python, "my-script.py"), None);
        assert_eq!(load_command(Language::Rust, "src/lib.rs"), None);
        if std::process::Command::new("python3")
            .arg("--version")
            .output()
            .is_ok()
        {
            let dir = tempfile::tempdir().unwrap();
            let load = |text: &str| {
                std::fs::write(dir.path().join("seq.py"), text).unwrap();
                std::process::Command::new("sh")
                    .arg("-c")
                    .arg(load_command(Language::Python, "seq.py").unwrap())
                    .current_dir(dir.path())
                    .status()
                    .unwrap()
                    .success()
            };
            assert!(load(
                "def dedupe(items):\n    return list(dict.fromkeys(items))\n"
            ));
            assert!(!load(
                "def dedupe(items: List[int]) -> List[int]:\n    return items\n"
            ));
        } else {
            assert!(
                std::env::var_os("CI").is_none(),
                "python3 is missing under CI"
            );
        }
    }

    #[test]
    fn counts_are_read_from_each_runner() {
        assert_eq!(
            counts(
                "test result: FAILED. 3 passed; 1 failed; 0 ignored\n\ntest result: ok. 2 passed; 0 failed;"
            ),
            Some((5, 1))
        );
        assert_eq!(
            counts("....F\nRan 5 tests in 0.001s\n\nFAILED (failures=1, errors=1)"),
            Some((3, 2))
        );
        assert_eq!(counts("Ran 4 tests in 0.0s\n\nOK"), Some((4, 0)));
        assert_eq!(counts("# tests 3\n# pass 2\n# fail 1\n"), Some((2, 1)));
        assert_eq!(counts("--- FAIL: TestX (0.00s)\nFAIL"), Some((0, 1)));
        assert_eq!(counts("nothing here"), None);
    }

    #[test]
    fn each_kind_of_project_gets_its_tests() {
        type Files<'a> = &'a [(&'a str, &'a str)];
        let cases: [(Files, Option<&str>); 4] = [
            (
                &[("Cargo.toml", "[package]")],
                Some("cargo test --quiet --offline"),
            ),
            (&[("go.mod", "module x")], Some("go test ./...")),
            (&[("text.test.js", "")], Some("node --test")),
            (&[("README.md", "hi")], None),
        ];
        for (files, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            for (name, text) in files {
                std::fs::write(dir.path().join(name), text).unwrap();
            }
            assert_eq!(detect(dir.path()).tests.as_deref(), want, "{files:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tests")).unwrap();
        std::fs::write(dir.path().join("tests/test_x.py"), "").unwrap();
        let py = detect(dir.path()).tests.unwrap();
        assert!(
            py.contains("pytest") || py.contains("unittest discover -s tests"),
            "{py}"
        );
    }
}
