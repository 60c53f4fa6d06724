//! The tools a session offers, by name.

use std::sync::Arc;

use agentls_model::{EditFormat, PathKind, ToolDef};
use agentls_tools::Tool;

use crate::config::Mode;

/// The tools of the lean profile (`lean_tools`): find, read, edit, run.
pub const LEAN: &[&str] = &[
    "find_files",
    "grep",
    "read_file",
    "str_replace",
    "write_file",
    "run_command",
];

/// An ordered set of tools. The order is the order the model sees them in, so it stays
/// fixed for the session (a stable prompt prefix).
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl ToolSet {
    /// A set of `tools`; a later tool with the name of an earlier one replaces it.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let mut set = Self::default();
        for t in tools {
            set.insert(t);
        }
        set
    }

    /// The tools of a registry, in its order.
    pub fn from_registry(registry: &agentls_tools::Registry) -> Self {
        Self::new(
            registry
                .names()
                .into_iter()
                .filter_map(|n| registry.get(n).cloned())
                .collect(),
        )
    }

    /// Adds a tool, replacing one of the same name.
    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.spec().name;
        match self.tools.iter().position(|t| t.spec().name == name) {
            Some(i) => self.tools[i] = tool,
            None => self.tools.push(tool),
        }
    }

    /// Removes the tool called `name`, if present.
    pub fn remove(&mut self, name: &str) {
        self.tools.retain(|t| t.spec().name != name);
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.spec().name == name)
    }

    /// Tool names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.spec().name).collect()
    }

    /// Whether the set has no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools offered to a model in `mode` with edit format `edit`: no mutating tools
    /// unless the mode allows writes, and one edit style (`apply_patch`, or
    /// `str_replace` and `insert`, whichever the profile names) when the set has both.
    pub fn offered(&self, mode: Mode, edit: EditFormat) -> ToolSet {
        let has = |n: &str| self.get(n).is_some();
        let both = has("apply_patch") && has("str_replace");
        let dropped: &[&str] = match edit {
            EditFormat::ApplyPatch => &["str_replace", "insert"],
            EditFormat::StrReplace => &["apply_patch"],
        };
        ToolSet {
            tools: self
                .tools
                .iter()
                .filter(|t| mode.allows_writes() || !t.is_mutating())
                .filter(|t| !(both && dropped.contains(&t.spec().name)))
                .cloned()
                .collect(),
        }
    }

    /// Only the tools of [`LEAN`] (in this set's order): what small models get. Every
    /// tool in their prompt costs prompt-processing time on each run, and the 0.5B model
    /// called the ones it did not need (`todo`, `task`, `repo_map`) in loops.
    pub fn lean(&self) -> ToolSet {
        ToolSet {
            tools: self
                .tools
                .iter()
                .filter(|t| LEAN.contains(&t.spec().name))
                .cloned()
                .collect(),
        }
    }

    /// `(tool, argument, kind)` for every argument of these tools that names a path.
    pub fn path_args(&self) -> Vec<(String, String, PathKind)> {
        self.tools
            .iter()
            .flat_map(|t| {
                let name = t.spec().name;
                t.path_args()
                    .iter()
                    .map(move |(arg, kind)| (name.to_owned(), (*arg).to_owned(), *kind))
            })
            .collect()
    }

    /// `(tool, its edit arguments)` for these tools' edits held to the files' text.
    pub fn edit_args(&self) -> Vec<(String, agentls_model::EditArgs)> {
        self.tools
            .iter()
            .filter_map(|t| Some((t.spec().name.to_owned(), t.edit_args()?)))
            .collect()
    }

    /// The definitions the model sees.
    pub fn defs(&self) -> Vec<ToolDef> {
        self.tools.iter().map(|t| t.spec().to_tool_def()).collect()
    }
}
