//! Verify on edit: after an edit lands, the workspace's language servers check the
//! files it touched, and the tool result carries their errors (warnings too when the
//! checker says so), so the model sees what it broke in the same step. Each check is
//! bounded by the checker's wait; the files are checked concurrently, so an edit of
//! several files waits one bound, not one per file.

use std::path::PathBuf;

use agentls_edit::{FileChange, Plan};

use crate::paths::display;
use crate::{CheckResult, ToolContext};

/// The files `plan` leaves with new text: created, edited, or moved (at their new path).
pub(crate) fn touched(plan: &Plan) -> Vec<PathBuf> {
    plan.changes
        .iter()
        .filter_map(|c| match c {
            FileChange::Create { path, .. } => Some(path.clone()),
            FileChange::Edit(t) => Some(t.path.clone()),
            FileChange::Rename { to, .. } => Some(to.clone()),
            FileChange::Delete { .. } => None,
        })
        .collect()
}

/// What the checker says of `paths` as they read now (the editor's buffer where there
/// is one, else the disk), as lines for the tool result; empty without a checker or
/// when no server checks these files.
pub(crate) async fn after_edit(ctx: &ToolContext, paths: &[PathBuf]) -> String {
    let Some(checker) = &ctx.checker else {
        return String::new();
    };
    let warnings = checker.warnings_on_edit();
    let checks = paths.iter().map(|path| async move {
        let text = match crate::paths::read(ctx, path) {
            Ok(s) => s.rope.to_string(),
            Err(_) => return (path, CheckResult::NoServer),
        };
        (path, checker.check(path, &text).await)
    });
    let mut out = String::new();
    for (path, result) in futures::future::join_all(checks).await {
        let shown = display(&ctx.root, path);
        match result {
            CheckResult::NoServer => {}
            CheckResult::Problems {
                server,
                problems,
                took,
            } => {
                let shown_problems: Vec<_> = problems
                    .iter()
                    .filter(|(_, severity, _)| severity == "error" || warnings)
                    .collect();
                let what = if warnings { "problem" } else { "error" };
                let n = shown_problems.len();
                if n == 0 {
                    out.push_str(&format!(
                        "{server}: no {what}s in {shown} after this edit ({} ms)\n",
                        took.as_millis()
                    ));
                } else {
                    out.push_str(&format!(
                        "{server} reports {n} {what}{} in {shown} after this edit ({} ms); fix {}:\n",
                        if n == 1 { "" } else { "s" },
                        took.as_millis(),
                        if n == 1 { "it" } else { "them" },
                    ));
                    for (line, severity, message) in shown_problems {
                        out.push_str(&format!("  {shown}:{line}: {severity}: {message}\n"));
                    }
                }
            }
            CheckResult::Unavailable { server, why } => {
                out.push_str(&format!(
                    "{server}: not checked ({why}); run `diagnostics` on {shown} later\n"
                ));
            }
        }
    }
    out
}
