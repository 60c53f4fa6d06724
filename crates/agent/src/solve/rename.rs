//! Renames without the model: "rename the type `Tokenizer` to `Lexer`" is read from
//! the task's words ([`asked`]) and carried out over every indexed source file by
//! identifier boundaries ([`apply`]), then verified like any candidate. A small model
//! cannot find every use across files; the words and the index can, and the tests say
//! whether the result still holds together.

use std::path::PathBuf;
use std::time::Instant;

use agentls_tools::ToolContext;
use serde_json::json;

use super::config::SolveConfig;
use super::land::{FileChange, Made, settle};
use super::progress::Progress;
use super::report::Solved;
use super::verify::Verifier;
use crate::event::EventSender;

/// One name to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rename {
    /// The name as the code has it now.
    pub from: String,
    /// The name it gets.
    pub to: String,
}

/// Whether `s` is an identifier in the languages the index knows (`$` for JavaScript).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(is_ident_char)
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// A word of the task as a name: backticks, quotes and brackets around it taken off,
/// a call's `()` too, and only the last part of a dotted path (`calc.add` → `add`).
fn as_name(word: &str) -> Option<&str> {
    let w = word.trim_matches(|c: char| "`'\"()[]{},;:!?".contains(c));
    let w = w.strip_suffix("()").unwrap_or(w);
    let w = w.trim_end_matches('.');
    let w = w.rsplit('.').next().unwrap_or(w);
    is_identifier(w).then_some(w)
}

/// The renames the task asks for: in each sentence that says "rename", every
/// `OLD to NEW` whose two sides are identifiers ("rename the type Tokenizer to Lexer
/// and its constructor NewTokenizer to NewLexer" → two). Nothing when the task asks
/// for no rename. The caller checks that each `from` is defined in the workspace.
pub fn asked(task: &str) -> Vec<Rename> {
    let mut out: Vec<Rename> = Vec::new();
    let lower = task.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("rename").map(|i| from + i) {
        // The sentence runs to a full stop followed by a space, or to the end.
        let end = task[at..]
            .find(". ")
            .or_else(|| task[at..].find(".\n"))
            .map_or(task.len(), |i| at + i + 1);
        let words: Vec<&str> = task[at..end].split_whitespace().collect();
        for i in 1..words.len().saturating_sub(1) {
            if words[i] != "to" {
                continue;
            }
            let (Some(old), Some(new)) = (as_name(words[i - 1]), as_name(words[i + 1])) else {
                continue;
            };
            if old != new && !out.iter().any(|r| r.from == old) {
                out.push(Rename {
                    from: old.to_owned(),
                    to: new.to_owned(),
                });
            }
        }
        from = end.max(at + 1);
    }
    out
}

/// Whether the match of `from` at `start..end` of `text` stands on identifier
/// boundaries. A name starting with a capital (a type) also matches as a part of a
/// camel-case name (`NewTokenizer`, `TokenizerError`), whose other parts stay; any
/// other name matches whole only, so `fetchUser` leaves `fetchUsers` alone.
fn on_boundaries(text: &str, start: usize, end: usize, from: &str) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    let capital = from.starts_with(|c: char| c.is_ascii_uppercase());
    let left = match before {
        None => true,
        Some(c) if !is_ident_char(c) => true,
        Some(c) => capital && (c.is_ascii_lowercase() || c.is_ascii_digit()),
    };
    let right = match after {
        None => true,
        Some(c) if !is_ident_char(c) => true,
        Some(c) => capital && c.is_ascii_uppercase(),
    };
    left && right
}

