//! No tool reaches outside the root through the workspace's links: every edit tool
//! against a directory link out, a final link out, a new directory under a link out, and
//! a hard link to an outside file is refused with an environment error, in headless runs
//! (`DiskSink`) and at planning (a sink that records, as the editor's would receive);
//! the read tools refuse the same paths; the outside files stay byte-identical.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use agentls_tools::{EditSink, ErrorClass, MemorySink};
use common::{Ws, ws, ws_with};
use serde_json::{Value, json};

const SECRET: &str = "secret\n";

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

#[derive(Debug, Clone, Copy)]
enum Way {
    LinkDir,
    FinalLink,
    NewDirUnderLink,
    HardLink,
}

const WAYS: [Way; 4] = [
    Way::LinkDir,
    Way::FinalLink,
    Way::NewDirUnderLink,
    Way::HardLink,
];

/// A workspace (with `inside.txt`) offering `way` out to a fresh outside directory.
fn setup(way: Way, sink: Option<Arc<dyn EditSink>>) -> (Ws, tempfile::TempDir) {
    let files = [("inside.txt", SECRET)];
    let w = match sink {
        Some(s) => ws_with(&files, s),
        None => ws(&files),
    };
    let out = tempfile::Builder::new()
        .prefix("agentls-outside")
        .tempdir_in("/tmp")
        .unwrap();
    fs::write(out.path().join("secret.txt"), SECRET).unwrap();
    match way {
        Way::LinkDir | Way::NewDirUnderLink => {
            std::os::unix::fs::symlink(out.path(), w.path("linkdir")).unwrap()
        }
        Way::FinalLink => {
            std::os::unix::fs::symlink(out.path().join("secret.txt"), w.path("link.txt")).unwrap()
        }
        Way::HardLink => fs::hard_link(out.path().join("secret.txt"), w.path("hard.txt")).unwrap(),
    }
    (w, out)
}

/// (existing path leading out, new path leading out).
fn targets(way: Way) -> (&'static str, &'static str) {
    match way {
        Way::LinkDir => ("linkdir/secret.txt", "linkdir/new.txt"),
        Way::FinalLink => ("link.txt", "link.txt"),
        Way::NewDirUnderLink => ("linkdir/secret.txt", "linkdir/sub/deeper/new.txt"),
        Way::HardLink => ("hard.txt", "hard.txt"),
    }
}

fn calls(existing: &str, new: &str) -> Vec<(&'static str, Value)> {
    let patch = |body: String| json!({"patch": format!("*** Begin Patch\n{body}*** End Patch\n")});
    vec![
        (
            "write_file",
            json!({"path": existing, "content": "pwned\n"}),
        ),
        ("write_file", json!({"path": new, "content": "pwned\n"})),
        (
            "str_replace",
            json!({"path": existing, "old_string": "secret", "new_string": "pwned"}),
        ),
        (
            "insert",
            json!({"path": existing, "line": 0, "text": "pwned"}),
        ),
        ("delete_file", json!({"path": existing})),
        ("move_file", json!({"from": existing, "to": "moved.txt"})),
        ("move_file", json!({"from": "inside.txt", "to": new})),
        (
            "apply_patch",
            patch(format!(
                "*** Update File: {existing}\n@@\n-secret\n+pwned\n"
            )),
        ),
        (
            "apply_patch",
            patch(format!("*** Add File: {new}\n+pwned\n")),
        ),
        (
            "apply_patch",
            patch(format!("*** Delete File: {existing}\n")),
        ),
        (
            "apply_patch",
            patch(format!(
                "*** Update File: {existing}\n*** Move to: moved.txt\n@@\n-secret\n+pwned\n"
            )),
        ),
        (
            "apply_patch",
            patch(format!(
                "*** Update File: inside.txt\n*** Move to: {new}\n@@\n-secret\n+pwned\n"
            )),
        ),
    ]
}

