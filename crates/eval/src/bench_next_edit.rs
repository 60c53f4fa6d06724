//! `agentls bench next-edit`: next-edit suggestions over cases mined from the commit
//! histories of public repositories, for the predictions without a model and for the
//! embedded model (the `local` feature) in the layout the server sends it.
//!
//! **The cases.** `fixtures/bench/next-edit-cases.json` (built into the binary) lists
//! commits whose diff in one file is a sequence of 2 to 6 small hunks (at most two
//! lines each side): the repository, the commit (its parent is the file before), the
//! path, the sha256 of the file before and after, and each hunk as char offsets
//! (`[start, end)` in the file before, `[start, end)` in the file after, cut to the
//! chars that differ): never the code. A commit of `n` hunks gives `n` cases, in file
//! order: the first `k` hunks applied as the user's edits (each one burst, the cursor
//! at the end of the last), the next one held out as the expected next edit; for
//! `k = n` nothing is expected (the commit's last edit). The texts are read from bare
//! mirrors of the repositories (`--repos DIR`: `DIR/OWNER+NAME/repo` or
//! `DIR/OWNER+NAME`, with `git`); a missing mirror, commit or a digest that differs is
//! an error that names it. `--write-manifest FILE --repos DIR` mines a new set from
//! the mirrors there.
//!
//! **The measurement.** Per case and side: the suggested edits; *exact* when applying
//! those that overlap the held-out edit gives the same text as the held-out edit;
//! *overlap* when any does; for the cases where nothing is expected, the rate of
//! suggestions; latency p50/p95 of the call. Sides: `model-free`
//! ([`agentls_text::next_edit::predict`], the whole document as a rename's scope), the
//! embedded model (`--path`/`--model`; [`agentls_model::next_edit`] in the `fill`
//! layout through the `LocalCompleter` the server uses), and both as the server runs
//! them (the model only when the predictions without it give nothing).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use agentls_text::next_edit::{Burst, Suggestion, predict};
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::bench_complete::percentile;

/// The committed set of cases.
pub const MANIFEST: &str = include_str!("../../../fixtures/bench/next-edit-cases.json");

/// Most lines a mined hunk has on either side.
const HUNK_LINES: usize = 2;
/// Hunks a mined file change has, at least and at most.
const HUNKS: (usize, usize) = (2, 6);
/// Commits looked at per repository when mining.
const COMMITS: usize = 1500;
/// Cases mined per repository, at most.
const PER_REPO: usize = 90;
/// Largest file mined (bytes).
const FILE_BYTES: usize = 64 * 1024;

/// What `agentls bench next-edit` measures (its command-line flags).
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Where the repositories' git mirrors are (`DIR/OWNER+NAME/repo`).
    #[arg(long, value_name = "DIR")]
    pub repos: Option<PathBuf>,
    /// Only the first N cases.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Only every K-th case (1, K+1, 2K+1…), before `--limit`: a sample across the
    /// repositories for the slow sides.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub every: usize,
    /// Only every K-th file change (1, K+1…), each with all its cases in order: the
    /// successive states of one editing session, so that the model's later cases of a
    /// change find the previous one's prompt in the engine's cache (reported apart
    /// as warm).
    #[arg(long, value_name = "K")]
    pub every_change: Option<usize>,
    /// The model's answer without its early end: the line budget alone (the rewrite's
    /// rules before 2026-12-07), to measure what the early end buys.
    #[arg(long)]
    pub no_settle: bool,
    /// No prompt-lookup drafting of the model's answer.
    #[arg(long)]
    pub no_draft: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also the embedded model (a build with `local`): this catalog model.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Also the embedded model: this GGUF file.
    #[arg(long, value_name = "FILE")]
    pub path: Option<PathBuf>,
    /// CPU threads for the model; all cores when absent.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Lines above the cursor's line the model may rewrite.
    #[arg(long, default_value_t = 2)]
    pub lines_before: usize,
    /// Lines below the cursor's line the model may rewrite.
    #[arg(long, default_value_t = 6)]
    pub lines_after: usize,
    /// Most tokens one answer generates.
    #[arg(long, default_value_t = 192)]
    pub max_tokens: u32,
    /// The embedded model's prompt layout: `fill` (its own, what the server sends it),
    /// `zeta` or `sweep` (the next-edit models' layouts, as the FIM prefix).
    #[arg(long, default_value = "fill")]
    pub format: String,
    /// A manifest file instead of the committed one.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Mine a new set of cases from the mirrors in `--repos` into FILE and stop.
    #[arg(long, value_name = "FILE")]
    pub write_manifest: Option<PathBuf>,
}

