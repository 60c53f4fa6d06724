//! A temporary workspace with a document store, an index and a tool context.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use agentls_index::{Index, IndexOptions, Overlay};
use agentls_model::CancellationToken;
use agentls_sandbox::{Decision, Policy};
use agentls_text::{DocUri, DocumentStore, ReadLimits};
use agentls_tools::{Approver, DiskSink, EditSink, Registry, ToolContext, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::Value;

/// Answers every approval the same way and counts the questions.
pub struct FixedApprover {
    pub answer: bool,
    pub asked: std::sync::Mutex<Vec<String>>,
}

#[async_trait]
impl Approver for FixedApprover {
    async fn approve(&self, what: &str) -> bool {
        self.asked.lock().unwrap().push(what.to_owned());
        self.answer
    }
}

pub struct Ws {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub store: Arc<DocumentStore>,
    pub index: Arc<RwLock<Index>>,
    pub ctx: ToolContext,
    pub registry: Registry,
}

pub fn ws(files: &[(&str, &str)]) -> Ws {
    ws_with(files, Arc::new(DiskSink::new()))
}

pub fn ws_with(files: &[(&str, &str)], sink: Arc<dyn EditSink>) -> Ws {
    let dir = tempfile::Builder::new()
        .prefix("agentls-tools")
        .tempdir_in("/tmp")
        .unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (rel, text) in files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let store = Arc::new(DocumentStore::new());
    let index = Arc::new(RwLock::new(Index::new(IndexOptions {
        threads: 1,
        ..IndexOptions::default()
    })));
    let ctx = ToolContext {
        root: root.clone(),
        store: store.clone(),
        read_limits: ReadLimits::default(),
        index: index.clone(),
        semantic: Default::default(),
        sandbox: None,
        policy: Arc::new(Policy::new(Decision::Allow)),
        edits: sink,
        approver: Arc::new(FixedApprover {
            answer: false,
            asked: Default::default(),
        }),
        diagnostics: None,
        checker: None,
        subagents: None,
        cancel: CancellationToken::new(),
        progress: None,
        reads: Arc::new(agentls_tools::ReadVersions::new()),
        client_files: None,
        terminal: None,
    };
    Ws {
        dir,
        root,
        store,
        index,
        ctx,
        registry: Registry::standard(),
    }
}

impl Ws {
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn disk(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Opens `rel` in the "editor" with `text`, which may differ from the disk.
    pub fn open(&self, rel: &str, text: &str) {
        let uri = DocUri::from_file_path(&self.path(rel)).unwrap();
        self.store.open(uri, "rust", 1, text);
    }

    pub fn crawl(&self) {
        let overlay = Overlay::from_store(&self.store);
        self.index.write().unwrap().crawl(&self.root, &overlay);
    }

    pub async fn call(&self, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        self.registry.call(&self.ctx, name, &args.to_string()).await
    }

    pub async fn ok(&self, name: &str, args: Value) -> String {
        match self.call(name, args).await {
            Ok(o) => o.content,
            Err(e) => panic!("{name} failed: {:?}: {}", e.class, e.message),
        }
    }

    pub async fn err(&self, name: &str, args: Value) -> ToolError {
        match self.call(name, args).await {
            Ok(o) => panic!("{name} should have failed, got:\n{}", o.content),
            Err(e) => e,
        }
    }
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}

/// Records what a call reported, with the time it arrived.
#[derive(Default)]
pub struct Recorder {
    pub epoch: Option<std::time::Instant>,
    pub output: std::sync::Mutex<Vec<(std::time::Duration, String, String)>>,
    pub plans: std::sync::Mutex<Vec<Vec<agentls_tools::TodoItem>>>,
}

impl agentls_tools::ToolProgress for Recorder {
    fn output(&self, stream: agentls_sandbox::OutputStream, text: &str) {
        let at = self.epoch.map(|e| e.elapsed()).unwrap_or_default();
        self.output
            .lock()
            .unwrap()
            .push((at, stream.as_str().to_owned(), text.to_owned()));
    }
    fn plan(&self, items: &[agentls_tools::TodoItem]) {
        self.plans.lock().unwrap().push(items.to_vec());
    }
}
