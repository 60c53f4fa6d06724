//! The repo map: files ranked by PageRank over the "uses a name defined in" graph,
//! personalised towards the files and names in play, rendered as an outline that fits a
//! token budget.

use std::path::Path;

use rustc_hash::FxHashMap;

use crate::index::{FileId, Index};
use crate::symbol::SymbolKind;
use crate::tags::NO_PARENT;

/// Names defined in more files than this carry no signal (`new`, `get`, `fmt`).
const MAX_DEFINING_FILES: usize = 32;
/// PageRank damping factor, as in the original paper.
const DAMPING: f64 = 0.85;
const ITERATIONS: usize = 40;
/// Rough characters per token for source-like text.
const CHARS_PER_TOKEN: usize = 4;

impl Index {
    /// Ranks files by PageRank over the reference graph (an edge from each file to the
    /// files defining a name it uses, weighted down for widely defined names and up for
    /// `focus_names`), with the random jump biased to `focus_files` and to files defining
    /// `focus_names`, then renders the best files' definitions as an indented outline:
    ///
    /// ```text
    /// src/util.rs:
    ///   3 function square
    /// ```
    ///
    /// Line numbers are 1-based. Paths are relative to the crawled root when under it.
    /// The output stays within `token_budget` tokens, estimated at 4 characters a token.
    pub fn repo_map(
        &self,
        focus_files: &[&Path],
        focus_names: &[&str],
        token_budget: usize,
    ) -> String {
        let ranked = self.rank_files(focus_files, focus_names);
        let budget = token_budget.saturating_mul(CHARS_PER_TOKEN);
        let mut out = String::new();
        for (id, _) in ranked {
            let Some(entry) = self.entry(id) else {
                continue;
            };
            if entry.defs.is_empty() {
                continue;
            }
            let shown = match self
                .root
                .as_deref()
                .and_then(|r| entry.path.strip_prefix(r).ok())
            {
                Some(rel) => rel.display().to_string(),
                None => entry.path.display().to_string(),
            };
            let header = format!("{shown}:\n");
            if out.len() + header.len() > budget {
                break;
            }
            let mut block = header;
            let mut full = true;
            for def in entry.defs.iter() {
                if def.kind == SymbolKind::Field {
                    continue;
                }
                let mut depth = 1;
                let mut p = def.parent;
                while p != NO_PARENT && depth < 8 {
                    depth += 1;
                    p = entry.defs.get(p as usize).map_or(NO_PARENT, |d| d.parent);
                }
                let line = format!(
                    "{:indent$}{} {} {}\n",
                    "",
                    def.name_start.line + 1,
                    def.kind.as_str(),
                    self.names.resolve(&def.name),
                    indent = depth * 2
                );
                if out.len() + block.len() + line.len() > budget {
                    full = false;
                    break;
                }
                block.push_str(&line);
            }
            out.push_str(&block);
            if !full {
                break;
            }
        }
        out
    }

    /// Files with their PageRank, best first (ties by path for stable output).
    pub(crate) fn rank_files(
        &self,
        focus_files: &[&Path],
        focus_names: &[&str],
    ) -> Vec<(FileId, f64)> {
        let n = self.files.len();
        if n == 0 {
            return Vec::new();
        }
        let focus_syms: Vec<_> = focus_names
            .iter()
            .filter_map(|s| self.names.get(s))
            .collect();

        // Edges: (from, to) -> weight.
        let mut edges: FxHashMap<(FileId, FileId), f64> = FxHashMap::default();
        for (sym, users) in &self.ref_files {
            let Some(definers) = self.def_files.get(sym) else {
                continue;
            };
            if definers.len() > MAX_DEFINING_FILES {
                continue;
            }
            let mut w = 1.0 / definers.len() as f64;
            if focus_syms.contains(sym) {
                w *= 10.0;
            }
            if self.names.resolve(sym).starts_with('_') {
                w *= 0.1;
            }
            for &u in users {
                for &d in definers {
                    if u != d {
                        *edges.entry((u, d)).or_default() += w;
                    }
                }
            }
        }

        // Personalisation: focus files and definers of focus names, else uniform.
        let mut personal = vec![0.0f64; n];
        for path in focus_files {
            if let Some(id) = self.file_id(path) {
                personal[id as usize] += 1.0;
            }
        }
        for sym in &focus_syms {
            for &d in self.def_files.get(sym).into_iter().flatten() {
                personal[d as usize] += 1.0;
            }
        }
        let live: Vec<bool> = self.files.iter().map(Option::is_some).collect();
        let total: f64 = personal.iter().sum();
        if total == 0.0 {
            let count = live.iter().filter(|&&l| l).count().max(1) as f64;
            for (p, &l) in personal.iter_mut().zip(&live) {
                *p = if l { 1.0 / count } else { 0.0 };
            }
        } else {
            personal.iter_mut().for_each(|p| *p /= total);
        }

        let mut out_weight = vec![0.0f64; n];
        for (&(u, _), &w) in &edges {
            out_weight[u as usize] += w;
        }
        let edges: Vec<(usize, usize, f64)> = edges
            .into_iter()
            .map(|((u, d), w)| (u as usize, d as usize, w / out_weight[u as usize]))
            .collect();

        let mut rank = personal.clone();
        let mut next = vec![0.0f64; n];
        for _ in 0..ITERATIONS {
            next.iter_mut().for_each(|x| *x = 0.0);
            let mut dangling = 0.0;
            for (i, &r) in rank.iter().enumerate() {
                if out_weight[i] == 0.0 {
                    dangling += r;
                }
            }
            for &(u, d, w) in &edges {
                next[d] += DAMPING * rank[u] * w;
            }
            let jump = 1.0 - DAMPING + DAMPING * dangling;
            for (x, p) in next.iter_mut().zip(&personal) {
                *x += jump * p;
            }
            std::mem::swap(&mut rank, &mut next);
        }

        let mut ranked: Vec<(FileId, f64)> = self
            .entries()
            .map(|(id, _)| (id, rank[id as usize]))
            .collect();
        ranked.sort_by(|a, b| {
            b.1.total_cmp(&a.1).then_with(|| {
                let pa = self.entry(a.0).map(|e| e.path.clone());
                let pb = self.entry(b.0).map(|e| e.path.clone());
                pa.cmp(&pb)
            })
        });
        ranked
    }
}
