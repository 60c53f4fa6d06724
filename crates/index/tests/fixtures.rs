//! The index on the per-language fixture workspaces: symbols found, cross-file
//! definitions and references, and ignore files respected.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns: a panic is a failed test

use std::fmt::Write;
use std::path::{Path, PathBuf};

use agentls_index::{Index, IndexOptions, OutlineItem, Overlay};
use expect_test::{Expect, expect};

fn fixture(lang: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/workspaces")
        .join(lang)
}

fn crawl(lang: &str) -> (Index, PathBuf) {
    let root = std::path::absolute(fixture(lang)).unwrap();
    let mut index = Index::new(IndexOptions::default());
    index.crawl(&root, &Overlay::new());
    (index, root)
}

fn render_outline(out: &mut String, items: &[OutlineItem], depth: usize) {
    for item in items {
        writeln!(
            out,
            "{:indent$}{} {} {}:{}",
            "",
            item.kind.as_str(),
            item.name,
            item.name_span.start.line + 1,
            item.name_span.start.column + 1,
            indent = 2 + depth * 2
        )
        .unwrap();
        render_outline(out, &item.children, depth + 1);
    }
}

/// Every file's outline, sorted by path.
fn check_outlines(lang: &str, expect: Expect) {
    let (index, root) = crawl(lang);
    let mut paths: Vec<_> = index.paths().cloned().collect();
    paths.sort();
    let mut out = String::new();
    for path in paths {
        let rel = path.strip_prefix(&root).unwrap();
        writeln!(out, "{}", rel.display()).unwrap();
        render_outline(&mut out, &index.outline(&path).unwrap(), 0);
    }
    expect.assert_eq(&out);
}

/// Definitions and references of `name` as `file:line:col`.
fn locate(index: &Index, root: &Path, name: &str) -> (Vec<String>, Vec<String>) {
    let defs = index
        .definitions(name)
        .iter()
        .map(|s| {
            format!(
                "{}:{}:{} {}",
                s.path.strip_prefix(root).unwrap().display(),
                s.name_span.start.line + 1,
                s.name_span.start.column + 1,
                s.kind.as_str()
            )
        })
        .collect();
    let refs = index
        .references(name)
        .iter()
        .map(|r| {
            format!(
                "{}:{}:{}",
                r.path.strip_prefix(root).unwrap().display(),
                r.span.start.line + 1,
                r.span.start.column + 1
            )
        })
        .collect();
    (defs, refs)
}