/// The set of cases as committed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The repositories and the commit their history was mined from.
    pub repos: Vec<Repo>,
    /// The file changes, each giving as many cases as it has hunks.
    pub changes: Vec<FileChange>,
}

/// A mined repository.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repo {
    /// `owner/name`.
    pub name: String,
    /// The commit whose history was mined.
    pub head: String,
}

/// One commit's change of one file: a sequence of small hunks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// `owner/name`.
    pub repo: String,
    /// The commit (the file before is its first parent's).
    pub commit: String,
    /// The file's path in the repository.
    pub path: String,
    /// `python`, `rust` or `go`.
    pub lang: String,
    /// sha256 of the file before.
    pub before_sha256: String,
    /// sha256 of the file after.
    pub after_sha256: String,
    /// Each hunk: chars `[0, 1)` of the file before became chars `[2, 3)` of the file
    /// after; in file order.
    pub hunks: Vec<[usize; 4]>,
}

/// One case, ready to run.
#[derive(Clone, Debug)]
pub struct Case {
    /// `repo@commit:path#k`.
    pub id: String,
    /// The file's language.
    pub lang: String,
    /// The path, as prompts name it.
    pub path: String,
    /// The document after the first `k` hunks.
    pub text: Vec<char>,
    /// Those hunks as bursts, oldest first.
    pub bursts: Vec<Burst>,
    /// The cursor: the end of the last burst.
    pub cursor: usize,
    /// The held-out edit, if any.
    pub expected: Option<Suggestion>,
}

fn lang_of(path: &str) -> Option<&'static str> {
    match Path::new(path).extension()?.to_str()? {
        "py" => Some("python"),
        "rs" => Some("rust"),
        "go" => Some("go"),
        "ts" => Some("typescript"),
        _ => None,
    }
}

fn sha256(text: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The git directory of `repo` (`owner/name`) under `dir`.
fn git_dir(dir: &Path, repo: &str) -> Option<PathBuf> {
    let flat = repo.replace('/', "+");
    [
        dir.join(&flat).join("repo"),
        dir.join(&flat),
        dir.join(repo),
    ]
    .into_iter()
    .find(|p| p.join("HEAD").is_file() || p.join(".git").exists())
}

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(dir)
        .args(args)
        .output()
        .with_context(|| format!("running git in {}", dir.display()))?;
    if !out.status.success() {
        bail!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).context("git printed no UTF-8")
}

/// Char offsets where each line starts, and the text's length last.
fn line_starts(text: &[char]) -> Vec<usize> {
    let mut v = vec![0];
    v.extend(
        text.iter()
            .enumerate()
            .filter(|(_, c)| **c == '\n')
            .map(|(i, _)| i + 1),
    );
    v
}

/// The char range of `count` lines from line `first` (1-based, as `@@` gives it; an
/// empty range after line `first` when `count` is 0).
fn line_range(starts: &[usize], len: usize, first: usize, count: usize) -> Range {
    let at = |line: usize| starts.get(line).copied().unwrap_or(len).min(len);
    if count == 0 {
        let s = at(first);
        return s..s;
    }
    at(first - 1)..at(first - 1 + count)
}

type Range = std::ops::Range<usize>;

/// An `@@ -a,b +c,d @@` header's numbers.
type Header = (usize, usize, usize, usize);

/// The hunks of `before` -> `after` from `git diff -U0` headers, cut to the chars
/// that differ; `None` when one is too big or they do not rebuild `after`.
fn hunks(headers: &[Header], before: &str, after: &str) -> Option<Vec<[usize; 4]>> {
    let (b, a): (Vec<char>, Vec<char>) = (before.chars().collect(), after.chars().collect());
    let (bs, as_) = (line_starts(&b), line_starts(&a));
    let mut out = Vec::new();
    for &(ob, oc, nb, nc) in headers {
        if oc > HUNK_LINES || nc > HUNK_LINES {
            return None;
        }
        let r0 = line_range(&bs, b.len(), ob, oc);
        let r1 = line_range(&as_, a.len(), nb, nc);
        let (x, y) = (&b[r0.clone()], &a[r1.clone()]);
        let p = x.iter().zip(y).take_while(|(p, q)| p == q).count();
        let s = x[p..]
            .iter()
            .rev()
            .zip(y[p..].iter().rev())
            .take_while(|(p, q)| p == q)
            .count();
        if p + s == x.len() && p + s == y.len() {
            return None;
        }
        out.push([r0.start + p, r0.end - s, r1.start + p, r1.end - s]);
    }
    let rebuilt = apply_hunks(&b, &a, &out, out.len());
    (rebuilt == a).then_some(out)
}

