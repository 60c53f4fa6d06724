//! The suite's tasks (`fixtures/tasks`), read by tests of which way a task goes, and
//! small indexed workspaces for unit tests.

/// The suite's tasks as `(directory name, prompt)`, for tests of which way a task
/// goes.
pub fn prompts() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/tasks");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&root).expect("fixtures/tasks") {
        let dir = entry.expect("a task directory").path();
        let toml = std::fs::read_to_string(dir.join("task.toml")).expect("task.toml");
        let prompt = toml
            .lines()
            .find_map(|l| l.strip_prefix("prompt = "))
            .expect("a prompt line");
        let prompt: String = serde_json::from_str(prompt).expect("a quoted prompt");
        let name = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        out.push((name, prompt));
    }
    out
}

/// Every file of the task `name`'s starting repository, `(path, text)`.
pub fn repo_files(name: &str) -> Vec<(std::path::PathBuf, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/tasks")
        .join(name)
        .join("repo");
    let mut out = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("a readable directory")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                out.push((path, text));
            }
        }
    }
    out
}

/// A workspace of `files` (`(path below the root, text)`) written to a temporary
/// directory and indexed: the directory (dropped, it goes), its canonical root, the
/// index and an empty store of buffers.
pub fn workspace(
    files: &[(&str, &str)],
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    agentls_index::Index,
    agentls_text::DocumentStore,
) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path().canonicalize().expect("its canonical path");
    let mut index = agentls_index::Index::default();
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(&path, text).expect("a written file");
        index.update_file(&path, text);
    }
    (dir, root, index, agentls_text::DocumentStore::default())
}
