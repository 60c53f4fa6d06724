//! Where else a cause may lie: the functions a target calls. Shown the function or
//! file a task points to, the model may leave it as it is in every sample: it sees
//! nothing wrong there. The cause is then likelier in what the target calls (an
//! upload that drops its last batch, whose batching a helper in another file does),
//! which the index knows without the model.

use std::path::Path;
use std::sync::Arc;

use agentls_index::{Index, ReferenceKind, Symbol, SymbolKind};
use agentls_text::{DocumentStore, ReadLimits};

use super::localise::{Scope, Target, byte_offset, is_test_file};

/// Most callees of one target taken as targets: each costs a round of samples.
pub const MOST: usize = 2;

/// The functions `target` calls that the workspace's source files (not its tests)
/// define once, in the order of their first call, as targets; none already among
/// `taken`. A name defined more than once (a method of several types) is left out:
/// which one runs is not known without types.
pub fn callees(
    root: &Path,
    index: &Index,
    store: &DocumentStore,
    limits: &ReadLimits,
    target: &Target,
    taken: &[&Target],
) -> Vec<Target> {
    let caller = match &target.scope {
        Scope::Function { name, .. } => format!("`{name}`"),
        Scope::File => target.shown(root),
    };
    let mut refs = index.file_references(&target.path);
    refs.sort_by_key(|r| (r.span.start.line, r.span.start.column));
    let mut names: Vec<Arc<str>> = Vec::new();
    for r in refs {
        let inside =
            byte_offset(&target.text, r.span.start).is_some_and(|at| match &target.scope {
                Scope::Function { range, .. } => range.contains(&at),
                Scope::File => true,
            });
        if r.kind == ReferenceKind::Call && inside && !names.contains(&r.name) {
            names.push(r.name);
        }
    }
    let mut out = Vec::new();
    for name in names {
        let defs: Vec<Symbol> = index
            .definitions(&name)
            .into_iter()
            .filter(|s| matches!(s.kind, SymbolKind::Function | SymbolKind::Method))
            .filter(|s| !is_test_file(root, &s.path))
            .collect();
        let [def] = defs.as_slice() else {
            continue;
        };
        if covers(target, def) || taken.iter().any(|t| covers(t, def)) {
            continue;
        }
        let why = format!(
            "`{}`: {caller} calls it, and the model left {caller} as it was",
            def.name
        );
        let Some(callee) = as_target(store, limits, def, why) else {
            continue;
        };
        out.push(callee);
        if out.len() == MOST {
            break;
        }
    }
    out
}

/// Whether `target` already holds the definition `def`.
fn covers(target: &Target, def: &Symbol) -> bool {
    *def.path == *target.path
        && match &target.scope {
            Scope::File => true,
            Scope::Function { name, .. } => **name == *def.name,
        }
}

/// The definition `def` as a target, there for `why`.
pub(super) fn as_target(
    store: &DocumentStore,
    limits: &ReadLimits,
    def: &Symbol,
    why: String,
) -> Option<Target> {
    let text = store.read(&def.path, limits).ok()?.rope.to_string();
    let range = byte_offset(&text, def.span.start)?..byte_offset(&text, def.span.end)?;
    let stub = agentls_index::stub::is_stub(def.language, &text, def.name_span.start);
    Some(Target {
        path: def.path.to_path_buf(),
        language: def.language,
        text,
        scope: Scope::Function {
            name: def.name.to_string(),
            range,
            stub,
        },
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPLOADER: &str = "const { batches } = require('./batches.js');\n\nfunction upload(records, send) {\n  const all = batches(records, 10);\n  all.forEach((b) => send(b));\n  return log(all.length);\n}\n\nfunction log(n) {\n  return n;\n}\n\nmodule.exports = { upload };\n";
    const BATCHES: &str = "function batches(items, size) {\n  const out = [];\n  for (let s = 0; s + size < items.length; s += size) out.push(items.slice(s, s + size));\n  return out;\n}\n\nmodule.exports = { batches };\n";

    use crate::solve::fixtures::workspace;

    fn file_target(root: &Path, path: &str, text: &str) -> Target {
        Target {
            path: root.join(path),
            language: agentls_index::Language::JavaScript,
            text: text.to_owned(),
            scope: Scope::File,
            why: String::new(),
        }
    }

    #[test]
    fn a_file_left_as_it_was_points_to_the_functions_it_calls_elsewhere() {
        let (_dir, root, index, store) = workspace(&[
            ("uploader.js", UPLOADER),
            ("batches.js", BATCHES),
            (
                "test/uploader.test.js",
                "const { batches } = require('../batches.js');\nfunction helper() {}\nhelper(); batches([], 1);\n",
            ),
        ]);
        let target = file_target(&root, "uploader.js", UPLOADER);
        let found = callees(&root, &index, &store, &ReadLimits::default(), &target, &[]);
        // `log` is the target's own; `forEach` and `send` are defined nowhere.
        assert_eq!(found.len(), 1, "{found:?}");
        let Scope::Function { name, range, stub } = &found[0].scope else {
            panic!("{found:?}");
        };
        assert_eq!(name, "batches");
        assert!(!stub);
        assert!(found[0].text[range.clone()].starts_with("function batches("));
        assert!(found[0].text[range.clone()].ends_with('}'));
        assert_eq!(found[0].path, root.join("batches.js"));
        assert!(
            found[0].why.contains("uploader.js calls it"),
            "{}",
            found[0].why
        );
        // Taken already: nothing new.
        let again = callees(
            &root,
            &index,
            &store,
            &ReadLimits::default(),
            &target,
            &[&found[0]],
        );
        assert!(again.is_empty(), "{again:?}");
    }

    #[test]
    fn a_function_left_as_it_was_points_only_to_what_its_own_body_calls() {
        let (_dir, root, index, store) =
            workspace(&[("uploader.js", UPLOADER), ("batches.js", BATCHES)]);
        // The function `name` of uploader.js, to the end of its body.
        let function = |name: &str| {
            let start = UPLOADER.find(&format!("function {name}(")).unwrap();
            let end = UPLOADER[start..].find("}\n").unwrap() + start + 1;
            Target {
                scope: Scope::Function {
                    name: name.into(),
                    range: start..end,
                    stub: false,
                },
                ..file_target(&root, "uploader.js", UPLOADER)
            }
        };
        let target = function("log");
        assert!(callees(&root, &index, &store, &ReadLimits::default(), &target, &[]).is_empty());
        let target = function("upload");
        let found = callees(&root, &index, &store, &ReadLimits::default(), &target, &[]);
        let names: Vec<String> = found
            .iter()
            .filter_map(|t| match &t.scope {
                Scope::Function { name, .. } => Some(name.clone()),
                Scope::File => None,
            })
            .collect();
        assert_eq!(names, ["batches", "log"]);
        assert!(
            found[0].why.contains("`upload` calls it"),
            "{}",
            found[0].why
        );
    }
}
