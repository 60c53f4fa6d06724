//! `symbols`: where a name is defined and used, from the symbol index.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::paths::display;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

const DEFAULT_MAX: usize = 50;

/// Finds definitions and references of a name.
#[derive(Debug, Clone, Copy, Default)]
pub struct Symbols;

#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Find {
    Definitions,
    References,
    #[default]
    Both,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SymbolsArgs {
    /// The exact identifier to look up, as it is written in the code.
    name: String,
    /// Default `both`.
    #[serde(default)]
    find: Find,
    /// Per section; default 50.
    #[schemars(range(min = 1))]
    #[serde(default)]
    max_results: Option<usize>,
}

#[async_trait]
impl Tool for Symbols {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "symbols",
            description: "Find where a symbol (function, type, method, constant...) is defined and where its name is used, from the workspace's tree-sitter index. Matches the exact name; references are by name, not resolved. When nothing is defined under that name, similar names are suggested. Returns `path:line kind name` lines.",
            parameters: crate::schema::cached!(SymbolsArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: SymbolsArgs = parse_args("symbols", args)?;
        let name = args.name.trim();
        if name.is_empty() {
            return Err(ToolError::invalid_arguments("symbols: empty name"));
        }
        let max = args.max_results.unwrap_or(DEFAULT_MAX).max(1);
        let index = ctx
            .index
            .read()
            .map_err(|_| ToolError::bug("symbols: index lock poisoned"))?;
        let mut out = String::new();
        let mut found = 0;
        if args.find != Find::References {
            let defs = index.definitions(name);
            found += defs.len();
            out.push_str(&format!("definitions of `{name}` ({}):\n", defs.len()));
            for d in defs.iter().take(max) {
                let container = d
                    .container
                    .as_deref()
                    .map(|c| format!(" (in {c})"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "{}:{} {} {}{container}\n",
                    display(&ctx.root, &d.path),
                    d.name_span.start.line + 1,
                    d.kind.as_str(),
                    d.name
                ));
            }
            if defs.len() > max {
                out.push_str(&format!("[{} more]\n", defs.len() - max));
            }
            if defs.is_empty() {
                let similar = index.workspace_symbols(name, 10);
                if !similar.is_empty() {
                    out.push_str("similar names:\n");
                    for s in similar {
                        out.push_str(&format!(
                            "{}:{} {} {}\n",
                            display(&ctx.root, &s.path),
                            s.name_span.start.line + 1,
                            s.kind.as_str(),
                            s.name
                        ));
                    }
                }
            }
        }
        if args.find != Find::Definitions {
            let refs = index.references(name);
            found += refs.len();
            out.push_str(&format!("references to `{name}` ({}):\n", refs.len()));
            for r in refs.iter().take(max) {
                out.push_str(&format!(
                    "{}:{}:{}\n",
                    display(&ctx.root, &r.path),
                    r.span.start.line + 1,
                    r.span.start.column + 1
                ));
            }
            if refs.len() > max {
                out.push_str(&format!("[{} more]\n", refs.len() - max));
            }
        }
        Ok(ToolOutput::with_summary(
            out,
            format!("symbols {name}: {found} found"),
        ))
    }
}
