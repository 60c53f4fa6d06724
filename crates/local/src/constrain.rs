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

/// Marks an edit's `old` argument with the name of the argument naming its file: when
/// that file is one the model has seen, the value must be a piece of its text.
const COPIED_KEY: &str = "x-agentls-copied-from";

/// Marks an edit's `new` argument with the name of its `old` argument: the two may not
/// be equal (an edit that changes nothing).
const DIFFERS_KEY: &str = "x-agentls-differs-from";

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
                if let Some(edit) = p.edit_args(tool) {
                    if let Some(old) = props.get_mut(edit.old).and_then(Value::as_object_mut) {
                        old.insert(COPIED_KEY.to_owned(), Value::String(edit.path.into()));
                    }
                    if let Some(new) = props.get_mut(edit.new).and_then(Value::as_object_mut) {
                        new.insert(DIFFERS_KEY.to_owned(), Value::String(edit.old.into()));
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
    // Held arguments after the ones they are held to (an edit's new text after its old
    // text, after its path), as the object's parse requires.
    let mut required = required_of(schema);
    required.sort_by_key(|key| {
        let sub = props.and_then(|p| p.get(*key));
        let marked = |m: &str| sub.is_some_and(|s| s.get(m).is_some());
        usize::from(marked(COPIED_KEY)) + 2 * usize::from(marked(DIFFERS_KEY))
    });
    for key in required {
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
    // The members' string values so far, for the arguments held to others: kept only
    // where some are (this parse runs for every candidate token).
    let holds = props.is_some_and(|p| {
        p.values()
            .any(|v| v.get(COPIED_KEY).is_some() || v.get(DIFFERS_KEY).is_some())
    });
    let mut strings: Vec<(String, String)> = Vec::new();
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
            // An argument held to another comes after it.
            let after = |sub: &Value| {
                [COPIED_KEY, DIFFERS_KEY]
                    .iter()
                    .filter_map(|m| sub.get(*m)?.as_str())
                    .all(|other| seen.iter().any(|k| k == other))
            };
            let names: Vec<String> = props
                .map(|p| {
                    p.iter()
                        .filter(|(k, sub)| !seen.contains(k) && after(sub))
                        .map(|(k, _)| json_str(k))
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
        seen.push(key.clone());
        i = ws(s, j);
        i = step!(lit(s, i, ":"), || format!(
            " {}{}",
            min_value(cx, sub),
            close(&seen)
        ));
        i = ws(s, i);
        let start = i;
        i = step!(held_value(cx, s, i, sub, &strings), || close(&seen));
        if holds
            && s.get(start) == Some(&'"')
            && let Ok(Decoded::Closed(text, _)) = decode(s, start + 1)
        {
            strings.push((key, text));
        }
    }
}

/// A member's value, held to the values before it where its schema says so: an edit's
/// `old` argument to the text of the file named before it (when the model has seen
/// that file), its `new` argument to differ from `old`.
fn held_value(cx: &Cx, s: &[char], i: usize, schema: &Value, before: &[(String, String)]) -> P {
    let earlier = |mark: &str| {
        let arg = schema.get(mark)?.as_str()?;
        before
            .iter()
            .find(|(k, _)| k == arg)
            .map(|(_, v)| v.as_str())
    };
    if s.get(i) != Some(&'"') {
        return value(cx, s, i, schema);
    }
    // A file the model has seen holds `old` to its text; one that does not exist has
    // no text to copy from, so `old` can only be empty (the edit creates the file).
    let text = earlier(COPIED_KEY).zip(cx.paths).and_then(|(path, paths)| {
        paths
            .text_of(path)
            .or_else(|| (paths.check(PathKind::File, path) != PathCheck::Complete).then_some(""))
    });
    if let Some(text) = text {
        let start = step!(lit(s, i, "\""), || "\"".to_owned());
        return match decode(s, start) {
            Err(()) => P::Bad,
            Ok(Decoded::Closed(v, end)) if text.contains(&v) => P::Ok(end),
            Ok(Decoded::Open(v, pending)) if text.contains(&v) => finish_copied(text, &v, &pending),
            Ok(_) => P::Bad,
        };
    }
    if let Some(old) = earlier(DIFFERS_KEY) {
        // Two empty strings are let through: they are the shortest completion of a
        // call cut short, and the tool says why such an edit is refused.
        let start = step!(lit(s, i, "\""), || "\"".to_owned());
        return match decode(s, start) {
            Err(()) => P::Bad,
            Ok(Decoded::Closed(v, _)) if v == old && !old.is_empty() => P::Bad,
            Ok(Decoded::Closed(_, end)) => P::Ok(end),
            Ok(Decoded::Open(..)) => string(s, i),
        };
    }
    value(cx, s, i, schema)
}

/// The completion of a copied string whose content so far, `v`, is in `text`: a closing
/// quote, after finishing an escape cut short (`pending`, as written) with a character
/// that follows `v` somewhere in `text`. Bad when no such character can be written so.
fn finish_copied(text: &str, v: &str, pending: &str) -> P {
    if pending.is_empty() {
        return P::Eof("\"".to_owned());
    }
    let pending = pending.to_ascii_lowercase();
    let nexts = text
        .match_indices(v)
        .filter_map(|(at, _)| text[at + v.len()..].chars().next());
    for c in nexts {
        if let Some(rest) = escapes(c)
            .iter()
            .find_map(|e| e.strip_prefix(pending.as_str()))
        {
            return P::Eof(format!("{rest}\""));
        }
    }
    P::Bad
}

/// The ways JSON escapes `c` (hex in lower case).
fn escapes(c: char) -> Vec<String> {
    let mut out = Vec::new();
    let short = match c {
        '"' => Some('"'),
        '\\' => Some('\\'),
        '/' => Some('/'),
        '\u{8}' => Some('b'),
        '\u{c}' => Some('f'),
        '\n' => Some('n'),
        '\r' => Some('r'),
        '\t' => Some('t'),
        _ => None,
    };
    if let Some(e) = short {
        out.push(format!("\\{e}"));
    }
    let mut units = [0u16; 2];
    let hex: String = c
        .encode_utf16(&mut units)
        .iter()
        .map(|u| format!("\\u{u:04x}"))
        .collect();
    out.push(hex);
    out
}

/// A JSON string's content so far.
enum Decoded {
    /// Closed: the content, and the index past the closing quote.
    Closed(String, usize),
    /// Cut short: the content, and an escape cut short at the end as written (empty
    /// when none).
    Open(String, String),
}

/// The content of the JSON string whose first character (after the quote) is at
/// `start`, unescaped. `Err` for what JSON does not allow.
fn decode(s: &[char], start: usize) -> Result<Decoded, ()> {
    let mut out = String::new();
    let mut i = start;
    let hex = |at: usize| -> Option<u32> {
        let digits: String = s.get(at..at + 4)?.iter().collect();
        u32::from_str_radix(&digits, 16).ok()
    };
    loop {
        let pending = |out: String| Ok(Decoded::Open(out, s[i..].iter().collect()));
        let Some(&c) = s.get(i) else {
            return pending(out);
        };
        match c {
            '"' => return Ok(Decoded::Closed(out, i + 1)),
            '\\' => {
                let Some(&e) = s.get(i + 1) else {
                    return pending(out);
                };
                let plain = match e {
                    '"' => Some('"'),
                    '\\' => Some('\\'),
                    '/' => Some('/'),
                    'b' => Some('\u{8}'),
                    'f' => Some('\u{c}'),
                    'n' => Some('\n'),
                    'r' => Some('\r'),
                    't' => Some('\t'),
                    'u' => None,
                    _ => return Err(()),
                };
                if let Some(p) = plain {
                    out.push(p);
                    i += 2;
                    continue;
                }
                if s.len() < i + 6 {
                    // Cut short: only hex digits may have been written so far.
                    return if s[i + 2..].iter().all(char::is_ascii_hexdigit) {
                        pending(out)
                    } else {
                        Err(())
                    };
                }
                let Some(unit) = hex(i + 2) else {
                    return Err(());
                };
                if (0xD800..0xDC00).contains(&unit) {
                    // A high surrogate: its low half must follow.
                    if s.len() < i + 12 {
                        // Only its low half's beginning may follow.
                        let low: String = s[i + 6..].iter().collect();
                        let ok = "\\u".starts_with(&low)
                            || low
                                .strip_prefix("\\u")
                                .is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
                        return if ok { pending(out) } else { Err(()) };
                    }
                    let low = (s[i + 6] == '\\' && s[i + 7] == 'u')
                        .then(|| hex(i + 8))
                        .flatten()
                        .filter(|l| (0xDC00..0xE000).contains(l))
                        .ok_or(())?;
                    let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    out.push(char::from_u32(code).ok_or(())?);
                    i += 12;
                } else {
                    out.push(char::from_u32(unit).ok_or(())?);
                    i += 6;
                }
            }
            c if (c as u32) < 0x20 => return Err(()),
            c => {
                out.push(c);
                i += 1;
            }
        }
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
    fn an_edit_is_held_to_the_text_of_a_file_the_model_has_seen() {
        let edit = json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"}},
            // In the order schemars writes it.
            "required": ["new_string", "old_string", "path"]});
        let args = agentls_model::EditArgs {
            path: "path",
            old: "old_string",
            new: "new_string",
        };
        let paths = PathConstraint::new(
            vec!["calc.py".into(), "other.py".into()],
            Vec::new(),
            vec![("str_replace".into(), "path".into(), PathKind::NewFile)],
        )
        .with_root("/ws")
        .with_texts(
            vec![("str_replace".into(), args)],
            vec![(
                "calc.py".into(),
                "def add(a, b):\r\n    \"\"\"Sum 😀.\"\"\"\r\n    return a - b\r\n".into(),
            )],
        );
        let g =
            CallGrammar::new(vec![("str_replace".into(), edit)]).with_paths(Some(Arc::new(paths)));
        let head = |path: &str| {
            format!(
                "\n{{\"name\": \"str_replace\", \"arguments\": {{\"path\": {}, \"old_string\": ",
                json_str(path)
            )
        };
        let call = |path: &str, old: &str, new: &str| {
            format!(
                "{}{}, \"new_string\": {}}}}}\n</tool_call>",
                head(path),
                json_str(old),
                json_str(new)
            )
        };
        for ok in [
            call("calc.py", "return a - b", "return a + b"),
            // Across lines (the file's CRLF as LF), with escapes, by any name.
            call("./calc.py", "\"\"\"Sum 😀.\"\"\"\n    return a - b", "x"),
            call("/ws/calc.py", "a - b", "a + b"),
            // A file the model has not seen is not held: the harness shows it first.
            call("other.py", "anything", "else"),
        ] {
            assert_eq!(g.check(&ok), Check::Complete, "{ok}");
            completes_every_prefix(&g, &ok);
        }
        // Written as \u escapes, surrogate pair included.
        let escaped = format!(
            "{}\"Sum \\ud83d\\ude00.\", \"new_string\": \"x\"}}}}\n</tool_call>",
            head("calc.py")
        );
        assert_eq!(g.check(&escaped), Check::Complete, "{escaped}");
        // Made-up code, line-number prefixes and near misses cannot even be begun.
        for bad in [
            "return self.add(a, b)",
            "     3\treturn a - b",
            "return a-b",
        ] {
            let open = json_str(bad);
            let text = format!("{}{}", head("calc.py"), &open[..open.len() - 1]);
            assert_eq!(g.check(&text), Check::Invalid, "{text}");
        }
        // An edit that changes nothing cannot be closed, though its new text may
        // begin like the old.
        let same = call("calc.py", "a - b", "a - b");
        assert_eq!(g.check(&same), Check::Invalid);
        let (open, _) = same.rsplit_once("\"}}").unwrap();
        assert_eq!(g.check(open), Check::Partial, "{open}");
        let longer = call("calc.py", "a - b", "a - b + 0");
        assert_eq!(g.check(&longer), Check::Complete);
        // Held arguments come after the ones they are held to.
        let early = "\n{\"name\": \"str_replace\", \"arguments\": {\"old_string\"";
        assert_eq!(g.check(early), Check::Invalid);
        let new_first =
            "\n{\"name\": \"str_replace\", \"arguments\": {\"path\": \"calc.py\", \"new_string\"";
        assert_eq!(g.check(new_first), Check::Invalid);
        // A file that does not exist has no text: only an empty old_string creates it.
        let (create, made_up) = (call("new.py", "", "x = 1"), call("new.py", "x", "y"));
        assert_eq!(g.check(&create), Check::Complete);
        assert_eq!(g.check(&made_up), Check::Invalid);
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
