//! Argument schemas derived from the argument types (`schemars`), so what the model, MCP
//! clients and ACP see is exactly what a tool parses. Shaped the way models handle
//! best: one flat object schema, subschemas inlined, no `$schema`/`title`/`$defs`, an
//! optional field as a plain non-required property (strict tool calling and many local
//! models stumble over `null` unions), the fields' doc comments as descriptions.
//!
//! A tool's `spec()` runs for every lookup by name (the agent's tool set finds each
//! call's tool that way), so each tool's schema is built once, by `cached!`, and
//! cloned after: about 8 µs to build, a tenth of that to clone.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// `schema_of::<T>()`, built on first use and kept: `parameters: schema::cached!(T)`.
macro_rules! cached {
    ($t:ty) => {{
        static SCHEMA: std::sync::LazyLock<serde_json::Value> =
            std::sync::LazyLock::new($crate::schema::schema_of::<$t>);
        SCHEMA.clone()
    }};
}
pub(crate) use cached;

/// The argument schema of `T`.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut root = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut root {
        // The type's own doc comment is for people reading the code.
        map.remove("description");
    }
    tidy(&mut root);
    root
}

/// Drops what models do not need and `null` from optional fields, everywhere.
fn tidy(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("$schema");
            map.remove("title");
            map.remove("format");
            // Defaults are in the descriptions, in words.
            map.remove("default");
            without_null(map);
            consts_as_enum(map);
            for v in map.values_mut() {
                tidy(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// `"oneOf": [{"const": "a", "description": …}, …]` (an enum whose variants have doc
/// comments) → `"type": "string", "enum": ["a", …]`: the plain shape every model knows.
fn consts_as_enum(map: &mut Map<String, Value>) {
    let Some(Value::Array(alts)) = map.get("oneOf") else {
        return;
    };
    let consts: Option<Vec<Value>> = alts.iter().map(|a| a.get("const").cloned()).collect();
    let Some(consts) = consts.filter(|c| c.iter().all(Value::is_string)) else {
        return;
    };
    map.remove("oneOf");
    map.insert("type".to_owned(), Value::String("string".to_owned()));
    map.insert("enum".to_owned(), Value::Array(consts));
}

/// `"type": ["integer", "null"]` → `"integer"`; `null` out of an `enum`; `"anyOf": [S,
/// {"type": "null"}]` → S, merged into the schema that held it (its description kept).
fn without_null(map: &mut Map<String, Value>) {
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".to_owned(), only);
        }
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alts)) = map.get(key) else {
            continue;
        };
        let rest: Vec<Value> = alts
            .iter()
            .filter(|a| a.get("type").is_none_or(|t| t != "null"))
            .cloned()
            .collect();
        if rest.len() == alts.len() {
            continue;
        }
        map.remove(key);
        match <[Value; 1]>::try_from(rest) {
            Ok([Value::Object(only)]) => {
                for (k, v) in only {
                    map.entry(k).or_insert(v);
                }
            }
            Ok([other]) => {
                map.insert(key.to_owned(), Value::Array(vec![other]));
            }
            Err(rest) => {
                map.insert(key.to_owned(), Value::Array(rest));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// Found somewhere.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        /// Where.
        path: String,
        /// How many.
        #[serde(default)]
        #[schemars(range(min = 1))]
        limit: Option<usize>,
        /// Which way.
        #[serde(default)]
        way: Option<Way>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Way {
        Up,
        Down,
    }

    #[test]
    fn optional_fields_are_plain_and_not_required() {
        assert_eq!(
            schema_of::<Args>(),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Where."},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many."},
                    "way": {"type": "string", "enum": ["up", "down"], "description": "Which way."}
                },
                "required": ["path"],
                "additionalProperties": false
            })
        );
    }
}
