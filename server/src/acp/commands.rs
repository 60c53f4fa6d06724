//! The slash commands an ACP session offers (`available_commands_update`): the same
//! tasks as the editor's code actions (implement, fix, explain, write tests), typed
//! as `/name what` and expanded into the prompt the code actions send; and `/compact`,
//! the session's compaction op.

use agent_client_protocol::v1::schema::SessionUpdate;
use serde_json::json;

use crate::agent::{Excerpt, TaskKind, task_prompt};

/// Name, task, description, input hint.
const COMMANDS: &[(&str, TaskKind, &str, &str)] = &[
    (
        "implement",
        TaskKind::Implement,
        "Implement something and check it",
        "what to implement, and where",
    ),
    (
        "fix",
        TaskKind::Fix,
        "Fix a problem (an error, a failing test) and check the fix",
        "the problem, as the error says it",
    ),
    (
        "explain",
        TaskKind::Explain,
        "Explain code without changing files",
        "the code to explain (a file, a function)",
    ),
    (
        "tests",
        TaskKind::WriteTests,
        "Write tests in the project's style and run them",
        "the code to test",
    ),
];

/// The command that compacts the conversation rather than prompting.
const COMPACT: (&str, &str) = (
    "compact",
    "Compact the conversation: everything before the last exchange folded into a summary",
);

/// The update that lists the commands.
pub fn available() -> Option<SessionUpdate> {
    let mut commands: Vec<serde_json::Value> = COMMANDS
        .iter()
        .map(|(name, _, description, hint)| {
            json!({
                "name": name,
                "description": description,
                "input": { "hint": hint },
            })
        })
        .collect();
    commands.push(json!({ "name": COMPACT.0, "description": COMPACT.1 }));
    update(json!({
        "sessionUpdate": "available_commands_update",
        "availableCommands": commands,
    }))
}

/// `v` as an update, `None` (logged) when it does not fit the schema.
fn update(v: serde_json::Value) -> Option<SessionUpdate> {
    match serde_json::from_value(v) {
        Ok(u) => Some(u),
        Err(e) => {
            tracing::error!("acp: an update that does not fit the schema: {e}");
            None
        }
    }
}

/// Whether `text` is `/compact`.
pub fn is_compact(text: &str) -> bool {
    text.trim()
        .strip_prefix('/')
        .is_some_and(|name| name == COMPACT.0)
}

/// What the agent says after a compaction.
pub fn compacted(masked: usize, summarized: usize) -> Option<SessionUpdate> {
    let text = if masked + summarized == 0 {
        "Nothing to compact yet.".to_owned()
    } else {
        format!(
            "Compacted: {summarized} messages folded into a summary, {masked} tool outputs masked."
        )
    };
    update(json!({
        "sessionUpdate": "agent_message_chunk",
        "content": { "type": "text", "text": text },
    }))
}

/// `text` with a leading `/name rest` expanded into the task's prompt; other text as
/// it is.
pub fn expand(text: &str) -> String {
    let trimmed = text.trim_start();
    let Some(command) = trimmed.strip_prefix('/') else {
        return text.to_owned();
    };
    let (name, rest) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    match COMMANDS.iter().find(|(n, ..)| *n == name) {
        Some((_, kind, ..)) => task_prompt(*kind, rest, &Excerpt::default()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_fit_the_schema_and_expand_into_their_tasks() {
        let v = serde_json::to_value(available().unwrap()).unwrap();
        let names: Vec<&str> = v["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["implement", "fix", "explain", "tests", "compact"]);
        assert!(is_compact(" /compact ") && !is_compact("/compacted") && !is_compact("compact"));
        let said = serde_json::to_value(compacted(1, 3).unwrap()).unwrap();
        assert_eq!(
            said["content"]["text"],
            "Compacted: 3 messages folded into a summary, 1 tool outputs masked."
        );
        let explained = expand("/explain src/lib.rs parse()");
        assert!(
            explained.starts_with("Explain the code at the workspace")
                && explained.contains("Do not change files.")
                && explained.ends_with("Focus: src/lib.rs parse()"),
            "{explained}"
        );
        assert!(expand("/tests").starts_with("Write tests for the code at the workspace"));
        assert_eq!(expand("/unknown thing"), "/unknown thing");
        assert_eq!(expand("plain text"), "plain text");
    }
}
