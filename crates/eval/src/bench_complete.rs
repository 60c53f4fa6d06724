//! `agentls bench complete`: inline completion (fill-in-the-middle) on the embedded
//! model, over a held set of cases cut from code that package registries ship and
//! this machine has (not from this project), against llama.cpp's own infill path in
//! the same run.
//!
//! **The cases.** `fixtures/bench/fim-cases.json` (built into the binary) lists, for
//! each case, the package, its version, the file, the file's sha256 and the cut:
//! never the code. The files are read where their package manager put them: Rust
//! crates in cargo's registry sources (the versions this workspace's Cargo.lock
//! pins), Python packages in pip's site-packages (`pylsp`, which `.ci/run` installs,
//! and `pip`), Go's standard library from apt's `golang-go`. A file that is missing
//! or differs from its digest is reported and its cases left out. Two kinds of cut,
//! inside a function:
//! - `line`: the cursor in the middle of a line of code; the answer is the rest of
//!   the line;
//! - `block`: the cursor at the start (after the indentation) of the first line of a
//!   block, after its opening line; the answer is the block's body, 2 to 6 lines.
//!
//! `--write-manifest FILE` cuts a new set with a fixed seed (deterministic for the
//! same files).
//!
//! **The measurement.** The cases of a file run in a row, in order of their cut, as
//! an editor would meet them; before each, the same request one character earlier
//! (the keystroke before) warms the KV cache, unmeasured. Each side then completes
//! the case: agentls's [`LocalCompleter`] (its own context, as `configured_completer`
//! makes it, the call from its thread) and llama.cpp called directly
//! ([`FimReference`]: its tokenizer, FIM ids and greedy sampler, the KV cache kept to
//! the longest common prefix as its server's `cache_prompt` does), in alternating
//! order, with the same windows, budget and `StopRules`. The prompts differ in one
//! way: the reference reads Qwen's own layout (prefix, suffix, middle), agentls puts
//! the cursor's line after the middle token and heals its last token (see
//! `agentls_local::fim`), so a keystroke re-reads a token or two, not the suffix
//! window; the texts may then differ, and accuracy is compared. Reported per side:
//! exact match and first-line match, p50/p95 time to the first and to the last token
//! (from the request), and the ratios.
//!
//! [`LocalCompleter`]: agentls_local::LocalCompleter
//! [`FimReference`]: crate::bench_fim::FimReference

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentls_model::complete::FimRequest;
use anyhow::Context;
use serde::{Deserialize, Serialize};

/// The committed set of cases.
pub const MANIFEST: &str = include_str!("../../../fixtures/bench/fim-cases.json");

/// The seed `--write-manifest` cuts with.
pub const SEED: u64 = 43;

/// What `agentls bench complete` measures (its command-line flags).
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Only the first N cases (in the manifest's order: a file of each language in
    /// turn, whole files).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Catalog model.
    #[arg(long, value_name = "NAME", default_value = "qwen2.5-coder-0.5b")]
    pub model: String,
    /// A GGUF file instead.
    #[arg(long, value_name = "FILE")]
    pub path: Option<PathBuf>,
    /// CPU threads; all cores when absent.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Most tokens a completion generates.
    #[arg(long, default_value_t = 64)]
    pub max_tokens: u32,
    /// Lines of the file before the cursor given to the model.
    #[arg(long, default_value_t = 64)]
    pub prefix_lines: usize,
    /// Lines after the cursor's line given to the model (each keystroke reads them
    /// again: the suffix follows the prefix in the prompt).
    #[arg(long, default_value_t = 4)]
    pub suffix_lines: usize,
    /// Most lines a completion keeps (`StopRules`).
    #[arg(long, default_value_t = 8)]
    pub max_lines: usize,
    /// A manifest file instead of the committed one.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Cut a new set of cases from the files on this machine into FILE and stop
    /// (run from the workspace root: Rust versions come from its Cargo.lock).
    #[arg(long, value_name = "FILE")]
    pub write_manifest: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            limit: None,
            json: false,
            model: "qwen2.5-coder-0.5b".into(),
            path: None,
            threads: None,
            max_tokens: 64,
            prefix_lines: 64,
            suffix_lines: 4,
            max_lines: 8,
            manifest: None,
            write_manifest: None,
        }
    }
}

/// The set of cases as committed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// How the set was cut.
    pub seed: u64,
    /// The files and their cuts, in running order.
    pub files: Vec<FileCases>,
}

