//! The workspace's paths for a provider that constrains tool arguments to them (the
//! embedded models): walked before each of its requests, so files the session created
//! are in and deleted ones out.

use std::path::Path;
use std::sync::Arc;

use agentls_model::PathConstraint;

use crate::toolset::ToolSet;

/// Entries walked at most. A bigger tree gets no constraint rather than one that
/// leaves real files out.
pub const MAX_PATHS: usize = 20_000;

/// The constraint for `tools` over the files and directories under `root`: git-ignored
/// entries and `.git` left out, hidden ones kept, links not followed, and the files
/// `named` (words of the user's messages) in, ignored or not; edits of the files in
/// `texts` (those the model has seen) held to their text. `None` when the tree has more
/// than [`MAX_PATHS`] entries or no tool names a path.
pub fn constraint(
    root: &Path,
    tools: &ToolSet,
    texts: Vec<(String, String)>,
    named: &[String],
) -> Option<PathConstraint> {
    let args = tools.path_args();
    if args.is_empty() {
        return None;
    }
    let (mut files, dirs) = walk(root, MAX_PATHS)?;
    files.extend(named_files(root, named));
    let constraint = PathConstraint::new(files, dirs, args).with_texts(tools.edit_args(), texts);
    Some(match root.to_str() {
        Some(r) => constraint.with_root(r),
        None => constraint,
    })
}

/// Files and directories under `root` (relative, `/`-separated), or `None` past
/// `limit` entries. Names a constrained call could not write plainly (control
/// characters, quotes, backslashes) are left out.
fn walk(root: &Path, limit: usize) -> Option<(Vec<String>, Vec<String>)> {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        // `.gitignore` holds outside a git repository too, as for the index and tools.
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for (n, entry) in walk.flatten().enumerate() {
        if n > limit {
            tracing::debug!(limit, "workspace too big to constrain paths");
            return None;
        }
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(name) = rel.to_str().filter(|n| !n.is_empty() && plain(n)) else {
            continue;
        };
        if kind.is_file() {
            files.push(name.to_owned());
        } else if kind.is_dir() {
            dirs.push(name.to_owned());
        }
    }
    Some((files, dirs))
}

/// Whether a constrained call can write `name` plainly: the path grammar allows no
/// escapes, so control characters, quotes and backslashes are out.
fn plain(name: &str) -> bool {
    !name
        .chars()
        .any(|c| c.is_control() || c == '"' || c == '\\')
}

/// Words of user messages tried as file names at most: a pasted log must not turn
/// every request's walk into thousands of lookups.
pub const MAX_NAMED: usize = 256;

/// The words of a user's `message` that could name a file, as [`named_files`] takes
/// them: quotes, brackets and trailing punctuation trimmed off (`` `src/a.rs`, `` is
/// `src/a.rs`), words with no letter or digit left out.
pub fn path_words(message: &str) -> impl Iterator<Item = &str> {
    message
        .split_whitespace()
        .map(|w| {
            w.trim_start_matches(|c: char| "`'\"([{<".contains(c))
                .trim_end_matches(|c: char| "`'\")]}>.,;:!?".contains(c))
        })
        .filter(|w| w.chars().any(char::is_alphanumeric))
}

/// Of the `words`, the files beneath `root` (links resolved, none leading out), as
/// relative `/`-separated names: so a file the user names is one the model can name
/// too, though the walk leaves it out (git-ignored).
fn named_files(root: &Path, words: &[String]) -> Vec<String> {
    let Ok(beneath) = agentls_edit::Beneath::open(root) else {
        return Vec::new();
    };
    words
        .iter()
        .filter_map(|w| {
            let rel = agentls_edit::Beneath::relative(root, w).ok()?;
            if !matches!(beneath.check(&rel, w), Ok(agentls_edit::Found::File)) {
                return None;
            }
            rel.to_str().filter(|n| plain(n)).map(str::to_owned)
        })
        .collect()
}

/// [`constraint`] for the session's tools, the files its model has seen and the words
/// of its user's messages, off the async runtime.
pub async fn constraint_async(
    ctx: &agentls_tools::ToolContext,
    tools: &ToolSet,
    named: &[String],
) -> Option<Arc<PathConstraint>> {
    let ctx = ctx.clone();
    let tools = tools.clone();
    let named = named.to_vec();
    tokio::task::spawn_blocking(move || {
        let texts = agentls_tools::seen_texts(&ctx);
        constraint(&ctx.root, &tools, texts, &named)
    })
    .await
    .ok()
    .flatten()
    .map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentls_model::{PathCheck, PathKind};

    #[test]
    fn path_words_trim_quotes_brackets_and_trailing_punctuation() {
        let words: Vec<&str> =
            path_words("Edit `src/a.rs`, (b.py) and \"./c d\"... then .env? -- ok.").collect();
        assert_eq!(
            words,
            [
                "Edit", "src/a.rs", "b.py", "and", "./c", "d", "then", ".env", "ok"
            ]
        );
    }

    #[test]
    fn the_walk_keeps_hidden_files_and_leaves_git_and_ignored_ones_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for f in [
            "src/lib.rs",
            ".github/ci.yml",
            ".git/config",
            "target/x.o",
            "a\"b.txt",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, "x").expect("write");
        }
        std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
        let (files, dirs) = walk(root, 100).expect("small tree");
        let mut files = files;
        files.sort();
        assert_eq!(files, [".github/ci.yml", ".gitignore", "src/lib.rs"]);
        let mut dirs = dirs;
        dirs.sort();
        assert_eq!(dirs, [".github", "src"]);
        assert!(
            walk(root, 3).is_none(),
            "past the limit there is no constraint"
        );

        let tools = ToolSet::new(vec![Arc::new(agentls_tools::ReadFile)]);
        let c = constraint(root, &tools, Vec::new(), &[]).expect("read_file names a path");
        assert_eq!(c.kind("read_file", "path"), Some(PathKind::File));
        assert_eq!(c.check(PathKind::File, "src/lib.rs"), PathCheck::Complete);
        assert_eq!(c.check(PathKind::File, "target/x.o"), PathCheck::Invalid);

        // A file the user names is in, git-ignored or not; names leading out are not.
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("secret"), "x").expect("write");
        #[cfg(unix)]
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("src/link"))
            .expect("symlink");
        let named: Vec<String> = path_words(&format!(
            "Fix `target/x.o`, then src/link and ../{0}/secret, {1}/secret and nope.rs.",
            outside
                .path()
                .file_name()
                .and_then(|n| n.to_str())
                .expect("name"),
            outside.path().display()
        ))
        .map(str::to_owned)
        .collect();
        assert_eq!(named_files(root, &named), ["target/x.o"], "{named:?}");
        let c = constraint(root, &tools, Vec::new(), &named).expect("read_file names a path");
        assert_eq!(c.check(PathKind::File, "target/x.o"), PathCheck::Complete);
        assert_eq!(c.check(PathKind::File, "src/lib.rs"), PathCheck::Complete);
        assert_eq!(c.check(PathKind::File, "src/link"), PathCheck::Invalid);

        // No git repository: its `.gitignore` still holds.
        std::fs::remove_dir_all(root.join(".git")).expect("rm .git");
        let (files, _) = walk(root, 100).expect("small tree");
        assert!(!files.iter().any(|f| f.starts_with("target/")), "{files:?}");
    }
}
