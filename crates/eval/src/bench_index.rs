//! The index and grep measured against universal-ctags and ripgrep on the same tree, in
//! one run, printed as ratios (machines are shared and noisy; only ratios travel).
//!
//! `agentls bench index [--corpus DIR]` prints it; the default corpus is
//! `~/.cargo/registry/src`, which every machine that built us has.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentls_index::{Index, IndexOptions, Overlay};
use agentls_search::{GrepOptions, grep};

/// The grep patterns timed: a rare literal, a common literal, a case-insensitive word and
/// a regex with a class.
pub const GREP_PATTERNS: [(&str, bool); 4] = [
    ("PM_RESUME", false),
    ("unsafe impl", false),
    ("(?i)deprecated", false),
    (r"[A-Z][a-z]+Error\b", false),
];

/// One timed comparison.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// What was measured.
    pub name: String,
    /// Our time.
    pub ours: Duration,
    /// The reference tool's time (`None` if it is not installed or failed).
    pub reference: Option<Duration>,
    /// A note (counts, tool used).
    pub note: String,
}

impl Comparison {
    /// `ours / reference`.
    pub fn ratio(&self) -> Option<f64> {
        self.reference
            .map(|r| self.ours.as_secs_f64() / r.as_secs_f64().max(1e-9))
    }
}

/// Everything one run measured.
#[derive(Debug, Clone, Default)]
pub struct BenchReport {
    /// Corpus, machine and tool versions.
    pub header: Vec<String>,
    /// Cold index vs `ctags -R`, then grep vs `rg` per pattern.
    pub comparisons: Vec<Comparison>,
    /// Re-index of a 5,000-line file after a one-character edit: median and max.
    pub reindex_median: Duration,
    /// See `reindex_median`.
    pub reindex_max: Duration,
    /// Index memory estimate.
    pub bytes_per_line: f64,
}

impl std::fmt::Display for BenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for line in &self.header {
            writeln!(f, "{line}")?;
        }
        writeln!(
            f,
            "{:<48} {:>10} {:>10} {:>7}  note",
            "benchmark", "agentls", "reference", "ratio"
        )?;
        for c in &self.comparisons {
            let reference = c
                .reference
                .map_or_else(|| "-".to_owned(), |r| format!("{:.3}s", r.as_secs_f64()));
            let ratio = c
                .ratio()
                .map_or_else(|| "-".to_owned(), |r| format!("{r:.2}x"));
            writeln!(
                f,
                "{:<48} {:>9.3}s {:>10} {:>7}  {}",
                c.name,
                c.ours.as_secs_f64(),
                reference,
                ratio,
                c.note
            )?;
        }
        writeln!(
            f,
            "re-index 5,000-line file after 1-char edit: median {:.2} ms, max {:.2} ms (target < 10 ms)",
            self.reindex_median.as_secs_f64() * 1e3,
            self.reindex_max.as_secs_f64() * 1e3
        )?;
        writeln!(
            f,
            "index memory: {:.1} bytes per indexed line",
            self.bytes_per_line
        )
    }
}

/// The default corpus: the crate sources cargo unpacked (`~/.cargo/registry/src`).
pub fn default_corpus() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    Some(home.join("registry").join("src"))
}

fn tool_version(tool: &str) -> Option<String> {
    let out = Command::new(tool).arg("--version").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(str::to_owned)
}

/// Runs `cmd`, draining its stdout through a pipe (so tools cannot special-case
/// `/dev/null`), and returns the elapsed time and the number of output lines.
fn time_command(cmd: &mut Command) -> Option<(Duration, usize)> {
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut out = Vec::new();
    child.stdout.take()?.read_to_end(&mut out).ok()?;
    let status = child.wait().ok()?;
    let elapsed = start.elapsed();
    // rg exits 1 when nothing matched, which is a valid run.
    if !status.success() && status.code() != Some(1) {
        return None;
    }
    Some((elapsed, out.iter().filter(|&&b| b == b'\n').count()))
}

fn best_of<T>(runs: usize, mut f: impl FnMut() -> Option<(Duration, T)>) -> Option<(Duration, T)> {
    let mut best: Option<(Duration, T)> = None;
    for _ in 0..runs {
        let r = f()?;
        if best.as_ref().is_none_or(|b| r.0 < b.0) {
            best = Some(r);
        }
    }
    best
}

/// A synthetic Rust file of `lines` lines: structs, impls and functions calling each other.
pub fn synthetic_rust(lines: usize) -> String {
    let mut s = String::with_capacity(lines * 40);
    let mut i = 0;
    while s.lines().count() < lines {
        let _ = write!(
            s,
            "/// Item {i}.\npub struct S{i} {{\n    value: u64,\n}}\n\nimpl S{i} {{\n    pub fn get(&self) -> u64 {{\n        helper_{i}(self.value)\n    }}\n}}\n\nfn helper_{i}(x: u64) -> u64 {{\n    x.wrapping_mul({i}) + 1\n}}\n\n"
        );
        i += 1;
    }
    let cut: usize = s.lines().take(lines).map(|l| l.len() + 1).sum();
    s.truncate(cut);
    s
}

