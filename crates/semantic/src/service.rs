//! [`Service`]: a workspace's semantic index kept in step with the symbol index, shared
//! by the agent's tool and the editor's requests.
//!
//! Following the symbol index: every file it (re)indexes gets a new revision, so a sync
//! re-chunks exactly the files indexed since the last one (live buffers from their
//! text, so unsaved edits are searchable) and drops the files it no longer has. Text
//! files without a grammar that the index follows (`agentls_index::plain`: docs,
//! configuration, code in other languages) are cut into windows of lines. The
//! index's lock is held only to list what changed and copy symbols and live text; files
//! are read and chunked outside it, so typing in the editor never waits on a sync.
//! Vectors come after, from [`Service::embed_some`] (a background worker calls it).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use agentls_index::{Index, Symbol};

use crate::chunk::chunk_file;
use crate::index::{Embedder, Hit, Mode, Query, SemanticIndex, Stats};

/// Files larger than this are not chunked (the index reads up to its own limit).
const MAX_FILE_BYTES: u64 = 1 << 20;

/// What one file needs to be chunked, copied out under the index's lock.
struct Changed {
    path: Arc<Path>,
    live: Option<String>,
    /// `None` for a text file without a grammar: windows of lines.
    symbols: Option<Vec<Symbol>>,
}

/// A workspace's semantic index and the model that embeds it.
#[derive(Default)]
pub struct Service {
    index: RwLock<SemanticIndex>,
    /// The symbol-index revision the chunks follow.
    seen: Mutex<u64>,
    embedder: RwLock<Option<Arc<dyn Embedder>>>,
    /// Where the vectors are kept between processes ([`Service::keep_in`]).
    store: Mutex<Option<PathBuf>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("stats", &self.stats())
            .finish()
    }
}

fn lock_err<T>(p: std::sync::PoisonError<T>) -> T {
    p.into_inner()
}

impl Service {
    /// Sets the model that embeds chunks and queries (vectors of another are dropped).
    pub fn set_embedder(&self, embedder: Arc<dyn Embedder>) {
        self.index
            .write()
            .unwrap_or_else(lock_err)
            .use_embedder(embedder.id());
        *self.embedder.write().unwrap_or_else(lock_err) = Some(embedder);
    }

    /// Keeps the vectors at `path` ([`crate::store`]'s format): those the current
    /// embedder stored there are read now (chunks with their text take them, now and
    /// when chunked later), and [`Self::persist`] writes them back. Returns how many
    /// were read: none from another embedder, a missing or damaged file. Call after
    /// [`Self::set_embedder`].
    pub fn keep_in(&self, path: PathBuf) -> usize {
        let read = self
            .embedder()
            .and_then(|e| Some((crate::store::load(&path, e.id()).ok()?, e)));
        let n = match read {
            Some((vectors, e)) => {
                let n = vectors.len();
                self.with_mut(|s| s.load_vectors(e.id(), vectors));
                n
            }
            None => 0,
        };
        *self.store.lock().unwrap_or_else(lock_err) = Some(path);
        n
    }

    /// Writes the vectors to where [`Self::keep_in`] said; `None` when nowhere, or
    /// without an embedder.
    pub fn persist(&self) -> Option<std::io::Result<usize>> {
        let path = self.store.lock().unwrap_or_else(lock_err).clone()?;
        let id = self.embedder()?.id().to_owned();
        Some(self.with(|s| crate::store::save(&path, &id, s.vectors())))
    }

    /// The model, if one is set.
    pub fn embedder(&self) -> Option<Arc<dyn Embedder>> {
        self.embedder.read().unwrap_or_else(lock_err).clone()
    }

    /// Brings the chunks up to date with `index`; returns how many files were re-chunked.
    pub fn sync(&self, index: &RwLock<Index>) -> usize {
        // One sync at a time: two would chunk the same files and race on `seen`.
        let mut seen = self.seen.lock().unwrap_or_else(lock_err);
        let (changed, revision, removed, root) = {
            let index = index.read().unwrap_or_else(lock_err);
            let removed: Vec<Arc<Path>> = self
                .index
                .read()
                .unwrap_or_else(lock_err)
                .paths()
                .filter(|p| !index.follows(p))
                .collect();
            if index.revision() == *seen && removed.is_empty() {
                return 0;
            }
            let mut changed: Vec<Changed> = index
                .changed_since(*seen)
                .into_iter()
                .map(|(path, _, _)| Changed {
                    live: index.live_text(&path).map(str::to_owned),
                    symbols: Some(index.file_symbols(&path)),
                    path,
                })
                .collect();
            changed.extend(
                index
                    .plain_changed_since(*seen)
                    .into_iter()
                    .map(|path| Changed {
                        live: index.live_text(&path).map(str::to_owned),
                        symbols: None,
                        path,
                    }),
            );
            // By path: chunk ids, which break ties between equal scores, must not
            // follow the order a parallel crawl happened to index files in.
            changed.sort_by(|a, b| a.path.cmp(&b.path));
            (
                changed,
                index.revision(),
                removed,
                index.root().map(Path::to_owned),
            )
        };
        let n = changed.len();
        let chunked: Vec<_> = changed
            .into_iter()
            .map(|c| {
                let text = c.live.or_else(|| read(&c.path)).unwrap_or_default();
                let chunks = chunk_file(&c.path, &text, c.symbols.as_deref());
                (c.path, chunks)
            })
            .collect();
        let mut sem = self.index.write().unwrap_or_else(lock_err);
        if let Some(root) = &root {
            sem.set_root(root);
        }
        for path in removed {
            sem.remove_file(&path);
        }
        for (path, chunks) in chunked {
            sem.set_file(&path, chunks);
        }
        *seen = revision;
        n
    }