/// One file's cases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCases {
    /// `rust`, `python` or `go`.
    pub lang: String,
    /// Where it comes from: `cargo`, `pip` or `apt`.
    pub source: String,
    /// The package (crate, distribution, `golang-go`).
    pub package: String,
    /// Its version.
    pub version: String,
    /// The file, relative to the package's root (`src/de.rs`; for pip, to
    /// site-packages; for Go, to its `src`).
    pub file: String,
    /// The file's sha256.
    pub sha256: String,
    /// Its cuts, in file order.
    pub cuts: Vec<Cut>,
}

/// One case: the cursor at `at`, the expected answer the bytes up to `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    /// `line` or `block`.
    pub kind: Kind,
    /// Byte offset of the cursor.
    pub at: usize,
    /// Byte offset where the expected middle ends.
    pub end: usize,
}

/// The kind of cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The rest of a line.
    Line,
    /// A block's body.
    Block,
}

impl Kind {
    #[cfg_attr(not(feature = "local"), allow(dead_code))]
    fn as_str(self) -> &'static str {
        match self {
            Kind::Line => "line",
            Kind::Block => "block",
        }
    }
}

/// A case ready to run.
#[derive(Clone, Debug)]
pub struct Case {
    /// `package/file@offset`.
    pub id: String,
    /// Language.
    pub lang: String,
    /// Kind of cut.
    pub kind: Kind,
    /// The request (windows applied).
    pub request: FimRequest,
    /// The request one character earlier (the keystroke before).
    pub before: FimRequest,
    /// What was cut out.
    pub expected: String,
}

/// Where each source keeps its files on this machine.
#[derive(Clone, Debug, Default)]
pub struct Roots {
    /// Cargo's registry sources (`~/.cargo/registry/src/*`).
    pub cargo: Vec<PathBuf>,
    /// pip's site-packages.
    pub pip: Option<PathBuf>,
    /// Go's `src`.
    pub go: Option<PathBuf>,
}

impl Roots {
    /// The roots of this machine.
    pub fn detect() -> Self {
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| dirs::home_dir().map(|h| h.join(".cargo")));
        let cargo = cargo_home
            .and_then(|h| std::fs::read_dir(h.join("registry/src")).ok())
            .map(|d| {
                let mut v: Vec<PathBuf> = d.filter_map(|e| e.ok().map(|e| e.path())).collect();
                v.sort();
                v
            })
            .unwrap_or_default();
        let pip = std::process::Command::new("python3")
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        let go = ["/usr/lib/go/src", "/usr/local/go/src"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_dir());
        Self { cargo, pip, go }
    }

    /// The file of `f` on this machine, if its root is here.
    pub fn locate(&self, f: &FileCases) -> Option<PathBuf> {
        match f.source.as_str() {
            "cargo" => self
                .cargo
                .iter()
                .map(|r| r.join(format!("{}-{}", f.package, f.version)).join(&f.file))
                .find(|p| p.is_file()),
            "pip" => self.pip.as_ref().map(|r| r.join(&f.file)),
            "apt" => self.go.as_ref().map(|r| r.join(&f.file)),
            _ => None,
        }
    }
}

/// The cases of `manifest` whose files are here as recorded (at most `limit`), with
/// a line for each file left out.
pub fn load_cases(
    manifest: &Manifest,
    roots: &Roots,
    options: &Options,
) -> (Vec<Case>, Vec<String>) {
    let (mut cases, mut missing) = (Vec::new(), Vec::new());
    let limit = options.limit.unwrap_or(usize::MAX);
    for f in &manifest.files {
        if cases.len() >= limit {
            break;
        }
        let name = format!("{} {} {}", f.package, f.version, f.file);
        let Some(path) = roots.locate(f) else {
            missing.push(format!("{name}: no {} root here", f.source));
            continue;
        };
        match agentls_wheel::sha256_file(&path) {
            Ok((_, digest)) if digest == f.sha256 => {}
            Ok(_) => {
                missing.push(format!("{name}: {} differs", path.display()));
                continue;
            }
            Err(e) => {
                missing.push(format!("{name}: {e}"));
                continue;
            }
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            missing.push(format!("{name}: not UTF-8"));
            continue;
        };
        for cut in &f.cuts {
            if cases.len() >= limit {
                break;
            }
            match case(f, &text, *cut, options) {
                Some(c) => cases.push(c),
                None => missing.push(format!("{name}: cut {} out of range", cut.at)),
            }
        }
    }
    (cases, missing)
}

