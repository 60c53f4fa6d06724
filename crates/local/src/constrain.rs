//! Constrained tool calls: once the model opens `<tool_call>`, only text that keeps
//! the call valid may follow: `{"name": <an offered tool>, "arguments": <a value
//! valid against that tool's JSON Schema>}` then `</tool_call>`.
//!
//! The check is a prefix parser: [`CallGrammar::check`] says whether a text can
//! still become a valid call ([`Check::Partial`]), is one ([`Check::Complete`]), or
//! cannot ([`Check::Invalid`]). The sampler asks it about candidate tokens in logit
//! order, so a greedy step usually costs one or two parses of a short text.
//!
//! Schema support: `type` (object, string, integer, number, boolean, null, array,
//! or a list of them), `properties`, `required`, `additionalProperties: false` (the
//! default here: only named properties), `items`, string `enum`. Anything else
//! (`anyOf`, `$ref` …) accepts any JSON value.

use std::sync::Arc;

use agentls_model::{PathCheck, PathConstraint, PathKind};
use serde_json::Value;

use crate::template::TOOL_CALL_CLOSE;

/// What a text can still become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Nothing can make it a valid call.
    Invalid,
    /// A valid call's beginning.
    Partial,
    /// A whole valid call.
    Complete,
}

/// The calls the model may make: tool names and their argument schemas.
#[derive(Clone, Debug)]
pub struct CallGrammar {
    /// Each tool's schema, its path arguments marked with [`PATH_KEY`].
    tools: Vec<(String, Value)>,
    paths: Option<Arc<PathConstraint>>,
}

/// The keyword marking a string property as a path of a [`PathKind`] in the grammar's
/// own copy of a schema (never in what the model is shown).
const PATH_KEY: &str = "x-agentls-path";

/// What the parse functions share: the workspace's paths, when calls are held to them.
struct Cx<'a> {
    paths: Option<&'a PathConstraint>,
}

/// Result of a prefix parse: the position after the parsed item, or why not.
enum P {
    Ok(usize),
    /// The input ended inside the item: still a valid prefix, which the text held
    /// here completes (the shortest such text, for this item only).
    Eof(String),
    Bad,
}

/// Appends the text that completes what follows an item cut short.
fn then(p: P, rest: impl FnOnce() -> String) -> P {
    match p {
        P::Eof(mut c) => {
            c.push_str(&rest());
            P::Eof(c)
        }
        other => other,
    }
}

macro_rules! step {
    ($e:expr) => {
        match $e {
            P::Ok(i) => i,
            other => return other,
        }
    };
    ($e:expr, $rest:expr) => {
        match $e {
            P::Ok(i) => i,
            other => return then(other, $rest),
        }
    };
}

impl CallGrammar {
    /// A grammar over `(name, parameters schema)` pairs.
    pub fn new(tools: Vec<(String, Value)>) -> Self {
        Self { tools, paths: None }
    }