/// `before` with the first `k` hunks applied (their text from `after`).
fn apply_hunks(before: &[char], after: &[char], hunks: &[[usize; 4]], k: usize) -> Vec<char> {
    let mut out = Vec::with_capacity(before.len());
    let mut at = 0;
    for h in &hunks[..k] {
        out.extend_from_slice(&before[at..h[0]]);
        out.extend_from_slice(&after[h[2]..h[3]]);
        at = h[1];
    }
    out.extend_from_slice(&before[at..]);
    out
}

/// `git diff -U0` of `commit` against its parent: per file, the `@@` headers.
fn diff_headers(dir: &Path, commit: &str) -> anyhow::Result<Vec<(String, Vec<Header>)>> {
    let diff = git(
        dir,
        &[
            "diff",
            "-U0",
            "--no-color",
            "--no-renames",
            "--no-ext-diff",
            &format!("{commit}^"),
            commit,
        ],
    )?;
    let mut files: Vec<(String, Vec<_>)> = Vec::new();
    for line in diff.lines() {
        if let Some(p) = line.strip_prefix("+++ b/") {
            files.push((p.to_owned(), Vec::new()));
        } else if line.starts_with("+++ ") {
            files.push((String::new(), Vec::new()));
        } else if let Some(rest) = line.strip_prefix("@@ -") {
            let nums = |s: &str| -> Option<(usize, usize)> {
                let mut it = s.split(',');
                let a = it.next()?.parse().ok()?;
                let b = it.next().map_or(Some(1), |c| c.parse().ok())?;
                Some((a, b))
            };
            let mut parts = rest.split(' ');
            let old = parts.next().and_then(nums);
            let new = parts.next().and_then(|s| nums(s.strip_prefix('+')?));
            if let (Some((a, b)), Some((c, d)), Some(f)) = (old, new, files.last_mut()) {
                f.1.push((a, b, c, d));
            }
        }
    }
    Ok(files)
}

/// Mines the mirrors in `dir`: every repository found there, newest commits first,
/// at most `per_repo` cases each.
pub fn mine(dir: &Path, per_repo: usize) -> anyhow::Result<Manifest> {
    let mut manifest = Manifest::default();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.contains('+'))
        .map(|n| n.replacen('+', "/", 1))
        .collect();
    names.sort();
    for name in names {
        let Some(gd) = git_dir(dir, &name) else {
            continue;
        };
        let head = git(&gd, &["rev-parse", "HEAD"])?.trim().to_owned();
        let log = git(
            &gd,
            &[
                "log",
                "--no-merges",
                "--format=%H",
                "-n",
                &COMMITS.to_string(),
                &head,
            ],
        )?;
        let mut cases = 0;
        for commit in log.lines() {
            if cases >= per_repo {
                break;
            }
            let Ok(files) = diff_headers(&gd, commit) else {
                continue;
            };
            for (path, headers) in files {
                let Some(lang) = lang_of(&path) else { continue };
                if !(HUNKS.0..=HUNKS.1).contains(&headers.len()) || cases >= per_repo {
                    continue;
                }
                let (Ok(before), Ok(after)) = (
                    git(&gd, &["show", &format!("{commit}^:{path}")]),
                    git(&gd, &["show", &format!("{commit}:{path}")]),
                ) else {
                    continue;
                };
                if before.len() > FILE_BYTES || after.len() > FILE_BYTES {
                    continue;
                }
                let Some(h) = hunks(&headers, &before, &after) else {
                    continue;
                };
                cases += h.len();
                manifest.changes.push(FileChange {
                    repo: name.clone(),
                    commit: commit.to_owned(),
                    path,
                    lang: lang.to_owned(),
                    before_sha256: sha256(&before),
                    after_sha256: sha256(&after),
                    hunks: h,
                });
            }
        }
        manifest.repos.push(Repo { name, head });
    }
    Ok(manifest)
}