/// A case from a file's text, with the windows of `options`.
fn case(f: &FileCases, text: &str, cut: Cut, options: &Options) -> Option<Case> {
    if cut.at == 0 || cut.end <= cut.at || cut.end > text.len() {
        return None;
    }
    let expected = text.get(cut.at..cut.end)?.to_owned();
    let request = |at: usize| -> Option<FimRequest> {
        let before = text.get(..at)?;
        let after = text.get(cut.end..)?;
        let start = nth_from_end(before, '\n', options.prefix_lines).map_or(0, |i| i + 1);
        // The suffix: the rest of the cursor's line and `suffix_lines` lines more.
        let stop =
            nth_from_start(after, '\n', options.suffix_lines + 1).map_or(after.len(), |i| i + 1);
        Some(FimRequest {
            path: f.file.clone(),
            language: Some(f.lang.clone()),
            prefix: before[start..].to_owned(),
            suffix: after[..stop].to_owned(),
            context: Vec::new(),
            max_tokens: options.max_tokens,
        })
    };
    let mut earlier = cut.at - 1;
    while !text.is_char_boundary(earlier) {
        earlier -= 1;
    }
    let mut before = request(earlier)?;
    // The keystroke before: the same text less the character typed last.
    before.suffix = request(cut.at)?.suffix;
    Some(Case {
        id: format!("{}/{}@{}", f.package, f.file, cut.at),
        lang: f.lang.clone(),
        kind: cut.kind,
        request: request(cut.at)?,
        before,
        expected,
    })
}

fn nth_from_end(text: &str, c: char, n: usize) -> Option<usize> {
    text.rmatch_indices(c).nth(n).map(|(i, _)| i)
}

fn nth_from_start(text: &str, c: char, n: usize) -> Option<usize> {
    n.checked_sub(1)
        .and_then(|n| text.match_indices(c).nth(n).map(|(i, _)| i))
}

/// Whether `answer` is `expected` (trailing blanks aside), and whether their first
/// lines are.
pub fn score(answer: &str, expected: &str) -> (bool, bool) {
    let exact = answer.trim_end() == expected.trim_end();
    let first = |s: &str| s.lines().next().unwrap_or("").trim_end().to_owned();
    (exact, first(answer) == first(expected))
}

/// One side's result on one case.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Outcome {
    /// The answer.
    pub text: String,
    /// Equal to what was cut out.
    pub exact: bool,
    /// Its first line equal.
    pub first_line: bool,
    /// Milliseconds to the first token.
    pub first_ms: f64,
    /// Milliseconds to the last token.
    pub last_ms: f64,
    /// Prompt tokens read (not from the cache).
    pub read: u32,
}

/// One side's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Cases.
    pub cases: usize,
    /// Exact-match rate.
    pub exact: f64,
    /// First-line match rate.
    pub first_line: f64,
    /// Time to the first token, p50 and p95 (ms).
    pub first_p50: f64,
    /// See `first_p50`.
    pub first_p95: f64,
    /// Time to the last token, p50 and p95 (ms).
    pub last_p50: f64,
    /// See `last_p50`.
    pub last_p95: f64,
    /// Prompt tokens read per case, p50.
    pub read_p50: f64,
}

/// The `p` quantile (0-1) of `v`, nearest rank; 0 when `v` is empty.
pub(crate) fn percentile(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    v[(((v.len() - 1) as f64) * p).round() as usize]
}

/// Figures of `outcomes`.
pub fn summarize(outcomes: &[&Outcome]) -> Summary {
    let n = outcomes.len();
    let rate = |f: &dyn Fn(&Outcome) -> bool| {
        outcomes.iter().filter(|o| f(o)).count() as f64 / n.max(1) as f64
    };
    let col = |f: &dyn Fn(&Outcome) -> f64| outcomes.iter().map(|o| f(o)).collect::<Vec<_>>();
    let first = col(&|o| o.first_ms);
    let last = col(&|o| o.last_ms);
    Summary {
        cases: n,
        exact: rate(&|o| o.exact),
        first_line: rate(&|o| o.first_line),
        first_p50: percentile(&first, 0.5),
        first_p95: percentile(&first, 0.95),
        last_p50: percentile(&last, 0.5),
        last_p95: percentile(&last, 0.95),
        read_p50: percentile(&col(&|o| f64::from(o.read)), 0.5),
    }
}

/// A case's results on both sides.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    /// `package/file@offset`.
    pub id: String,
    /// Language.
    pub lang: String,
    /// `line` or `block`.
    pub kind: String,
    /// agentls.
    pub ours: Outcome,
    /// llama.cpp.
    pub reference: Outcome,
}

/// The report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Model, threads, cores, load.
    pub header: String,
    /// Files left out and why.
    pub missing: Vec<String>,
    /// Rows by group (`all`, `line`, `block`, `rust`…): (ours, reference).
    pub groups: BTreeMap<String, (Summary, Summary)>,
    /// Cases where both sides gave the same text.
    pub same_text: usize,
    /// Every case.
    pub cases: Vec<CaseResult>,
}

