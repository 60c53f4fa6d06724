//! Landing a chosen change: `write_file` through the session's edit sink, so it is
//! planned against the live buffers, versioned, merged with typing, or refused.

use agentls_tools::{Tool, ToolContext};
use serde_json::json;

use super::localise::Target;

/// Lands `text` as the target file's new content: one `write_file` through the
/// session's edit sink (planned against the live buffer, merged with what the user
/// typed since the pipeline read it, or refused).
pub(super) async fn land(
    ctx: &ToolContext,
    target: &Target,
    text: String,
) -> Result<String, String> {
    land_files(ctx, vec![(target.path.clone(), target.text.clone(), text)]).await
}

/// Lands new texts of several files, `(absolute path, text read, new text)`, as one
/// `write_file` of them all: one plan, one edit.
pub(super) async fn land_files(
    ctx: &ToolContext,
    files: Vec<(std::path::PathBuf, String, String)>,
) -> Result<String, String> {
    let mut writes = Vec::with_capacity(files.len());
    for (path, read, text) in files {
        // The pipeline read the file: what it read is the base of the write. A file
        // it found missing has no base: if one appeared since, the write is refused.
        if !read.is_empty() || path.exists() {
            ctx.reads.remember(&path, read);
        }
        let shown = path
            .strip_prefix(&ctx.root)
            .unwrap_or(&path)
            .display()
            .to_string();
        writes.push(json!({ "path": shown, "content": text }));
    }
    let args = serde_json::Value::Array(writes);
    agentls_tools::WriteFile
        .call(ctx, args)
        .await
        .map(|out| out.summary)
        .map_err(|e| e.message)
}

/// One file a change made without the model (a rename, a reworded message) rewrites.
pub(super) struct FileChange {
    /// Absolute path.
    pub path: std::path::PathBuf,
    /// The text read.
    pub before: String,
    /// The new text.
    pub after: String,
}

/// What a change made without the model is, for its report and answer.
pub(super) struct Made<'a> {
    /// The target line: what changes where.
    pub target: String,
    /// The answer's first words when it lands ("Renamed a → b: 3 name(s) in 2 file(s)").
    pub done: String,
    /// The changed workspace, in the reason's words ("the renamed workspace").
    pub workspace: &'a str,
    /// The project's test command, if one was found.
    pub tests: Option<String>,
    /// When the work began.
    pub started: std::time::Instant,
    /// Time running the checks, in ms.
    pub verify_ms: f64,
}

/// Reports a change made without the model as one candidate, verified as `verdict`
/// against `baseline`, and lands it when the pick takes it (it turns a failing check
/// green, or breaks nothing that passed).
pub(super) async fn settle(
    ctx: &ToolContext,
    config: &super::SolveConfig,
    progress: &super::Progress<'_>,
    made: Made<'_>,
    (baseline, verdict): (&super::Verdict, &super::Verdict),
    changes: Vec<FileChange>,
) -> super::Solved {
    let shown = |p: &std::path::Path| p.strip_prefix(&ctx.root).unwrap_or(p).display().to_string();
    let mut report = super::SolveReport {
        targets: vec![made.target],
        tests: made.tests,
        baseline: baseline.phrase(),
        timings: super::SolveTimings {
            verify_ms: made.verify_ms,
            ..super::SolveTimings::default()
        },
        ..super::SolveReport::default()
    };
    let mut texts = changes.iter().map(|c| (shown(&c.path), c.after.clone()));
    let (path, text) = texts.next().unwrap_or_default();
    report.candidates.push(super::CandidateReport {
        path,
        temperature: 0.0,
        seed: None,
        repair: false,
        fim: false,
        text: Some(text),
        also: texts.collect(),
        verdict: verdict.phrase(),
        builds: verdict.builds(),
        passes: verdict.passes(),
    });
    let joined: String = changes.iter().map(|c| c.after.as_str()).collect();
    let choice = super::pick::pick(baseline, std::slice::from_ref(verdict), &[joined]);
    let mut answer = None;
    if choice.is_some() {
        report.chosen = Some(0);
        report.reason = format!(
            "{} {} (before: {})",
            made.workspace,
            verdict.phrase(),
            baseline.phrase()
        );
        let landing = changes
            .into_iter()
            .map(|c| (c.path, c.before, c.after))
            .collect();
        match land_files(ctx, landing).await {
            Ok(summary) => {
                report.landed = true;
                answer = Some(format!("{}; {}. {summary}", made.done, report.reason));
            }
            Err(e) => report.reason = format!("the change did not land: {e}"),
        }
    } else {
        report.reason = format!(
            "{} {}, where it {} before",
            made.workspace,
            verdict.phrase(),
            baseline.phrase()
        );
    }
    progress.finish(&report, answer.is_some(), made.started);
    config.tap(&report);
    super::Solved {
        report,
        answer,
        calls: 0,
        usage: agentls_model::Usage::default(),
        model_ms: 0.0,
    }
}
