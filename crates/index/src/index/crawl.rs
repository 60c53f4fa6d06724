//! The cold crawl: walk the root first, then parse largest file first on one worker per
//! core, and add what each worker parsed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use agentls_text::{ReadLimits, read_text_file};
use ignore::{WalkBuilder, WalkState};

use super::update::parse_file;
use super::{CrawlStats, Index, Parsed, count_lines};
use crate::Language;
use crate::generated::looks_generated;
use crate::overlay::Overlay;
use crate::plain::is_plain;

impl Index {
    /// Walks `root` (made absolute) honouring ignore files, parses every file of a known
    /// language on all worker threads, and adds it. Paths in `overlay` are indexed from
    /// their live text instead of the disk, and keep their syntax tree for incremental
    /// updates.
    pub fn crawl(&mut self, root: &Path, overlay: &Overlay) -> CrawlStats {
        let root = std::path::absolute(root).unwrap_or_else(|_| root.to_owned());
        self.root = Some(root.clone());
        let threads = match self.options.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let limits = ReadLimits {
            max_bytes: self.options.max_file_bytes,
        };
        let mut builder = WalkBuilder::new(&root);
        builder
            .hidden(!self.options.hidden)
            .git_ignore(self.options.respect_ignore_files)
            .git_global(self.options.respect_ignore_files)
            .git_exclude(self.options.respect_ignore_files)
            .ignore(self.options.respect_ignore_files)
            .parents(self.options.respect_ignore_files)
            // Honour .gitignore even outside a git repository, as users expect.
            .require_git(false)
            .threads(threads);
        let (mut jobs, plain) = collect_jobs(builder.build_parallel(), overlay);
        let mut stats = CrawlStats::default();
        // Followed, not read: the follower reads them.
        let plain_cap = self.plain_cap();
        for (path, size) in plain {
            if size <= plain_cap {
                self.touch_plain(Arc::from(path), None);
                stats.plain += 1;
            }
        }
        if self.options.skip_generated {
            let cap = self.options.generated_bytes;
            let before = jobs.len();
            jobs.retain(|j| j.size <= cap || j.size > limits.max_bytes);
            stats.generated += before - jobs.len();
        }
        let skip_generated = self.options.skip_generated;
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel::<Crawled>();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                let tx = tx.clone();
                let (jobs, next, limits) = (&jobs, &next, &limits);
                scope.spawn(move || {
                    // Largest files first, so the last file a worker picks is a small one
                    // and both cores stay busy to the end.
                    while let Some(job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let crawled = match read_text_file(&job.path, limits) {
                            Ok(text) if skip_generated && looks_generated(&text) => {
                                Crawled::Generated
                            }
                            Ok(text) => parse_file(job.path.clone(), job.lang, &text)
                                .map_or(Crawled::Skipped, Crawled::Parsed),
                            Err(err) => {
                                tracing::debug!(%err, "index: skipped");
                                Crawled::Skipped
                            }
                        };
                        if tx.send(crawled).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            for crawled in rx {
                match crawled {
                    Crawled::Parsed(parsed) => {
                        stats.files += 1;
                        stats.lines += u64::from(parsed.lines);
                        drop(self.insert(parsed));
                    }
                    Crawled::Skipped => stats.skipped += 1,
                    Crawled::Generated => stats.generated += 1,
                }
            }
        });
        for (path, live) in overlay.iter() {
            if path.starts_with(&root) && Language::from_path(path).is_some() {
                let text = live.text();
                if self.update_file(path, &text) {
                    stats.files += 1;
                    stats.lines += count_lines(&text) as u64;
                }
            } else if path.starts_with(&root) && is_plain(path) {
                self.touch_plain(Arc::from(path), Some(Arc::from(live.text())));
                stats.plain += 1;
            }
        }
        tracing::info!(
            files = stats.files,
            lines = stats.lines,
            skipped = stats.skipped,
            generated = stats.generated,
            plain = stats.plain,
            "index: crawl done"
        );
        stats
    }
}

/// What a crawl worker made of one file.
enum Crawled {
    Parsed(Parsed),
    Skipped,
    Generated,
}

/// A file the crawl will index.
struct Job {
    path: PathBuf,
    lang: Language,
    size: u64,
}

/// The files to parse, largest first, and the followed text files without a grammar
/// ([`crate::plain`]) outside `overlay`, with their sizes. Walks first (a fraction of
/// a second even on large trees), so the parse can be scheduled largest file first.
fn collect_jobs(
    walker: ignore::WalkParallel,
    overlay: &Overlay,
) -> (Vec<Job>, Vec<(PathBuf, u64)>) {
    let (tx, rx) = mpsc::channel::<Job>();
    let (plain_tx, plain_rx) = mpsc::channel::<(PathBuf, u64)>();
    walker.run(|| {
        let tx = tx.clone();
        let plain_tx = plain_tx.clone();
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let path = entry.path();
            let Some(lang) = Language::from_path(path) else {
                if is_plain(path) && !overlay.contains(path) {
                    let size = entry.metadata().map_or(0, |m| m.len());
                    if plain_tx.send((entry.into_path(), size)).is_err() {
                        return WalkState::Quit;
                    }
                }
                return WalkState::Continue;
            };
            if overlay.contains(path) {
                return WalkState::Continue;
            }
            let size = entry.metadata().map_or(0, |m| m.len());
            let job = Job {
                path: entry.into_path(),
                lang,
                size,
            };
            if tx.send(job).is_err() {
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    drop((tx, plain_tx));
    let mut jobs: Vec<Job> = rx.into_iter().collect();
    jobs.sort_unstable_by(|a, b| b.size.cmp(&a.size).then_with(|| a.path.cmp(&b.path)));
    (jobs, plain_rx.into_iter().collect())
}
