//! Navigation asked of a language server: definition, references, hover, a file's
//! outline. Questions go out as LSP requests; answers come back as plain data (paths,
//! 1-based lines, text), so nothing above this crate knows LSP. Positions in answers
//! keep only their lines: columns would need the target file's text to mean anything.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// What to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// Where the symbol at the position is defined.
    Definition,
    /// Where it is used, its definition included.
    References,
    /// Its type and documentation.
    Hover,
    /// The file's symbols.
    Outline,
}

/// A question about one file. `line` is 0-based and `character` counts UTF-16 code
/// units (LSP's default encoding); both are ignored for [`Ask::Outline`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// What to ask.
    pub ask: Ask,
    /// 0-based line.
    pub line: u32,
    /// UTF-16 code units from the start of the line.
    pub character: u32,
}

/// A place in a file: the path and its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: u32,
}

/// One symbol of an outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlineEntry {
    /// Its name.
    pub name: String,
    /// `function`, `class`, `method`, … (LSP's symbol kinds, lower case).
    pub kind: &'static str,
    /// 1-based line where it starts.
    pub line: u32,
    /// Nesting depth: 0 for top-level symbols.
    pub depth: usize,
}

/// What a server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Definition or references (empty: it knows of none).
    Places(Vec<Place>),
    /// Hover text (empty: nothing to say).
    Hover(String),
    /// The outline, in document order.
    Outline(Vec<OutlineEntry>),
}

impl Query {
    /// The request's method and parameters for `path`.
    pub(crate) fn request(&self, path: &Path) -> Result<(&'static str, Value), String> {
        let uri = url::Url::from_file_path(path)
            .map_err(|()| format!("{}: not an absolute path", path.display()))?;
        let at = json!({
            "textDocument": {"uri": uri},
            "position": {"line": self.line, "character": self.character},
        });
        Ok(match self.ask {
            Ask::Definition => ("textDocument/definition", at),
            Ask::Hover => ("textDocument/hover", at),
            Ask::References => {
                let mut params = at;
                params["context"] = json!({"includeDeclaration": true});
                ("textDocument/references", params)
            }
            Ask::Outline => (
                "textDocument/documentSymbol",
                json!({"textDocument": {"uri": uri}}),
            ),
        })
    }

    /// The server's `result` as plain data; shapes it should not send read as empty.
    pub(crate) fn answer(&self, result: Value) -> Answer {
        match self.ask {
            Ask::Definition | Ask::References => Answer::Places(places(&result)),
            Ask::Hover => Answer::Hover(hover_text(&result["contents"])),
            Ask::Outline => {
                let mut out = Vec::new();
                if let Some(items) = result.as_array() {
                    outline(items, 0, &mut out);
                }
                out.sort_by_key(|e| e.line);
                Answer::Outline(out)
            }
        }
    }
}

/// `Location`, `Location[]` or `LocationLink[]` (or null) as places.
fn places(result: &Value) -> Vec<Place> {
    let items: Vec<&Value> = match result {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![result],
        _ => Vec::new(),
    };
    items
        .into_iter()
        .filter_map(|item| {
            // A LocationLink names its target; a Location its uri and range.
            let (uri, range) = match item.get("targetUri") {
                Some(uri) => (uri, &item["targetSelectionRange"]),
                None => (item.get("uri")?, &item["range"]),
            };
            let path = url::Url::parse(uri.as_str()?).ok()?.to_file_path().ok()?;
            let line = u32::try_from(range["start"]["line"].as_u64()?).ok()?;
            Some(Place {
                path,
                line: line.saturating_add(1),
            })
        })
        .collect()
}

