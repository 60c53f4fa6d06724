//! [`SemanticIndex`]: the chunks of every file, their BM25 postings and their vectors,
//! searched lexically, by vector or both fused.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::{FxHashMap, FxHashSet, FxHasher};

use crate::chunk::Chunk;
use crate::graph::{GRAPH_MIN, Graph, Stop};
use crate::lexical::{ChunkId, Lexical, NO_CHUNK, top_k};
use crate::scan::{DEPTH, nearest};
use crate::terms::terms;

/// Reciprocal rank fusion's constant: rank r contributes 1 / (RRF_K + r).
const RRF_K: f32 = 60.0;
/// How much a vector rank counts against a lexical one in the fusion (see
/// `agentls bench search`: with the static model's vectors, equal weights ranked below
/// words alone on both retrieval sets; with BM25's weaker length normalisation, 0.5
/// fell below BM25 alone on mypy, recall@10 0.592 against 0.599, where 0.25 gave 0.613,
/// and Wagtail was the same with either, 0.674 and 0.673; the words with the index's
/// signals, 0.618 and 0.668, are as good as either).
pub const VECTOR_WEIGHT: f32 = 0.25;

/// Turns text into unit vectors; the same model must embed chunks and queries.
pub trait Embedder: Send + Sync {
    /// A name that changes when the vectors would (model and version): stored vectors
    /// made by another are not reused.
    fn id(&self) -> &str;
    /// One unit-length vector per text.
    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>>;
    /// How much this model's vector ranking counts against the words in the hybrid
    /// (measured per model by `agentls bench search`); [`VECTOR_WEIGHT`] unless a model
    /// says otherwise.
    fn fusion_weight(&self) -> f32 {
        VECTOR_WEIGHT
    }
}

/// How to rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// BM25 over split identifiers and comments, with the index's signals (a definition
    /// of a name the query says first, prose last): what answers before vectors exist.
    Lexical,
    /// BM25 alone, without the signals: `agentls bench search`'s reference for what
    /// the signals add.
    Bm25,
    /// Cosine similarity to the query's vector.
    Vector,
    /// Both, fused by reciprocal rank, with the index's signals.
    Hybrid,
}

/// One search.
pub struct Query<'a> {
    /// What the user asked.
    pub text: &'a str,
    /// The query's vector (from the chunks' embedder); `None` ranks lexically only.
    pub vector: Option<&'a [f32]>,
    /// How many hits.
    pub k: usize,
    /// How to rank.
    pub mode: Mode,
    /// Only chunks of paths this accepts.
    pub filter: Option<&'a dyn Fn(&Path) -> bool>,
    /// Files to rank higher (open, recently edited).
    pub boosted: Option<&'a FxHashSet<Arc<Path>>>,
    /// The vector ranking's weight in the fusion ([`VECTOR_WEIGHT`] by default).
    pub vector_weight: f32,
}

/// A ranked chunk.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The chunk.
    pub chunk: Arc<Chunk>,
    /// Fused score (higher is better).
    pub score: f32,
    /// 1-based rank in the lexical list, if it was there.
    pub lexical_rank: Option<usize>,
    /// 1-based rank in the vector list, if it was there.
    pub vector_rank: Option<usize>,
}

/// What the index holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Files with chunks.
    pub files: usize,
    /// Chunks.
    pub chunks: usize,
    /// Chunks with a vector.
    pub embedded: usize,
    /// Lines of text in the chunks.
    pub lines: usize,
    /// Bytes of vectors held.
    pub vector_bytes: usize,
}

/// What a [`SemanticIndex`] keeps, counted ([`SemanticIndex::footprint`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Chunk slots: live chunks, and removed ones not yet renumbered away.
    pub slots: usize,
    /// The words' chunk slots, the same.
    pub lexical_slots: usize,
    /// Postings, those of removed chunks not yet compacted away included.
    pub postings: usize,
    /// Distinct terms with postings.
    pub terms: usize,
    /// Vectors kept by text.
    pub vectors: usize,
    /// Distinct chunk texts counted.
    pub texts: usize,
    /// Vectors linked into the nearest-neighbour graph.
    pub graph: usize,
}

struct Entry {
    chunk: Arc<Chunk>,
    hash: u64,
    vector: Option<Arc<[f32]>>,
}