impl Report {
    /// Builds the groups from the case results.
    pub fn new(header: String, missing: Vec<String>, cases: Vec<CaseResult>) -> Self {
        let mut keys: Vec<String> = vec!["all".into()];
        for c in &cases {
            for k in [c.kind.clone(), c.lang.clone()] {
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        let groups = keys
            .into_iter()
            .map(|k| {
                let pick: Vec<&CaseResult> = cases
                    .iter()
                    .filter(|c| k == "all" || c.kind == k || c.lang == k)
                    .collect();
                let ours: Vec<&Outcome> = pick.iter().map(|c| &c.ours).collect();
                let reference: Vec<&Outcome> = pick.iter().map(|c| &c.reference).collect();
                (k, (summarize(&ours), summarize(&reference)))
            })
            .collect();
        let same_text = cases
            .iter()
            .filter(|c| c.ours.text == c.reference.text)
            .count();
        Self {
            header,
            missing,
            groups,
            same_text,
            cases,
        }
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}", self.header)?;
        for m in &self.missing {
            writeln!(f, "left out: {m}")?;
        }
        writeln!(
            f,
            "{:<8} {:>5}  {:>13}  {:>13}  {:>17}  {:>17}  {:>9}  {:>9}",
            "cases",
            "n",
            "exact",
            "first line",
            "first token p50",
            "last token p50",
            "p95 first",
            "p95 last"
        )?;
        let ratio = |a: f64, b: f64| a / b.max(1e-9);
        let order = ["all", "line", "block"];
        let mut keys: Vec<&String> = self.groups.keys().collect();
        keys.sort_by_key(|k| {
            (
                order
                    .iter()
                    .position(|o| *o == k.as_str())
                    .unwrap_or(order.len()),
                k.as_str(),
            )
        });
        for k in keys {
            let (o, r) = &self.groups[k];
            writeln!(
                f,
                "{k:<8} {:>5}  {:>5.1}% {:>5.1}%  {:>5.1}% {:>5.1}%  {:>6.0} {:>6.0} {:>4.2}x  {:>6.0} {:>6.0} {:>4.2}x  {:>4.0}/{:<4.0}  {:>4.0}/{:<4.0}",
                o.cases,
                o.exact * 100.0,
                r.exact * 100.0,
                o.first_line * 100.0,
                r.first_line * 100.0,
                o.first_p50,
                r.first_p50,
                ratio(o.first_p50, r.first_p50),
                o.last_p50,
                r.last_p50,
                ratio(o.last_p50, r.last_p50),
                o.first_p95,
                r.first_p95,
                o.last_p95,
                r.last_p95,
            )?;
        }
        writeln!(
            f,
            "(each pair: agentls, llama.cpp; times in ms from the request; ratio agentls/llama.cpp)"
        )?;
        if let Some((o, r)) = self.groups.get("all") {
            writeln!(
                f,
                "prompt tokens read per case, p50: {:.0} agentls, {:.0} llama.cpp; same text on {} of {} cases",
                o.read_p50,
                r.read_p50,
                self.same_text,
                self.cases.len()
            )?;
        }
        Ok(())
    }
}

/// The load average, `/proc/loadavg`'s first three fields.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Runs the benchmark and prints its report on stdout.
pub fn main(options: Options) -> anyhow::Result<ExitCode> {
    if let Some(out) = &options.write_manifest {
        let manifest = cut::write(&Roots::detect(), Path::new("Cargo.lock"))?;
        let mut json = serde_json::to_string_pretty(&manifest)?;
        json.push('\n');
        std::fs::write(out, json).with_context(|| format!("writing {}", out.display()))?;
        let n: usize = manifest.files.iter().map(|f| f.cuts.len()).sum();
        writeln!(
            std::io::stdout().lock(),
            "{n} cases in {} files: {}",
            manifest.files.len(),
            out.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let report = run(&options)?;
    let mut out = std::io::stdout().lock();
    if options.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write!(out, "{report}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The manifest `options` names (the committed one by default).
pub fn manifest(options: &Options) -> anyhow::Result<Manifest> {
    let text = match &options.manifest {
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?
        }
        None => MANIFEST.to_owned(),
    };
    Ok(serde_json::from_str(&text)?)
}

/// The GGUF a bench runs: `path` when given, else the catalog model `model`'s copy in
/// the data directory (an error that says how to fetch it when absent).
#[cfg(feature = "local")]
pub fn model_path(model: &str, path: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = path {
        return Ok(p.to_path_buf());
    }
    let entry =
        agentls_local::catalog_entry(model).with_context(|| format!("unknown model {model}"))?;
    let dir = agentls_local::default_data_dir().context("no data directory")?;
    let (p, present) = agentls_local::installed_path(entry, &dir);
    anyhow::ensure!(
        present,
        "{model} is not on disk: run `agentls model fetch {model}`"
    );
    Ok(p)
}

/// Runs the cases through both sides.
#[cfg(feature = "local")]
pub fn run(options: &Options) -> anyhow::Result<Report> {
    use crate::bench_fim::FimReference;
    use agentls_local::engine::{Engine, EngineOptions};
    use agentls_local::fim::{COMPLETION_BATCH, COMPLETION_CONTEXT};
    use agentls_local::{ContextChoice, LocalCompleter};
    use agentls_model::CancellationToken;
    use agentls_model::complete::StopRules;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    let manifest = manifest(options)?;
    let (cases, missing) = load_cases(&manifest, &Roots::detect(), options);
    anyhow::ensure!(!cases.is_empty(), "no case to run: {}", missing.join("; "));
    let path = model_path(&options.model, options.path.as_deref())?;
    let opts = EngineOptions {
        threads: options
            .threads
            .unwrap_or_else(|| EngineOptions::default().threads),
        context: COMPLETION_CONTEXT,
        batch: COMPLETION_BATCH,
        ..EngineOptions::default()
    };
    let engine = Engine::load_with(&path, &opts).map_err(|e| anyhow::anyhow!("{e}"))?;
    let model = engine.info.name.clone().unwrap_or_else(|| "?".into());
    let ours = LocalCompleter::new("bench", Arc::new(Mutex::new(engine)), ContextChoice::Own)
        .map_err(|e| anyhow::anyhow!("{}", e.message))?;
    let mut reference =
        FimReference::load(&path, COMPLETION_CONTEXT, &opts).map_err(|e| anyhow::anyhow!("{e}"))?;
    let load_before = load_average();
    let mut results = Vec::with_capacity(cases.len());
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // A whole run takes many minutes: on a terminal, a bar says how far it is.
    let bar = crate::suite::progress_bar(cases.len(), "cases");
    for (i, c) in cases.iter().enumerate() {
        let rules = StopRules::new(&c.request.prefix, &c.request.suffix, options.max_lines);
        let rules_before = StopRules::new(&c.before.prefix, &c.before.suffix, options.max_lines);
        let run_ours = || -> anyhow::Result<Outcome> {
            ours.complete_timed(&c.before, &rules_before, CancellationToken::new())
                .map_err(|e| anyhow::anyhow!("{}", e.message))?;
            let (a, t) = ours
                .complete_timed(&c.request, &rules, CancellationToken::new())
                .map_err(|e| anyhow::anyhow!("{}", e.message))?;
            let (exact, first_line) = score(&a.text, &c.expected);
            Ok(Outcome {
                exact,
                first_line,
                first_ms: ms(t.first_token.unwrap_or(t.last_token)),
                last_ms: ms(t.last_token),
                read: a.prompt_tokens - a.cached_tokens,
                text: a.text,
            })
        };
        // llama.cpp from a thread that ends with the call, as ours runs: a thread
        // that ran it keeps an OpenMP team, and more teams than cores slow both.
        let mut run_reference = || -> anyhow::Result<Outcome> {
            std::thread::scope(|s| {
                s.spawn(|| {
                    reference
                        .complete(&c.before, &rules_before)
                        .and_then(|_| reference.complete(&c.request, &rules))
                })
                .join()
                .map_err(|_| anyhow::anyhow!("the reference's thread panicked"))?
                .map_err(|e| anyhow::anyhow!("{e}"))
            })
            .map(|(a, t)| {
                let (exact, first_line) = score(&a.text, &c.expected);
                Outcome {
                    exact,
                    first_line,
                    first_ms: ms(t.first_token.unwrap_or(t.last_token)),
                    last_ms: ms(t.last_token),
                    read: a.prompt_tokens - a.cached_tokens,
                    text: a.text,
                }
            })
        };
        let (o, r) = if i % 2 == 0 {
            let o = run_ours()?;
            (o, run_reference()?)
        } else {
            let r = run_reference()?;
            (run_ours()?, r)
        };
        tracing::debug!(case = %c.id, ours = ?o.text, reference = ?r.text, expected = ?c.expected, "case");
        bar.inc(1);
        results.push(CaseResult {
            id: c.id.clone(),
            lang: c.lang.clone(),
            kind: c.kind.as_str().into(),
            ours: o,
            reference: r,
        });
    }
    bar.finish_and_clear();
    let header = format!(
        "agentls bench complete: model {model} ({}), threads {}, cores {}, {} cases, windows {} lines before / {} after, max {} tokens; load average {load_before} before, {} after; reference: llama.cpp's infill path called directly (its tokenizer, FIM ids, greedy sampler, prefix cache)",
        path.file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned()),
        opts.threads,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        results.len(),
        options.prefix_lines,
        options.suffix_lines,
        options.max_tokens,
        load_average(),
    );
    Ok(Report::new(header, missing, results))
}

/// Without the embedded model there is nothing to run.
#[cfg(not(feature = "local"))]
pub fn run(_options: &Options) -> anyhow::Result<Report> {
    anyhow::bail!(
        "this agentls was built without the embedded model; rebuild with `--features local` (needs cmake and libclang)"
    )
}

/// Cutting a new set of cases (`--write-manifest`).
pub mod cut {
    use super::{Cut, FileCases, Kind, Manifest, Roots, SEED};
    use anyhow::Context;
    use std::path::{Path, PathBuf};

    /// Rust crates the workspace depends on, cut at the versions Cargo.lock pins.
    const CRATES: &[&str] = &[
        "serde_json",
        "ropey",
        "similar",
        "toml_edit",
        "regex-syntax",
        "clap_builder",
    ];
    /// Python packages under site-packages: (distribution, directory).
    const PIP: &[(&str, &str)] = &[("python-lsp-server", "pylsp"), ("pip", "pip/_internal")];
    /// Go standard library packages.
    const GO: &[&str] = &[
        "strings",
        "bytes",
        "strconv",
        "sort",
        "encoding/json",
        "net/url",
        "text/tabwriter",
        "bufio",
        "path/filepath",
        "unicode/utf8",
    ];
    /// Cases of each kind per language.
    const PER_KIND: usize = 40;
    /// Cases of each kind per file, at most.
    const PER_FILE: usize = 2;

    /// Cuts the set from the files under `roots`.
    pub fn write(roots: &Roots, lock: &Path) -> anyhow::Result<Manifest> {
        let lock_text = std::fs::read_to_string(lock)
            .with_context(|| format!("reading {} (run from the workspace root)", lock.display()))?;
        let lock: toml::Value = toml::from_str(&lock_text)?;
        let packages = lock
            .get("package")
            .and_then(|p| p.as_array())
            .cloned()
            .unwrap_or_default();
        let version_of = |name: &str| {
            packages.iter().find_map(|p| {
                (p.get("name")?.as_str()? == name)
                    .then(|| p.get("version")?.as_str().map(str::to_owned))?
            })
        };
        let mut rng = fastrand::Rng::with_seed(SEED);
        // Rust.
        let mut rust = Vec::new();
        for name in CRATES {
            let version =
                version_of(name).with_context(|| format!("{name} is not in Cargo.lock"))?;
            let root = roots
                .cargo
                .iter()
                .map(|r| r.join(format!("{name}-{version}")))
                .find(|p| p.is_dir())
                .with_context(|| format!("{name} {version} is not in cargo's registry sources"))?;
            for f in source_files(&root, "rs") {
                rust.push((
                    "cargo",
                    (*name).to_owned(),
                    version.clone(),
                    root.clone(),
                    f,
                ));
            }
        }
        let rust_files = pick("rust", rust, &mut rng)?;
        // Python.
        let site = roots.pip.clone().context("no site-packages (python3)")?;
        let mut python = Vec::new();
        for (dist, dir) in PIP {
            let version =
                dist_version(&site, dist).with_context(|| format!("{dist} is not installed"))?;
            for f in source_files(&site.join(dir), "py") {
                let rel = Path::new(dir).join(&f);
                python.push((
                    "pip",
                    (*dist).to_owned(),
                    version.clone(),
                    site.clone(),
                    rel,
                ));
            }
        }
        let python_files = pick("python", python, &mut rng)?;
        // Go.
        let go = roots
            .go
            .clone()
            .context("no Go standard library (apt-get install golang-go)")?;
        let version = std::fs::read_to_string(go.join("../VERSION"))
            .ok()
            .and_then(|v| v.lines().next().map(str::to_owned))
            .unwrap_or_else(|| "unknown".into());
        let mut gos = Vec::new();
        for pkg in GO {
            let dir = go.join(pkg);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".go") && !n.ends_with("_test.go"))
                .collect();
            names.sort();
            for n in names {
                gos.push((
                    "apt",
                    "golang-go".to_owned(),
                    version.clone(),
                    go.clone(),
                    Path::new(pkg).join(n),
                ));
            }
        }
        let go_files = pick("go", gos, &mut rng)?;
        // Languages take turns, a file each: `--limit` then samples all three.
        let mut by_lang: Vec<std::collections::VecDeque<FileCases>> =
            vec![rust_files.into(), python_files.into(), go_files.into()];
        let mut files = Vec::new();
        while by_lang.iter().any(|l| !l.is_empty()) {
            for lang in &mut by_lang {
                files.extend(lang.pop_front());
            }
        }
        Ok(Manifest { seed: SEED, files })
    }

    type Candidate = (&'static str, String, String, PathBuf, PathBuf);

    /// Files with an extension under `dir`, relative to it, sorted.
    fn source_files(dir: &Path, ext: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    if !matches!(
                        p.file_name().and_then(|n| n.to_str()),
                        Some("tests" | "benches" | "examples" | "vendor" | "_vendor")
                    ) {
                        stack.push(p);
                    }
                } else if p.extension().is_some_and(|x| x == ext)
                    && let Ok(rel) = p.strip_prefix(dir)
                {
                    out.push(rel.to_path_buf());
                }
            }
        }
        out.sort();
        out
    }

    fn dist_version(site: &Path, dist: &str) -> Option<String> {
        let want = dist.replace('-', "_").to_lowercase();
        let mut found: Vec<String> = std::fs::read_dir(site)
            .ok()?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|n| {
                let stem = n.strip_suffix(".dist-info")?;
                let (name, version) = stem.rsplit_once('-')?;
                (name.to_lowercase() == want).then(|| version.to_owned())
            })
            .collect();
        found.sort();
        found.pop()
    }

    /// Shuffles a language's files with the seed and cuts up to [`PER_FILE`] cases
    /// of each kind from each, until [`PER_KIND`] of each.
    fn pick(
        lang: &str,
        mut candidates: Vec<Candidate>,
        rng: &mut fastrand::Rng,
    ) -> anyhow::Result<Vec<FileCases>> {
        rng.shuffle(&mut candidates);
        let (mut lines, mut blocks) = (0, 0);
        let mut out = Vec::new();
        for (source, package, version, root, rel) in candidates {
            if lines >= PER_KIND && blocks >= PER_KIND {
                break;
            }
            let path = root.join(&rel);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let mut cuts = Vec::new();
            let mut line_cuts = line_candidates(lang, &text);
            rng.shuffle(&mut line_cuts);
            for (start, end) in line_cuts
                .into_iter()
                .take(PER_FILE.min(PER_KIND.saturating_sub(lines)))
            {
                // The cursor between 30% and 70% into the line's code.
                let code_start =
                    start + text[start..end].len() - text[start..end].trim_start().len();
                let len = end - code_start;
                let mut at = code_start + len * 3 / 10 + rng.usize(0..=len * 4 / 10);
                while !text.is_char_boundary(at) {
                    at += 1;
                }
                if text[at..end].trim().len() < 3 {
                    continue;
                }
                cuts.push(Cut {
                    kind: Kind::Line,
                    at,
                    end,
                });
                lines += 1;
            }
            let mut block_cuts = block_candidates(lang, &text);
            rng.shuffle(&mut block_cuts);
            for (at, end) in block_cuts
                .into_iter()
                .take(PER_FILE.min(PER_KIND.saturating_sub(blocks)))
            {
                cuts.push(Cut {
                    kind: Kind::Block,
                    at,
                    end,
                });
                blocks += 1;
            }
            if cuts.is_empty() {
                continue;
            }
            cuts.sort_by_key(|c| c.at);
            let (_, sha256) = agentls_wheel::sha256_file(&path)?;
            out.push(FileCases {
                lang: lang.into(),
                source: source.into(),
                package,
                version,
                file: rel.to_string_lossy().into_owned(),
                sha256,
                cuts,
            });
        }
        Ok(out)
    }

    /// Lines (start and end offset, without the newline) of each line of `text`.
    fn spans(text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut start = 0;
        for line in text.split_inclusive('\n') {
            let end = start + line.trim_end_matches(['\n', '\r']).len();
            out.push((start, end));
            start += line.len();
        }
        out
    }

    fn indent(line: &str) -> usize {
        line.chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .map(|c| if c == '\t' { 4 } else { 1 })
            .sum()
    }

    fn is_comment(code: &str) -> bool {
        ["//", "#", "/*", "*", "\"\"\"", "'''"]
            .iter()
            .any(|p| code.starts_with(p))
    }

    /// Whether a line starts a definition rather than code inside a function.
    fn is_definition(lang: &str, code: &str) -> bool {
        let words: &[&str] = match lang {
            "rust" => &[
                "fn ",
                "pub ",
                "impl",
                "struct ",
                "enum ",
                "trait ",
                "mod ",
                "#[",
                "unsafe fn",
                "const fn",
                "async fn",
                "macro_rules",
            ],
            "python" => &["def ", "class ", "async def ", "@"],
            _ => &["func ", "type ", "package ", "import "],
        };
        words.iter().any(|w| code.starts_with(w))
    }

    /// Lines of code inside functions worth completing the rest of.
    fn line_candidates(lang: &str, text: &str) -> Vec<(usize, usize)> {
        spans(text)
            .into_iter()
            .filter(|&(s, e)| {
                let line = &text[s..e];
                let code = line.trim();
                indent(line) >= 4
                    && code.len() >= 16
                    && code.len() <= 100
                    && !is_comment(code)
                    && !is_definition(lang, code)
                    && code.chars().any(char::is_alphabetic)
            })
            .collect()
    }

    /// Blocks inside functions: (cursor, end of the body's last line), the cursor
    /// after the indentation of the first body line.
    fn block_candidates(lang: &str, text: &str) -> Vec<(usize, usize)> {
        let lines = spans(text);
        let mut out = Vec::new();
        for (i, &(s, e)) in lines.iter().enumerate() {
            let line = &text[s..e];
            let code = line.trim();
            let opens = if lang == "python" {
                code.ends_with(':')
            } else {
                code.ends_with('{')
            };
            if !opens || indent(line) < 4 || is_comment(code) || is_definition(lang, code) {
                continue;
            }
            let depth = indent(line);
            let mut j = i + 1;
            while j < lines.len() {
                let l = &text[lines[j].0..lines[j].1];
                if l.trim().is_empty() || indent(l) <= depth {
                    break;
                }
                j += 1;
            }
            let body = j - (i + 1);
            if !(2..=6).contains(&body) || j >= lines.len() {
                continue;
            }
            // The body ends where the block does: a closing or dedented line, not a
            // blank one (the rules end a completion at a blank line).
            let next = &text[lines[j].0..lines[j].1];
            if next.trim().is_empty()
                || lines[i + 1..j]
                    .iter()
                    .any(|&(a, b)| is_comment(text[a..b].trim()))
            {
                continue;
            }
            let first = &text[lines[i + 1].0..lines[i + 1].1];
            let at = lines[i + 1].0 + (first.len() - first.trim_start().len());
            out.push((at, lines[j - 1].1));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_score_exactly_or_by_their_first_line() {
        assert_eq!(score("a + b\n", "a + b"), (true, true));
        assert_eq!(score("a + b\n    c", "a + b\n    d"), (false, true));
        assert_eq!(score("x", "y"), (false, false));
    }

    #[test]
    fn a_case_windows_its_file_and_knows_the_keystroke_before() {
        let text = "fn f() {\n    let x = compute(1);\n    x\n}\nfn g() {}\n";
        let at = text.find("compute").unwrap();
        let end = at + "compute(1);".len();
        let f = FileCases {
            lang: "rust".into(),
            source: "cargo".into(),
            package: "p".into(),
            version: "1".into(),
            file: "src/lib.rs".into(),
            sha256: String::new(),
            cuts: vec![],
        };
        let options = Options {
            prefix_lines: 1,
            suffix_lines: 1,
            ..Options::default()
        };
        let c = case(
            &f,
            text,
            Cut {
                kind: Kind::Line,
                at,
                end,
            },
            &options,
        )
        .unwrap();
        assert_eq!(c.expected, "compute(1);");
        // One line before the cursor's, and the cursor's line up to it.
        assert_eq!(c.request.prefix, "fn f() {\n    let x = ");
        assert_eq!(c.request.suffix, "\n    x\n");
        assert_eq!(c.before.prefix, "fn f() {\n    let x =");
        assert_eq!(c.before.suffix, c.request.suffix);
        assert_eq!(c.id, format!("p/src/lib.rs@{at}"));
    }

    #[test]
    fn the_committed_manifest_has_enough_cases_of_each_kind_and_language() {
        let m: Manifest = serde_json::from_str(MANIFEST).unwrap();
        let cases: Vec<(&str, Kind)> = m
            .files
            .iter()
            .flat_map(|f| f.cuts.iter().map(move |c| (f.lang.as_str(), c.kind)))
            .collect();
        assert!(cases.len() >= 200, "{}", cases.len());
        for lang in ["rust", "python", "go"] {
            for kind in [Kind::Line, Kind::Block] {
                let n = cases.iter().filter(|c| c.0 == lang && c.1 == kind).count();
                assert!(n >= 30, "{lang} {kind:?}: {n}");
            }
        }
        // Cuts in file order, inside the file, no code in the manifest.
        for f in &m.files {
            assert!(f.cuts.windows(2).all(|w| w[0].at < w[1].at), "{}", f.file);
            assert_eq!(f.sha256.len(), 64);
        }
    }
}