/// `MarkupContent`, `MarkedString` or `MarkedString[]` as text.
fn hover_text(contents: &Value) -> String {
    match contents {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(hover_text)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        Value::Object(o) => match (o.get("language"), o.get("value")) {
            (Some(lang), Some(Value::String(v))) => {
                format!("```{}\n{v}\n```", lang.as_str().unwrap_or_default())
            }
            (_, Some(Value::String(v))) => v.clone(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// `DocumentSymbol[]` (nested) or `SymbolInformation[]` (flat) as outline entries.
fn outline(items: &[Value], depth: usize, out: &mut Vec<OutlineEntry>) {
    for item in items {
        let Some(name) = item["name"].as_str() else {
            continue;
        };
        let range = if item.get("location").is_some() {
            &item["location"]["range"]
        } else if item.get("selectionRange").is_some() {
            &item["selectionRange"]
        } else {
            &item["range"]
        };
        let Some(line) = range["start"]["line"]
            .as_u64()
            .and_then(|l| u32::try_from(l).ok())
        else {
            continue;
        };
        out.push(OutlineEntry {
            name: name.to_owned(),
            kind: kind_name(item["kind"].as_u64().unwrap_or(0)),
            line: line.saturating_add(1),
            depth,
        });
        if let Some(children) = item["children"].as_array() {
            outline(children, depth + 1, out);
        }
    }
}

/// LSP's `SymbolKind` numbers.
fn kind_name(kind: u64) -> &'static str {
    const NAMES: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    usize::try_from(kind)
        .ok()
        .and_then(|k| k.checked_sub(1))
        .and_then(|k| NAMES.get(k))
        .copied()
        .unwrap_or("symbol")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(ask: Ask) -> Query {
        Query {
            ask,
            line: 0,
            character: 0,
        }
    }

    #[test]
    fn every_location_shape_reads_as_places() {
        let q = query(Ask::Definition);
        let loc = json!({"uri": "file:///ws/a.py", "range": {"start": {"line": 4, "character": 2}, "end": {"line": 4, "character": 5}}});
        let want = vec![Place {
            path: "/ws/a.py".into(),
            line: 5,
        }];
        assert_eq!(q.answer(loc.clone()), Answer::Places(want.clone()));
        assert_eq!(q.answer(json!([loc])), Answer::Places(want.clone()));
        let link = json!([{"targetUri": "file:///ws/a.py",
            "targetRange": {"start": {"line": 3, "character": 0}, "end": {"line": 9, "character": 0}},
            "targetSelectionRange": {"start": {"line": 4, "character": 4}, "end": {"line": 4, "character": 7}}}]);
        assert_eq!(q.answer(link), Answer::Places(want));
        assert_eq!(q.answer(Value::Null), Answer::Places(Vec::new()));
        assert_eq!(
            q.answer(json!([{"uri": "not a uri", "range": {}}])),
            Answer::Places(Vec::new())
        );
    }

    #[test]
    fn hover_contents_of_every_shape_read_as_text() {
        let q = query(Ask::Hover);
        let h = |c: Value| q.answer(json!({ "contents": c }));
        assert_eq!(
            h(json!({"kind": "markdown", "value": "doc"})),
            Answer::Hover("doc".into())
        );
        assert_eq!(
            h(json!(["a", {"language": "python", "value": "def f()"}])),
            Answer::Hover("a\n\n```python\ndef f()\n```".into())
        );
        assert_eq!(q.answer(Value::Null), Answer::Hover(String::new()));
    }

    #[test]
    fn nested_and_flat_symbols_read_as_an_outline() {
        let q = query(Ask::Outline);
        let r = |l: u32| json!({"start": {"line": l, "character": 0}, "end": {"line": l, "character": 1}});
        let nested = json!([{"name": "Shop", "kind": 5, "range": r(0), "selectionRange": r(0),
            "children": [{"name": "total", "kind": 6, "range": r(2), "selectionRange": r(2)}]}]);
        let Answer::Outline(o) = q.answer(nested) else {
            panic!("not an outline")
        };
        assert_eq!(
            o.iter()
                .map(|e| (e.name.as_str(), e.kind, e.line, e.depth))
                .collect::<Vec<_>>(),
            [("Shop", "class", 1, 0), ("total", "method", 3, 1)]
        );
        let flat =
            json!([{"name": "f", "kind": 12, "location": {"uri": "file:///a.py", "range": r(7)}}]);
        let Answer::Outline(o) = q.answer(flat) else {
            panic!("not an outline")
        };
        assert_eq!((o[0].kind, o[0].line), ("function", 8));
    }
}
