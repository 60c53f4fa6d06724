//! Reading tool calls that a model wrote as text, as small local models do when
//! their server has no tool-call support: `<tool_call>` tags (Qwen, Hermes),
//! `<function=NAME>{…}</function>` (Llama 3.1), fenced JSON, or bare JSON objects and
//! arrays, also behind `<|python_tag|>` (Llama) or `[TOOL_CALLS]` (Mistral). Only
//! calls of offered tools are accepted.

use serde_json::Value;

use crate::types::ToolCall;

/// What [`parse_tool_calls`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TextCalls {
    /// Accepted calls, in text order, with ids `text_call_N`.
    pub calls: Vec<ToolCall>,
    /// The text with every recognised call removed.
    pub text: String,
    /// Call-shaped JSON that was refused, with the reason (for a message to the model).
    pub rejected: Vec<Rejected>,
}

/// A call that could not be accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// The name, if one was readable.
    pub name: Option<String>,
    /// Why it was refused.
    pub reason: String,
}

/// Finds tool calls in `text`; `offered` are the tool names the model was given.
pub fn parse_tool_calls(text: &str, offered: &[&str]) -> TextCalls {
    let mut scan = Scan::default();
    scan.tags(text);
    scan.function_tags(text);
    scan.fenced(text);
    scan.bare(text);
    scan.markers(text);
    scan.into_calls(text, offered)
}

/// What the passes over the text found so far: each pass skips what an earlier one took.
#[derive(Default)]
struct Scan {
    /// Byte ranges of the text that held calls (removed from the text left over).
    spans: Vec<(usize, usize)>,
    /// Call-shaped JSON, with where it started (calls keep their text order).
    found: Vec<(usize, Value)>,
    rejected: Vec<Rejected>,
}

impl Scan {
    /// 1. Tags. An unclosed tag at the end counts: generation often stops at the close.
    fn tags(&mut self, text: &str) {
        for (open, close) in [
            ("<tool_call>", "</tool_call>"),
            ("<function_call>", "</function_call>"),
        ] {
            let mut from = 0;
            while let Some(start) = text[from..].find(open).map(|i| i + from) {
                let body_start = start + open.len();
                let (body_end, end) = match text[body_start..].find(close) {
                    Some(i) => (body_start + i, body_start + i + close.len()),
                    None => (text.len(), text.len()),
                };
                self.spans.push((start, end));
                match parse_json(&text[body_start..body_end]) {
                    Some(v) => self.found.push((start, v)),
                    None => self.rejected.push(Rejected {
                        name: None,
                        reason: format!("{open} does not hold valid JSON"),
                    }),
                }
                from = end;
            }
        }
    }

    /// 1b. `<function=NAME>{args}</function>`.
    fn function_tags(&mut self, text: &str) {
        let mut from = 0;
        while let Some(start) = text[from..].find("<function=").map(|i| i + from) {
            let name_start = start + "<function=".len();
            let Some(name_end) = text[name_start..].find('>').map(|i| name_start + i) else {
                break;
            };
            let (body_end, end) = match text[name_end..].find("</function>") {
                Some(i) => (name_end + i, name_end + i + "</function>".len()),
                None => (text.len(), text.len()),
            };
            from = end;
            if overlaps(&self.spans, start, end) {
                continue;
            }
            self.spans.push((start, end));
            let name = text[name_start..name_end].trim();
            match parse_json(&text[name_end + 1..body_end]) {
                Some(args) => self
                    .found
                    .push((start, serde_json::json!({"name": name, "arguments": args}))),
                None => self.rejected.push(Rejected {
                    name: Some(name.to_owned()),
                    reason: "the arguments are not valid JSON".into(),
                }),
            }
        }
    }

