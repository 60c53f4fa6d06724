//! `todo`: the agent's plan, written by the model, shown to the user.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::todo_list::{TodoItem, TodoList, TodoStatus};
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

/// Replaces the plan with the model's new version.
#[derive(Debug, Clone, Default)]
pub struct Todo {
    list: TodoList,
}

impl Todo {
    /// A tool writing to `list`.
    pub fn new(list: TodoList) -> Self {
        Self { list }
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct TodoArgs {
    /// The whole plan, every step with its status; replaces the previous one.
    todos: Vec<TodoItem>,
}

#[async_trait]
impl Tool for Todo {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "todo",
            description: "Write your plan for the task as a list of steps, shown to the user. Send the whole list each time (it replaces the previous one); mark one step in_progress while you work on it and mark steps completed as soon as they are done. Use it for tasks of three or more steps.",
            parameters: crate::schema::cached!(TodoArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        // It changes the plan, not the workspace: allowed in ask and plan modes.
        false
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let a: TodoArgs = parse_args("todo", args)?;
        if a.todos.iter().any(|t| t.content.trim().is_empty()) {
            return Err(ToolError::invalid_arguments(
                "todo: a step has empty content",
            ));
        }
        let done = a
            .todos
            .iter()
            .filter(|t| t.status == TodoStatus::Completed)
            .count();
        let total = a.todos.len();
        if let Some(progress) = &ctx.progress {
            progress.plan(&a.todos);
        }
        self.list.replace(a.todos)?;
        Ok(ToolOutput::with_summary(
            self.list.render(),
            format!("plan: {done}/{total} done"),
        ))
    }
}