    /// The same grammar with the path arguments `paths` names held to its paths: an
    /// existing file or directory, or a plain new name where the tool creates files.
    pub fn with_paths(mut self, paths: Option<Arc<PathConstraint>>) -> Self {
        if let Some(p) = &paths {
            for (tool, schema) in &mut self.tools {
                let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut)
                else {
                    continue;
                };
                for (arg, sub) in props.iter_mut() {
                    // With no file at all, a file argument cannot be held to one.
                    let kind = p
                        .kind(tool, arg)
                        .filter(|k| *k != PathKind::File || !p.files().is_empty());
                    if let (Some(kind), Some(sub)) = (kind, sub.as_object_mut()) {
                        sub.insert(PATH_KEY.to_owned(), Value::String(kind_name(kind).into()));
                    }
                }
            }
        }
        self.paths = paths;
        self
    }

    /// Checks the text written after `<tool_call>`.
    pub fn check(&self, text: &str) -> Check {
        match self.parse(text) {
            P::Bad => Check::Invalid,
            P::Eof(_) => Check::Partial,
            P::Ok(_) => Check::Complete,
        }
    }

    /// The shortest text that makes `text` (written after `<tool_call>`) a whole
    /// valid call, closing tag included; `None` when it cannot become one, empty
    /// when it already is. Lets a call cut short by the token budget still end
    /// valid.
    pub fn completion(&self, text: &str) -> Option<String> {
        match self.parse(text) {
            P::Bad => None,
            P::Eof(c) => Some(c),
            P::Ok(_) => Some(String::new()),
        }
    }

    fn parse(&self, text: &str) -> P {
        let s: Vec<char> = text.chars().collect();
        let i = step!(self.call(&s), || TOOL_CALL_CLOSE.to_owned());
        // After the object: whitespace, then the closing tag, then nothing.
        let i = ws(&s, i);
        let rest: String = s[i..].iter().collect();
        if rest == TOOL_CALL_CLOSE {
            P::Ok(s.len())
        } else if let Some(left) = TOOL_CALL_CLOSE.strip_prefix(rest.as_str()) {
            P::Eof(left.to_owned())
        } else {
            P::Bad
        }
    }

    fn call(&self, s: &[char]) -> P {
        let cx = &Cx {
            paths: self.paths.as_deref(),
        };
        let names: Vec<String> = self.tools.iter().map(|(n, _)| json_str(n)).collect();
        let first = names.first().cloned().unwrap_or_default();
        let args = |which: usize| min_value(cx, &self.tools[which].1);
        let after_name = |which: usize| format!(", \"arguments\": {}}}", args(which));
        let mut i = ws(s, 0);
        i = step!(lit(s, i, "{"), || format!(
            "\"name\": {first}{}",
            after_name(0)
        ));
        i = ws(s, i);
        i = step!(lit(s, i, "\"name\""), || format!(
            ": {first}{}",
            after_name(0)
        ));
        i = ws(s, i);
        i = step!(lit(s, i, ":"), || format!(" {first}{}", after_name(0)));
        i = ws(s, i);
        let (mut i, which) = match one_of(s, i, &names) {
            Ok(x) => x,
            Err(P::Eof(c)) => {
                // The name is cut short: complete it (as the first name that fits,
                // whose rest `one_of` returned), then its arguments.
                let which = names
                    .iter()
                    .position(|n| matches!(lit(s, i, n), P::Eof(_)))
                    .unwrap_or_default();
                return P::Eof(format!("{c}{}", after_name(which)));
            }
            Err(p) => return p,
        };
        i = ws(s, i);
        i = step!(lit(s, i, ","), || after_name(which)
            .trim_start_matches(',')
            .to_owned());
        i = ws(s, i);
        i = step!(lit(s, i, "\"arguments\""), || format!(
            ": {}}}",
            args(which)
        ));
        i = ws(s, i);
        i = step!(lit(s, i, ":"), || format!(" {}}}", args(which)));
        i = ws(s, i);
        i = step!(value(cx, s, i, &self.tools[which].1), || "}".to_owned());
        i = ws(s, i);
        lit(s, i, "}")
    }
}

