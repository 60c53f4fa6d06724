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
use rustc_hash::FxHashMap;

use crate::chunk::chunk_file;
use crate::index::{Embedder, Hit, Mode, Query, SemanticIndex, Stats};

/// Files larger than this are not chunked (the index reads up to its own limit).
const MAX_FILE_BYTES: u64 = 1 << 20;

/// What one file needs to be chunked, copied out under the index's lock.
struct Changed {
    path: Arc<Path>,
    live: Option<Arc<str>>,
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
    /// A better, slower model embedding every chunk meanwhile, which takes over once it
    /// has ([`Service::set_successor`]).
    successor: Mutex<Option<Successor>>,
}

/// Who moves a successor on ([`Service::set_successor`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MovedBy {
    /// A task of its own below the editor's priority (the server's follow loop): a
    /// search leaves the successor alone, so that its answer never waits on the slow
    /// model, nor embeds at the editor's priority what the task embeds anyway.
    Background,
    /// Whoever searches, in what is left of its bound: sessions without a background
    /// task (`agentls run`, `agentls acp`).
    Searches,
}

/// The model that is to take over from the one searching now, and its vectors so far.
struct Successor {
    embedder: Arc<dyn Embedder>,
    moved_by: MovedBy,
    /// By chunk text hash, as [`SemanticIndex`] keeps its own.
    vectors: FxHashMap<u64, Arc<[f32]>>,
    /// Where they are kept between processes.
    store: Option<PathBuf>,
    /// Vectors embedded since they were last written there.
    unsaved: usize,
}

/// What [`Service::link_graph`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linked {
    /// No graph was wanted.
    Unwanted,
    /// A graph of this many vectors was built and installed.
    Built(usize),
    /// A build of this many vectors was started and given up: its vectors went meanwhile
    /// (what it held is freed memory now).
    GivenUp(usize),
}

