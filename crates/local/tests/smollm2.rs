//! Real-model tests on SmolLM2-135M-Instruct (Q4_1). They need the weights: set
//! `AGENTLS_TEST_GGUF` to the file, or fetch it into the data directory with
//! `cargo run -p agentls-local --example fetch -- smollm2-135m ~/.local/share/agentls`.
//! Without the file each test prints why it skipped and passes without checking, except
//! under CI, where it fails.

#![allow(clippy::print_stderr)]

mod common;

use std::path::PathBuf;

use agentls_local::{LocalProvider, catalog_entry};
use agentls_model::{
    CancellationToken, ChatRequest, ErrorClass, Provider, StopReason, StreamEvent, collect,
};
use futures::StreamExt;

fn model_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("AGENTLS_TEST_GGUF") {
        return Some(PathBuf::from(p));
    }
    let file = catalog_entry("smollm2-135m")?.file_name;
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    let p = base.join("agentls/models").join(file);
    p.exists().then_some(p)
}

/// A provider of its own for each test: the KV cache is per engine, and tests run
/// in parallel.
fn provider(test: &str) -> Option<LocalProvider> {
    let Some(path) = model_path() else {
        common::missing(
            test,
            "SmolLM2 weights (set AGENTLS_TEST_GGUF or fetch smollm2-135m)",
        );
        return None;
    };
    match LocalProvider::load("smollm2", &path) {
        Ok(p) => Some(p),
        Err(e) => panic!("cannot load {}: {e}", path.display()),
    }
}

fn request(user: &str, max_tokens: u32) -> ChatRequest {
    let mut r = ChatRequest::new(None, user);
    r.max_tokens = Some(max_tokens);
    r
}

