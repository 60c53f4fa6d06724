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
    tools: Vec<(String, Value)>,
}

/// Result of a prefix parse: the position after the parsed item, or why not.
enum P {
    Ok(usize),
    /// The input ended inside the item: still a valid prefix.
    Eof,
    Bad,
}

macro_rules! step {
    ($e:expr) => {
        match $e {
            P::Ok(i) => i,
            other => return other,
        }
    };
}

impl CallGrammar {
    /// A grammar over `(name, parameters schema)` pairs.
    pub fn new(tools: Vec<(String, Value)>) -> Self {
        Self { tools }
    }

    /// Checks the text written after `<tool_call>`.
    pub fn check(&self, text: &str) -> Check {
        let s: Vec<char> = text.chars().collect();
        match self.call(&s) {
            P::Bad => Check::Invalid,
            P::Eof => Check::Partial,
            P::Ok(i) => {
                // After the object: whitespace, then the closing tag, then nothing.
                let i = ws(&s, i);
                let rest: String = s[i..].iter().collect();
                if rest == TOOL_CALL_CLOSE {
                    Check::Complete
                } else if TOOL_CALL_CLOSE.starts_with(&rest) {
                    Check::Partial
                } else {
                    Check::Invalid
                }
            }
        }
    }

    fn call(&self, s: &[char]) -> P {
        let mut i = ws(s, 0);
        i = step!(lit(s, i, "{"));
        i = ws(s, i);
        i = step!(lit(s, i, "\"name\""));
        i = ws(s, i);
        i = step!(lit(s, i, ":"));
        i = ws(s, i);
        let names: Vec<String> = self.tools.iter().map(|(n, _)| json_str(n)).collect();
        let (mut i, which) = match one_of(s, i, &names) {
            Ok(x) => x,
            Err(p) => return p,
        };
        i = ws(s, i);
        i = step!(lit(s, i, ","));
        i = ws(s, i);
        i = step!(lit(s, i, "\"arguments\""));
        i = ws(s, i);
        i = step!(lit(s, i, ":"));
        i = ws(s, i);
        i = step!(value(s, i, &self.tools[which].1));
        i = ws(s, i);
        lit(s, i, "}")
    }
}

fn json_str(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

fn ws(s: &[char], mut i: usize) -> usize {
    while i < s.len() && matches!(s[i], ' ' | '\n' | '\r' | '\t') {
        i += 1;
    }
    i
}

fn lit(s: &[char], i: usize, word: &str) -> P {
    let mut j = i;
    for c in word.chars() {
        match s.get(j) {
            None => return P::Eof,
            Some(&d) if d == c => j += 1,
            Some(_) => return P::Bad,
        }
    }
    P::Ok(j)
}

/// Matches one of several literals; the index of the one matched.
fn one_of(s: &[char], i: usize, options: &[String]) -> Result<(usize, usize), P> {
    let mut any_prefix = false;
    for (k, o) in options.iter().enumerate() {
        match lit(s, i, o) {
            P::Ok(j) => return Ok((j, k)),
            P::Eof => any_prefix = true,
            P::Bad => {}
        }
    }
    Err(if any_prefix { P::Eof } else { P::Bad })
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn value(s: &[char], i: usize, schema: &Value) -> P {
    if i >= s.len() {
        return P::Eof;
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        let lits: Vec<String> = options.iter().map(Value::to_string).collect();
        return match one_of(s, i, &lits) {
            Ok((j, _)) => P::Ok(j),
            Err(p) => p,
        };
    }
    let types = types_of(schema);
    let allows = |t: &str| types.is_empty() || types.contains(&t);
    match s[i] {
        '{' if allows("object") => object(s, i, schema, types.is_empty()),
        '[' if allows("array") => array(s, i, schema),
        '"' if allows("string") => string(s, i),
        't' if allows("boolean") => lit(s, i, "true"),
        'f' if allows("boolean") => lit(s, i, "false"),
        'n' if allows("null") => lit(s, i, "null"),
        '-' | '0'..='9' if allows("number") => number(s, i, false),
        '-' | '0'..='9' if allows("integer") => number(s, i, true),
        _ => P::Bad,
    }
}

fn object(s: &[char], i: usize, schema: &Value, free: bool) -> P {
    let props = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // Without `properties`, or with `additionalProperties` allowed, keys are free.
    let open = free
        || props.is_none()
        || schema
            .get("additionalProperties")
            .is_some_and(|a| a != &Value::Bool(false));
    let any = Value::Object(Default::default());
    let mut seen: Vec<String> = Vec::new();
    let mut i = step!(lit(s, i, "{"));
    loop {
        i = ws(s, i);
        let Some(&c) = s.get(i) else { return P::Eof };
        if c == '}' {
            return if required.iter().all(|r| seen.iter().any(|k| k == r)) {
                P::Ok(i + 1)
            } else {
                P::Bad
            };
        }
        if !seen.is_empty() {
            i = step!(lit(s, i, ","));
            i = ws(s, i);
        }
        // The key.
        let (j, key) = if open {
            let j = step!(string(s, i));
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
                Err(p) => return p,
            }
        };
        if seen.contains(&key) {
            return P::Bad;
        }
        i = ws(s, j);
        i = step!(lit(s, i, ":"));
        i = ws(s, i);
        let sub = props.and_then(|p| p.get(&key)).unwrap_or(&any);
        i = step!(value(s, i, sub));
        seen.push(key);
    }
}

fn array(s: &[char], i: usize, schema: &Value) -> P {
    let any = Value::Object(Default::default());
    let items = schema.get("items").unwrap_or(&any);
    let mut i = step!(lit(s, i, "["));
    let mut first = true;
    loop {
        i = ws(s, i);
        let Some(&c) = s.get(i) else { return P::Eof };
        if c == ']' {
            return P::Ok(i + 1);
        }
        if !first {
            i = step!(lit(s, i, ","));
            i = ws(s, i);
        }
        i = step!(value(s, i, items));
        first = false;
    }
}

fn string(s: &[char], i: usize) -> P {
    let mut i = step!(lit(s, i, "\""));
    loop {
        let Some(&c) = s.get(i) else { return P::Eof };
        match c {
            '"' => return P::Ok(i + 1),
            '\\' => {
                let Some(&e) = s.get(i + 1) else {
                    return P::Eof;
                };
                match e {
                    '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' => i += 2,
                    'u' => {
                        for k in 0..4 {
                            match s.get(i + 2 + k) {
                                None => return P::Eof,
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
/// could follow.
fn number(s: &[char], mut i: usize, integer: bool) -> P {
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
        None => return P::Eof,
        Some('0') => i += 1,
        Some(c) if c.is_ascii_digit() => i = digits(i).0,
        Some(_) => return P::Bad,
    }
    if !integer && s.get(i) == Some(&'.') {
        let (j, n) = digits(i + 1);
        if j >= s.len() {
            return P::Eof;
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
            return P::Eof;
        }
        if n == 0 {
            return P::Bad;
        }
        i = j;
    }
    if i >= s.len() {
        return P::Eof;
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
}