/// `text` with every rename applied in one pass (so `A → B, B → C` never chains;
/// longer names are tried first), with the count of names changed; `None` when
/// nothing changed.
pub fn apply(text: &str, renames: &[Rename]) -> Option<(String, usize)> {
    let mut order: Vec<&Rename> = renames.iter().filter(|r| !r.from.is_empty()).collect();
    order.sort_by_key(|r| std::cmp::Reverse(r.from.len()));
    let mut out = String::with_capacity(text.len());
    let mut count = 0;
    let mut i = 0;
    let mut copied = 0;
    while i < text.len() {
        let hit = order.iter().find(|r| {
            text[i..].starts_with(r.from.as_str())
                && on_boundaries(text, i, i + r.from.len(), &r.from)
        });
        match hit {
            Some(r) => {
                out.push_str(&text[copied..i]);
                out.push_str(&r.to);
                i += r.from.len();
                copied = i;
                count += 1;
            }
            None => {
                i += text[i..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    out.push_str(&text[copied..]);
    (count > 0).then_some((out, count))
}

/// Carries out the renames `task` asks for over every indexed source file (tests and
/// comments included), verifies the result in the overlay (syntax, the project's
/// tests as they were before) and lands it as one edit. `None` when the task asks for
/// no rename of a name the workspace defines, or none occurs: the other ways take it.
/// A report with no answer when the result breaks a check.
pub(super) async fn solve(
    ctx: &ToolContext,
    task: &str,
    config: &SolveConfig,
    events: Option<&EventSender>,
) -> Option<Solved> {
    let asked = asked(task);
    if asked.is_empty() {
        return None;
    }
    let started = Instant::now();
    let (index, store, limits) = (ctx.index.clone(), ctx.store.clone(), ctx.read_limits);
    let (root, protected) = (ctx.root.clone(), super::localise::protected(task));
    let (renames, changes, count) = tokio::task::spawn_blocking(move || {
        let index = index.read().unwrap_or_else(|p| p.into_inner());
        let renames: Vec<Rename> = asked
            .into_iter()
            .filter(|r| !index.definitions(&r.from).is_empty())
            .collect();
        let mut paths: Vec<PathBuf> = index
            .paths()
            .filter(|p| {
                !super::localise::is_protected(p.strip_prefix(&root).unwrap_or(p), &protected)
            })
            .map(|p| p.to_path_buf())
            .collect();
        paths.sort();
        let mut changes = Vec::new();
        let mut count = 0;
        for path in paths {
            let Ok(src) = store.read(&path, &limits) else {
                continue;
            };
            let before = src.rope.to_string();
            if let Some((after, n)) = apply(&before, &renames) {
                count += n;
                changes.push(FileChange {
                    path,
                    before,
                    after,
                });
            }
        }
        (renames, changes, count)
    })
    .await
    .ok()?;
    if renames.is_empty() || changes.is_empty() {
        tracing::info!("solve: no rename of a defined name to carry out");
        return None;
    }
    let root = &ctx.root;
    let shown = |p: &PathBuf| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let what = renames
        .iter()
        .map(|r| format!("{} → {}", r.from, r.to))
        .collect::<Vec<_>>()
        .join(", ");
    let files: Vec<String> = changes.iter().map(|c| shown(&c.path)).collect();
    let target = format!(
        "rename {what}: {count} name(s) in {} file(s) ({})",
        files.len(),
        files.join(", ")
    );
    let progress = Progress::new(events);
    progress.start(json!({ "targets": [target.clone()], "samples": 1 }));
    progress.line(target.clone());

    let verifier = Verifier::detected(ctx).await;
    let baseline = verifier.verify_files(&[]).await;
    progress.line(format!("the workspace as it is: {}", baseline.phrase()));
    let laid: Vec<(&std::path::Path, &str)> = changes
        .iter()
        .map(|c| (c.path.as_path(), c.after.as_str()))
        .collect();
    let verdict = verifier.verify_files(&laid).await;
    progress.line(format!("renamed: {}", verdict.phrase()));

    let made = Made {
        target,
        done: format!("Renamed {what}: {count} name(s) in {} file(s)", files.len()),
        workspace: "the renamed workspace",
        tests: verifier.checks().tests.clone(),
        started,
    };
    let solved = settle(ctx, config, &progress, made, (&baseline, &verdict), changes).await;
    Some(solved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(from: &str, to: &str) -> Rename {
        Rename {
            from: from.into(),
            to: to.into(),
        }
    }

    #[test]
    fn the_task_names_the_renames() {
        assert_eq!(
            asked(
                "In this module, rename the type Tokenizer to Lexer and its constructor NewTokenizer to NewLexer, everywhere (tests and comments). Behaviour must not change."
            ),
            vec![r("Tokenizer", "Lexer"), r("NewTokenizer", "NewLexer")]
        );
        assert_eq!(
            asked("Rename the function `fetchUser()` to `loadUser()` everywhere in this project."),
            vec![r("fetchUser", "loadUser")]
        );
        assert_eq!(
            asked("Please rename calc.add to calc.sum. Then go to the next thing."),
            vec![r("add", "sum")]
        );
        assert!(asked("Fix add so that it adds.").is_empty());
        // Any two words around "to": the caller keeps only names the workspace defines.
        assert_eq!(
            asked("Rename it to something clearer."),
            vec![r("it", "something")]
        );
    }

    #[test]
    fn names_change_on_identifier_boundaries_only() {
        let renames = [r("fetchUser", "loadUser")];
        let (text, n) = apply(
            "export function fetchUser(id) {}\nfetchUsers(); prefetchUser(); // fetchUser here\n",
            &renames,
        )
        .unwrap();
        assert_eq!(
            text,
            "export function loadUser(id) {}\nfetchUsers(); prefetchUser(); // loadUser here\n"
        );
        assert_eq!(n, 2);
        assert_eq!(apply("nothing to see", &renames), None);
    }

    #[test]
    fn a_type_name_changes_inside_camel_case_names_too() {
        let renames = [r("Tokenizer", "Lexer"), r("NewTokenizer", "NewLexer")];
        let (text, _) = apply(
            "type Tokenizer struct{}\nfunc NewTokenizer() *Tokenizer {}\nvar e TokenizerError\nvar t Tokenizers\nvar x HTTPTokenizer\n",
            &renames,
        )
        .unwrap();
        assert_eq!(
            text,
            "type Lexer struct{}\nfunc NewLexer() *Lexer {}\nvar e LexerError\nvar t Tokenizers\nvar x HTTPTokenizer\n"
        );
    }

    #[test]
    fn renames_never_chain() {
        let (text, n) = apply("a b", &[r("a", "b"), r("b", "c")]).unwrap();
        assert_eq!((text.as_str(), n), ("b c", 2));
    }
}