#[tokio::test]
async fn temperature_zero_is_deterministic_and_reports_usage() {
    let Some(p) = provider("temperature_zero_is_deterministic_and_reports_usage") else {
        return;
    };
    let req = request("What is the capital of France?", 24);
    let a = collect(p.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    // A different conversation in between: the cache must not leak into the answer.
    let other = request("Write a haiku about rust.", 8);
    collect(p.stream(&other, CancellationToken::new()))
        .await
        .unwrap();
    let b = collect(p.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    assert!(!a.text.trim().is_empty());
    assert_eq!(a.text, b.text);
    // FIXME: SmolLM2-135M answers "L'Étoile, la Marseillaise…" here rather than
    // "Paris"; compare our tokenization with llama.cpp's on the same prompt before
    // asserting on content.
    assert!(a.usage.input > 10 && a.usage.output > 0 && a.usage.output <= 24);
    assert!(matches!(
        a.stop,
        StopReason::EndTurn | StopReason::MaxTokens
    ));
}

#[tokio::test]
async fn a_follow_up_turn_reuses_the_cache() {
    let Some(p) = provider("a_follow_up_turn_reuses_the_cache") else {
        return;
    };
    let first = request("Name a color.", 12);
    let a = collect(p.stream(&first, CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(a.usage.cached_input, 0);
    let mut next = first.clone();
    next.messages
        .push(agentls_model::Message::assistant(a.text.clone()));
    next.messages
        .push(agentls_model::Message::user("Another one?"));
    let b = collect(p.stream(&next, CancellationToken::new()))
        .await
        .unwrap();
    assert!(
        b.usage.cached_input >= a.usage.input,
        "cached {} of {}, first prompt {}",
        b.usage.cached_input,
        b.usage.input,
        a.usage.input
    );
    assert!(b.usage.cached_input < b.usage.input);
}

#[tokio::test]
async fn cancelling_stops_within_a_token() {
    let Some(p) = provider("cancelling_stops_within_a_token") else {
        return;
    };
    let cancel = CancellationToken::new();
    let req = request("Count from 1 to 200, one number per line.", 400);
    let mut stream = p.stream(&req, cancel.clone());
    let mut deltas = 0;
    let mut after_cancel = 0;
    let mut ended = None;
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(StreamEvent::TextDelta(_)) => {
                deltas += 1;
                if cancel.is_cancelled() {
                    after_cancel += 1;
                } else if deltas == 3 {
                    cancel.cancel();
                }
            }
            Ok(_) => {}
            Err(e) => {
                ended = Some(e.class);
                break;
            }
        }
    }
    assert_eq!(ended, Some(ErrorClass::UserAborted));
    // Deltas already in the channel may still arrive, but generation stopped: far
    // fewer than the 400 tokens asked for.
    assert!(after_cancel <= 5, "{after_cancel} deltas after cancel");
}

/// A cancel reaches the reading of a prompt between its batches: an engine whose
/// interrupt has fired reads no further batch, and keeps what it had (nothing here),
/// so its cache stays a true prefix.
#[test]
fn a_cancelled_prompt_is_not_read_on() {
    let Some(path) = model_path() else {
        common::missing("a_cancelled_prompt_is_not_read_on", "SmolLM2 weights");
        return;
    };
    let opts = agentls_local::EngineOptions {
        batch: 16,
        ..Default::default()
    };
    let mut engine = agentls_local::Engine::load_with(&path, &opts).unwrap();
    let prompt = engine
        .tokenizer
        .encode(&"fn main() { println!(\"one more line\"); }\n".repeat(8));
    assert!(prompt.len() > 32, "several batches: {}", prompt.len());
    let cancel = CancellationToken::new();
    engine.set_interrupt(Some(cancel.clone()));
    engine.prefill(&prompt).unwrap();
    assert_eq!(engine.cached_len(), prompt.len());
    engine.reset();
    cancel.cancel();
    assert!(matches!(
        engine.prefill(&prompt),
        Err(agentls_local::EngineError::Interrupted)
    ));
    assert_eq!(engine.cached_len(), 0);
    engine.set_interrupt(None);
    engine.prefill(&prompt).unwrap();
    assert_eq!(engine.cached_len(), prompt.len());
}

/// A quantised KV cache is really used: keys alone shrink the saved state, keys and
/// values (with flash attention) shrink it further, and the model still reads the
/// prompt and answers.
#[test]
fn a_quantised_kv_cache_holds_the_same_prompt_in_less_memory() {
    use agentls_model::local::KvCache;
    let Some(path) = model_path() else {
        common::missing(
            "a_quantised_kv_cache_holds_the_same_prompt_in_less_memory",
            "SmolLM2 weights",
        );
        return;
    };
    let mut sizes = Vec::new();
    for (flash_attention, kv_cache) in [
        (false, KvCache::F16),
        (false, KvCache::Q8_0),
        (true, KvCache::Q8_0),
        (true, KvCache::Q4_0),
    ] {
        let opts = agentls_local::EngineOptions {
            flash_attention,
            kv_cache,
            context: 1024,
            ..Default::default()
        };
        let mut engine = agentls_local::Engine::load_with(&path, &opts)
            .unwrap_or_else(|e| panic!("{kv_cache} (flash attention {flash_attention}): {e}"));
        let prompt = engine
            .tokenizer
            .encode(&"fn main() { println!(\"one more line\"); }\n".repeat(40));
        let (logits, _) = engine.prefill(&prompt).unwrap();
        assert!(logits.iter().all(|l| l.is_finite()), "{kv_cache}");
        let mut sampler = agentls_local::Sampler::new(0.0, 1.0, 0);
        let first = sampler.sample(&logits).unwrap();
        engine.step(first).unwrap();
        assert_eq!(engine.cached_len(), prompt.len() + 1);
        sizes.push((kv_cache, flash_attention, engine.state_bytes()));
    }
    let bytes: Vec<usize> = sizes.iter().map(|s| s.2).collect();
    assert!(
        bytes.windows(2).all(|w| w[1] < w[0]),
        "each setting holds the prompt in less: {sizes:?}"
    );
    // Keys at 8 bits are about half their 16; values at 8 bits halve the other half.
    assert!(bytes[1] * 10 < bytes[0] * 9, "{sizes:?}");
    assert!(bytes[2] * 10 < bytes[0] * 7, "{sizes:?}");
}

#[test]
fn our_tokenizer_agrees_with_llama_cpp() {
    let Some(path) = model_path() else {
        common::missing("our_tokenizer_agrees_with_llama_cpp", "SmolLM2 weights");
        return;
    };
    let engine = agentls_local::Engine::load(&path).unwrap();
    for text in [
        "What is the capital of France?",
        "fn main() {\n    println!(\"héllo, wörld {}\", 12345);\n}\n",
        "  leading spaces,\ttabs\r\nand CRLF\n\n\nblank lines",
        "<|im_start|>user is plain text here",
        "emoji 🦀 and CJK 漢字 and numbers 3.14159e-10",
    ] {
        assert_eq!(
            engine.tokenizer.encode(text),
            engine.reference_encode(text),
            "{text:?}"
        );
    }
}

#[tokio::test]
async fn speculative_decoding_keeps_a_copied_answer_identical() {
    let Some(plain) = provider("speculative_decoding_keeps_a_copied_answer_identical") else {
        return;
    };
    let plain = plain.with_speculation(None);
    let spec = provider("speculative_decoding_keeps_a_copied_answer_identical")
        .unwrap()
        .with_speculation(Some(agentls_local::speculate::Lookup::default()));
    let list: String = (1..=30)
        .map(|i| format!("item_{i} = {}\n", i * 7))
        .collect();
    // Free text too: with llama.cpp's llamafile and repack kernels built out
    // (.cargo/config.toml), a verifying batch sums as one-token decoding does, so
    // even a near tie cannot part the two (see the `speculate` module doc).
    for user in [
        format!("Repeat this list exactly:\n{list}"),
        "Write a short story about a lighthouse keeper and a storm.".to_owned(),
    ] {
        let req = request(&user, 120);
        let a = collect(plain.stream(&req, CancellationToken::new()))
            .await
            .unwrap();
        let b = collect(spec.stream(&req, CancellationToken::new()))
            .await
            .unwrap();
        assert_eq!(a.text, b.text, "{user}");
        assert_eq!(a.usage.output, b.usage.output);
        assert_eq!(a.stop, b.stop);
    }
}

#[tokio::test]
async fn a_changed_turn_keeps_the_common_prefix_and_matches_a_cold_answer() {
    let Some(warm) = provider("a_changed_turn_keeps_the_common_prefix") else {
        return;
    };
    let system = "You are a helpful assistant. Answer in one short sentence.".repeat(4);
    let mut first = ChatRequest::new(Some(system.clone()), "Name a fruit.");
    first.max_tokens = Some(10);
    let a = collect(warm.stream(&first, CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(a.usage.cached_input, 0);
    // Same system prompt, another question: the cache is cut back to the shared part.
    let mut second = ChatRequest::new(Some(system), "Name a vegetable.");
    second.max_tokens = Some(10);
    let b = collect(warm.stream(&second, CancellationToken::new()))
        .await
        .unwrap();
    assert!(
        b.usage.cached_input > 20 && b.usage.cached_input < b.usage.input,
        "cached {} of {}",
        b.usage.cached_input,
        b.usage.input
    );
    let cold = provider("a_changed_turn_keeps_the_common_prefix").unwrap();
    let c = collect(cold.stream(&second, CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(c.usage.cached_input, 0);
    assert_eq!(b.text, c.text);
}

#[tokio::test]
async fn a_call_cut_short_by_the_budget_still_ends_valid() {
    let Some(p) = provider("a_call_cut_short_by_the_budget_still_ends_valid") else {
        return;
    };
    let schema = serde_json::json!({"type": "object", "properties": {
        "path": {"type": "string"},
        "old_str": {"type": "string"},
        "new_str": {"type": "string"}}, "required": ["path", "old_str", "new_str"]});
    let grammar = agentls_local::CallGrammar::new(vec![("str_replace".to_owned(), schema.clone())]);
    // 2 and 8 tokens cannot hold even the shortest call (~30 tokens): the call is
    // still finished, past the budget. From 40 on, the model's own call (a long
    // comment) does not fit: it is closed in time, within the budget. Without the
    // closing each of these would stop on the budget with a broken call.
    for budget in [2, 8, 40, 48, 64] {
        let mut req = ChatRequest::new(
            Some("You are a coding agent. Use the tools.".into()),
            "In src/main.rs replace the whole body of `fn main` with a long comment explaining in detail what the program does, step by step.",
        );
        req.tools = vec![agentls_model::ToolDef {
            name: "str_replace".into(),
            description: "Replace old_str with new_str in a file.".into(),
            parameters: schema.clone(),
        }];
        req.max_tokens = Some(budget);
        let r = collect(p.stream(&req, CancellationToken::new()))
            .await
            .unwrap();
        assert_eq!(r.tool_calls.len(), 1, "budget {budget}: {r:?}");
        let call = &r.tool_calls[0];
        let args = call.parse_arguments().unwrap();
        let text = format!("{{\"name\": \"str_replace\", \"arguments\": {args}}}</tool_call>");
        assert_eq!(
            grammar.check(&text),
            agentls_local::Check::Complete,
            "budget {budget}: {text}"
        );
        assert_eq!(r.stop, StopReason::ToolUse, "budget {budget}");
        if budget >= 40 {
            assert!(
                r.usage.output <= u64::from(budget),
                "budget {budget}: {:?}",
                r.usage
            );
        }
    }
}

fn read_file_request(user: &str) -> ChatRequest {
    use agentls_model::{PathConstraint, PathKind};
    let mut req = ChatRequest::new(Some("You are a coding agent. Use the tools.".into()), user);
    req.tools = vec![agentls_model::ToolDef {
        name: "read_file".into(),
        description: "Read a file. Arguments: {\"path\": \"<path>\"}".into(),
        parameters: serde_json::json!({"type": "object", "properties": {
            "path": {"type": "string"}}, "required": ["path"]}),
    }];
    req.paths = Some(std::sync::Arc::new(PathConstraint::new(
        vec!["src/main.rs".into(), "README.md".into()],
        vec!["src".into()],
        vec![("read_file".into(), "path".into(), PathKind::File)],
    )));
    req.max_tokens = Some(48);
    req
}

#[tokio::test]
async fn a_path_argument_names_a_workspace_file_whatever_the_model_prefers() {
    let Some(p) = provider("a_path_argument_names_a_workspace_file_whatever_the_model_prefers")
    else {
        return;
    };
    // Asked outright for the placeholder and for a file that does not exist; the call
    // (opened for the model: a new message with tools) can only name a real file.
    for user in [
        "Call read_file with the path <path>.",
        "Call read_file with an empty path \"\".",
        "Read the file lib/missing.py.",
    ] {
        let r = collect(p.stream(&read_file_request(user), CancellationToken::new()))
            .await
            .unwrap();
        assert_eq!(r.tool_calls.len(), 1, "{user}: {r:?}");
        let args = r.tool_calls[0].parse_arguments().unwrap();
        let path = args["path"].as_str().unwrap_or_default();
        assert!(
            ["src/main.rs", "README.md"].contains(&path),
            "{user}: {path:?}"
        );
    }
}

fn str_replace_request(user: &str, held: bool) -> ChatRequest {
    use agentls_model::{EditArgs, PathConstraint, PathKind};
    let mut req = ChatRequest::new(Some("You are a coding agent. Use the tools.".into()), user);
    req.tools = vec![agentls_model::ToolDef {
        name: "str_replace".into(),
        description: "Replace old_string with new_string in the file at path.".into(),
        parameters: serde_json::json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"}},
            "required": ["path", "old_string", "new_string"]}),
    }];
    let paths = PathConstraint::new(
        vec!["calc.py".into()],
        Vec::new(),
        vec![("str_replace".into(), "path".into(), PathKind::NewFile)],
    );
    let args = EditArgs {
        path: "path",
        old: "old_string",
        new: "new_string",
    };
    req.paths = Some(std::sync::Arc::new(if held {
        paths.with_texts(
            vec![("str_replace".into(), args)],
            vec![("calc.py".into(), CALC.into())],
        )
    } else {
        paths
    }));
    req.max_tokens = Some(96);
    req
}

const CALC: &str = "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    return a - b\n";

/// Asked for an `old_string` that is not in the file, the model's call still copies one
/// from the file it has seen, and the edit changes something.
#[tokio::test]
async fn an_edit_copies_its_old_string_from_the_file_it_names() {
    let Some(p) = provider("an_edit_copies_its_old_string_from_the_file_it_names") else {
        return;
    };
    let user = "Call str_replace on calc.py with old_string \"return self.add(a, b)\" and new_string \"return a + b\".";
    let call = |held: bool| {
        let p = &p;
        async move {
            let r = collect(p.stream(&str_replace_request(user, held), CancellationToken::new()))
                .await
                .unwrap();
            assert_eq!(r.tool_calls.len(), 1, "{r:?}");
            r.tool_calls[0].parse_arguments().unwrap()
        }
    };
    // Unheld, the model writes what it was asked for, which is not in the file.
    let free = call(false).await;
    let free_old = free["old_string"].as_str().unwrap_or_default();
    assert!(!CALC.contains(free_old), "{free}");
    let args = call(true).await;
    let old = args["old_string"].as_str().unwrap_or_default();
    let new = args["new_string"].as_str().unwrap_or_default();
    assert_eq!(args["path"], "calc.py", "{args}");
    assert!(CALC.contains(old), "{args}");
    assert_ne!(old, new, "{args}");
}

#[tokio::test]
async fn an_answer_after_a_tool_result_never_opens_with_template_text() {
    use agentls_model::{Message, Part, Role, ToolCall, ToolResult};
    let Some(p) = provider("an_answer_after_a_tool_result_never_opens_with_template_text") else {
        return;
    };
    let mut req = read_file_request("Read src/main.rs and tell me what it prints.");
    req.messages.push(Message {
        role: Role::Assistant,
        parts: vec![Part::ToolCall(ToolCall {
            id: "call_0".into(),
            name: "read_file".into(),
            arguments: "{\"path\": \"src/main.rs\"}".into(),
        })],
    });
    req.messages.push(Message::tool_results(vec![ToolResult {
        call_id: "call_0".into(),
        content: "     1\tfn main() {\n     2\t    println!(\"hello\");\n     3\t}\n".into(),
        is_error: false,
    }]));
    let r = collect(p.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    assert!(
        !r.text.trim_start().starts_with('<'),
        "the answer opens with template text: {:?}",
        r.text
    );
}

#[tokio::test]
async fn a_fixed_head_read_once_is_loaded_from_disk_by_another_engine() {
    use agentls_local::PrefixStore;
    let test = "a_fixed_head_read_once_is_loaded_from_disk_by_another_engine";
    let (Some(a), Some(b), Some(cold), Some(d)) = (
        provider(test),
        provider(test),
        provider(test),
        provider(test),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = PrefixStore::new(dir.path().join("prefix"));
    let a = a.with_prefix_store(Some(store.clone()));
    let b = b.with_prefix_store(Some(store.clone()));
    let d = d.with_prefix_store(Some(store.clone()));
    let fixed = "You are a coding agent. Use the tools.\n";
    let in_workspace = |root: &str| {
        let mut req = read_file_request("Read src/main.rs and say what it prints.");
        req.system = Some(format!("{fixed}# Environment\nWorkspace root: {root}\n"));
        req.fixed_system = Some(fixed.len());
        req
    };
    let kv_files = || -> Vec<PathBuf> {
        std::fs::read_dir(dir.path().join("prefix"))
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };

    // The first engine reads everything and saves the head.
    let first = collect(a.stream(&in_workspace("/tmp/one"), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(first.usage.cached_input, 0, "{:?}", first.usage);
    assert_eq!(kv_files().len(), 1, "{:?}", kv_files());

    // Another engine, another workspace: the head comes from disk, and the answer is
    // the one an engine without the store gives.
    let req = in_workspace("/tmp/two");
    let second = collect(b.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    let reference = collect(cold.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    assert!(
        second.usage.cached_input > 100 && second.usage.cached_input < second.usage.input,
        "{:?}",
        second.usage
    );
    assert_eq!(reference.usage.cached_input, 0);
    assert_eq!(second.text, reference.text);
    assert_eq!(second.tool_calls, reference.tool_calls);

    // A damaged file is not trusted: it is read from scratch and saved again.
    let file = &kv_files()[0];
    std::fs::write(file, b"not a llama.cpp state").unwrap();
    let third = collect(d.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(third.usage.cached_input, 0, "{:?}", third.usage);
    assert_eq!(third.tool_calls, reference.tool_calls);
    assert!(std::fs::metadata(file).unwrap().len() > 1000, "saved again");
}

#[tokio::test]
async fn a_forbidden_tool_cannot_be_called() {
    let Some(p) = provider("a_forbidden_tool_cannot_be_called") else {
        return;
    };
    let mut req = read_file_request("Call read_file on src/main.rs.");
    req.tools.push(agentls_model::ToolDef {
        name: "list_dir".into(),
        description: "List a directory.".into(),
        parameters: serde_json::json!({"type": "object", "properties": {
            "path": {"type": "string"}}}),
    });
    let asked = collect(p.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(asked.tool_calls.len(), 1, "{asked:?}");
    assert_eq!(
        asked.tool_calls[0].name, "read_file",
        "the model's own choice"
    );
    req.forbidden_tools = vec!["read_file".into()];
    let kept_off = collect(p.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(kept_off.tool_calls.len(), 1, "{kept_off:?}");
    assert_eq!(kept_off.tool_calls[0].name, "list_dir");
}

/// Asked to say one word 500 times, the model would fill its whole budget with
/// "hello, hello, …"; the runaway guard stops it once the repetition is plain (193
/// tokens here), and says why.
#[tokio::test]
async fn runaway_repetition_is_stopped_before_the_budget() {
    let Some(p) = provider("runaway_repetition_is_stopped_before_the_budget") else {
        return;
    };
    let mut req = ChatRequest::new(None, "List the word 'hello' 500 times, one per line.");
    req.max_tokens = Some(600);
    let r = collect(p.stream(&req, CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(
        r.stop,
        StopReason::Other(agentls_model::RUNAWAY_STOP.into()),
        "{} tokens: {:?}",
        r.usage.output,
        r.text
    );
    assert!(r.usage.output < 600, "{}", r.usage.output);
}
