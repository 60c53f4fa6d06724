//! A hostile workspace cannot lead a headless edit outside the root: every edit format
//! against a directory link out, a final link out, a new directory under a link out, and
//! a hard link to an outside file is refused, and the outside files stay byte-identical.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use agentls_edit::{EditError, Format, apply_to_dir};

const SECRET: &str = "secret\n";

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p.clone());
            }
            let bytes = if meta.is_file() {
                fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            out.insert(p.strip_prefix(dir).unwrap().display().to_string(), bytes);
        }
    }
    out
}

/// Which way out the workspace offers.
#[derive(Debug, Clone, Copy)]
enum Way {
    /// `linkdir -> OUT`.
    LinkDir,
    /// `link.txt -> OUT/secret.txt`.
    FinalLink,
    /// A new directory under `linkdir -> OUT`.
    NewDirUnderLink,
    /// `hard.txt` is a hard link to `OUT/secret.txt`.
    HardLink,
}

struct Setup {
    ws: tempfile::TempDir,
    out: tempfile::TempDir,
}

fn setup(way: Way) -> Setup {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    fs::write(out.path().join("secret.txt"), SECRET).unwrap();
    fs::write(ws.path().join("inside.txt"), SECRET).unwrap();
    match way {
        Way::LinkDir | Way::NewDirUnderLink => {
            std::os::unix::fs::symlink(out.path(), ws.path().join("linkdir")).unwrap()
        }
        Way::FinalLink => {
            std::os::unix::fs::symlink(out.path().join("secret.txt"), ws.path().join("link.txt"))
                .unwrap()
        }
        Way::HardLink => {
            fs::hard_link(out.path().join("secret.txt"), ws.path().join("hard.txt")).unwrap()
        }
    }
    Setup { ws, out }
}

/// (existing path that leads out, new path that leads out) for `way`.
fn targets(way: Way) -> (&'static str, &'static str) {
    match way {
        Way::LinkDir => ("linkdir/secret.txt", "linkdir/new.txt"),
        Way::FinalLink => ("link.txt", "link.txt"),
        Way::NewDirUnderLink => ("linkdir/secret.txt", "linkdir/sub/deeper/new.txt"),
        Way::HardLink => ("hard.txt", "hard.txt"),
    }
}

/// Every edit format, aimed at `existing` (content `secret`) or at `new`.
fn edits(existing: &str, new: &str) -> Vec<(&'static str, Format, String)> {
    let patch = |body: String| format!("*** Begin Patch\n{body}*** End Patch\n");
    vec![
        (
            "whole file",
            Format::WholeFile,
            serde_json::json!({"path": existing, "content": "pwned\n"}).to_string(),
        ),
        (
            "whole file, new",
            Format::WholeFile,
            serde_json::json!({"path": new, "content": "pwned\n"}).to_string(),
        ),
        (
            "str_replace",
            Format::StrReplace,
            serde_json::json!({"path": existing, "old_string": "secret", "new_string": "pwned"})
                .to_string(),
        ),
        (
            "str_replace, new",
            Format::StrReplace,
            serde_json::json!({"path": new, "old_string": "", "new_string": "pwned"}).to_string(),
        ),
        (
            "search/replace",
            Format::SearchReplace,
            format!("{existing}\n<<<<<<< SEARCH\nsecret\n=======\npwned\n>>>>>>> REPLACE\n"),
        ),
        (
            "insert",
            Format::Insert,
            serde_json::json!({"path": existing, "line": 0, "text": "pwned"}).to_string(),
        ),
        (
            "patch update",
            Format::ApplyPatch,
            patch(format!(
                "*** Update File: {existing}\n@@\n-secret\n+pwned\n"
            )),
        ),
        (
            "patch add",
            Format::ApplyPatch,
            patch(format!("*** Add File: {new}\n+pwned\n")),
        ),
        (
            "patch delete",
            Format::ApplyPatch,
            patch(format!("*** Delete File: {existing}\n")),
        ),
        (
            "patch move out of the link",
            Format::ApplyPatch,
            patch(format!(
                "*** Update File: {existing}\n*** Move to: moved.txt\n@@\n-secret\n+pwned\n"
            )),
        ),
        (
            "patch move into the link",
            Format::ApplyPatch,
            patch(format!(
                "*** Update File: inside.txt\n*** Move to: {new}\n@@\n-secret\n+pwned\n"
            )),
        ),
    ]
}

