//! Fuzzes the apply_patch and search/replace parsers, then plans whatever parses against
//! a small in-memory workspace so the matcher sees arbitrary hunks too. Any panic is a bug.

#![no_main]

use std::path::Path;

use agentls_edit::{Format, Planner, Source, SourceError, apply_edits, parse};
use libfuzzer_sys::fuzz_target;

const FILE: &str = "fn main() {\n    let x = 1;\r\n\tprintln!(\"{}\", x);\n    // \u{201C}quoted\u{201D} \u{2014} 😀\n}\n\n...\n}";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let files = |p: &Path| {
        if p.starts_with("/ws") && p.extension().is_some_and(|e| e == "rs") {
            Ok(Source {
                rope: FILE.into(),
                version: Some(1),
            })
        } else {
            Err(SourceError::NotFound)
        }
    };
    for format in [Format::ApplyPatch, Format::SearchReplace] {
        let Ok(ops) = parse(format, text) else {
            continue;
        };
        if let Ok(plan) = Planner::new("/ws", &files).plan(&ops) {
            for change in &plan.changes {
                if let agentls_edit::FileChange::Edit(t) = change {
                    // The edits must reproduce the planned text exactly.
                    assert_eq!(apply_edits(&t.base, &t.edits).to_string(), t.new_text);
                }
            }
        }
    }
});
