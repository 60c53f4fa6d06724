//! What each editor command asks of the agent, in words the model reads.

use std::path::Path;

use agentls_protocol::agent::Mode;

/// The kinds of task code actions and commands start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// Implement a stub, a selection or an `agent:` comment.
    Implement,
    /// Fix a diagnostic.
    Fix,
    /// Explain code (read-only).
    Explain,
    /// Write tests.
    WriteTests,
    /// Anything the user typed.
    Ask,
}

impl TaskKind {
    /// The kind a command name starts, if it starts one.
    pub fn from_command(command: &str) -> Option<TaskKind> {
        use agentls_protocol::commands as c;
        Some(match command {
            c::IMPLEMENT => TaskKind::Implement,
            c::FIX => TaskKind::Fix,
            c::EXPLAIN => TaskKind::Explain,
            c::WRITE_TESTS => TaskKind::WriteTests,
            c::ASK => TaskKind::Ask,
            _ => return None,
        })
    }

    /// The session mode the task needs: explaining writes nothing.
    pub fn mode(self) -> Mode {
        match self {
            TaskKind::Explain => Mode::Ask,
            _ => Mode::Agent,
        }
    }

    /// A short label for titles.
    pub fn label(self) -> &'static str {
        match self {
            TaskKind::Implement => "implement",
            TaskKind::Fix => "fix",
            TaskKind::Explain => "explain",
            TaskKind::WriteTests => "write tests",
            TaskKind::Ask => "ask",
        }
    }
}

/// The code a task is about: where, and its text when the document is open.
#[derive(Debug, Clone, Default)]
pub struct Excerpt<'a> {
    /// The file, relative to the workspace root where possible.
    pub path: Option<&'a Path>,
    /// 1-based first and last line.
    pub lines: Option<(u32, u32)>,
    /// The text of those lines.
    pub text: Option<String>,
}

/// The user message for a task.
pub fn task_prompt(kind: TaskKind, instruction: &str, at: &Excerpt<'_>) -> String {
    let place = match (at.path, at.lines) {
        (Some(p), Some((a, b))) if a == b => format!("{} line {a}", p.display()),
        (Some(p), Some((a, b))) => format!("{} lines {a}-{b}", p.display()),
        (Some(p), None) => p.display().to_string(),
        (None, _) => "the workspace".to_owned(),
    };
    let instruction = instruction.trim();
    let head = match kind {
        TaskKind::Implement if instruction.is_empty() => {
            format!("Implement the code at {place}.")
        }
        TaskKind::Implement => format!("At {place}: {instruction}"),
        TaskKind::Fix => format!("Fix this problem at {place}: {instruction}"),
        TaskKind::Explain => format!(
            "Explain the code at {place}: what it does, how, and anything surprising. Do not change files.{}",
            if instruction.is_empty() {
                String::new()
            } else {
                format!(" Focus: {instruction}")
            }
        ),
        TaskKind::WriteTests => format!(
            "Write tests for the code at {place}, where this project keeps its tests, in its style, and run them.{}",
            if instruction.is_empty() {
                String::new()
            } else {
                format!(" {instruction}")
            }
        ),
        TaskKind::Ask => instruction.to_owned(),
    };
    let mut out = head;
    if let Some(text) = &at.text {
        out.push_str("\n\nThe code there now:\n```\n");
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("```");
    }
    if matches!(kind, TaskKind::Implement | TaskKind::Fix) {
        out.push_str("\n\nMake the change, then check it (build or run the tests) if you can.");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_name_the_place_and_quote_the_code() {
        let at = Excerpt {
            path: Some(Path::new("src/lib.rs")),
            lines: Some((3, 5)),
            text: Some("fn add() {\n    todo!()\n}".into()),
        };
        let p = task_prompt(TaskKind::Implement, "", &at);
        assert!(
            p.starts_with("Implement the code at src/lib.rs lines 3-5."),
            "{p}"
        );
        assert!(p.contains("```\nfn add() {\n    todo!()\n}\n```"), "{p}");
        let p = task_prompt(TaskKind::Fix, "expected `i32`, found `&str`", &at);
        assert!(
            p.contains("Fix this problem at src/lib.rs lines 3-5: expected"),
            "{p}"
        );
        assert_eq!(TaskKind::Explain.mode(), Mode::Ask);
    }
}