/// What one round of [`Service::embed_successor_some`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Succession {
    /// Chunks it embedded.
    pub embedded: usize,
    /// Chunks with the successor's vector, of all the chunks (after the round).
    pub covered: usize,
    /// All the chunks.
    pub chunks: usize,
    /// Whether the successor took over in this round.
    pub took_over: bool,
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

    /// Two tiers: `embedder` is to take over from the model set now once it has embedded
    /// every chunk, with its vectors read from and kept at `store` (see
    /// [`crate::store`]). Until then searches rank by the model set now; a better model
    /// that takes half an hour for a workspace is worth having, not worth waiting for.
    /// Returns how many stored vectors were read. A later call replaces it.
    pub fn set_successor(
        &self,
        embedder: Arc<dyn Embedder>,
        store: Option<PathBuf>,
        moved_by: MovedBy,
    ) -> usize {
        let vectors: FxHashMap<u64, Arc<[f32]>> = store
            .as_deref()
            .and_then(|p| crate::store::load(p, embedder.id()).ok())
            .map(|v| v.into_iter().map(|(h, v)| (h, v.into())).collect())
            .unwrap_or_default();
        let n = vectors.len();
        *self.successor.lock().unwrap_or_else(lock_err) = Some(Successor {
            embedder,
            moved_by,
            vectors,
            store,
            unsaved: 0,
        });
        n
    }

    /// Embeds, with the successor ([`Self::set_successor`]), chunks it has no vector
    /// for, one batch of `batch` and more for up to `budget`, without holding a lock while the model
    /// runs; when it then has every chunk's, it takes over: the index moves to its
    /// vectors in one step, and its store becomes the index's. Call when the model set
    /// now has embedded what it had to ([`Self::embed_some`] returned 0): the first
    /// tier comes first. Returns what it did; nothing without a successor.
    pub fn embed_successor_some(&self, budget: Duration, batch: usize) -> Succession {
        let Some(embedder) = self
            .successor
            .lock()
            .unwrap_or_else(lock_err)
            .as_ref()
            .map(|s| s.embedder.clone())
        else {
            return Succession::default();
        };
        let started = Instant::now();
        let mut round = Succession::default();
        loop {
            // The successor's lock, then the index's (the order everywhere here).
            let todo = {
                let successor = self.successor.lock().unwrap_or_else(lock_err);
                let Some(s) = successor
                    .as_ref()
                    .filter(|s| Arc::ptr_eq(&s.embedder, &embedder))
                else {
                    return round;
                };
                self.with(|i| i.missing_from(&s.vectors, batch.max(1)))
            };
            if todo.is_empty() {
                break;
            }
            let texts: Vec<&str> = todo.iter().map(|(_, t)| t.as_str()).collect();
            let vectors = embedder.embed(&texts);
            let mut successor = self.successor.lock().unwrap_or_else(lock_err);
            let Some(s) = successor
                .as_mut()
                .filter(|s| Arc::ptr_eq(&s.embedder, &embedder))
            else {
                return round;
            };
            // Not the texts that went meanwhile (closed buffers): no prune would come.
            self.with(|i| {
                for ((h, _), v) in todo.iter().zip(vectors) {
                    if i.has_text(*h) {
                        s.vectors.insert(*h, v.into());
                    }
                }
            });
            s.unsaved += todo.len();
            round.embedded += todo.len();
            // At least one batch a call, so that every call moves it on.
            if started.elapsed() >= budget {
                break;
            }
        }
        let mut successor = self.successor.lock().unwrap_or_else(lock_err);
        let Some(s) = successor.as_ref() else {
            return round;
        };
        (round.covered, round.chunks) = self.with(|i| i.covered_by(&s.vectors));
        if round.covered < round.chunks || round.chunks == 0 {
            return round;
        }
        let Some(s) = successor.take() else {
            return round;
        };
        // The index and the model searching by it change under the index's write lock,
        // so that a search sees both old or both new (it checks, see `search`).
        {
            let mut index = self.index.write().unwrap_or_else(lock_err);
            index.load_vectors(s.embedder.id(), s.vectors);
            *self.embedder.write().unwrap_or_else(lock_err) = Some(s.embedder);
        }
        if s.store.is_some() {
            *self.store.lock().unwrap_or_else(lock_err) = s.store;
        }
        round.took_over = true;
        round
    }

    /// Writes the successor's vectors to its store when some are new since the last
    /// time; `None` when there is nothing to write (or nowhere).
    pub fn persist_successor(&self) -> Option<std::io::Result<usize>> {
        let mut successor = self.successor.lock().unwrap_or_else(lock_err);
        let s = successor.as_mut().filter(|s| s.unsaved > 0)?;
        let path = s.store.clone()?;
        s.unsaved = 0;
        Some(crate::store::save(
            &path,
            s.embedder.id(),
            s.vectors.iter().map(|(h, v)| (*h, &v[..])),
        ))
    }

    /// Whether a successor waits that searches are to move on ([`MovedBy::Searches`]).
    pub fn successor_moved_by_searches(&self) -> bool {
        self.successor
            .lock()
            .unwrap_or_else(lock_err)
            .as_ref()
            .is_some_and(|s| s.moved_by == MovedBy::Searches)
    }

    /// The successor's id and how many of the chunks it has embedded, of how many.
    pub fn succession(&self) -> Option<(String, usize, usize)> {
        let successor = self.successor.lock().unwrap_or_else(lock_err);
        let s = successor.as_ref()?;
        let (covered, chunks) = self.with(|i| i.covered_by(&s.vectors));
        Some((s.embedder.id().to_owned(), covered, chunks))
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
                    live: index.live_text_shared(&path),
                    symbols: Some(index.file_symbols(&path)),
                    path,
                })
                .collect();
            changed.extend(
                index
                    .plain_changed_since(*seen)
                    .into_iter()
                    .map(|path| Changed {
                        live: index.live_text_shared(&path),
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
                let disk;
                let text: &str = match &c.live {
                    Some(live) => live,
                    None => {
                        disk = read(&c.path).unwrap_or_default();
                        &disk
                    }
                };
                let chunks = chunk_file(&c.path, text, c.symbols.as_deref());
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
        // Nothing of a closed buffer stays: the vectors of texts gone, the successor's
        // too (the successor's lock after the index's is let go).
        let pruned = sem.prune_vectors();
        drop(sem);
        if !pruned.is_empty()
            && let Some(s) = self.successor.lock().unwrap_or_else(lock_err).as_mut()
        {
            for h in &pruned {
                s.vectors.remove(h);
            }
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
            // A successor took over meanwhile: these vectors are of the old model.
            if sem.embedder_id() != Some(embedder.id()) {
                break;
            }
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
    /// none was wanted or its vectors went meanwhile (another embedder, closed files,
    /// renumbered chunks: the build stops then).
    pub fn refresh_graph(&self) -> Option<usize> {
        match self.link_graph() {
            Linked::Built(n) => Some(n),
            Linked::Unwanted | Linked::GivenUp(_) => None,
        }
    }

    /// [`Service::refresh_graph`], saying whether a build ran and was given up.
    pub fn link_graph(&self) -> Linked {
        let Some(input) = self.with(SemanticIndex::graph_wanted) else {
            return Linked::Unwanted;
        };
        let n = input.len();
        let installed = input
            .build()
            .is_some_and(|built| self.with_mut(|s| s.set_graph(built)));
        if installed {
            Linked::Built(n)
        } else {
            Linked::GivenUp(n)
        }
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
        let mut embedder = self.embedder();
        let mut vector = match &embedder {
            Some(e) if stats.embedded > 0 => e.embed(&[text]).pop(),
            _ => None,
        };
        let succession = self.succession();
        let mut index = self.index.read().unwrap_or_else(lock_err);
        // A successor took over between the query's embedding and now: its vectors would
        // be compared with another model's. Once more with the model the index has now.
        if let Some(e) = &embedder
            && vector.is_some()
            && index.embedder_id() != Some(e.id())
        {
            drop(index);
            embedder = self.embedder();
            vector = embedder.as_ref().and_then(|e| e.embed(&[text]).pop());
            index = self.index.read().unwrap_or_else(lock_err);
            if embedder.as_ref().map(|e| e.id()) != index.embedder_id() {
                vector = None;
            }
        }
        let hits = {
            let s = &*index;
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
        };
        drop(index);
        Answer {
            hits,
            stats,
            vectors: vector.is_some(),
            model: embedder.is_some(),
            model_id: embedder.as_ref().map(|e| e.id().to_owned()),
            succession,
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

    /// What the index keeps ([`SemanticIndex::footprint`]), and the vectors the model
    /// that is to take over keeps (0 without one).
    pub fn footprint(&self) -> (crate::Footprint, usize) {
        let successor = self
            .successor
            .lock()
            .unwrap_or_else(lock_err)
            .as_ref()
            .map_or(0, |s| s.vectors.len());
        (self.with(SemanticIndex::footprint), successor)
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
    /// Its [`Embedder::id`].
    pub model_id: Option<String>,
    /// A model that is to take over ([`Service::set_successor`]): its id, and how many
    /// of the chunks it has embedded, of how many.
    pub succession: Option<(String, usize, usize)>,
}

impl Answer {
    /// The files of the first `n` ranked, by their best chunk: what `repo_map`'s query and
    /// a lean session's first message name.
    pub fn files(&self, n: usize) -> Vec<Arc<Path>> {
        let mut files = crate::index::files_of(&self.hits);
        files.truncate(n);
        files
    }

    /// How the hits were ranked, in words for the user or the model.
    pub fn ranking(&self) -> String {
        let ranking = match (self.model, self.vectors) {
            (false, _) => "by words only: no embedding model is set up (`agentls model fetch all-minilm-l6-v2`)".to_owned(),
            (true, false) => "by words only: no chunk has its vector yet".to_owned(),
            (true, true) if self.stats.embedded < self.stats.chunks => format!(
                "by words and meaning; {} of {} chunks have vectors so far",
                self.stats.embedded, self.stats.chunks
            ),
            (true, true) => "by words and meaning".to_owned(),
        };
        match &self.succession {
            Some((id, covered, chunks)) => format!(
                "{ranking}; a better model ({id}) has embedded {covered} of {chunks} chunks and ranks by meaning once it has them all"
            ),
            None => ranking,
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
