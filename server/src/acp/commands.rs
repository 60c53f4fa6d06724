//! The slash commands an ACP session offers (`available_commands_update`): the same
//! tasks as the editor's code actions (implement, fix, explain, write tests), typed
//! as `/name what` and expanded into the prompt the code actions send.

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

/// The update that lists the commands.
pub fn available() -> Option<SessionUpdate> {
    let v = json!({
        "sessionUpdate": "available_commands_update",
        "availableCommands": COMMANDS.iter().map(|(name, _, description, hint)| json!({
            "name": name,
            "description": description,
            "input": { "hint": hint },
        })).collect::<Vec<_>>(),
    });
    match serde_json::from_value(v) {
        Ok(u) => Some(u),
        Err(e) => {
            tracing::error!("acp: the commands update does not fit the schema: {e}");
            None
        }
    }
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
        assert_eq!(names, ["implement", "fix", "explain", "tests"]);
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