/// Chunks, postings and vectors of a workspace.
#[derive(Default)]
pub struct SemanticIndex {
    entries: Vec<Option<Entry>>,
    files: FxHashMap<Arc<Path>, Vec<ChunkId>>,
    lexical: Lexical,
    /// Vectors by chunk text hash: an unchanged chunk (moved, or its file re-read) keeps
    /// its vector without a model call. Filled from [`SemanticIndex::set_vector`] and
    /// from stored vectors.
    cache: FxHashMap<u64, Arc<[f32]>>,
    /// How many chunks have each text hash; a hash whose last chunk went is a candidate
    /// for [`SemanticIndex::prune_vectors`] (in `unused`).
    uses: FxHashMap<u64, u32>,
    unused: Vec<u64>,
    embedder_id: Option<String>,
    /// The workspace root, left out of the paths chunks are embedded and matched by.
    root: Option<Arc<Path>>,
    /// The nearest-neighbour graph over most vectors, once there are many
    /// ([`SemanticIndex::graph_wanted`]).
    graph: Option<Graph>,
    /// Moves on whenever the vectors a graph build was given may have gone: every vector
    /// dropped (another embedder), too few left for a graph (closed files), the chunk
    /// ids renumbered. A build in flight stops then, and one of an earlier epoch is not
    /// installed.
    epoch: Arc<AtomicU64>,
    /// Slots of `entries` whose chunk was removed: renumbered away
    /// ([`SemanticIndex::prune_vectors`]) once they outnumber half the live chunks.
    removed: usize,
    /// Vectors from which a graph is wanted; `None`: [`GRAPH_MIN`].
    graph_min: Option<usize>,
}

/// The vectors to build a graph from ([`SemanticIndex::graph_wanted`]).
pub struct GraphInput {
    /// (chunk id, vector) of every chunk embedded now.
    vectors: Vec<(ChunkId, Arc<[f32]>)>,
    /// Says when the index's epoch moved on since.
    stop: Stop,
}

impl GraphInput {
    /// How many vectors.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// Links them into a graph ([`Graph::build`]: every core, without the index), for
    /// [`SemanticIndex::set_graph`]; `None` when the index's epoch moved on before the
    /// build ended (the build stops then, and drops the vectors it held).
    pub fn build(self) -> Option<BuiltGraph> {
        let epoch = self.stop.started();
        Graph::build_until(self.vectors, Some(self.stop)).map(|graph| BuiltGraph { graph, epoch })
    }
}

/// A graph from [`GraphInput::build`], and the vectors it was built from.
pub struct BuiltGraph {
    graph: Graph,
    epoch: u64,
}

/// The share of a graph's size that chunks embedded after it, plus chunks removed
/// since, may reach before a new graph is wanted: the first are scanned beside the graph
/// on every query, the second only waste its answers.
const GRAPH_STALE: usize = 8;

impl std::fmt::Debug for SemanticIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticIndex")
            .field("stats", &self.stats())
            .finish()
    }
}

/// The text a chunk is embedded and matched by: where it is (beneath `root`), what it
/// defines, what it says.
///
/// The path is relative so that where the workspace lies says nothing: with the
/// absolute path, the folder names above the root were in every chunk's words and
/// vector, a clone in another folder embedded differently, and a test's random
/// temporary folder decided a near tie between two chunks.
pub fn chunk_text(chunk: &Chunk, root: Option<&Path>) -> String {
    let path = root
        .and_then(|r| chunk.path.strip_prefix(r).ok())
        .unwrap_or(&*chunk.path);
    let mut s = path.to_string_lossy().into_owned();
    if let Some(name) = &chunk.symbol {
        s.push(' ');
        s.push_str(name);
    }
    s.push('\n');
    s.push_str(&chunk.text);
    s
}

fn hash(text: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = FxHasher::default();
    h.write(text.as_bytes());
    h.finish()
}

impl SemanticIndex {
    /// Sets the workspace root [`chunk_text`] leaves out. The chunks already held are
    /// matched and embedded again under it if it changed.
    pub fn set_root(&mut self, root: &Path) {
        if self.root.as_deref() == Some(root) {
            return;
        }
        self.root = Some(root.into());
        let files: Vec<(Arc<Path>, Vec<Chunk>)> = self
            .files
            .iter()
            .map(|(path, ids)| {
                let chunks = ids
                    .iter()
                    .filter_map(|&id| self.entries.get(id as usize)?.as_ref())
                    .map(|e| Chunk::clone(&e.chunk))
                    .collect();
                (path.clone(), chunks)
            })
            .collect();
        for (path, chunks) in files {
            self.set_file(&path, chunks);
        }
    }

