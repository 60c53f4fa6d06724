//! The path every edit takes: plan against live buffers (then disk), check syntax, hand
//! the plan to the [`EditSink`](crate::EditSink), and describe what landed for the model.

use agentls_edit::{EditError, FileChange, FileOp, MatchLevel, Plan, Planner, StoreSource};

use crate::paths::display;
use crate::syntax_check::TreeSitterCheck;
use crate::util::blocking;
use crate::{ToolContext, ToolError, ToolOutput};

/// Plans `ops` against what the editor shows, lands the plan through `ctx.edits`, and
/// reports what changed, where each hunk matched, and any syntax errors it introduced.
/// What landed is remembered as seen by the model ([`crate::ReadVersions`]).
pub(crate) async fn plan_and_land(
    ctx: &ToolContext,
    tool: &'static str,
    ops: Vec<FileOp>,
) -> Result<ToolOutput, ToolError> {
    let plan = plan(ctx, ops).await?;
    let landed = plan.clone();
    let mut out = land(ctx, tool, plan).await?;
    // The model wrote this text, so it has seen it. Not so for a command's changes
    // (`run_command` lands through [`land`] alone): those count as someone else's.
    ctx.reads.record(&landed);
    out.content
        .push_str(&crate::verify::after_edit(ctx, &crate::verify::touched(&landed)).await);
    Ok(out)
}

/// Reads a tool's arguments with the edit engine's own parser for `format`, so the tools
/// and `agentls edit` accept exactly the same JSON.
pub(crate) fn parse_ops(
    tool: &'static str,
    format: agentls_edit::Format,
    args: &serde_json::Value,
) -> Result<Vec<FileOp>, ToolError> {
    agentls_edit::parse(format, &args.to_string()).map_err(|e| {
        ToolError::invalid_arguments(match e {
            // Its text already starts with "invalid arguments".
            agentls_edit::EditError::Args(m) => format!("{tool}: invalid arguments: {m}"),
            other => format!("{tool}: invalid arguments: {other}"),
        })
    })
}

/// Plans `ops` (no writes) off the async threads.
pub(crate) async fn plan(ctx: &ToolContext, ops: Vec<FileOp>) -> Result<Plan, ToolError> {
    let store = ctx.store.clone();
    let limits = ctx.read_limits;
    let root = ctx.root.clone();
    blocking(move || {
        let source = StoreSource {
            store: &store,
            limits,
        };
        Planner::new(root, &source)
            .with_syntax(&TreeSitterCheck)
            .plan(&ops)
            .map_err(refused)
    })
    .await
}

/// Lands a plan and describes it.
pub(crate) async fn land(
    ctx: &ToolContext,
    tool: &'static str,
    plan: Plan,
) -> Result<ToolOutput, ToolError> {
    let report = describe(ctx, &plan);
    let summary = format!("{tool}: {}", summary_line(ctx, &plan));
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::aborted(format!(
            "{tool}: cancelled before the edit landed; nothing was changed"
        )));
    }
    ctx.edits.apply(tool, plan).await.map_err(|e| ToolError {
        class: e.class,
        message: format!(
            // The sink says what did land, checked against the buffer: never assume
            // that nothing did.
            "{tool}: the edit did not land as planned: {}",
            e.message
        ),
    })?;
    Ok(ToolOutput::with_summary(report, summary))
}

/// An engine refusal, worded for the model and classified.
pub(crate) fn refused(e: EditError) -> ToolError {
    let message = format!("edit refused, nothing was changed: {e}");
    if e.is_environment() {
        ToolError::environment(message)
    } else {
        ToolError::invalid_arguments(message)
    }
}

fn summary_line(ctx: &ToolContext, plan: &Plan) -> String {
    let names: Vec<String> = plan
        .changes
        .iter()
        .map(|c| match c {
            FileChange::Create { path, .. } => format!("A {}", display(&ctx.root, path)),
            FileChange::Edit(t) => format!("M {}", display(&ctx.root, &t.path)),
            FileChange::Rename { from, to } => format!(
                "R {} -> {}",
                display(&ctx.root, from),
                display(&ctx.root, to)
            ),
            FileChange::Delete { path } => format!("D {}", display(&ctx.root, path)),
        })
        .collect();
    if names.is_empty() {
        "no change".to_owned()
    } else {
        names.join(", ")
    }
}

fn describe(ctx: &ToolContext, plan: &Plan) -> String {
    let mut out = String::new();
    if plan.changes.is_empty() {
        // Small models resend a write that already landed, believing it still to do:
        // say what the next step is.
        out.push_str(
            "The edit changes nothing (the files already have this content). Do not repeat it: if this was the change the task needs, run the tests, or answer.\n",
        );
    }
    for c in &plan.changes {
        match c {
            FileChange::Create { path, text } => out.push_str(&format!(
                "Created {} ({} lines)\n",
                display(&ctx.root, path),
                text.lines().count()
            )),
            FileChange::Edit(t) => out.push_str(&format!(
                "Edited {} ({} change{})\n",
                display(&ctx.root, &t.path),
                t.edits.len(),
                if t.edits.len() == 1 { "" } else { "s" }
            )),
            FileChange::Rename { from, to } => out.push_str(&format!(
                "Moved {} to {}\n",
                display(&ctx.root, from),
                display(&ctx.root, to)
            )),
            FileChange::Delete { path } => {
                out.push_str(&format!("Deleted {}\n", display(&ctx.root, path)))
            }
        }
    }
    for h in &plan.hunks {
        let how = match h.level {
            None | Some(MatchLevel::Exact) => String::new(),
            Some(level) => format!(" (matched loosely: {level:?}; check the result)"),
        };
        out.push_str(&format!(
            "  {} hunk {} at line {}{how}\n",
            h.path, h.hunk, h.line
        ));
    }
    for s in &plan.syntax {
        out.push_str(&format!(
            "WARNING: the edit introduced syntax errors in {}; fix them:\n",
            display(&ctx.root, &s.path)
        ));
        for e in &s.errors {
            out.push_str(&format!("  line {}: {}\n", e.line, e.kind));
        }
    }
    out
}