/// `manifest` as JSON, a file change a line.
pub fn to_json(manifest: &Manifest) -> anyhow::Result<String> {
    let mut json = format!(
        "{{\n  \"repos\": {},\n  \"changes\": [\n",
        serde_json::to_string(&manifest.repos)?
    );
    for (i, c) in manifest.changes.iter().enumerate() {
        let sep = if i + 1 == manifest.changes.len() {
            ""
        } else {
            ","
        };
        json.push_str(&format!("    {}{sep}\n", serde_json::to_string(c)?));
    }
    json.push_str("  ]\n}\n");
    Ok(json)
}

/// The cases of `manifest`, their texts read from the mirrors in `dir`.
pub fn load(manifest: &Manifest, dir: &Path) -> anyhow::Result<Vec<Case>> {
    let missing: Vec<&str> = manifest
        .repos
        .iter()
        .filter(|r| git_dir(dir, &r.name).is_none())
        .map(|r| r.name.as_str())
        .collect();
    if !missing.is_empty() {
        bail!(
            "no git mirror of {} under {}: clone each as DIR/OWNER+NAME/repo (a bare clone), e.g. `git clone --bare https://github.com/{} {}/{}/repo`",
            missing.join(", "),
            dir.display(),
            missing[0],
            dir.display(),
            missing[0].replace('/', "+"),
        );
    }
    let mut cases = Vec::new();
    for c in &manifest.changes {
        let gd = git_dir(dir, &c.repo).context("mirror")?;
        let before = git(&gd, &["show", &format!("{}^:{}", c.commit, c.path)])?;
        let after = git(&gd, &["show", &format!("{}:{}", c.commit, c.path)])?;
        if sha256(&before) != c.before_sha256 || sha256(&after) != c.after_sha256 {
            bail!(
                "{}@{}:{}: the text differs from its digest",
                c.repo,
                c.commit,
                c.path
            );
        }
        cases.extend(cases_of(c, &before, &after));
    }
    Ok(cases)
}

/// The cases of one file change: `k` = 1..=n hunks applied.
fn cases_of(c: &FileChange, before: &str, after: &str) -> Vec<Case> {
    let (b, a): (Vec<char>, Vec<char>) = (before.chars().collect(), after.chars().collect());
    let long_ago = Instant::now()
        .checked_sub(Duration::from_secs(5))
        .unwrap_or_else(Instant::now);
    let mut out = Vec::new();
    for k in 1..=c.hunks.len() {
        let text = apply_hunks(&b, &a, &c.hunks, k);
        let mut delta: isize = 0;
        let mut bursts = Vec::new();
        for h in &c.hunks[..k] {
            let start = (h[0] as isize + delta) as usize;
            let old: String = b[h[0]..h[1]].iter().collect();
            let new: String = a[h[2]..h[3]].iter().collect();
            delta += (h[3] - h[2]) as isize - (h[1] - h[0]) as isize;
            bursts.push(Burst {
                start,
                old,
                new,
                last: long_ago,
            });
        }
        let cursor = bursts.last().map_or(0, |l| l.range().end);
        let expected = c.hunks.get(k).map(|h| Suggestion {
            range: (h[0] as isize + delta) as usize..(h[1] as isize + delta) as usize,
            text: a[h[2]..h[3]].iter().collect(),
        });
        out.push(Case {
            id: format!(
                "{}@{}:{}#{k}",
                c.repo,
                &c.commit[..12.min(c.commit.len())],
                c.path
            ),
            lang: c.lang.clone(),
            path: c.path.clone(),
            text,
            bursts,
            cursor,
            expected,
        });
    }
    out
}

/// `text` with `edits` (sorted, disjoint) applied.
fn apply(text: &[char], edits: &[&Suggestion]) -> Vec<char> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    for e in edits {
        if e.range.start < at || e.range.end > text.len() {
            continue;
        }
        out.extend_from_slice(&text[at..e.range.start]);
        out.extend(e.text.chars());
        at = e.range.end;
    }
    out.extend_from_slice(&text[at..]);
    out
}

/// Whether two char ranges meet: they overlap, or one is empty (an insertion) and
/// touches the other.
fn meets(a: &Range, b: &Range) -> bool {
    if a.is_empty() || b.is_empty() {
        a.start <= b.end && b.start <= a.end
    } else {
        a.start < b.end && b.start < a.end
    }
}

/// How one side did on one case.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Outcome {
    /// Edits suggested.
    pub suggested: usize,
    /// The held-out edit, exactly.
    pub exact: bool,
    /// An edit overlapping it.
    pub overlap: bool,
    /// Milliseconds.
    pub ms: f64,
}