    /// Embeds pending chunks for up to `budget`, `batch` at a time, without holding the
    /// index's lock while the model runs; returns how many got a vector.
    pub fn embed_some(&self, budget: Duration, batch: usize) -> usize {
        let Some(embedder) = self.embedder() else {
            return 0;
        };
        let started = Instant::now();
        let mut done = 0;
        while started.elapsed() < budget {
            let todo = self
                .index
                .read()
                .unwrap_or_else(lock_err)
                .pending(batch.max(1));
            if todo.is_empty() {
                break;
            }
            let texts: Vec<&str> = todo.iter().map(|(_, t)| t.as_str()).collect();
            let vectors = embedder.embed(&texts);
            let mut sem = self.index.write().unwrap_or_else(lock_err);
            for ((id, text), v) in todo.iter().zip(vectors) {
                sem.set_vector(*id, text, v);
            }
            done += todo.len();
        }
        done
    }

    /// Builds the nearest-neighbour graph when the index wants one
    /// ([`SemanticIndex::graph_wanted`]), holding the index's lock only to copy the
    /// vectors out and to install it; returns how many vectors it holds, `None` when
    /// none was wanted or the vectors changed embedder meanwhile.
    pub fn refresh_graph(&self) -> Option<usize> {
        let input = self.with(SemanticIndex::graph_wanted)?;
        let n = input.len();
        let built = input.build();
        self.with_mut(|s| s.set_graph(built)).then_some(n)
    }

    /// Searches with the index brought up to date first: hybrid when the model is set and
    /// some chunks have vectors, lexical otherwise (the answer says which).
    pub fn search(
        &self,
        index: &RwLock<Index>,
        text: &str,
        k: usize,
        filter: Option<&dyn Fn(&Path) -> bool>,
    ) -> Answer {
        self.sync(index);
        let stats = self.stats();
        let embedder = self.embedder();
        let vector = match &embedder {
            Some(e) if stats.embedded > 0 => e.embed(&[text]).pop(),
            _ => None,
        };
        let hits = self.with(|s| {
            s.search(&Query {
                text,
                vector: vector.as_deref(),
                k,
                mode: if vector.is_some() {
                    Mode::Hybrid
                } else {
                    Mode::Lexical
                },
                filter,
                boosted: None,
                vector_weight: embedder
                    .as_ref()
                    .map_or(crate::index::VECTOR_WEIGHT, |e| e.fusion_weight()),
            })
        });
        Answer {
            hits,
            stats,
            vectors: vector.is_some(),
            model: embedder.is_some(),
        }
    }

    /// Runs `f` on the index (searches take a read lock).
    pub fn with<R>(&self, f: impl FnOnce(&SemanticIndex) -> R) -> R {
        f(&self.index.read().unwrap_or_else(lock_err))
    }

    /// Runs `f` on the index for writing (loading stored vectors).
    pub fn with_mut<R>(&self, f: impl FnOnce(&mut SemanticIndex) -> R) -> R {
        f(&mut self.index.write().unwrap_or_else(lock_err))
    }

    /// What the index holds.
    pub fn stats(&self) -> Stats {
        self.with(SemanticIndex::stats)
    }
}

/// What [`Service::search`] found, and how.
#[derive(Debug)]
pub struct Answer {
    /// Best first.
    pub hits: Vec<Hit>,
    /// What was searched.
    pub stats: Stats,
    /// Whether vectors took part (hybrid ranking).
    pub vectors: bool,
    /// Whether an embedding model is set at all.
    pub model: bool,
}

impl Answer {
    /// How the hits were ranked, in words for the user or the model.
    pub fn ranking(&self) -> String {
        match (self.model, self.vectors) {
            (false, _) => "by words only: no embedding model is set up (`agentls model fetch all-minilm-l6-v2`)".to_owned(),
            (true, false) => "by words only: no chunk has its vector yet".to_owned(),
            (true, true) if self.stats.embedded < self.stats.chunks => format!(
                "by words and meaning; {} of {} chunks have vectors so far",
                self.stats.embedded, self.stats.chunks
            ),
            (true, true) => "by words and meaning".to_owned(),
        }
    }
}

/// Paths relative to a root matched by one glob (`*` within a directory, `**` across),
/// for the tool's and the LSP request's `path`.
pub struct PathGlob(ignore::overrides::Override);

impl PathGlob {
    /// The glob `glob` under `root`; the error is the glob parser's.
    pub fn new(root: &Path, glob: &str) -> Result<PathGlob, ignore::Error> {
        let mut builder = ignore::overrides::OverrideBuilder::new(root);
        builder.add(glob)?;
        Ok(PathGlob(builder.build()?))
    }

    /// Whether `path` (absolute, under the root) matches.
    pub fn matches(&self, path: &Path) -> bool {
        self.0.matched(path, false).is_whitelist()
    }
}

/// A file's text from disk, if it is small enough, UTF-8 and without NULs (the index
/// read a source file the same way moments ago; a file that changed since is
/// re-chunked on its next revision).
fn read(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let text = String::from_utf8(std::fs::read(path).ok()?).ok()?;
    // UTF-8 with NULs is binary all the same (a data file with a text extension).
    (!text.contains('\0')).then_some(text)
}
