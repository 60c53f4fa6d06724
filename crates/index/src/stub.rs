//! Stubs found on the syntax tree: a function whose body is empty or only says "not
//! yet" (`todo!()`, `pass`, `...`, `raise NotImplementedError`, `throw new
//! Error("not implemented")`, `panic("TODO")`, …), for the "implement `name`" code
//! action. On the tree, not the text: a `{` in a default argument or a long signature
//! cannot fool it, and a body's comments and docstring do not count.

use tree_sitter::Node;

use crate::Language;
use crate::symbol::Point;

/// What a lone statement says when it means "not implemented yet", lower-cased.
const MARKERS: &[&str] = &[
    "todo!(",
    "unimplemented!(",
    "notimplementederror",
    "not implemented",
    "unsupportedoperationexception",
    "panic(\"todo",
];

/// Whether the function whose name starts at `name` (0-based line and UTF-8 column) in
/// `text` is a stub. `false` when `text` does not parse there or no function with a
/// body holds that point.
pub fn is_stub(lang: Language, text: &str, name: Point) -> bool {
    let Some(tree) = lang.parse(text, None) else {
        return false;
    };
    let point = tree_sitter::Point {
        row: name.line as usize,
        column: name.column as usize,
    };
    let Some(mut node) = tree
        .root_node()
        .named_descendant_for_point_range(point, point)
    else {
        return false;
    };
    // The nearest enclosing node with a body: the function itself.
    let body = loop {
        if let Some(body) = node.child_by_field_name("body") {
            break body;
        }
        match node.parent() {
            Some(parent) => node = parent,
            None => return false,
        }
    };
    let code: Vec<Node> = {
        let mut cursor = body.walk();
        body.named_children(&mut cursor)
            .filter(|n| !n.kind().contains("comment"))
            .collect()
    };
    let code: Vec<Node> = match (lang, code.as_slice()) {
        // A docstring is not code.
        (Language::Python, [first, rest @ ..]) if is_docstring(first) => rest.to_vec(),
        _ => code,
    };
    match code.as_slice() {
        [] => true,
        [only] => {
            let said = only
                .utf8_text(text.as_bytes())
                .unwrap_or_default()
                .to_lowercase();
            let said = said.trim().trim_end_matches(';');
            said == "pass" || said == "..." || MARKERS.iter().any(|m| said.contains(m))
        }
        _ => false,
    }
}

fn is_docstring(node: &Node) -> bool {
    node.kind() == "expression_statement"
        && node.named_child_count() == 1
        && node.named_child(0).is_some_and(|c| c.kind() == "string")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the function named `name` in `text` is a stub.
    fn stub(lang: Language, text: &str, name: &str) -> bool {
        let at = text
            .find(&format!("{name}("))
            .or_else(|| text.find(name))
            .unwrap();
        let line = text[..at].matches('\n').count();
        let column = at - text[..at].rfind('\n').map_or(0, |i| i + 1);
        is_stub(
            lang,
            text,
            Point {
                line: line as u32,
                column: column as u32,
            },
        )
    }

    #[test]
    fn stubs_in_every_language_and_real_bodies() {
        use Language::*;
        assert!(stub(
            Rust,
            "fn add(a: i32) -> i32 {\n    todo!()\n}\n",
            "add"
        ));
        assert!(stub(Rust, "impl S {\n    fn f(&self) {}\n}\n", "f"));
        assert!(stub(
            Rust,
            "fn f() {\n    // later\n    unimplemented!(\"soon\");\n}\n",
            "f"
        ));
        assert!(!stub(
            Rust,
            "fn add(a: i32) -> i32 {\n    a + 1\n}\n",
            "add"
        ));
        assert!(stub(
            Python,
            "class C:\n    def f(self, x={}):\n        \"\"\"Doc.\"\"\"\n        pass\n",
            "f"
        ));
        assert!(stub(Python, "def f():\n    ...\n", "f"));
        assert!(stub(
            Python,
            "def f():\n    raise NotImplementedError(\"later\")\n",
            "f"
        ));
        // A `{` in a default argument and a real body: not a stub (the text heuristic
        // read the dict's braces as the body).
        assert!(!stub(Python, "def f(x={}):\n    return x\n", "f"));
        assert!(stub(
            JavaScript,
            "function f() { throw new Error(\"Not implemented\"); }\n",
            "f"
        ));
        assert!(stub(
            TypeScript,
            "class A {\n  m(): number {\n    throw new Error('not implemented');\n  }\n}\n",
            "m"
        ));
        assert!(stub(
            Go,
            "package p\n\nfunc F() int {\n\tpanic(\"TODO\")\n}\n",
            "F"
        ));
        assert!(!stub(
            Go,
            "package p\n\nfunc F() int {\n\treturn 1\n}\n",
            "F"
        ));
        assert!(stub(
            Java,
            "class A {\n  int m() { throw new UnsupportedOperationException(); }\n}\n",
            "m"
        ));
        assert!(stub(C, "int f(void) {\n}\n", "f"));
        // Two statements are work, whatever they say.
        assert!(!stub(
            Rust,
            "fn f() {\n    let x = 1;\n    todo!()\n}\n",
            "f"
        ));
        // A long body that is all real code, with a marker in a string elsewhere.
        let long = format!(
            "def f():\n{}    return \"not implemented\"\n",
            "    x = 1\n".repeat(40)
        );
        assert!(!stub(Python, &long, "f"));
    }
}