#[test]
fn no_edit_format_reaches_outside_the_root() {
    let mut cases = 0;
    for way in [
        Way::LinkDir,
        Way::FinalLink,
        Way::NewDirUnderLink,
        Way::HardLink,
    ] {
        let (existing, new) = targets(way);
        for (name, format, text) in edits(existing, new) {
            let s = setup(way);
            let out_before = snapshot(s.out.path());
            let ws_before = snapshot(s.ws.path());
            let result = apply_to_dir(s.ws.path(), format, &text, None);
            let what = format!("{way:?} / {name}");
            let err = match result {
                Ok(summary) => panic!("{what}: applied: {summary}"),
                Err(e) => e,
            };
            assert_eq!(
                snapshot(s.out.path()),
                out_before,
                "{what}: outside changed"
            );
            assert_eq!(
                snapshot(s.ws.path()),
                ws_before,
                "{what}: workspace changed"
            );
            // The model is told why, in words it can act on (`Exists` is fine for an
            // Add onto the link itself: it is refused before the link matters).
            let msg = err.to_string();
            assert!(
                matches!(err, EditError::NotBeneath { .. } | EditError::Exists { .. }),
                "{what}: {msg}"
            );
            if let EditError::NotBeneath { .. } = err {
                assert!(
                    msg.contains("outside the workspace root") || msg.contains("hard links"),
                    "{what}: {msg}"
                );
                assert!(err.is_environment(), "{what}");
            }
            cases += 1;
        }
    }
    assert_eq!(cases, 44);
}

#[test]
fn links_inside_the_root_are_followed_and_stay_links() {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir(ws.path().join("real")).unwrap();
    fs::write(ws.path().join("real/a.txt"), "old\n").unwrap();
    std::os::unix::fs::symlink("real", ws.path().join("alias")).unwrap();
    std::os::unix::fs::symlink("real/a.txt", ws.path().join("a-link.txt")).unwrap();
    let edit = |path: &str, old: &str, new: &str| {
        let json = serde_json::json!({"path": path, "old_string": old, "new_string": new});
        apply_to_dir(ws.path(), Format::StrReplace, &json.to_string(), None)
    };
    edit("alias/a.txt", "old", "mid").unwrap();
    edit("a-link.txt", "mid", "new").unwrap();
    assert_eq!(
        fs::read_to_string(ws.path().join("real/a.txt")).unwrap(),
        "new\n"
    );
    // The link still is a link: the write went to where it leads.
    assert!(
        fs::symlink_metadata(ws.path().join("a-link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // New files under a directory link inside the root land in its target.
    let add = "*** Begin Patch\n*** Add File: alias/sub/b.txt\n+b\n*** End Patch\n";
    apply_to_dir(ws.path(), Format::ApplyPatch, add, None).unwrap();
    assert_eq!(
        fs::read_to_string(ws.path().join("real/sub/b.txt")).unwrap(),
        "b\n"
    );
}

#[test]
fn an_absolute_link_is_refused_even_when_it_points_inside() {
    // Absolute targets are not resolved beneath the root (they would be by the
    // editor); refusing them keeps the rule simple: only relative links inside.
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("a.txt"), "x\n").unwrap();
    std::os::unix::fs::symlink(ws.path().join("a.txt"), ws.path().join("abs.txt")).unwrap();
    let json = serde_json::json!({"path": "abs.txt", "content": "y\n"});
    let err = apply_to_dir(ws.path(), Format::WholeFile, &json.to_string(), None).unwrap_err();
    assert!(matches!(err, EditError::NotBeneath { .. }), "{err}");
    assert_eq!(fs::read_to_string(ws.path().join("a.txt")).unwrap(), "x\n");
}