fn json_str(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// Whitespace allowed in one run. JSON allows any amount, and a small model held back
/// from what it wanted to write (an empty path) wrote 2,000 tokens of it; past this the
/// next character must be JSON.
const MAX_WS: usize = 16;

/// Digits allowed in a number: more overflow every integer a tool takes, and a model
/// could write them forever.
const MAX_DIGITS: usize = 18;

fn ws(s: &[char], mut i: usize) -> usize {
    let start = i;
    while i < s.len() && i - start < MAX_WS && matches!(s[i], ' ' | '\n' | '\r' | '\t') {
        i += 1;
    }
    i
}

fn lit(s: &[char], i: usize, word: &str) -> P {
    let mut j = i;
    for (k, c) in word.chars().enumerate() {
        match s.get(j) {
            None => return P::Eof(word.chars().skip(k).collect()),
            Some(&d) if d == c => j += 1,
            Some(_) => return P::Bad,
        }
    }
    P::Ok(j)
}

/// Matches one of several literals; the index of the one matched. Cut short, the
/// completion is the rest of the first literal that fits.
fn one_of(s: &[char], i: usize, options: &[String]) -> Result<(usize, usize), P> {
    let mut completion = None;
    for (k, o) in options.iter().enumerate() {
        match lit(s, i, o) {
            P::Ok(j) => return Ok((j, k)),
            P::Eof(c) => {
                completion.get_or_insert(c);
            }
            P::Bad => {}
        }
    }
    Err(completion.map_or(P::Bad, P::Eof))
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn required_of(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The shortest JSON text valid against `schema`.
fn min_value(cx: &Cx, schema: &Value) -> String {
    if let Some((kind, paths)) = path_kind(cx, schema) {
        return json_str(&paths.completion(kind, "").unwrap_or_default());
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|o| o.first())
    {
        return first.to_string();
    }
    let types = types_of(schema);
    let pick = [
        "null", "integer", "number", "boolean", "string", "array", "object",
    ]
    .into_iter()
    .find(|t| types.is_empty() || types.contains(t));
    match pick {
        Some("null") => "null".into(),
        Some("integer" | "number") => "0".into(),
        Some("boolean") => "false".into(),
        Some("string") => "\"\"".into(),
        Some("array") => "[]".into(),
        Some("object") => format!("{{{}}}", missing_members(cx, schema, &[], true)),
        _ => "null".into(),
    }
}

/// `"key": value` for every required key not yet `seen`, comma separated; with a
/// leading comma unless `first`.
fn missing_members(cx: &Cx, schema: &Value, seen: &[String], first: bool) -> String {
    let any = Value::Object(Default::default());
    let props = schema.get("properties").and_then(Value::as_object);
    let mut out = String::new();
    let mut first = first;
    for key in required_of(schema) {
        if seen.iter().any(|k| k == key) {
            continue;
        }
        if !first {
            out.push_str(", ");
        }
        first = false;
        let sub = props.and_then(|p| p.get(key)).unwrap_or(&any);
        out.push_str(&format!("{}: {}", json_str(key), min_value(cx, sub)));
    }
    out
}

fn value(cx: &Cx, s: &[char], i: usize, schema: &Value) -> P {
    if i >= s.len() {
        return P::Eof(min_value(cx, schema));
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        let lits: Vec<String> = options.iter().map(Value::to_string).collect();
        return match one_of(s, i, &lits) {
            Ok((j, _)) => P::Ok(j),
            Err(p) => p,
        };
    }
    if let Some((kind, paths)) = path_kind(cx, schema) {
        return path(s, i, kind, paths);
    }
    let types = types_of(schema);
    let allows = |t: &str| types.is_empty() || types.contains(&t);
    match s[i] {
        '{' if allows("object") => object(cx, s, i, schema, types.is_empty()),
        '[' if allows("array") => array(cx, s, i, schema),
        '"' if allows("string") => string(s, i),
        't' if allows("boolean") => lit(s, i, "true"),
        'f' if allows("boolean") => lit(s, i, "false"),
        'n' if allows("null") => lit(s, i, "null"),
        '-' | '0'..='9' if allows("number") => number(s, i, false),
        '-' | '0'..='9' if allows("integer") => number(s, i, true),
        _ => P::Bad,
    }
}

fn object(cx: &Cx, s: &[char], i: usize, schema: &Value, free: bool) -> P {
    let props = schema.get("properties").and_then(Value::as_object);
    let required = required_of(schema);
    // Without `properties`, or with `additionalProperties` allowed, keys are free.
    let open = free
        || props.is_none()
        || schema
            .get("additionalProperties")
            .is_some_and(|a| a != &Value::Bool(false));
    let any = Value::Object(Default::default());
    let mut seen: Vec<String> = Vec::new();
    let mut i = step!(lit(s, i, "{"), || format!(
        "{}}}",
        missing_members(cx, schema, &[], true)
    ));
    loop {
        i = ws(s, i);
        // What closes the object once the member being read is done.
        let close = |seen: &[String]| format!("{}}}", missing_members(cx, schema, seen, false));
        let Some(&c) = s.get(i) else {
            return P::Eof(format!(
                "{}}}",
                missing_members(cx, schema, &seen, seen.is_empty())
            ));
        };
        if c == '}' {
            return if required.iter().all(|r| seen.iter().any(|k| k == r)) {
                P::Ok(i + 1)
            } else {
                P::Bad
            };
        }
        if !seen.is_empty() {
            i = step!(lit(s, i, ","), || close(&seen)
                .trim_start_matches(',')
                .to_owned());
            i = ws(s, i);
            if i >= s.len() {
                // After a comma a member must follow: the first missing required
                // one, else any allowed one.
                let member = missing_members(cx, schema, &seen, true);
                if !member.is_empty() {
                    return P::Eof(format!("{member}}}"));
                }
                let key = props
                    .and_then(|p| p.iter().find(|(k, _)| !seen.contains(k)))
                    .map(|(k, v)| format!("{}: {}", json_str(k), min_value(cx, v)))
                    .or_else(|| open.then(|| "\"_\": null".to_owned()));
                return key.map_or(P::Bad, |m| P::Eof(format!("{m}}}")));
            }
        }
        // The key.
        let (j, key) = if open {
            let j = match string(s, i) {
                P::Ok(j) => j,
                P::Eof(c) => {
                    // A free key cut short: close it, give it a value.
                    let written: String = s[i..].iter().collect();
                    let key = serde_json::from_str::<String>(&format!("{written}{c}"))
                        .unwrap_or_default();
                    if seen.contains(&key) {
                        // Closing it now would repeat a key: lengthen it instead.
                        let open_part = c.strip_suffix('"').unwrap_or(&c);
                        return P::Eof(format!("{open_part}_\": null{}", close(&seen)));
                    }
                    let sub = props.and_then(|p| p.get(&key)).unwrap_or(&any);
                    let mut seen = seen.clone();
                    seen.push(key);
                    return P::Eof(format!("{c}: {}{}", min_value(cx, sub), close(&seen)));
                }
                P::Bad => return P::Bad,
            };
            let raw: String = s[i..j].iter().collect();
            match serde_json::from_str::<String>(&raw) {
                Ok(k) => (j, k),
                Err(_) => return P::Bad,
            }
        } else {
            let names: Vec<String> = props
                .map(|p| {
                    p.keys()
                        .filter(|k| !seen.contains(k))
                        .map(|k| json_str(k))
                        .collect()
                })
                .unwrap_or_default();
            match one_of(s, i, &names) {
                // Keys that are prefixes of others ("a" vs "ab") resolve on the quote.
                Ok((j, _)) => {
                    let raw: String = s[i..j].iter().collect();
                    match serde_json::from_str::<String>(&raw) {
                        Ok(k) => (j, k),
                        Err(_) => return P::Bad,
                    }
                }
                Err(P::Eof(c)) => {
                    let written: String = s[i..].iter().collect();
                    let full = format!("{written}{c}");
                    let key = serde_json::from_str::<String>(&full).unwrap_or_default();
                    let sub = props.and_then(|p| p.get(&key)).unwrap_or(&any);
                    let mut seen = seen.clone();
                    seen.push(key);
                    return P::Eof(format!("{c}: {}{}", min_value(cx, sub), close(&seen)));
                }
                Err(p) => return p,
            }
        };
        if seen.contains(&key) {
            return P::Bad;
        }
        let sub = props.and_then(|p| p.get(&key)).unwrap_or(&any);
        seen.push(key);
        i = ws(s, j);
        i = step!(lit(s, i, ":"), || format!(
            " {}{}",
            min_value(cx, sub),
            close(&seen)
        ));
        i = ws(s, i);
        i = step!(value(cx, s, i, sub), || close(&seen));
    }
}

fn array(cx: &Cx, s: &[char], i: usize, schema: &Value) -> P {
    let any = Value::Object(Default::default());
    let items = schema.get("items").unwrap_or(&any);
    let mut i = step!(lit(s, i, "["), || "]".to_owned());
    let mut first = true;
    loop {
        i = ws(s, i);
        let Some(&c) = s.get(i) else {
            return P::Eof("]".to_owned());
        };
        if c == ']' {
            return P::Ok(i + 1);
        }
        if !first {
            i = step!(lit(s, i, ","), || "]".to_owned());
            i = ws(s, i);
        }
        i = step!(value(cx, s, i, items), || "]".to_owned());
        first = false;
    }
}

fn kind_name(kind: PathKind) -> &'static str {
    match kind {
        PathKind::File => "file",
        PathKind::Dir => "dir",
        PathKind::Entry => "entry",
        PathKind::NewFile => "new-file",
    }
}

/// The path kind a schema is marked with, when the grammar holds paths.
fn path_kind<'a>(cx: &Cx<'a>, schema: &Value) -> Option<(PathKind, &'a PathConstraint)> {
    let kind = match schema.get(PATH_KEY)?.as_str()? {
        "file" => PathKind::File,
        "dir" => PathKind::Dir,
        "entry" => PathKind::Entry,
        "new-file" => PathKind::NewFile,
        _ => return None,
    };
    Some((kind, cx.paths?))
}

/// A JSON string naming a path of `kind`. The workspace's paths hold no quotes,
/// backslashes or control characters, so no escape is needed or allowed.
fn path(s: &[char], i: usize, kind: PathKind, paths: &PathConstraint) -> P {
    let start = step!(lit(s, i, "\""), || format!(
        "{}\"",
        paths.completion(kind, "").unwrap_or_default()
    ));
    let mut j = start;
    while let Some(&c) = s.get(j) {
        match c {
            '"' => {
                let text: String = s[start..j].iter().collect();
                return if paths.check(kind, &text) == PathCheck::Complete {
                    P::Ok(j + 1)
                } else {
                    P::Bad
                };
            }
            '\\' => return P::Bad,
            c if (c as u32) < 0x20 => return P::Bad,
            _ => j += 1,
        }
    }
    let text: String = s[start..].iter().collect();
    match paths.completion(kind, &text) {
        Some(rest) => P::Eof(format!("{rest}\"")),
        None => P::Bad,
    }
}

fn string(s: &[char], i: usize) -> P {
    let mut i = step!(lit(s, i, "\""), || "\"".to_owned());
    loop {
        let Some(&c) = s.get(i) else {
            return P::Eof("\"".to_owned());
        };
        match c {
            '"' => return P::Ok(i + 1),
            '\\' => {
                let Some(&e) = s.get(i + 1) else {
                    return P::Eof("n\"".to_owned());
                };
                match e {
                    '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' => i += 2,
                    'u' => {
                        for k in 0..4 {
                            match s.get(i + 2 + k) {
                                None => return P::Eof(format!("{}\"", "0".repeat(4 - k))),
                                Some(h) if h.is_ascii_hexdigit() => {}
                                Some(_) => return P::Bad,
                            }
                        }
                        i += 6;
                    }
                    _ => return P::Bad,
                }
            }
            c if (c as u32) < 0x20 => return P::Bad,
            _ => i += 1,
        }
    }
}

/// A JSON number. At the end of input a number is only ever partial: more digits
/// could follow; its completion is empty once it has a digit where one is needed.
fn number(s: &[char], mut i: usize, integer: bool) -> P {
    let need_digit = || P::Eof("0".to_owned());
    if s.get(i) == Some(&'-') {
        i += 1;
    }
    let digits = |mut i: usize| {
        let start = i;
        while s.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        }
        (i, i - start)
    };
    match s.get(i) {
        None => return need_digit(),
        Some('0') => i += 1,
        Some(c) if c.is_ascii_digit() => {
            let (j, n) = digits(i);
            if n > MAX_DIGITS {
                return P::Bad;
            }
            i = j;
        }
        Some(_) => return P::Bad,
    }
    if !integer && s.get(i) == Some(&'.') {
        let (j, n) = digits(i + 1);
        if j >= s.len() {
            return if n == 0 {
                need_digit()
            } else {
                P::Eof(String::new())
            };
        }
        if n == 0 {
            return P::Bad;
        }
        i = j;
    }
    if !integer && matches!(s.get(i), Some('e' | 'E')) {
        i += 1;
        if matches!(s.get(i), Some('+' | '-')) {
            i += 1;
        }
        let (j, n) = digits(i);
        if j >= s.len() {
            return if n == 0 {
                need_digit()
            } else {
                P::Eof(String::new())
            };
        }
        if n == 0 {
            return P::Bad;
        }
        i = j;
    }
    if i >= s.len() {
        return P::Eof(String::new());
    }
    P::Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn grammar() -> CallGrammar {
        CallGrammar::new(vec![
            (
                "read_file".into(),
                json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer"}},
                    "required": ["path"]}),
            ),
            (
                "run".into(),
                json!({"type": "object", "properties": {
                    "cmd": {"type": "array", "items": {"type": "string"}},
                    "mode": {"type": "string", "enum": ["fast", "full"]},
                    "ratio": {"type": "number"},
                    "dry": {"type": "boolean"}}}),
            ),
        ])
    }

    #[track_caller]
    fn check(text: &str, expected: Check) {
        assert_eq!(grammar().check(text), expected, "{text:?}");
    }

    #[test]
    fn a_whole_call_is_complete_and_every_prefix_partial() {
        let call = "\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/a\\\"b.rs\", \"offset\": 10}}\n</tool_call>";
        check(call, Check::Complete);
        for (i, _) in call.char_indices() {
            check(&call[..i], Check::Partial);
        }
    }

    /// Every prefix of `call` completes to a whole valid call.
    #[track_caller]
    fn completes_every_prefix(g: &CallGrammar, call: &str) {
        assert_eq!(g.check(call), Check::Complete, "{call:?}");
        for (i, _) in call.char_indices() {
            let prefix = &call[..i];
            let Some(c) = g.completion(prefix) else {
                panic!("no completion for {prefix:?}");
            };
            let whole = format!("{prefix}{c}");
            assert_eq!(g.check(&whole), Check::Complete, "{prefix:?} + {c:?}");
            // The arguments parse as JSON, as the provider's parser needs.
            let body = whole
                .trim()
                .strip_suffix(TOOL_CALL_CLOSE)
                .map(str::trim)
                .unwrap_or_default();
            assert!(
                serde_json::from_str::<Value>(body).is_ok(),
                "{whole:?} is not JSON"
            );
        }
    }

    #[test]
    fn every_prefix_of_a_call_has_a_shortest_completion() {
        let g = grammar();
        completes_every_prefix(
            &g,
            "\n{\"name\": \"read_file\", \"arguments\": {\"offset\": -12, \"path\": \"a\\u00e9\\n\\\"b\"}}\n</tool_call>",
        );
        completes_every_prefix(
            &g,
            "{\"name\": \"run\", \"arguments\": {\"cmd\": [\"ls\", \"-l\"], \"ratio\": -1.5e+3, \"mode\": \"full\", \"dry\": false}}</tool_call>",
        );
        let nested = CallGrammar::new(vec![(
            "edit".into(),
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "ops": {"type": "array", "items": {"type": "object",
                    "properties": {"line": {"type": "integer"}, "text": {"type": ["string", "null"]}},
                    "required": ["line", "text"]}},
                "meta": {}},
                "required": ["path", "ops"], "additionalProperties": true}),
        )]);
        completes_every_prefix(
            &nested,
            "{\"name\": \"edit\", \"arguments\": {\"ops\": [{\"text\": null, \"line\": 3}, {\"line\": 4, \"text\": \"x\"}], \"meta\": {\"k\": [1, true]}, \"path\": \"p\", \"extra\": 1}}</tool_call>",
        );
        // What the shortest completion looks like.
        assert_eq!(
            g.completion("{\"name\": \"read_").as_deref(),
            Some("file\", \"arguments\": {\"path\": \"\"}}</tool_call>")
        );
        assert_eq!(
            nested
                .completion("{\"name\": \"edit\", \"arguments\": {\"ops\": [{")
                .as_deref(),
            Some("\"line\": 0, \"text\": null}], \"path\": \"\"}}</tool_call>")
        );
        assert_eq!(g.completion("{\"name\": \"nope"), None);
        // A free key cut short that would repeat one is lengthened instead.
        let repeat = "{\"name\": \"edit\", \"arguments\": {\"meta\": 1, \"meta";
        let c = nested.completion(repeat).unwrap_or_default();
        assert_eq!(c, "_\": null, \"path\": \"\", \"ops\": []}}</tool_call>");
        assert_eq!(nested.check(&format!("{repeat}{c}")), Check::Complete);
    }

    #[test]
    fn unknown_tools_and_keys_are_invalid() {
        check("{\"name\": \"write", Check::Invalid);
        check(
            "{\"name\": \"read_file\", \"arguments\": {\"paht",
            Check::Invalid,
        );
        check(
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\", \"path",
            Check::Invalid,
        );
    }

    #[test]
    fn types_required_and_enums_are_enforced() {
        check(
            "{\"name\": \"read_file\", \"arguments\": {\"path\": 3",
            Check::Invalid,
        );
        check(
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\", \"offset\": 1.5",
            Check::Invalid,
        );
        check(
            "{\"name\": \"read_file\", \"arguments\": {}",
            Check::Invalid,
        );
        check(
            "{\"name\": \"run\", \"arguments\": {\"mode\": \"fu",
            Check::Partial,
        );
        check(
            "{\"name\": \"run\", \"arguments\": {\"mode\": \"slow",
            Check::Invalid,
        );
        check(
            "{\"name\": \"run\", \"arguments\": {\"cmd\": [\"ls\", \"-l\"], \"ratio\": -1.5e3, \"dry\": true}}</tool_call>",
            Check::Complete,
        );
        check(
            "{\"name\": \"run\", \"arguments\": {\"cmd\": [1",
            Check::Invalid,
        );
    }

    #[test]
    fn nothing_may_follow_the_closing_tag() {
        check(
            "{\"name\": \"run\", \"arguments\": {}}</tool_call>x",
            Check::Invalid,
        );
        check("{\"name\": \"run\", \"arguments\": {}} x", Check::Invalid);
    }

    fn with_paths() -> CallGrammar {
        let paths = PathConstraint::new(
            vec!["src/lib.rs".into(), "tests/t.rs".into()],
            vec!["src".into(), "tests".into()],
            vec![
                ("read_file".into(), "path".into(), PathKind::File),
                ("write".into(), "path".into(), PathKind::NewFile),
                ("run".into(), "cwd".into(), PathKind::Dir),
            ],
        );
        let path = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
        CallGrammar::new(vec![
            ("read_file".into(), path.clone()),
            ("write".into(), path),
            (
                "run".into(),
                json!({"type": "object", "properties": {"command": {"type": "string"}, "cwd": {"type": "string"}}, "required": ["command"]}),
            ),
        ])
        .with_paths(Some(Arc::new(paths)))
    }

    #[test]
    fn path_arguments_name_real_paths_only() {
        let g = with_paths();
        let call = |name: &str, args: &str| {
            format!("\n{{\"name\": \"{name}\", \"arguments\": {args}}}\n</tool_call>")
        };
        for ok in [
            call("read_file", r#"{"path": "src/lib.rs"}"#),
            call("write", r#"{"path": "src/new_mod.rs"}"#),
            call("write", r#"{"path": "docs/guide.md"}"#),
            call("run", r#"{"command": "<anything>", "cwd": "tests"}"#),
            call("run", r#"{"command": "ls", "cwd": "."}"#),
        ] {
            assert_eq!(g.check(&ok), Check::Complete, "{ok}");
            completes_every_prefix(&g, &ok);
        }
        // The placeholders and empty paths small models wrote, and escapes out of the
        // tree, cannot even be begun.
        for bad in [
            r#"{"path": "<"#,
            r#"{"path": ""}"#,
            r#"{"path": "src/main.rs"}"#,
            r#"{"path": "/etc/passwd"}"#,
            r#"{"path": "../x"#,
            r#"{"path": "src\\"#,
        ] {
            let text = format!("\n{{\"name\": \"read_file\", \"arguments\": {bad}");
            assert_eq!(g.check(&text), Check::Invalid, "{text}");
        }
        let write =
            |path: &str| format!("\n{{\"name\": \"write\", \"arguments\": {{\"path\": \"{path}");
        assert_eq!(g.check(&write("<path>")), Check::Invalid);
        assert_eq!(g.check(&write("../up")), Check::Invalid);
        assert_eq!(g.check(&write("new dir")), Check::Invalid);
        let run_in = |cwd: &str| {
            format!(
                "\n{{\"name\": \"run\", \"arguments\": {{\"command\": \"ls\", \"cwd\": \"{cwd}\"}}"
            )
        };
        assert_eq!(g.check(&run_in("<cwd>")), Check::Invalid);
        assert_eq!(g.check(&run_in("nowhere")), Check::Invalid);
        // Cut short, a path completes to a real one.
        let cut = "\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"te";
        assert_eq!(
            g.completion(cut).as_deref(),
            Some("sts/t.rs\"}}</tool_call>")
        );
        let empty = "\n{\"name\": \"read_file\", \"arguments\": ";
        assert_eq!(
            g.completion(empty).as_deref(),
            Some("{\"path\": \"src/lib.rs\"}}</tool_call>")
        );
    }

    #[test]
    fn without_paths_a_path_is_any_string() {
        let g = grammar();
        let call =
            "\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"<path>\"}}\n</tool_call>";
        assert_eq!(g.check(call), Check::Complete);
    }

    #[test]
    fn whitespace_and_digits_cannot_run_on() {
        let g = grammar();
        let open = "\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"";
        assert_eq!(
            g.check(&format!("{open}{}", " ".repeat(MAX_WS))),
            Check::Partial
        );
        assert_eq!(
            g.check(&format!("{open}{}", " ".repeat(MAX_WS + 1))),
            Check::Invalid
        );
        let after = "\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}";
        assert_eq!(
            g.check(&format!("{after}{}", "\n".repeat(MAX_WS + 1))),
            Check::Invalid
        );
        let offset = |n: usize| format!("{open}, \"offset\": {}", "1".repeat(n));
        assert_eq!(g.check(&offset(MAX_DIGITS)), Check::Partial);
        assert_eq!(g.check(&offset(MAX_DIGITS + 1)), Check::Invalid);
    }
}