/// Runs every edit tool against every way out, landing through `sink` (or on disk).
async fn no_edit_tool_leaves_the_root(sink: impl Fn() -> Option<Arc<MemorySink>>) {
    let mut cases = 0;
    for way in WAYS {
        let (existing, new) = targets(way);
        for (tool, args) in calls(existing, new) {
            let memory = sink();
            let (w, out) = setup(way, memory.clone().map(|m| m as Arc<dyn EditSink>));
            let out_before = snapshot(out.path());
            let ws_before = snapshot(&w.root);
            let what = format!("{way:?} / {tool} {args}");
            let e = match w.call(tool, args).await {
                Ok(o) => panic!("{what}: succeeded:\n{}", o.content),
                Err(e) => e,
            };
            assert_eq!(snapshot(out.path()), out_before, "{what}: outside changed");
            assert_eq!(snapshot(&w.root), ws_before, "{what}: workspace changed");
            if let Some(m) = &memory {
                assert!(m.plans().is_empty(), "{what}: a plan reached the sink");
            }
            // "already exists" is fine for a create or move onto the link itself.
            if !e.message.contains("already exists") {
                assert_eq!(e.class, ErrorClass::UnexpectedEnvironment, "{what}: {e:?}");
                assert!(
                    e.message.contains("outside the workspace root")
                        || e.message.contains("hard links"),
                    "{what}: {}",
                    e.message
                );
            }
            cases += 1;
        }
    }
    assert_eq!(cases, 48);
}

#[tokio::test]
async fn no_edit_tool_leaves_the_root_on_disk() {
    no_edit_tool_leaves_the_root(|| None).await;
}

#[tokio::test]
async fn no_edit_tool_leaves_the_root_at_planning() {
    no_edit_tool_leaves_the_root(|| Some(Arc::new(MemorySink::new()))).await;
}

#[tokio::test]
async fn read_tools_do_not_follow_links_out() {
    for way in WAYS {
        let (w, _out) = setup(way, None);
        let (existing, _) = targets(way);
        let e = w.err("read_file", json!({"path": existing})).await;
        assert_eq!(e.class, ErrorClass::UnexpectedEnvironment, "{way:?}: {e:?}");
        assert!(!e.message.contains("secret\n"), "{way:?}: {}", e.message);
        if matches!(way, Way::LinkDir) {
            for tool in ["list_dir", "find_files", "grep"] {
                let args = match tool {
                    "grep" => json!({"pattern": "secret", "path": "linkdir"}),
                    "find_files" => json!({"pattern": "*", "path": "linkdir"}),
                    _ => json!({"path": "linkdir"}),
                };
                let e = w.err(tool, args).await;
                assert_eq!(e.class, ErrorClass::UnexpectedEnvironment, "{tool}: {e:?}");
                assert!(
                    e.message.contains("outside the workspace root"),
                    "{tool}: {e:?}"
                );
            }
            // A search from the root does not descend into the link either.
            let out = w.ok("grep", json!({"pattern": "secret"})).await;
            assert!(!out.contains("linkdir"), "{out}");
        }
    }
}

#[tokio::test]
async fn links_inside_the_root_still_work() {
    let w = ws(&[("real/a.txt", "old\n")]);
    std::os::unix::fs::symlink("real", w.path("alias")).unwrap();
    std::os::unix::fs::symlink("real/a.txt", w.path("a-link.txt")).unwrap();
    let read = w.ok("read_file", json!({"path": "alias/a.txt"})).await;
    assert!(read.contains("old"), "{read}");
    w.ok(
        "str_replace",
        json!({"path": "a-link.txt", "old_string": "old", "new_string": "new"}),
    )
    .await;
    assert_eq!(w.disk("real/a.txt"), "new\n");
    let listed = w.ok("list_dir", json!({"path": "alias"})).await;
    assert!(listed.contains("a.txt"), "{listed}");
}

#[tokio::test]
async fn a_link_planted_by_a_command_does_not_lead_a_write_out() {
    use agentls_sandbox::{Sandbox, SandboxConfig};
    let mut w = ws(&[]);
    w.ctx.sandbox = Some(Arc::new(Sandbox::new(SandboxConfig::new(&w.root)).unwrap()));
    let out = tempfile::Builder::new()
        .prefix("agentls-outside")
        .tempdir_in("/tmp")
        .unwrap();
    let before = snapshot(out.path());
    let cmd = format!("ln -s {} node_modules", out.path().display());
    w.ok("run_command", json!({"command": cmd})).await;
    assert!(
        fs::symlink_metadata(w.path("node_modules"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the command's link is in the workspace"
    );
    let e = w
        .err(
            "write_file",
            json!({"path": "node_modules/x", "content": "pwned\n"}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::UnexpectedEnvironment, "{e:?}");
    assert!(e.message.contains("outside the workspace root"), "{e:?}");
    assert_eq!(snapshot(out.path()), before);
}