    /// 2. Fenced blocks holding a call (or an array of calls).
    fn fenced(&mut self, text: &str) {
        let mut from = 0;
        while let Some(start) = text[from..].find("```").map(|i| i + from) {
            let info_end = text[start + 3..]
                .find('\n')
                .map_or(text.len(), |i| start + 3 + i);
            let Some(close) = text[info_end..].find("```").map(|i| info_end + i) else {
                break;
            };
            let end = close + 3;
            from = end;
            if overlaps(&self.spans, start, end) {
                continue;
            }
            let info = text[start + 3..info_end].trim();
            if !(info.is_empty() || matches!(info, "json" | "tool_call" | "tool" | "function")) {
                continue;
            }
            if let Some(v) = parse_json(&text[info_end..close]) {
                let items = match v {
                    Value::Array(a) => a,
                    v => vec![v],
                };
                if items.iter().all(|i| call_name(i).is_some()) && !items.is_empty() {
                    self.spans.push((start, end));
                    self.found.extend(items.into_iter().map(|i| (start, i)));
                }
            }
        }
    }

    /// 3. Bare objects (or arrays of them) anywhere else that look like calls.
    fn bare(&mut self, text: &str) {
        let mut i = 0;
        while let Some(start) = text[i..].find(['{', '[']).map(|k| k + i) {
            i = start + 1;
            // JSON of a call opens with a key (`{"`) or an object (`[{`): skipping other
            // brackets keeps code-heavy answers from costing a scan per brace.
            let opens_json =
                text[start + 1..]
                    .trim_start()
                    .starts_with(if text[start..].starts_with('{') {
                        '"'
                    } else {
                        '{'
                    });
            if !opens_json || overlaps(&self.spans, start, start + 1) {
                continue;
            }
            let Some(end) = balanced_end(&text[start..]).map(|len| start + len) else {
                continue;
            };
            let items = match parse_json(&text[start..end]) {
                Some(Value::Array(items)) => items,
                Some(v) => vec![v],
                None => continue,
            };
            if !items.is_empty() && items.iter().all(|v| call_name(v).is_some()) {
                self.spans.push((start, end));
                self.found.extend(items.into_iter().map(|v| (start, v)));
                i = end;
            }
        }
    }

    /// Markers some models put before their calls carry no meaning once read.
    fn markers(&mut self, text: &str) {
        for marker in ["<|python_tag|>", "[TOOL_CALLS]"] {
            let mut from = 0;
            while let Some(start) = text[from..].find(marker).map(|i| i + from) {
                from = start + marker.len();
                if !self.found.is_empty() && !overlaps(&self.spans, start, from) {
                    self.spans.push((start, from));
                }
            }
        }
    }

    /// The offered calls in text order, and the text without every span that held one.
    fn into_calls(mut self, text: &str, offered: &[&str]) -> TextCalls {
        self.found.sort_by_key(|(pos, _)| *pos);
        let mut calls = Vec::new();
        for (_, v) in self.found {
            match to_call(&v, offered) {
                Ok((name, arguments)) => {
                    calls.push(ToolCall {
                        id: format!("text_call_{}", calls.len() + 1),
                        name,
                        arguments,
                    });
                }
                Err(r) => self.rejected.push(r),
            }
        }
        self.spans.sort();
        let mut rest = String::new();
        let mut at = 0;
        for (s, e) in self.spans {
            if s >= at {
                rest.push_str(&text[at..s]);
                at = e;
            }
        }
        rest.push_str(&text[at..]);
        TextCalls {
            calls,
            text: rest.trim().to_owned(),
            rejected: self.rejected,
        }
    }
}

fn overlaps(spans: &[(usize, usize)], s: usize, e: usize) -> bool {
    spans.iter().any(|&(a, b)| s < b && a < e)
}

/// Length of the balanced `{…}` or `[…]` at the start of `s`, strings respected.
fn balanced_end(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Strict JSON, else JSON with trailing commas removed (a common small-model slip).
fn parse_json(s: &str) -> Option<Value> {
    let s = s.trim();
    if let Ok(v) = serde_json::from_str(s) {
        return Some(v);
    }
    let mut fixed = String::with_capacity(s.len());
    let mut in_str = false;
    let mut escaped = false;
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
        } else if c == '"' {
            in_str = true;
        } else if c == ','
            && chars[i + 1..]
                .iter()
                .find(|c| !c.is_whitespace())
                .is_some_and(|n| matches!(n, '}' | ']'))
        {
            continue;
        }
        fixed.push(c);
    }
    serde_json::from_str(&fixed).ok()
}