/// Scores `suggested` on `case`.
pub fn score(case: &Case, suggested: &[Suggestion], ms: f64) -> Outcome {
    let mut outcome = Outcome {
        suggested: suggested.len(),
        ms,
        ..Outcome::default()
    };
    if let Some(e) = &case.expected {
        let near: Vec<&Suggestion> = suggested
            .iter()
            .filter(|s| meets(&s.range, &e.range))
            .collect();
        outcome.overlap = !near.is_empty();
        outcome.exact = outcome.overlap && apply(&case.text, &near) == apply(&case.text, &[e]);
    }
    outcome
}

/// One side's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Side {
    /// `model-free`, the model's name, or both.
    pub name: String,
    /// Cases with an expected edit.
    pub expected: usize,
    /// Of those, exact matches.
    pub exact: usize,
    /// Of those, overlapping suggestions.
    pub overlap: usize,
    /// Cases where nothing is expected.
    pub none_expected: usize,
    /// Of those, cases with a suggestion.
    pub false_suggestions: usize,
    /// Latency p50 (ms).
    pub p50_ms: f64,
    /// Latency p95 (ms).
    pub p95_ms: f64,
}

/// What the model did on one case: its cost, for the report's notes.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelCost {
    /// A later case of the change just run before it (the engine's cache holds the
    /// previous case's prompt).
    pub warm: bool,
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Of those, read from the engine's cache.
    pub cached_tokens: u32,
    /// Milliseconds until the prompt was read.
    pub prompt_ms: f64,
    /// Tokens generated.
    pub generated: u32,
    /// Tokens drafted by prompt lookup.
    pub drafted: usize,
    /// Of those, kept.
    pub accepted: usize,
    /// CPU time the process spent on the case (all its threads; Linux), ms: what the
    /// case costs whatever else the machine runs.
    pub cpu_ms: Option<f64>,
}

/// CPU time this process has used (user and system, all threads), in ms; Linux's
/// `/proc/self/stat` in clock ticks of 10 ms.
pub fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command's closing parenthesis; utime and stime are the 14th
    // and 15th of the whole line.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    Some((ticks(11)? + ticks(12)?) * 10.0)
}

/// The model's costs over a run, as lines for the report.
pub fn cost_notes(outcomes: &[Outcome], costs: &[ModelCost]) -> Vec<String> {
    let ms = |warm: bool| -> Vec<f64> {
        outcomes
            .iter()
            .zip(costs)
            .filter(|(_, c)| c.warm == warm)
            .map(|(o, _)| o.ms)
            .collect()
    };
    let (cold, warm) = (ms(false), ms(true));
    let p50 =
        |f: &dyn Fn(&ModelCost) -> f64| percentile(&costs.iter().map(f).collect::<Vec<f64>>(), 0.5);
    let cpu: Vec<f64> = costs.iter().filter_map(|c| c.cpu_ms).collect();
    let drafted: usize = costs.iter().map(|c| c.drafted).sum();
    let accepted: usize = costs.iter().map(|c| c.accepted).sum();
    vec![
        format!(
            "model latency cold (a change's first case; the cache holds another file's prompt): p50 {:.0} ms, p95 {:.0} ms over {}; warm (a change's later cases, right after the previous one): p50 {:.0} ms, p95 {:.0} ms over {}",
            percentile(&cold, 0.5),
            percentile(&cold, 0.95),
            cold.len(),
            percentile(&warm, 0.5),
            percentile(&warm, 0.95),
            warm.len()
        ),
        format!(
            "model per case, p50: prompt {:.0} tokens ({:.0} from the cache), read in {:.0} ms; {:.0} tokens generated; CPU time {:.0} ms (p95 {:.0}); drafted {drafted} tokens in all, {accepted} kept",
            p50(&|c| f64::from(c.prompt_tokens)),
            p50(&|c| f64::from(c.cached_tokens)),
            p50(&|c| c.prompt_ms),
            p50(&|c| f64::from(c.generated)),
            percentile(&cpu, 0.5),
            percentile(&cpu, 0.95),
        ),
    ]
}

