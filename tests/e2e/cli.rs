//! The command line: `--help` everywhere, `doctor`.

use std::process::Command;

use crate::support::bin;

fn run(args: &[&str], envs: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(bin())
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["doctor", "--help"],
        &["bench", "--help"],
        &["bench", "index", "--help"],
        &["apply-patch", "--help"],
        &["edit", "--help"],
    ] {
        let (ok, stdout, _) = run(args, &[]);
        assert!(ok, "{args:?}");
        assert!(stdout.contains("Usage: agentls"), "{args:?}: {stdout}");
    }
    let (ok, _, stderr) = run(&["no-such-command"], &[]);
    assert!(!ok);
    assert!(stderr.contains("unrecognized subcommand"), "{stderr}");
}

#[test]
fn doctor_reports_merged_configuration_and_problems() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    std::fs::write(
        &user,
        "[files]\nmax_bytes = 100\n[completion]\nmodel = \"fim\"\nlanguages = { markdown = false }\n\
         [models.fim]\nwire = \"openai_chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nthread = 2\n\
         [mcp.servers.x]\ncomand = \"x\"\n",
    )
    .unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(
        ws.join("agentls.toml"),
        "[files]\nmax_bytes = 200\ncolour = 1\n",
    )
    .unwrap();
    let envs = [("AGENTLS_CONFIG", user.to_str().unwrap())];
    let (ok, stdout, stderr) = run(&["doctor", "--workspace", ws.to_str().unwrap()], &envs);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("user file"), "{stdout}");
    assert!(stdout.contains("(found)"), "{stdout}");
    // The workspace file wins over the user file, and the unknown key is reported.
    assert!(stdout.contains("max_bytes = 200"), "{stdout}");
    assert!(
        stdout.contains("unknown setting `files.colour`"),
        "{stdout}"
    );
    // Every table is typed: a key no type reads is named by its path, inside a model's
    // or an MCP server's table too.
    for key in ["models.fim.thread", "mcp.servers.x.comand"] {
        assert!(
            stdout.contains(&format!("unknown setting `{key}` ignored")),
            "{key}: {stdout}"
        );
    }
    // Which editor settings give exact edits.
    assert!(stdout.contains("debounce_text_changes = 0"), "{stdout}");
    // Code completion: which model answers, through which endpoint, at what cost.
    assert!(stdout.contains("  on; markdown off\n"), "{stdout}");
    assert!(
        stdout.contains("model            fim: http://127.0.0.1:9/v1/completions"),
        "{stdout}"
    );
    assert!(stdout.contains("a typed request waits 150 ms"), "{stdout}");
    // The sandbox's limits.
    assert!(stdout.contains("sandbox limits"), "{stdout}");
    assert!(stdout.contains("1 GiB at most"), "{stdout}");
}

#[test]
fn a_reader_that_goes_away_is_not_an_error() {
    // As in `agentls doctor | head -1`: stdout closes before the command writes.
    let mut child = Command::new(bin())
        .arg("doctor")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
