//! The documentation a newcomer walks: README.md stays short and opens with the two
//! commands a fresh machine needs, and every relative link in README.md,
//! ARCHITECTURE.md, DEVELOPERS.md, docs/*.md and the editor clients' READMEs points to
//! a file or folder that exists (and, for `page.md#section`, to a heading of it).

// Test code: a failed expect is a failed test, with the reason in the panic.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};

/// README.md's budget: past it, text belongs in a page under docs/.
const README_MAX_BYTES: usize = 12 * 1024;
/// The first command of README.md: build and run the embedded-model demo.
const DEMO: &str = "cargo run --release -p agentls-server --features local -- demo";
/// The second: the whole test suite, exactly as `.ci/run` runs it.
const TESTS: &str = "cargo test --workspace --locked";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the testkit crate sits in the repository")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The documents whose links are checked.
fn documents() -> Vec<PathBuf> {
    let root = repo();
    let mut docs: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "DEVELOPERS.md"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    for dir in ["docs", "editor-clients"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            panic!("{dir}/ is missing");
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "md") {
                docs.push(path);
            } else if path.join("README.md").is_file() {
                docs.push(path.join("README.md"));
            }
        }
    }
    docs.sort();
    docs
}

/// The fenced code blocks of a markdown text, each as its lines joined.
fn code_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            match current.take() {
                Some(lines) => blocks.push(lines.join("\n")),
                None => current = Some(Vec::new()),
            }
        } else if let Some(lines) = current.as_mut() {
            lines.push(line);
        }
    }
    blocks
}

/// Link targets of inline links (`[text](target)`, images too) outside code: fenced
/// blocks and inline code spans are left out, so `foo[i](x)` in code is not a link.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop inline code spans: every other piece between backticks.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else {
                break;
            };
            // `[text](target "title")`: the target is the first word.
            let target = after[..end].split_whitespace().next().unwrap_or("");
            targets.push(target.to_owned());
            rest = &after[end..];
        }
    }
    targets
}

/// The anchors of a markdown file's headings, as GitHub makes them: lower case,
/// punctuation dropped, spaces as hyphens, `-1`, `-2` … after repeats.
fn anchors(text: &str) -> Vec<String> {
    let mut anchors = Vec::new();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let hashes = line.len() - line.trim_start_matches('#').len();
        if fenced || !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = line[hashes..]
            .trim()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                '-' | '_' => Some(c),
                c if c.is_alphanumeric() => Some(c.to_ascii_lowercase()),
                _ => None,
            })
            .collect();
        let repeats = seen.entry(slug.clone()).or_insert(0);
        anchors.push(if *repeats == 0 {
            slug
        } else {
            format!("{slug}-{repeats}")
        });
        *repeats += 1;
    }
    anchors
}

fn is_relative(target: &str) -> bool {
    !(target.is_empty()
        || target.starts_with('#')
        || target.contains("://")
        || target.starts_with("mailto:"))
}

#[test]
fn readme_fits_its_budget() {
    let readme = read(&repo().join("README.md"));
    assert!(
        readme.len() <= README_MAX_BYTES,
        "README.md is {} bytes, over {README_MAX_BYTES}: move detail into docs/",
        readme.len()
    );
}

#[test]
fn readme_opens_with_the_demo_then_the_tests() {
    let readme = read(&repo().join("README.md"));
    let blocks = code_blocks(&readme);
    assert!(
        blocks.len() >= 2,
        "README.md has fewer than two code blocks"
    );
    assert!(
        blocks[0].contains(DEMO),
        "README.md's first code block is not the demo command:\n{}",
        blocks[0]
    );
    assert!(
        blocks[1].contains(TESTS),
        "README.md's second code block is not the test command:\n{}",
        blocks[1]
    );
    // The commands come before any section on editors or configuration.
    let demo_at = readme.find(DEMO).unwrap_or(usize::MAX);
    let tests_at = readme.find(TESTS).unwrap_or(usize::MAX);
    let second_heading = readme
        .match_indices("\n## ")
        .nth(1)
        .map_or(readme.len(), |(i, _)| i);
    assert!(
        demo_at < tests_at && tests_at < second_heading,
        "the two commands must open README.md, before its second section"
    );
    let ci = read(&repo().join(".ci/run"));
    assert!(
        ci.lines().any(|l| l.trim() == TESTS),
        ".ci/run no longer runs `{TESTS}`: README.md says it does"
    );
}

#[test]
fn relative_links_point_to_files_that_exist() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let dir = doc.parent().unwrap_or(Path::new("."));
        for target in link_targets(&read(&doc)) {
            if !is_relative(&target) {
                continue;
            }
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                doc.clone()
            } else {
                dir.join(path)
            };
            checked += 1;
            if !file.exists() {
                broken.push(format!("{}: {target}", doc.display()));
            } else if !fragment.is_empty()
                && file.extension().is_some_and(|e| e == "md")
                && !anchors(&read(&file)).iter().any(|a| a == fragment)
            {
                broken.push(format!("{}: {target} (no such heading)", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // README.md alone links the docs pages, the architecture and the clients.
    assert!(
        checked >= 10,
        "only {checked} relative links found: is the parser broken?"
    );
}

#[test]
fn anchors_are_githubs() {
    let text = "# Models\n## The `auto` router\n```\n# not a heading\n```\n\
                ## `[mcp.servers.NAME]`\n## Models\n#hashtag\n";
    assert_eq!(
        anchors(text),
        ["models", "the-auto-router", "mcpserversname", "models-1"]
    );
}

#[test]
fn the_link_parser_skips_code_and_urls() {
    let text = "See [a](docs/a.md#x) and ![img](m/s.png \"t\"), `v[0](1)`, [w](https://x.y).\n\
                ```\n[no](in/fence.md)\n```\n";
    let targets = link_targets(text);
    assert_eq!(targets, ["docs/a.md#x", "m/s.png", "https://x.y"]);
    let relative: Vec<_> = targets.iter().filter(|t| is_relative(t)).collect();
    assert_eq!(relative, ["docs/a.md#x", "m/s.png"]);
}