#[test]
fn rust_outline() {
    check_outlines(
        "rust",
        expect![[r#"
            src/lib.rs
              module util 2:9
              struct Point 5:12
                field x 6:9
                field y 7:9
              enum Shape 10:10
                field Circle 11:5
                field Square 12:5
              trait Area 15:11
                method area 16:8
              impl Shape 19:15
                method area 20:8
              impl Point 28:6
                method origin 29:12
              constant MAX_SHAPES 34:11
              macro shout 36:14
            src/util.rs
              function square 3:8
              function describe 7:8
              function perimeter 13:8
            tests/perimeter.rs
              function perimeter_of_a_square 5:4
              function perimeter_of_a_circle 10:4
              function perimeter_of_squares_of_other_sides 15:4
              function perimeter_of_circles_of_other_radii 22:4
        "#]],
    );
}

#[test]
fn python_outline() {
    check_outlines(
        "python",
        expect![[r#"
        pkg/app.py
          class Admin 4:7
            method greet 5:9
          function main 9:5
        pkg/models.py
          constant MAX_USERS 1:1
          class User 4:7
            method __init__ 5:9
            method greet 8:9
          function format_greeting 12:5
    "#]],
    );
}

#[test]
fn typescript_outline() {
    check_outlines(
        "typescript",
        expect![[r#"
        src/main.ts
          function makeShape 3:14
          function total 5:10
        src/model.ts
          interface Shape 1:18
            method area 2:3
          type Id 5:13
          enum Color 7:13
          class Circle 12:14
            method constructor 13:3
            method area 14:3
          function square 19:17
    "#]],
    );
}

#[test]
fn tsx_outline() {
    check_outlines(
        "tsx",
        expect![[r#"
        App.tsx
          function App 3:14
        Button.tsx
          interface ButtonProps 1:11
          function Button 5:17
          function track 9:10
    "#]],
    );
}

#[test]
fn javascript_outline() {
    check_outlines(
        "javascript",
        expect![[r#"
        lib.js
          class Stack 1:7
            method constructor 2:3
            method push 5:3
          function makeStack 10:10
          function helper 14:7
        main.js
          function run 3:10
    "#]],
    );
}

#[test]
fn go_outline() {
    check_outlines(
        "go",
        expect![[r#"
        main.go
          function Total 3:6
          function NewCircle 11:6
        shapes.go
          interface Shape 4:6
          struct Circle 8:6
            field R 9:2
          type Meters 12:6
          constant Pi 14:7
          method Area 16:17
          function Square 20:6
    "#]],
    );
}

#[test]
fn c_outline() {
    check_outlines(
        "c",
        expect![[r#"
        main.c
          function main 3:5
        util.c
          function square 3:5
          function make_point 7:17
        util.h
          macro UTIL_H 2:9
          macro MAX_ITEMS 3:9
          type point_t 8:3
            struct point 5:16
          enum color 10:6
            constant RED 10:14
            constant GREEN 10:19
          function square 12:5
    "#]],
    );
}

#[test]
fn cpp_outline() {
    check_outlines(
        "cpp",
        expect![[r#"
        main.cpp
          function main 3:5
        shape.cpp
          module geo 3:11
            function square 5:8
            method Circle 7:9
            method area 9:16
        shape.hpp
          module geo 2:11
            class Shape 4:7
              method area 6:18
            class Circle 9:7
              method Circle 11:12
              method area 12:10
            function square 18:8
    "#]],
    );
}

#[test]
fn java_outline() {
    check_outlines(
        "java",
        expect![[r#"
        src/shapes/Circle.java
          class Circle 3:14
            field r 4:26
            method Circle 6:12
            method area 11:19
        src/shapes/MathUtil.java
          class MathUtil 3:20
            method square 4:26
            method unit 8:25
        src/shapes/Shape.java
          interface Shape 3:18
            method area 4:12
    "#]],
    );
}

/// For each language: a name defined in one file and used in another, with where the
/// definition is and the files of some reference sites.
#[test]
fn cross_file_definitions_and_references() {
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "rust",
            "square",
            "src/util.rs:3:8 function",
            &["src/lib.rs:22:39", "src/lib.rs:23:39"],
        ),
        (
            "rust",
            "origin",
            "src/lib.rs:29:12 method",
            &["src/util.rs:8:20"],
        ),
        (
            "rust",
            "Shape",
            "src/lib.rs:10:10 enum",
            &["src/util.rs:7:21"],
        ),
        (
            "python",
            "format_greeting",
            "pkg/models.py:12:5 function",
            &["pkg/app.py:6:16", "pkg/models.py:9:16"],
        ),
        (
            "python",
            "User",
            "pkg/models.py:4:7 class",
            &["pkg/app.py:4:13", "pkg/app.py:10:9"],
        ),
        (
            "typescript",
            "Circle",
            "src/model.ts:12:14 class",
            &["src/main.ts:3:52"],
        ),
        (
            "typescript",
            "square",
            "src/model.ts:19:17 function",
            &["src/main.ts:6:52", "src/model.ts:15:12"],
        ),
        (
            "typescript",
            "Shape",
            "src/model.ts:1:18 interface",
            &["src/main.ts:3:39", "src/main.ts:5:24"],
        ),
        (
            "tsx",
            "Button",
            "Button.tsx:5:17 function",
            &["App.tsx:3:32"],
        ),
        (
            "javascript",
            "makeStack",
            "lib.js:10:10 function",
            &["main.js:4:13"],
        ),
        ("javascript", "Stack", "lib.js:1:7 class", &["lib.js:11:14"]),
        (
            "go",
            "Square",
            "shapes.go:20:6 function",
            &["main.go:4:7", "shapes.go:17:9"],
        ),
        (
            "go",
            "Circle",
            "shapes.go:8:6 struct",
            &["main.go:11:18", "main.go:12:9"],
        ),
        (
            "c",
            "point_t",
            "util.h:8:3 type",
            &["main.c:4:5", "util.c:7:8", "util.c:8:12"],
        ),
        ("cpp", "Circle", "shape.hpp:9:7 class", &["main.cpp:4:8"]),
        (
            "java",
            "square",
            "src/shapes/MathUtil.java:4:26 method",
            &["src/shapes/Circle.java:12:25"],
        ),
        (
            "java",
            "Circle",
            "src/shapes/Circle.java:3:14 class",
            &["src/shapes/MathUtil.java:9:20"],
        ),
    ];
    let mut failures = Vec::new();
    for &(lang, name, def, refs) in cases {
        let (index, root) = crawl(lang);
        let (defs, found) = locate(&index, &root, name);
        if !defs.iter().any(|d| d == def) {
            failures.push(format!("{lang} {name}: definition {def} not in {defs:?}"));
        }
        for r in refs {
            if !found.iter().any(|f| f == r) {
                failures.push(format!("{lang} {name}: reference {r} not in {found:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn c_prototype_and_definition_are_both_definitions() {
    let (index, root) = crawl("c");
    let (defs, _) = locate(&index, &root, "square");
    assert_eq!(defs, ["util.c:3:5 function", "util.h:12:5 function"]);
}

#[test]
fn ignored_files_are_not_indexed() {
    for (lang, name) in [
        ("rust", "ignored_by_gitignore"),
        ("python", "ignored_by_gitignore"),
        ("typescript", "ignoredByGitignore"),
    ] {
        let (index, _) = crawl(lang);
        assert!(
            index.definitions(name).is_empty(),
            "{lang}: {name} was indexed"
        );
    }
}

#[test]
fn containers_name_the_enclosing_definition() {
    let (index, _) = crawl("python");
    let greets = index.definitions("greet");
    let containers: Vec<_> = greets
        .iter()
        .map(|s| s.container.as_deref().unwrap_or("-"))
        .collect();
    assert_eq!(containers, ["Admin", "User"]);
}

#[test]
fn workspace_symbols_are_fuzzy_and_ranked() {
    let (index, _) = crawl("rust");
    let names: Vec<_> = index
        .workspace_symbols("sq", 10)
        .iter()
        .map(|s| s.name.to_string())
        .collect();
    assert_eq!(names[..2], ["Square", "square"]);
    let names: Vec<_> = index
        .workspace_symbols("mxshp", 10)
        .iter()
        .map(|s| s.name.to_string())
        .collect();
    assert_eq!(names, ["MAX_SHAPES"]);
    assert_eq!(index.workspace_symbols("", 3).len(), 3);
}

#[test]
fn repo_map_ranks_referenced_files_first_and_fits_budget() {
    let (index, _) = crawl("java");
    // MathUtil and Shape are used from other files; with no focus, a defined-and-used
    // file outranks files nobody references.
    let map = index.repo_map(&[], &[], 1000);
    expect![[r#"
        src/shapes/Shape.java:
          3 interface Shape
            4 method area
        src/shapes/Circle.java:
          3 class Circle
            6 method Circle
            11 method area
        src/shapes/MathUtil.java:
          3 class MathUtil
            4 method square
            8 method unit
    "#]]
    .assert_eq(&map);
    // Focus on a name pulls its defining file to the top.
    let focused = index.repo_map(&[], &["square"], 1000);
    assert!(
        focused.starts_with("src/shapes/MathUtil.java:"),
        "{focused}"
    );
    // A tiny budget keeps the output within budget * 4 characters.
    let small = index.repo_map(&[], &[], 10);
    assert!(small.len() <= 40, "{small}");
    assert!(small.starts_with("src/shapes/Shape.java:"), "{small}");
}

#[test]
fn repo_map_focus_files_bias_the_ranking() {
    let (index, root) = crawl("python");
    let app = root.join("pkg/app.py");
    let map = index.repo_map(&[app.as_path()], &[], 1000);
    assert!(map.contains("pkg/app.py:"), "{map}");
    assert!(map.contains("pkg/models.py:"), "{map}");
}
