//! All tools by name, the subsets a session gets (per model profile, per mode), and the
//! dispatcher that turns a model's raw call into exactly one result.

use std::sync::Arc;

use agentls_model::EditFormat;
use futures::FutureExt;
use serde_json::Value;

use crate::todo_list::TodoList;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// A set of tools, in the order they are shown to the model. Cheap to clone.
#[derive(Clone)]
pub struct Registry {
    /// Each tool with its name, taken once: `spec()` builds a schema on every call.
    tools: Vec<(&'static str, Arc<dyn Tool>)>,
    todos: TodoList,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::standard()
    }
}

/// Edit tools given only to models using the patch format.
const PATCH_ONLY: &[&str] = &["apply_patch"];
/// Edit tools given only to models using search/replace.
const STR_REPLACE_ONLY: &[&str] = &["str_replace", "insert"];

impl Registry {
    /// Every tool, with a fresh plan for `todo`.
    pub fn standard() -> Self {
        Self::with_todos(TodoList::default())
    }

    /// Every tool; `todo` reads and writes `todos` (shared with whoever shows the plan).
    pub fn with_todos(todos: TodoList) -> Self {
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(crate::ReadFile),
            Arc::new(crate::ListDir),
            Arc::new(crate::FindFiles),
            Arc::new(crate::Grep),
            Arc::new(crate::Symbols),
            Arc::new(crate::Navigate),
            Arc::new(crate::RepoMap),
            Arc::new(crate::SemanticSearch),
            Arc::new(crate::Diagnostics),
            Arc::new(crate::StrReplace),
            Arc::new(crate::Insert),
            Arc::new(crate::ApplyPatch),
            Arc::new(crate::WriteFile),
            Arc::new(crate::DeleteFile),
            Arc::new(crate::MoveFile),
            Arc::new(crate::RunCommand),
            Arc::new(crate::Todo::new(todos.clone())),
            Arc::new(crate::Task),
        ];
        Self {
            tools: named(tools),
            todos,
        }
    }

    /// A registry of exactly these tools (tests, custom sessions).
    pub fn from_tools(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            tools: named(tools),
            todos: TodoList::default(),
        }
    }

    /// The plan the `todo` tool keeps.
    pub fn todos(&self) -> &TodoList {
        &self.todos
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|(n, _)| *n == name).map(|(_, t)| t)
    }

    /// Tool names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|(n, _)| *n).collect()
    }

    /// What the model is told about each tool.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|(_, t)| t.spec()).collect()
    }

    /// The model layer's tool definitions.
    pub fn tool_defs(&self) -> Vec<agentls_model::ToolDef> {
        self.tools
            .iter()
            .map(|(_, t)| t.spec().to_tool_def())
            .collect()
    }

    /// The tools for a model profile: `apply_patch` for patch-format models,
    /// `str_replace` (and `insert`) for the others; never both.
    pub fn for_profile(&self, format: EditFormat) -> Registry {
        let drop = match format {
            EditFormat::ApplyPatch => STR_REPLACE_ONLY,
            EditFormat::StrReplace => PATCH_ONLY,
        };
        self.filter(|name, _| !drop.contains(&name))
    }

    /// The tools that cannot change the workspace (`ask` mode).
    pub fn read_only(&self) -> Registry {
        self.filter(|_, t| !t.is_mutating())
    }

    /// Whether a call to `name` may change the workspace; unknown names count as
    /// mutating (serialised), as the safe answer.
    pub fn is_mutating(&self, name: &str) -> bool {
        self.get(name).is_none_or(|t| t.is_mutating())
    }

    fn filter(&self, keep: impl Fn(&str, &Arc<dyn Tool>) -> bool) -> Registry {
        Registry {
            tools: self
                .tools
                .iter()
                .filter(|(n, t)| keep(n, t))
                .cloned()
                .collect(),
            todos: self.todos.clone(),
        }
    }

    /// Runs one call as the model wrote it: `args` is the raw JSON text of the arguments
    /// (empty means `{}`). Unknown tools and unparsable or non-object arguments are
    /// `InvalidArguments` naming what is wrong; a panicking tool is `Unknown`; a
    /// cancelled context is `UserAborted`. Always exactly one result.
    pub async fn call(
        &self,
        ctx: &ToolContext,
        name: &str,
        args: &str,
    ) -> Result<ToolOutput, ToolError> {
        let Some(tool) = self.get(name) else {
            return Err(ToolError::invalid_arguments(format!(
                "unknown tool `{name}`; available tools: {}",
                self.names().join(", ")
            )));
        };
        let args = parse_raw_args(name, args)?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::aborted(format!(
                "{name}: cancelled before it ran"
            )));
        }
        // The client's buffers of the files the call names, before it reads or plans
        // on them, and after it changed them.
        let named = crate::client_files::before(ctx, name, &args).await;
        let run = std::panic::AssertUnwindSafe(tool.call(ctx, args)).catch_unwind();
        let result = if tool.is_mutating() {
            // Mutating tools watch the token themselves, so they never stop half-way.
            run.await
        } else {
            tokio::select! {
                r = run => r,
                () = ctx.cancel.cancelled() => {
                    return Err(ToolError::aborted(format!("{name}: cancelled")));
                }
            }
        };
        if tool.is_mutating() {
            crate::client_files::after(ctx, &named).await;
        }
        match result {
            Ok(r) => {
                if let Err(e) = &r {
                    tracing::debug!(tool = name, class = ?e.class, "tool failed: {}", e.message);
                }
                r
            }
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(tool = name, "tool panicked: {what}");
                Err(ToolError::bug(format!(
                    "{name}: internal error in the tool (a bug of agentls, not of your call)"
                )))
            }
        }
    }
}

fn named(tools: Vec<Arc<dyn Tool>>) -> Vec<(&'static str, Arc<dyn Tool>)> {
    tools.into_iter().map(|t| (t.spec().name, t)).collect()
}

/// The arguments object from the model's raw text.
fn parse_raw_args(name: &str, raw: &str) -> Result<Value, ToolError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(Value::Null) => Ok(Value::Object(Default::default())),
        Ok(other) => Err(ToolError::invalid_arguments(format!(
            "{name}: arguments must be a JSON object, got {}",
            match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            }
        ))),
        Err(e) => Err(ToolError::invalid_arguments(format!(
            "{name}: arguments are not valid JSON ({e}); send one JSON object with the parameters"
        ))),
    }
}