/// The figures of `name` over `cases` and their outcomes.
pub fn side(name: &str, cases: &[Case], outcomes: &[Outcome]) -> Side {
    let mut s = Side {
        name: name.to_owned(),
        ..Side::default()
    };
    for (c, o) in cases.iter().zip(outcomes) {
        if c.expected.is_some() {
            s.expected += 1;
            s.exact += usize::from(o.exact);
            s.overlap += usize::from(o.overlap);
        } else {
            s.none_expected += 1;
            s.false_suggestions += usize::from(o.suggested > 0);
        }
    }
    let ms: Vec<f64> = outcomes.iter().map(|o| o.ms).collect();
    s.p50_ms = percentile(&ms, 0.5);
    s.p95_ms = percentile(&ms, 0.95);
    s
}

/// The report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    /// What ran.
    pub header: String,
    /// Cases per language.
    pub languages: std::collections::BTreeMap<String, usize>,
    /// Each side.
    pub sides: Vec<Side>,
    /// Lines on the model's costs.
    pub notes: Vec<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}", self.header)?;
        let langs: Vec<String> = self
            .languages
            .iter()
            .map(|(l, n)| format!("{l} {n}"))
            .collect();
        writeln!(f, "cases per language: {}", langs.join(", "))?;
        writeln!(
            f,
            "{:<28} {:>10} {:>10} {:>16} {:>9} {:>9}",
            "side", "exact", "overlap", "none-suggested", "p50 ms", "p95 ms"
        )?;
        let pct = |n: usize, d: usize| {
            if d == 0 {
                0.0
            } else {
                100.0 * n as f64 / d as f64
            }
        };
        for s in &self.sides {
            writeln!(
                f,
                "{:<28} {:>9.1}% {:>9.1}% {:>15.1}% {:>9.3} {:>9.3}",
                s.name,
                pct(s.exact, s.expected),
                pct(s.overlap, s.expected),
                pct(s.false_suggestions, s.none_expected),
                s.p50_ms,
                s.p95_ms
            )?;
        }
        writeln!(
            f,
            "exact / overlap: of the {} cases with a held-out edit; none-suggested: of the {} where nothing is expected, the share with a suggestion",
            self.sides.first().map_or(0, |s| s.expected),
            self.sides.first().map_or(0, |s| s.none_expected)
        )?;
        for n in &self.notes {
            writeln!(f, "{n}")?;
        }
        Ok(())
    }
}