    /// Replaces the chunks of `path` with `chunks` (all of the same path). Chunks whose
    /// text was embedded before get their vector back at once.
    pub fn set_file(&mut self, path: &Arc<Path>, chunks: Vec<Chunk>) {
        self.remove_file(path);
        let mut ids = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            let text = chunk_text(&chunk, self.root.as_deref());
            let h = hash(&text);
            // Ids are not reused as they stand (postings and a graph may still hold a
            // removed chunk's id): they are renumbered, all at once (`renumber`).
            let id = self.entries.len() as ChunkId;
            self.lexical.insert(id, &terms(&text));
            let entry = Entry {
                vector: self.cache.get(&h).cloned(),
                chunk: Arc::new(chunk),
                hash: h,
            };
            self.entries.push(Some(entry));
            *self.uses.entry(h).or_default() += 1;
            ids.push(id);
        }
        if !ids.is_empty() {
            self.files.insert(path.clone(), ids);
        }
    }

    /// The files that have chunks.
    pub fn paths(&self) -> impl Iterator<Item = Arc<Path>> + '_ {
        self.files.keys().cloned()
    }

    /// Forgets `path`.
    pub fn remove_file(&mut self, path: &Path) {
        let Some(ids) = self.files.remove(path) else {
            return;
        };
        for id in ids {
            self.lexical.remove(id);
            let Some(e) = self.entries[id as usize].take() else {
                continue;
            };
            self.removed += 1;
            if let Some(n) = self.uses.get_mut(&e.hash) {
                *n -= 1;
                if *n == 0 {
                    self.uses.remove(&e.hash);
                    self.unused.push(e.hash);
                }
            }
        }
    }

    /// Drops the vectors of texts no chunk has any longer (a closed buffer's, an edited
    /// function's old text) and returns those texts' hashes, each once, with a vector
    /// here or not (a successor may hold one). Called after a batch of changes, so that a
    /// chunk that moved between files in the batch keeps its vector. Once the slots of
    /// removed chunks outnumber half the live ones, the chunks are renumbered so that
    /// they leave no slot behind either.
    pub fn prune_vectors(&mut self) -> Vec<u64> {
        let mut pruned: Vec<u64> = std::mem::take(&mut self.unused)
            .into_iter()
            .filter(|h| !self.uses.contains_key(h))
            .collect();
        pruned.sort_unstable();
        pruned.dedup();
        for h in &pruned {
            self.cache.remove(h);
        }
        if !pruned.is_empty() {
            // Too few vectors left for a graph: the scan answers, and the graph's links
            // and the vectors it shared with the chunks that went go too; a build in
            // flight stops.
            if !self.graph_still_worth_it() {
                self.graph = None;
                self.epoch.fetch_add(1, Ordering::AcqRel);
            }
            self.cache.shrink_to_fit();
            self.uses.shrink_to_fit();
            self.files.shrink_to_fit();
        }
        let live = self.entries.len() - self.removed;
        if self.removed > live / 2 {
            self.renumber();
        }
        pruned
    }

    /// Gives the live chunks the ids 0.. in their order (ties between equal scores fall
    /// as before) and drops the slots of removed ones: in `entries`, the postings (their
    /// tombstones too) and the graph's answers (its links to removed chunks answer for
    /// none). A graph build in flight, given the old ids, stops.
    fn renumber(&mut self) {
        let mut new = vec![NO_CHUNK; self.entries.len()];
        let mut entries = Vec::with_capacity(self.entries.len() - self.removed);
        for (old, e) in std::mem::take(&mut self.entries).into_iter().enumerate() {
            if let Some(e) = e {
                new[old] = entries.len() as ChunkId;
                entries.push(Some(e));
            }
        }
        self.entries = entries;
        for ids in self.files.values_mut() {
            for id in ids.iter_mut() {
                *id = new[*id as usize];
            }
        }
        self.lexical.renumber(&new);
        if let Some(graph) = &mut self.graph {
            graph.renumber(&new);
        }
        self.removed = 0;
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Chunks still waiting for a vector: (id, text to embed), at most `max`.
    pub fn pending(&self, max: usize) -> Vec<(ChunkId, String)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let e = e.as_ref()?;
                e.vector
                    .is_none()
                    .then(|| (i as ChunkId, chunk_text(&e.chunk, self.root.as_deref())))
            })
            .take(max)
            .collect()
    }

    /// Gives chunk `id` its vector (ignored if the chunk is gone, changed since, or has
    /// one: a graph may hold that one, and would answer by it).
    pub fn set_vector(&mut self, id: ChunkId, text: &str, vector: Vec<f32>) {
        let h = hash(text);
        // A text no chunk has any more (closed while it was embedded) is not kept: no
        // prune would come for it.
        if !self.uses.contains_key(&h) {
            return;
        }
        let v: Arc<[f32]> = vector.into();
        self.cache.insert(h, v.clone());
        if let Some(Some(e)) = self.entries.get_mut(id as usize)
            && e.hash == h
            && e.vector.is_none()
        {
            e.vector = Some(v);
        }
    }

    /// Embeds up to `max` pending chunks with `embedder`, `batch` at a time; returns how
    /// many got a vector. Vectors from another embedder are dropped first.
    pub fn embed_pending(&mut self, embedder: &dyn Embedder, max: usize, batch: usize) -> usize {
        self.use_embedder(embedder.id());
        let todo = self.pending(max);
        for group in todo.chunks(batch.max(1)) {
            let texts: Vec<&str> = group.iter().map(|(_, t)| t.as_str()).collect();
            let vectors = embedder.embed(&texts);
            for ((id, text), v) in group.iter().zip(vectors) {
                self.set_vector(*id, text, v);
            }
        }
        todo.len()
    }

    /// The embedder the vectors came from, once one is set.
    pub fn embedder_id(&self) -> Option<&str> {
        self.embedder_id.as_deref()
    }

    /// Chunks whose text has no vector in `have` (by text hash), each text once:
    /// (hash, text to embed), at most `max`. For a model that is to take over
    /// ([`crate::Service::set_successor`]).
    pub fn missing_from(
        &self,
        have: &FxHashMap<u64, Arc<[f32]>>,
        max: usize,
    ) -> Vec<(u64, String)> {
        let mut taken = FxHashSet::default();
        self.entries
            .iter()
            .flatten()
            .filter(|e| !have.contains_key(&e.hash) && taken.insert(e.hash))
            .take(max)
            .map(|e| (e.hash, chunk_text(&e.chunk, self.root.as_deref())))
            .collect()
    }

    /// How many chunks have a vector in `have`, of how many.
    pub fn covered_by(&self, have: &FxHashMap<u64, Arc<[f32]>>) -> (usize, usize) {
        self.entries.iter().flatten().fold((0, 0), |(c, n), e| {
            (c + usize::from(have.contains_key(&e.hash)), n + 1)
        })
    }

    /// Drops every vector unless they came from `id`.
    pub fn use_embedder(&mut self, id: &str) {
        if self.embedder_id.as_deref() == Some(id) {
            return;
        }
        self.embedder_id = Some(id.to_owned());
        self.cache.clear();
        self.graph = None;
        self.epoch.fetch_add(1, Ordering::AcqRel);
        for e in self.entries.iter_mut().flatten() {
            e.vector = None;
        }
    }

    /// Stored vectors, by chunk text hash, for [`SemanticIndex::load_vectors`].
    pub fn vectors(&self) -> impl Iterator<Item = (u64, &[f32])> {
        self.cache.iter().map(|(h, v)| (*h, &v[..]))
    }

    /// Vectors stored earlier by the same embedder: chunks with the same text take them.
    /// Given another embedder's, every vector held is dropped first and the index moves
    /// to that embedder in the same step (a search never sees it half moved).
    pub fn load_vectors<V: Into<Arc<[f32]>>>(
        &mut self,
        embedder_id: &str,
        vectors: impl IntoIterator<Item = (u64, V)>,
    ) {
        self.use_embedder(embedder_id);
        for (h, v) in vectors {
            self.cache.insert(h, v.into());
        }
        for e in self.entries.iter_mut().flatten() {
            if e.vector.is_none() {
                e.vector = self.cache.get(&e.hash).cloned();
            }
        }
    }

    /// Vectors from which a graph is wanted (tests and the benchmark lower it).
    pub fn set_graph_min(&mut self, n: usize) {
        self.graph_min = Some(n);
    }

    /// The vectors to build a graph from when one is wanted: there are at least
    /// [`GRAPH_MIN`] vectors and no graph, or the chunks embedded since the graph was
    /// built and those removed since are more than an eighth of it. The build
    /// ([`Graph::build`]) runs without the index; [`Self::set_graph`] installs it.
    pub fn graph_wanted(&self) -> Option<GraphInput> {
        let min = self.graph_min.unwrap_or(GRAPH_MIN);
        let mut embedded = 0;
        let mut rest = 0;
        for (i, e) in self.entries.iter().enumerate() {
            if e.as_ref().is_some_and(|e| e.vector.is_some()) {
                embedded += 1;
                if !self.graph.as_ref().is_some_and(|g| g.covers(i as ChunkId)) {
                    rest += 1;
                }
            }
        }
        if embedded < min.max(1) {
            return None;
        }
        if let Some(g) = &self.graph {
            let gone = g.len() - (embedded - rest);
            if (rest + gone) * GRAPH_STALE <= g.len() {
                return None;
            }
        }
        let vectors = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((i as ChunkId, e.as_ref()?.vector.clone()?)))
            .collect();
        Some(GraphInput {
            vectors,
            stop: Stop::at(&self.epoch),
        })
    }

    /// Installs a graph built from [`Self::graph_wanted`]'s vectors; returns false (and
    /// drops it) when the vectors were all dropped since, by a change of embedder.
    pub fn set_graph(&mut self, built: BuiltGraph) -> bool {
        if built.epoch != self.epoch.load(Ordering::Acquire) || !self.graph_still_worth_it() {
            return false;
        }
        self.graph = Some(built.graph);
        true
    }

    /// Whether enough chunks have vectors for a graph to be worth its memory (a copy of
    /// every vector and its links): not once closed buffers took most chunks away.
    fn graph_still_worth_it(&self) -> bool {
        let min = self.graph_min.unwrap_or(GRAPH_MIN).max(1);
        self.entries
            .iter()
            .flatten()
            .filter(|e| e.vector.is_some())
            .take(min)
            .count()
            >= min
    }

    /// How many vectors the graph holds (0 without one).
    pub fn graph_len(&self) -> usize {
        self.graph.as_ref().map_or(0, |g| g.len())
    }

    /// Whether a chunk has the text of hash `h` now.
    pub fn has_text(&self, h: u64) -> bool {
        self.uses.contains_key(&h)
    }

    /// What the index keeps, counted: a closed buffer's chunks leave none of it behind
    /// (once renumbered, see [`SemanticIndex::prune_vectors`]).
    pub fn footprint(&self) -> Footprint {
        let (lexical_slots, postings, terms) = self.lexical.footprint();
        Footprint {
            slots: self.entries.len(),
            lexical_slots,
            postings,
            terms,
            vectors: self.cache.len(),
            texts: self.uses.len(),
            graph: self.graph_len(),
        }
    }

    /// What the index holds.
    pub fn stats(&self) -> Stats {
        let mut s = Stats {
            files: self.files.len(),
            ..Stats::default()
        };
        for e in self.entries.iter().flatten() {
            s.chunks += 1;
            s.lines += e.chunk.lines as usize;
            if let Some(v) = &e.vector {
                s.embedded += 1;
                s.vector_bytes += std::mem::size_of_val(&v[..]);
            }
        }
        s
    }

    /// The best chunks for `q`.
    pub fn search(&self, q: &Query<'_>) -> Vec<Hit> {
        let keep = |id: ChunkId| -> bool {
            match (&q.filter, self.entries.get(id as usize)) {
                (_, Some(None) | None) => false,
                (None, _) => true,
                (Some(f), Some(Some(e))) => f(&e.chunk.path),
            }
        };
        let qterms = terms(q.text);
        let lexical: Vec<ChunkId> = if q.mode == Mode::Vector {
            Vec::new()
        } else {
            let depth = if q.filter.is_some() {
                DEPTH * 10
            } else {
                DEPTH
            };
            self.lexical
                .search(&qterms, depth)
                .into_iter()
                .map(|(id, _)| id)
                .filter(|&id| keep(id))
                .take(DEPTH)
                .collect()
        };
        let vector: Vec<ChunkId> = match (q.mode, q.vector) {
            (Mode::Lexical | Mode::Bm25, _) | (_, None) => Vec::new(),
            (_, Some(qv)) => self
                .vector_ranking(qv, &keep, q.filter.is_some())
                .into_iter()
                .map(|(id, _)| id)
                .collect(),
        };
        let mut fused: FxHashMap<ChunkId, (f32, Option<usize>, Option<usize>)> =
            FxHashMap::default();
        for (r, &id) in lexical.iter().enumerate() {
            let e = fused.entry(id).or_default();
            e.0 += 1.0 / (RRF_K + r as f32 + 1.0);
            e.1 = Some(r + 1);
        }
        for (r, &id) in vector.iter().enumerate() {
            let e = fused.entry(id).or_default();
            e.0 += q.vector_weight / (RRF_K + r as f32 + 1.0);
            e.2 = Some(r + 1);
        }
        let mut hits: Vec<Hit> = fused
            .into_iter()
            .filter_map(|(id, (score, lr, vr))| {
                let e = self.entries.get(id as usize)?.as_ref()?;
                let mut score = score;
                // The words ranked alone gain from the signals as much as fused (2
                // and 4.5 points of recall@10 on the retrieval sets), so they are the
                // best lexical ranking the hybrid is measured against.
                if matches!(q.mode, Mode::Lexical | Mode::Hybrid) {
                    score *= signals(&e.chunk, &qterms, q.boosted);
                }
                Some(Hit {
                    chunk: e.chunk.clone(),
                    score,
                    lexical_rank: lr,
                    vector_rank: vr,
                })
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.chunk.path.cmp(&b.chunk.path))
                .then(a.chunk.start_line.cmp(&b.chunk.start_line))
        });
        hits.truncate(q.k);
        hits
    }
}