/// Measures a single-character edit in the middle of a 5,000-line live buffer.
pub fn reindex_after_edit(runs: usize) -> (Duration, Duration) {
    let path = Path::new("/agentls-bench/big.rs");
    let text = synthetic_rust(5000);
    let mut index = Index::default();
    index.update_file(path, &text);
    let mid = text.len() / 2;
    let mid = (0..=mid)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let mut times = Vec::with_capacity(runs);
    for run in 0..runs {
        let mut edited = text.clone();
        edited.insert(mid, if run % 2 == 0 { ' ' } else { '\n' });
        let start = Instant::now();
        index.update_file(path, &edited);
        times.push(start.elapsed());
        index.update_file(path, &text);
    }
    times.sort();
    let median = times.get(times.len() / 2).copied().unwrap_or_default();
    let max = times.last().copied().unwrap_or_default();
    (median, max)
}

/// Runs every benchmark on `corpus`.
pub fn run(corpus: &Path) -> BenchReport {
    let mut report = BenchReport::default();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    report.header.push(format!("corpus: {}", corpus.display()));
    report.header.push(format!(
        "machine: {cores} cores; {} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    let ctags = tool_version("ctags").filter(|v| v.contains("Universal Ctags"));
    let rg = tool_version("rg");
    report.header.push(format!(
        "reference tools: {} | {}",
        ctags.as_deref().unwrap_or("universal-ctags not found"),
        rg.as_deref().unwrap_or("rg not found")
    ));

    // Warm the page cache so neither side pays for the first read.
    let _ = grep(
        corpus,
        &GrepOptions::new("a warm-up pattern that never matches"),
        &Overlay::new(),
    );

    let tags_out = std::env::temp_dir().join(format!("agentls-bench-tags-{}", std::process::id()));
    let reference = ctags.as_ref().and_then(|_| {
        time_command(
            Command::new("ctags")
                .arg("-R")
                .arg("-f")
                .arg(&tags_out)
                .arg(corpus),
        )
    });
    let tag_lines = std::fs::read(&tags_out)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0);
    let _ = std::fs::remove_file(&tags_out);
    // Twice against the same ctags run: as the server crawls by default (generated files
    // left out, see `IndexOptions::skip_generated`), then every file, as ctags does.
    for skip_generated in [true, false] {
        let start = Instant::now();
        let mut index = Index::new(IndexOptions {
            skip_generated,
            ..IndexOptions::default()
        });
        let crawl = index.crawl(corpus, &Overlay::new());
        let ours = start.elapsed();
        let stats = index.stats();
        if skip_generated {
            report.bytes_per_line = stats.bytes_per_line;
        }
        let what = if skip_generated {
            format!("generated files left out ({})", crawl.generated)
        } else {
            "all files".to_owned()
        };
        report.comparisons.push(Comparison {
            name: format!(
                "cold index, {} ({cores} threads) vs ctags -R",
                if skip_generated {
                    "default"
                } else {
                    "all files"
                }
            ),
            ours,
            reference: reference.map(|r| r.0),
            note: format!(
                "{what}: {} files, {} lines, {} defs, {} refs; ctags {} tags",
                crawl.files, crawl.lines, stats.definitions, stats.references, tag_lines
            ),
        });
    }

    for (pattern, literal) in GREP_PATTERNS {
        let mut opts = GrepOptions::new(pattern);
        opts.literal = literal;
        let ours = best_of(3, || {
            let start = Instant::now();
            let found = grep(corpus, &opts, &Overlay::new()).ok()?;
            Some((start.elapsed(), found.matches.len()))
        });
        let reference = rg.as_ref().and_then(|_| {
            best_of(3, || {
                time_command(
                    Command::new("rg")
                        .arg("--no-config")
                        .arg("--no-heading")
                        .arg("--line-number")
                        .arg("--column")
                        .arg("-e")
                        .arg(pattern)
                        .arg(corpus),
                )
            })
        });
        let Some((ours, count)) = ours else { continue };
        report.comparisons.push(Comparison {
            name: format!("grep {pattern:?} vs rg"),
            ours,
            reference: reference.as_ref().map(|r| r.0),
            note: format!(
                "{count} matching lines; rg {}",
                reference.map_or_else(|| "-".to_owned(), |r| r.1.to_string())
            ),
        });
    }

    let (median, max) = reindex_after_edit(21);
    report.reindex_median = median;
    report.reindex_max = max;
    report
}