/// The model-free predictions of `case`, timed.
pub fn model_free(case: &Case) -> Outcome {
    let t = Instant::now();
    let edits = case
        .bursts
        .last()
        .and_then(|b| predict(&case.text, b, None))
        .map(|p| p.edits)
        .unwrap_or_default();
    score(case, &edits, t.elapsed().as_secs_f64() * 1e3)
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

/// Runs the benchmark and prints its report on stdout.
pub fn main(options: Options) -> anyhow::Result<ExitCode> {
    let Some(repos) = options.repos.clone() else {
        bail!(
            "no repositories: pass --repos DIR, the directory of their git mirrors (DIR/OWNER+NAME/repo)"
        );
    };
    if let Some(out) = &options.write_manifest {
        let manifest = mine(&repos, PER_REPO)?;
        let json = to_json(&manifest)?;
        std::fs::write(out, json).with_context(|| format!("writing {}", out.display()))?;
        let n: usize = manifest.changes.iter().map(|c| c.hunks.len()).sum();
        writeln!(
            std::io::stdout().lock(),
            "{n} cases in {} file changes of {} repositories: {}",
            manifest.changes.len(),
            manifest.repos.len(),
            out.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let report = run(&options, &repos)?;
    let mut out = std::io::stdout().lock();
    if options.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write!(out, "{report}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs every side on the cases.
pub fn run(options: &Options, repos: &Path) -> anyhow::Result<Report> {
    let mut manifest = manifest(options)?;
    if let Some(k) = options.every_change {
        manifest.changes = manifest.changes.into_iter().step_by(k.max(1)).collect();
    }
    let mut cases: Vec<Case> = load(&manifest, repos)?
        .into_iter()
        .step_by(options.every.max(1))
        .collect();
    if let Some(n) = options.limit {
        cases.truncate(n);
    }
    anyhow::ensure!(!cases.is_empty(), "no case to run");
    let mut report = Report::default();
    for c in &cases {
        *report.languages.entry(c.lang.clone()).or_default() += 1;
    }
    let free: Vec<Outcome> = cases.iter().map(model_free).collect();
    report.sides.push(side("model-free", &cases, &free));
    let mut header = format!(
        "agentls bench next-edit: {} cases from {} repositories, cores {}",
        cases.len(),
        manifest.repos.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    if options.model.is_some() || options.path.is_some() {
        let (name, model, costs) = embedded::run(options, &cases)?;
        header.push_str(&format!(
            "; embedded {name}, layout {}: windows {} lines before / {} after, max {} tokens{}{}, load average {}",
            options.format,
            options.lines_before,
            options.lines_after,
            options.max_tokens,
            if options.no_settle { ", no early end" } else { "" },
            if options.no_draft { ", no drafting" } else { "" },
            crate::bench_complete::load_average()
        ));
        report.notes = cost_notes(&model, &costs);
        report.sides.push(side(&name, &cases, &model));
        let both: Vec<Outcome> = free
            .iter()
            .zip(&model)
            .map(|(f, m)| {
                if f.suggested > 0 {
                    f.clone()
                } else {
                    Outcome {
                        ms: f.ms + m.ms,
                        ..m.clone()
                    }
                }
            })
            .collect();
        report
            .sides
            .push(side("model-free, then the model", &cases, &both));
    }
    report.header = header;
    Ok(report)
}

#[cfg(feature = "local")]
mod embedded {
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    use agentls_local::engine::{Engine, EngineOptions};
    use agentls_local::fim::{COMPLETION_BATCH, COMPLETION_CONTEXT};
    use agentls_local::speculate::Lookup;
    use agentls_local::{ContextChoice, LocalCompleter};
    use agentls_model::CancellationToken;
    use agentls_model::complete::StopRules;
    use agentls_model::next_edit::{Asked, Shape, ask, read_answer};
    use agentls_text::next_edit::rewrite::Format;

    use super::{Case, ModelCost, Options, Outcome, score};

    /// The embedded model's outcomes on `cases`, its name, and what each cost.
    pub fn run(
        options: &Options,
        cases: &[Case],
    ) -> anyhow::Result<(String, Vec<Outcome>, Vec<ModelCost>)> {
        let model = options.model.as_deref().unwrap_or("qwen2.5-coder-0.5b");
        let path = crate::bench_complete::model_path(model, options.path.as_deref())?;
        let opts = EngineOptions {
            threads: options
                .threads
                .unwrap_or_else(|| EngineOptions::default().threads),
            context: COMPLETION_CONTEXT,
            batch: COMPLETION_BATCH,
            ..EngineOptions::default()
        };
        let engine = Engine::load_with(&path, &opts).map_err(|e| anyhow::anyhow!("{e}"))?;
        let name = engine.info.name.clone().unwrap_or_else(|| model.to_owned());
        let ours = LocalCompleter::new("bench", Arc::new(Mutex::new(engine)), ContextChoice::Own)
            .map_err(|e| anyhow::anyhow!("{}", e.message))?
            .with_speculation((!options.no_draft).then(Lookup::default));
        let shape = Shape {
            lines_before: options.lines_before,
            lines_after: options.lines_after,
            max_tokens: options.max_tokens,
        };
        let format = match options.format.as_str() {
            "fill" => Format::Fill,
            "zeta" => Format::Zeta,
            "sweep" => Format::Sweep,
            other => anyhow::bail!("unknown format {other}: fill, zeta or sweep"),
        };
        let bar = crate::suite::progress_bar(cases.len(), "cases");
        let (mut out, mut costs) = (Vec::new(), Vec::new());
        let mut previous: Option<&Case> = None;
        for c in cases {
            let mut asked = ask(format, &c.path, &c.text, &c.bursts, c.cursor, shape);
            if options.no_settle {
                asked.rules = unsettled(&asked);
            }
            let (t, cpu) = (Instant::now(), super::cpu_ms());
            let (answer, timing) = ours
                .complete_timed(&asked.request, &asked.rules, CancellationToken::new())
                .map_err(|e| anyhow::anyhow!("{}", e.message))?;
            let s = read_answer(
                &asked,
                &answer.text,
                answer.stop,
                &c.text,
                c.bursts.last(),
                c.cursor,
            );
            let ms = t.elapsed().as_secs_f64() * 1e3;
            tracing::debug!(case = %c.id, answer = ?answer.text, suggestion = ?s, expected = ?c.expected, ms, "case");
            out.push(score(c, s.as_slice(), ms));
            costs.push(ModelCost {
                warm: previous.is_some_and(|p| follows(p, c)),
                prompt_tokens: answer.prompt_tokens,
                cached_tokens: answer.cached_tokens,
                prompt_ms: timing.prompt_read.as_secs_f64() * 1e3,
                generated: answer.tokens,
                drafted: timing.drafted,
                accepted: timing.accepted,
                cpu_ms: cpu.zip(super::cpu_ms()).map(|(a, b)| b - a),
            });
            previous = Some(c);
            bar.inc(1);
        }
        bar.finish_and_clear();
        Ok((name, out, costs))
    }

    /// Whether `c` is the case of the same change right after `p` (one hunk more).
    fn follows(p: &Case, c: &Case) -> bool {
        let change = |c: &Case| c.id.rsplit_once('#').map(|(a, _)| a.to_owned());
        change(p) == change(c) && p.bursts.len() + 1 == c.bursts.len()
    }

    /// The rules `asked` had before the early end (the `fill` layout's: as many lines
    /// as the window's rest, nothing else; the other layouts have no early end).
    fn unsettled(asked: &Asked) -> StopRules {
        match asked.format {
            Format::Fill => {
                let lines = asked.window.text.lines().count();
                StopRules::lines(lines.saturating_sub(asked.given.lines().count()))
            }
            Format::Zeta | Format::Sweep => asked.rules.clone(),
        }
    }
}

#[cfg(not(feature = "local"))]
mod embedded {
    use super::{Case, ModelCost, Options, Outcome};

    /// Without the embedded engine: an error that says how to get it.
    pub fn run(_: &Options, _: &[Case]) -> anyhow::Result<(String, Vec<Outcome>, Vec<ModelCost>)> {
        anyhow::bail!("the embedded model needs a build with `--features local`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_from_diff_headers_are_cut_to_the_chars_that_differ_and_rebuild_the_file() {
        let before = "a = 1\nb = count\nc = count\n";
        let after = "a = 1\nb = total\nc = total\n";
        let h = hunks(&[(2, 1, 2, 1), (3, 1, 3, 1)], before, after).unwrap();
        assert_eq!(h, vec![[10, 15, 10, 15], [20, 25, 20, 25]]);
        let change = FileChange {
            repo: "o/r".into(),
            commit: "c".repeat(40),
            path: "x.py".into(),
            lang: "python".into(),
            before_sha256: sha256(before),
            after_sha256: sha256(after),
            hunks: h,
        };
        let cases = cases_of(&change, before, after);
        assert_eq!(cases.len(), 2);
        // The first rename as the user's edit, the second held out…
        let first = &cases[0];
        assert_eq!(
            first.text.iter().collect::<String>(),
            "a = 1\nb = total\nc = count\n"
        );
        assert_eq!(first.cursor, 15);
        let e = first.expected.clone().unwrap();
        assert_eq!((e.range, e.text.as_str()), (20..25, "total"));
        // …which the model-free rename finds exactly.
        let o = model_free(first);
        assert!(o.exact && o.overlap, "{o:?}");
        // After the last, nothing is expected, and nothing is suggested.
        assert!(cases[1].expected.is_none());
        assert_eq!(model_free(&cases[1]).suggested, 0);
        // A hunk of three lines is not mined.
        assert_eq!(hunks(&[(1, 3, 1, 3)], before, after), None);
    }

    #[test]
    fn the_committed_manifest_has_enough_cases_in_two_languages() {
        let m: Manifest = serde_json::from_str(MANIFEST).unwrap();
        let cases: usize = m.changes.iter().map(|c| c.hunks.len()).sum();
        assert!(cases >= 200, "{cases}");
        assert!(m.repos.len() >= 3);
        let langs: std::collections::BTreeSet<_> =
            m.changes.iter().map(|c| c.lang.as_str()).collect();
        assert!(langs.len() >= 2, "{langs:?}");
        for c in &m.changes {
            assert_eq!(c.before_sha256.len(), 64);
            assert!(m.repos.iter().any(|r| r.name == c.repo));
        }
    }

    #[test]
    fn cpu_time_counts_work_done() {
        let before = cpu_ms().unwrap();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(200) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let spent = cpu_ms().unwrap() - before;
        assert!(spent >= 50.0, "{spent} ms of CPU for 200 ms of spinning");
    }

    #[test]
    fn a_missing_mirror_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let m: Manifest = serde_json::from_str(MANIFEST).unwrap();
        let e = load(&m, dir.path()).unwrap_err().to_string();
        assert!(e.contains(&m.repos[0].name), "{e}");
    }
}
