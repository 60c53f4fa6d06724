//! The suite's tasks (`fixtures/tasks`), read by tests of which way a task goes.

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
