//! `cargo run --release -p agentls-local --example tool_calls -- MODEL.gguf`: the
//! share of emitted tool calls that parse and validate against their schema, with
//! and without constrained decoding, on a fixed prompt set at temperature 0 (with
//! `call-first`, answers are opened as a call: `LocalProvider::with_call_first`).

#![allow(clippy::print_stdout)]

use agentls_local::{CallGrammar, Check, LocalProvider};
use agentls_model::{CancellationToken, ChatRequest, Provider, ToolDef, collect};
use serde_json::json;

fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "read_file".into(),
            description: "Read a file of the workspace.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "start_line": {"type": "integer"},
                "end_line": {"type": "integer"}}, "required": ["path"]}),
        },
        ToolDef {
            name: "grep".into(),
            description: "Search the workspace for a regular expression.".into(),
            parameters: json!({"type": "object", "properties": {
                "pattern": {"type": "string"},
                "glob": {"type": "string"},
                "case_sensitive": {"type": "boolean"}}, "required": ["pattern"]}),
        },
        ToolDef {
            name: "str_replace".into(),
            description: "Replace exactly one occurrence of old_str with new_str in a file.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "old_str": {"type": "string"},
                "new_str": {"type": "string"}}, "required": ["path", "old_str", "new_str"]}),
        },
        ToolDef {
            name: "run_tests".into(),
            description: "Run the test suite; optionally only tests matching a filter.".into(),
            parameters: json!({"type": "object", "properties": {
                "filter": {"type": "string"},
                "timeout_secs": {"type": "integer"}}}),
        },
    ]
}

const PROMPTS: &[&str] = &[
    "Open src/main.rs and show me lines 10 to 20.",
    "Find every TODO in the Rust files.",
    "In src/lib.rs replace `fn old_name()` with `fn new_name()`.",
    "Run only the parser tests, with a 60 second timeout.",
    "Read Cargo.toml.",
    "Search for the word `unsafe`, case-insensitively, in *.rs files.",
    "Rename the constant MAX_LEN to MAX_LENGTH in src/config.rs.",
    "Run the tests.",
    "Show me README.md from line 1 to line 5.",
    "Where is `fn main` defined?",
    "Change `let x = 1;` to `let x = 2;` in examples/demo.rs.",
    "Look at tests/it.rs.",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: tool_calls MODEL.gguf [call-first]")?;
    let call_first = args.next().as_deref() == Some("call-first");
    let rt = tokio::runtime::Runtime::new()?;
    let tools = tools();
    let grammar = CallGrammar::new(
        tools
            .iter()
            .map(|t| (t.name.clone(), t.parameters.clone()))
            .collect(),
    );
    for constrained in [false, true] {
        let p = LocalProvider::load("local", std::path::Path::new(&path))?
            .with_constrained_calls(constrained)
            .with_call_first(call_first);
        let (mut attempts, mut valid, mut answered) = (0, 0, 0);
        for prompt in PROMPTS {
            let mut req = ChatRequest::new(
                Some("You are a coding agent. Use the tools to do the task.".into()),
                *prompt,
            );
            req.tools = tools.clone();
            req.max_tokens = Some(96);
            let r = rt.block_on(collect(p.stream(&req, CancellationToken::new())))?;
            // Calls that failed to parse come back as text holding the tag.
            let failed = r.text.matches("<tool_call>").count();
            attempts += failed;
            let mut any = false;
            for c in &r.tool_calls {
                attempts += 1;
                let ok = c.parse_arguments().is_ok_and(|args| {
                    let text = format!(
                        "{{\"name\": {}, \"arguments\": {args}}}</tool_call>",
                        json!(c.name)
                    );
                    grammar.check(&text) == Check::Complete
                });
                valid += usize::from(ok);
                any |= ok;
            }
            answered += usize::from(any);
            println!(
                "constrained={constrained} {prompt:?}: {} calls, {failed} unparsed; {:?}",
                r.tool_calls.len(),
                r.tool_calls
                    .iter()
                    .map(|c| format!("{}{}", c.name, c.arguments))
                    .collect::<Vec<_>>()
            );
        }
        println!(
            "constrained={constrained} call_first={call_first}: {valid}/{attempts} emitted calls parse and validate; {answered}/{} prompts got a valid call",
            PROMPTS.len()
        );
    }
    Ok(())
}
