//! The agent's plan as data: its steps, and the list shared between the `todo` tool
//! that writes it and whoever shows it (progress, `agent/event`).

use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::ToolError;

/// How far a step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

impl TodoStatus {
    /// `pending`, `in_progress` or `completed`, as the model writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }
}

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What to do.
    pub content: String,
    /// How far it is.
    pub status: TodoStatus,
}

/// The plan, shared between the tool and whoever shows it (progress, `agent/event`).
#[derive(Debug, Clone, Default)]
pub struct TodoList(Arc<Mutex<Vec<TodoItem>>>);

impl TodoList {
    /// The current plan.
    pub fn items(&self) -> Vec<TodoItem> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }

    pub(crate) fn replace(&self, items: Vec<TodoItem>) -> Result<(), ToolError> {
        *self
            .0
            .lock()
            .map_err(|_| ToolError::bug("todo list lock poisoned"))? = items;
        Ok(())
    }

    /// The plan as the model and the user read it: `[x]` done, `[>]` in progress.
    pub fn render(&self) -> String {
        let items = self.items();
        if items.is_empty() {
            return "(no plan)".to_owned();
        }
        items
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mark = match t.status {
                    TodoStatus::Pending => "[ ]",
                    TodoStatus::InProgress => "[>]",
                    TodoStatus::Completed => "[x]",
                };
                format!("{}. {mark} {}", i + 1, t.content)
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}