impl SemanticIndex {
    /// The [`DEPTH`] chunks accepted by `keep` nearest to `qv`: from the graph and a scan
    /// of the vectors it does not hold when there is one, from a scan of them all
    /// otherwise, and always when `filtered` (a path glob may keep few of the graph's
    /// nearest, while the scan reads only the vectors it keeps).
    fn vector_ranking(
        &self,
        qv: &[f32],
        keep: &dyn Fn(ChunkId) -> bool,
        filtered: bool,
    ) -> Vec<(ChunkId, f32)> {
        let graph = self.graph.as_ref().filter(|_| !filtered);
        let mut vectors = self.entries.iter().enumerate().filter_map(|(i, e)| {
            let id = i as ChunkId;
            let v = e.as_ref()?.vector.as_deref()?;
            let scanned = !graph.is_some_and(|g| g.covers(id));
            (scanned && keep(id)).then_some((id, v))
        });
        let rest = nearest(qv, &mut vectors, DEPTH);
        let Some(graph) = graph else {
            return rest;
        };
        top_k(
            graph.nearest(qv, DEPTH, keep).into_iter().chain(rest),
            DEPTH,
        )
    }
}

/// The index's own evidence, as a factor on the fused score: a chunk that defines a name
/// the query says beats one that only mentions it; open and recently edited files come
/// first among equals, files without a grammar (docs, configuration) last.
fn signals(chunk: &Chunk, qterms: &[String], boosted: Option<&FxHashSet<Arc<Path>>>) -> f32 {
    let mut f = 1.0;
    if let Some(name) = &chunk.symbol {
        let own = terms(name);
        if own.iter().any(|t| qterms.contains(t)) {
            f *= 1.25;
        }
    }
    if boosted.is_some_and(|b| b.contains(&chunk.path)) {
        f *= 1.1;
    }
    // Docs and configuration after code among equals: a question about behaviour is
    // answered by the code, and prose that names the same words crowded it out (the
    // retrieval sets lost 1-4 points of recall@10 when docs were added).
    if agentls_index::Language::from_path(&chunk.path).is_none() {
        f *= PROSE;
    }
    f
}

/// The factor on chunks of files without a grammar ([`signals`]).
const PROSE: f32 = 0.8;

/// Files ranked by their best chunk, best first (what the retrieval benchmark scores).
pub fn files_of(hits: &[Hit]) -> Vec<Arc<Path>> {
    let mut seen = FxHashSet::default();
    hits.iter()
        .filter(|h| seen.insert(h.chunk.path.clone()))
        .map(|h| h.chunk.path.clone())
        .collect()
}