/// The name of a call-shaped object: it must also carry arguments (or be `{"name"}`
/// alone inside a tag or fence, which [`to_call`] accepts with `{}`).
fn call_name(v: &Value) -> Option<&str> {
    let o = v.as_object()?;
    if let Some(f) = o.get("function").and_then(Value::as_object) {
        return f.get("name").and_then(Value::as_str);
    }
    let name = ["name", "tool", "tool_name", "function"]
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_str))?;
    ["arguments", "parameters", "args", "input", "tool_input"]
        .iter()
        .any(|k| o.contains_key(*k))
        .then_some(name)
}

fn to_call(v: &Value, offered: &[&str]) -> Result<(String, String), Rejected> {
    let o = v.as_object().ok_or_else(|| Rejected {
        name: None,
        reason: "a tool call must be a JSON object".into(),
    })?;
    let inner = o.get("function").and_then(Value::as_object).unwrap_or(o);
    let raw_name = ["name", "tool", "tool_name", "function"]
        .iter()
        .find_map(|k| inner.get(*k).and_then(Value::as_str))
        .ok_or_else(|| Rejected {
            name: None,
            reason: "the call has no tool name".into(),
        })?;
    let name = raw_name.strip_prefix("functions.").unwrap_or(raw_name);
    if !offered.contains(&name) {
        return Err(Rejected {
            name: Some(name.to_owned()),
            reason: format!(
                "unknown tool {name:?}; the tools are: {}",
                offered.join(", ")
            ),
        });
    }
    let args = ["arguments", "parameters", "args", "input", "tool_input"]
        .iter()
        .find_map(|k| inner.get(*k));
    let arguments = match args {
        None | Some(Value::Null) => "{}".to_owned(),
        // Some models double-encode the arguments as a string.
        Some(Value::String(s)) => match parse_json(s) {
            Some(v @ Value::Object(_)) => v.to_string(),
            _ => {
                return Err(Rejected {
                    name: Some(name.to_owned()),
                    reason: "the arguments are not a JSON object".into(),
                });
            }
        },
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(_) => {
            return Err(Rejected {
                name: Some(name.to_owned()),
                reason: "the arguments are not a JSON object".into(),
            });
        }
    };
    Ok((name.to_owned(), arguments))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[&str] = &["read_file", "grep", "str_replace"];

    fn names(r: &TextCalls) -> Vec<&str> {
        r.calls.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn qwen_style_tags_with_text_around() {
        let out = "I'll look at the file first.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/lib.rs\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"fn main\"}}\n</tool_call>";
        let r = parse_tool_calls(out, TOOLS);
        assert_eq!(names(&r), ["read_file", "grep"]);
        assert_eq!(r.calls[0].arguments, r#"{"path":"src/lib.rs"}"#);
        assert_eq!(r.calls[1].id, "text_call_2");
        assert_eq!(r.text, "I'll look at the file first.");
        assert!(r.rejected.is_empty());
    }

    #[test]
    fn unclosed_tag_at_end_and_trailing_comma() {
        let out = "<tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"todo\",},}";
        let r = parse_tool_calls(out, TOOLS);
        assert_eq!(names(&r), ["grep"]);
        assert_eq!(r.calls[0].arguments, r#"{"pattern":"todo"}"#);
        assert_eq!(r.text, "");
    }

    #[test]
    fn fenced_json_and_openai_shape_and_string_arguments() {
        let out = "Let me edit it:\n```json\n{\"type\": \"function\", \"function\": {\"name\": \"str_replace\", \"arguments\": \"{\\\"path\\\": \\\"a.rs\\\", \\\"old\\\": \\\"x\\\", \\\"new\\\": \\\"y\\\"}\"}}\n```\nDone.";
        let r = parse_tool_calls(out, TOOLS);
        assert_eq!(names(&r), ["str_replace"]);
        let args: Value = serde_json::from_str(&r.calls[0].arguments).unwrap();
        assert_eq!(args["new"], "y");
        assert_eq!(r.text, "Let me edit it:\n\nDone.");
    }

    #[test]
    fn fenced_array_of_calls() {
        let out = "```\n[{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}, {\"tool\": \"grep\", \"args\": {\"pattern\": \"b\"}}]\n```";
        let r = parse_tool_calls(out, TOOLS);
        assert_eq!(names(&r), ["read_file", "grep"]);
    }

    #[test]
    fn bare_object_in_prose_but_not_plain_data() {
        let out = "The config is {\"port\": 8080}. Calling {\"name\": \"functions.read_file\", \"arguments\": {\"path\": \"Cargo.toml\"}} now.";
        let r = parse_tool_calls(out, TOOLS);
        assert_eq!(names(&r), ["read_file"]);
        assert_eq!(r.text, "The config is {\"port\": 8080}. Calling  now.");
    }

    #[test]
    fn rust_code_fence_is_left_alone() {
        let out = "```rust\nfn f() { let x = {\"name\": 1}; }\n```";
        let r = parse_tool_calls(out, TOOLS);
        assert!(r.calls.is_empty());
        assert_eq!(r.text, out);
    }

    #[test]
    fn unknown_tool_and_bad_json_are_rejected_with_reasons() {
        let out = "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call><tool_call>{name: read_file}</tool_call>";
        let r = parse_tool_calls(out, TOOLS);
        assert!(r.calls.is_empty());
        assert_eq!(r.rejected.len(), 2);
        assert!(r.rejected.iter().any(|x| x.name.as_deref() == Some("rm_rf") && x.reason.contains("read_file, grep")));
        assert!(r.rejected.iter().any(|x| x.reason.contains("valid JSON")));
        assert_eq!(r.text, "");
    }

    #[test]
    fn llama_and_mistral_markers() {
        let llama = "<|python_tag|>{\"name\": \"grep\", \"parameters\": {\"pattern\": \"TODO\"}}";
        let r = parse_tool_calls(llama, TOOLS);
        assert_eq!(names(&r), ["grep"]);
        assert_eq!(r.text, "");

        let mistral = "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"grep\", \"arguments\": {\"pattern\": \"b\"}}]";
        let r = parse_tool_calls(mistral, TOOLS);
        assert_eq!(names(&r), ["read_file", "grep"]);
        assert_eq!(r.text, "");

        let func = "Checking.\n<function=read_file>{\"path\": \"src/main.rs\"}</function>";
        let r = parse_tool_calls(func, TOOLS);
        assert_eq!(names(&r), ["read_file"]);
        assert_eq!(r.calls[0].arguments, r#"{"path":"src/main.rs"}"#);
        assert_eq!(r.text, "Checking.");
    }

    #[test]
    fn plain_arrays_and_markers_without_calls_stay_text() {
        let out = "The list is [1, 2, 3] and [TOOL_CALLS] is a token.";
        let r = parse_tool_calls(out, TOOLS);
        assert!(r.calls.is_empty());
        assert_eq!(r.text, out);
    }

    #[test]
    fn code_with_many_brackets_holds_no_calls() {
        let code = "fn f() { if a { b(); } else { c(&[1, 2]); } }\n".repeat(50);
        let r = parse_tool_calls(&code, TOOLS);
        assert!(r.calls.is_empty() && r.rejected.is_empty());
        assert_eq!(r.text, code.trim());
    }

    #[test]
    fn braces_inside_strings_do_not_confuse_the_scanner() {
        let out = "{\"name\": \"str_replace\", \"arguments\": {\"path\": \"a.rs\", \"old\": \"}{\", \"new\": \"\\\"}\"}}";
        let r = parse_tool_calls(out, TOOLS);
        assert_eq!(names(&r), ["str_replace"]);
        let args: Value = serde_json::from_str(&r.calls[0].arguments).unwrap();
        assert_eq!(args["old"], "}{");
    }
}
