//! Runs every case of `fixtures/edits/` through [`agentls_edit::apply_to_dir`], the
//! function behind `agentls apply-patch` and `agentls edit`. The same corpus runs through
//! the built binary in `tests/e2e/edit_cli.rs`; both use one runner
//! (`agentls_testkit::edit_corpus`).

use std::path::Path;

use agentls_edit::{Format, apply_to_dir};
use agentls_testkit::edit_corpus;

fn apply(root: &Path, format: &str, edit: &str) -> Result<(), String> {
    let format: Format = format.parse().map_err(|e| format!("{e}"))?;
    apply_to_dir(root, format, edit, None)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[test]
fn conformance_corpus() {
    if let Err(failures) = edit_corpus::check_all(40, &apply) {
        panic!("{failures}");
    }
}
