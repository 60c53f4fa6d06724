//! Escape attempts that must fail every time, and the live-buffer view.
//!
//! Network tests only ever aim at a listener this test started on 127.0.0.1; that no
//! route leaves the sandbox is shown by listing its interfaces and routes.

mod common;

use std::fs;
use std::net::TcpListener;
use std::time::Duration;

use agentls_sandbox::{
    CancellationToken, DenialKind, DirtyBuffer, Grant, Limits, RunRequest, Termination,
};
use common::*;

#[tokio::test]
async fn full_isolation_is_available_here() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    // CI runs on the same kind of machine; a missing layer would weaken every test below.
    assert!(sb.capabilities().is_complete(), "{}", sb.capabilities());
    let out = sh(&sb, "echo hi").await;
    assert!(out.success(), "{}", text(&out));
    assert_eq!(out.stdout.to_text(), "hi\n");
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert!(out.changes.is_empty());
}

#[tokio::test]
async fn cannot_reach_a_loopback_listener_of_the_host() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "if command -v bash >/dev/null; then bash -c 'echo hello > /dev/tcp/127.0.0.1/{port}'; \
         else python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'; fi"
    );
    let out = sh(&sb, &script).await;
    assert!(
        !out.success(),
        "connected out of the sandbox: {}",
        text(&out)
    );
    // Nothing arrived at the host's listener.
    assert!(
        listener
            .accept()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock)
    );
}

#[tokio::test]
async fn only_loopback_and_no_routes_inside() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let out = sh(
        &sb,
        "cat /proc/net/dev; echo ROUTES; cat /proc/net/route; cat /proc/net/ipv6_route",
    )
    .await;
    assert!(out.success(), "{}", text(&out));
    let stdout = out.stdout.to_text();
    let (dev, routes) = stdout.split_once("ROUTES\n").unwrap();
    let interfaces: Vec<&str> = dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .collect();
    assert_eq!(interfaces, ["lo"], "{dev}");
    // IPv4: only the header line. IPv6: only loopback entries, if any.
    let mut lines = routes.lines();
    assert!(lines.next().is_some_and(|h| h.starts_with("Iface")));
    for line in lines {
        assert!(
            line.trim_end().ends_with("lo"),
            "a route that is not loopback: {line}"
        );
    }
}

#[tokio::test]
async fn loopback_works_inside_for_tests() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let out = sh(
        &sb,
        "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); \
         c=socket.create_connection(s.getsockname()); print(\"ok\")'",
    )
    .await;
    assert_eq!(out.stdout.to_text(), "ok\n", "{}", text(&out));
}

#[tokio::test]
async fn cannot_write_outside_the_workspace() {
    let ws = workspace(false);
    let outside = workspace(false);
    let sb = sandbox(ws.path());
    let target = outside.path().join("pwned");
    let out = sh(&sb, &format!("echo x > {}", target.display())).await;
    assert!(!out.success());
    assert!(!target.exists());
    assert_eq!(
        out.denial.as_ref().map(|d| d.kind),
        Some(DenialKind::Filesystem),
        "{}",
        text(&out)
    );
    let home = std::env::var("HOME").unwrap();
    let out = sh(
        &sb,
        &format!("touch {home}/agentls-pwned; touch /etc/agentls-pwned"),
    )
    .await;
    assert!(!out.success());
    assert!(!std::path::Path::new(&format!("{home}/agentls-pwned")).exists());
    assert!(!std::path::Path::new("/etc/agentls-pwned").exists());
    assert!(!std::path::Path::new("/dev/shm/agentls-pwned").exists());
    // Run scratch dirs (on the host's /dev/shm) are out of sight.
    let out = sh(&sb, "ls -A /dev/shm | wc -l").await;
    assert_eq!(out.stdout.to_text().trim(), "0", "{}", text(&out));
}

#[tokio::test]
async fn cannot_write_to_git() {
    let ws = workspace(false);
    fs::create_dir(ws.path().join(".git")).unwrap();
    fs::write(ws.path().join(".git/config"), "[core]\n").unwrap();
    let sb = sandbox(ws.path());
    for script in [
        "echo x >> .git/config",
        "touch .git/new",
        "rm .git/config",
        "mv .git gone",
    ] {
        let out = sh(&sb, script).await;
        assert!(!out.success(), "{script} succeeded");
        assert!(out.changes.is_empty(), "{script}: {:?}", out.changes);
    }
    assert_eq!(
        fs::read_to_string(ws.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!ws.path().join(".git/new").exists());
    // Reading .git still works (git status, git diff).
    let out = sh(&sb, "cat .git/config").await;
    assert_eq!(out.stdout.to_text(), "[core]\n");
}

#[tokio::test]
async fn cannot_read_secrets_from_the_environment_or_the_parent() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    assert_eq!(std::env::var("AGENTLS_TEST_API_KEY").unwrap(), SECRET);
    let out = sh(
        &sb,
        "env; cat /proc/$PPID/environ; for f in /proc/[0-9]*/environ; do cat $f; done; \
         cat /proc/1/environ; echo; ls /proc | grep -c '^[0-9]'",
    )
    .await;
    let all = text(&out);
    assert!(!all.contains(SECRET), "secret leaked: {all}");
    assert!(!all.contains("AGENTLS_TEST_API_KEY"));
    // The pid namespace shows only the sandbox's own processes.
    let count: usize = out
        .stdout
        .to_text()
        .lines()
        .last()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(count < 10, "{count} processes visible");
}

#[tokio::test]
async fn fork_bomb_is_contained() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let marker = "agentlsbomb7c1";
    let limits = Limits {
        wall_time: Duration::from_secs(4),
        max_processes: 64,
        ..Limits::default()
    };
    let script = format!("{marker}() {{ {marker} | {marker} & }}; {marker}; sleep 2; echo done");
    let out = run(&sb, RunRequest::new(["bash", "-c", &script]).limits(limits)).await;
    assert!(out.duration < Duration::from_secs(10), "{:?}", out.duration);
    // The process limit bit: forks failed inside.
    let err = out.stderr.to_text();
    assert!(
        err.contains("fork") || err.contains("Resource temporarily unavailable"),
        "{}",
        text(&out)
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(processes_with(marker), Vec::<std::path::PathBuf>::new());
}

#[tokio::test]
async fn process_ignoring_sigterm_is_killed_on_timeout() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let marker = "agentlsstubborn93";
    let script = format!("trap '' TERM INT; setsid sleep 1000 & exec -a {marker} sleep 1000");
    let out = run(
        &sb,
        RunRequest::new(["bash", "-c", &script]).limits(limits(500)),
    )
    .await;
    assert_eq!(out.termination, Termination::TimedOut);
    assert!(out.duration < Duration::from_secs(3), "{:?}", out.duration);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(processes_with(marker).is_empty());
}

#[tokio::test]
async fn background_processes_do_not_outlive_the_command() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let marker = "agentlsleftover42";
    let script = format!("(setsid bash -c 'exec -a {marker} sleep 1000' &) ; echo started");
    let out = run(
        &sb,
        RunRequest::new(["bash", "-c", &script]).limits(limits(5_000)),
    )
    .await;
    assert!(out.success(), "{}", text(&out));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(processes_with(marker).is_empty());
}

#[tokio::test]
async fn hanging_command_times_out_and_cancel_stops_it() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let out = run(&sb, RunRequest::new(["sleep", "1000"]).limits(limits(300))).await;
    assert_eq!(out.termination, Termination::TimedOut);

    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c2.cancel();
    });
    let out = sb
        .run(RunRequest::new(["sleep", "1000"]), &cancel)
        .await
        .unwrap();
    assert_eq!(out.termination, Termination::Cancelled);
    assert!(out.duration < Duration::from_secs(3));
}

#[tokio::test]
async fn output_flood_keeps_head_and_tail() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let limits = Limits {
        wall_time: Duration::from_secs(1),
        output_bytes: 1024,
        ..Limits::default()
    };
    let out = run(
        &sb,
        RunRequest::new(["yes", "flood"]).limits(limits.clone()),
    )
    .await;
    assert_eq!(out.termination, Termination::TimedOut);
    assert_eq!((out.stdout.head.len(), out.stdout.tail.len()), (512, 512));
    assert!(
        out.stdout.total_bytes > 1 << 20,
        "{}",
        out.stdout.total_bytes
    );
    assert!(out.stdout.to_text().contains("bytes omitted"));

    let limits = Limits {
        wall_time: Duration::from_secs(20),
        ..limits
    };
    let script = "echo FIRST; seq 1 200000; echo LAST";
    let out = run(&sb, RunRequest::shell(script).limits(limits)).await;
    assert!(out.success());
    let t = out.stdout.to_text();
    assert!(t.starts_with("FIRST\n") && t.ends_with("LAST\n"), "{t}");
}

#[tokio::test]
async fn symlinks_do_not_lead_out() {
    let ws = workspace(false);
    let outside = workspace(false);
    fs::write(outside.path().join("file"), "outside\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("dirlink")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("file"), ws.path().join("filelink")).unwrap();
    let sb = sandbox(ws.path());
    let out = sh(&sb, "echo x > dirlink/pwned").await;
    assert!(!out.success());
    let out = sh(&sb, "echo x >> filelink").await;
    assert!(!out.success());
    let out = sh(
        &sb,
        "ln -s / root; echo x > root/tmp/agentls-pwned-through-link",
    )
    .await;
    assert!(!out.success() || !std::path::Path::new("/tmp/agentls-pwned-through-link").exists());
    assert!(!outside.path().join("pwned").exists());
    assert_eq!(
        fs::read_to_string(outside.path().join("file")).unwrap(),
        "outside\n"
    );
    assert!(!std::path::Path::new("/tmp/agentls-pwned-through-link").exists());
}

#[tokio::test]
async fn memory_limit_holds() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let limits = Limits {
        memory_bytes: Some(256 << 20),
        ..limits(20_000)
    };
    let out = run(
        &sb,
        RunRequest::new([
            "python3",
            "-c",
            "x = bytearray(1 << 30); print('allocated')",
        ])
        .limits(limits),
    )
    .await;
    assert!(!out.success());
    assert!(!out.stdout.to_text().contains("allocated"));
    assert!(
        out.stderr.to_text().contains("MemoryError"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn private_tmp_is_private() {
    let ws = workspace(true);
    let sb = sandbox(ws.path());
    let out = sh(
        &sb,
        "ls -A /tmp | wc -l; echo x > /tmp/agentls-private-tmp-file; ls /tmp",
    )
    .await;
    assert!(out.success(), "{}", text(&out));
    assert!(!std::path::Path::new("/tmp/agentls-private-tmp-file").exists());
    // The workspace under /tmp was re-attached, and the command sees it.
    let out = sh(&sb, "pwd; touch made-here").await;
    assert_eq!(
        out.stdout.to_text().trim(),
        ws.path().canonicalize().unwrap().to_str().unwrap()
    );
    assert!(
        out.changes
            .get(&ws.path().canonicalize().unwrap().join("made-here"))
            .is_some()
    );
}

#[tokio::test]
async fn build_output_writes_through() {
    for under_tmp in [false, true] {
        let ws = workspace(under_tmp);
        let root = ws.path().canonicalize().unwrap();
        fs::create_dir(root.join("target")).unwrap();
        fs::write(root.join(".gitignore"), "dist/\n").unwrap();
        let sb = sandbox(&root);
        let out = sh(&sb, "mkdir -p target/debug && echo bin > target/debug/app && mkdir dist && echo js > dist/app.js").await;
        assert!(out.success(), "{}", text(&out));
        // target/ existed: bound read-write; dist/ was created: copied back after the run.
        assert_eq!(
            fs::read_to_string(root.join("target/debug/app")).unwrap(),
            "bin\n"
        );
        assert_eq!(
            fs::read_to_string(root.join("dist/app.js")).unwrap(),
            "js\n"
        );
        assert!(out.changes.changes.is_empty(), "{:?}", out.changes);
        assert_eq!(out.changes.written_through, vec![root.join("dist")]);
        // Incremental: the next run sees the earlier output.
        let out = sh(&sb, "cat target/debug/app dist/app.js").await;
        assert_eq!(out.stdout.to_text(), "bin\njs\n");
    }
}

#[tokio::test]
async fn live_buffers_are_seen_and_changes_come_back() {
    for under_tmp in [false, true] {
        let ws = workspace(under_tmp);
        let root = ws.path().canonicalize().unwrap();
        fs::create_dir(root.join("src")).unwrap();
        fs::write(root.join("src/lib.rs"), "disk\n").unwrap();
        fs::write(root.join("old.txt"), "old\n").unwrap();
        fs::write(root.join("keep.txt"), "keep\n").unwrap();
        let sb = sandbox(&root);
        let buffer = DirtyBuffer::new(root.join("src/lib.rs"), "buffer\n");
        let script = "cat src/lib.rs; echo edited >> src/lib.rs; echo new > src/new.rs; rm old.txt";
        let out = run(
            &sb,
            RunRequest::shell(script)
                .buffers([buffer])
                .limits(limits(20_000)),
        )
        .await;
        assert!(out.success(), "{}", text(&out));
        assert_eq!(out.stdout.to_text(), "buffer\n");
        let c = &out.changes;
        assert_eq!(c.changes.len(), 3, "{c:?}");
        let lib = c.get(&root.join("src/lib.rs")).unwrap();
        assert_eq!(lib.old.as_deref(), Some("buffer\n"));
        assert_eq!(lib.new.as_deref(), Some("buffer\nedited\n"));
        assert!(!lib.created && !lib.deleted);
        let new = c.get(&root.join("src/new.rs")).unwrap();
        assert!(new.created && new.new.as_deref() == Some("new\n"));
        let old = c.get(&root.join("old.txt")).unwrap();
        assert!(old.deleted && old.old.as_deref() == Some("old\n") && old.new.is_none());
        // Nothing landed on disk.
        assert_eq!(
            fs::read_to_string(root.join("src/lib.rs")).unwrap(),
            "disk\n"
        );
        assert!(!root.join("src/new.rs").exists());
        assert_eq!(fs::read_to_string(root.join("old.txt")).unwrap(), "old\n");
    }
}

#[tokio::test]
async fn removed_and_recreated_directory_reports_deletions() {
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    fs::create_dir(root.join("d")).unwrap();
    fs::write(root.join("d/a"), "a\n").unwrap();
    fs::write(root.join("d/b"), "b\n").unwrap();
    let sb = sandbox(&root);
    let out = sh(&sb, "rm -r d && mkdir d && echo b2 > d/b").await;
    assert!(out.success(), "{}", text(&out));
    let a = out.changes.get(&root.join("d/a")).unwrap();
    assert!(a.deleted);
    let b = out.changes.get(&root.join("d/b")).unwrap();
    assert_eq!(
        (b.old.as_deref(), b.new.as_deref()),
        (Some("b\n"), Some("b2\n"))
    );
}

#[tokio::test]
async fn network_denial_is_hinted_and_grant_lifts_it() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script =
        format!("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'");
    let out = sh(&sb, &script).await;
    assert!(!out.success());
    assert_eq!(
        out.denial.as_ref().map(|d| d.kind),
        Some(DenialKind::Network),
        "{}",
        text(&out)
    );
    let out2 = run(
        &sb,
        RunRequest::shell(&script).grant(Grant {
            network: true,
            writable: vec![],
        }),
    )
    .await;
    assert!(out2.success(), "{}", text(&out2));
    assert!(out2.warnings.iter().any(|w| w.contains("network granted")));
}

#[tokio::test]
async fn bad_requests_are_refused() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let cancel = CancellationToken::new();
    assert!(
        sb.run(RunRequest::new(Vec::<String>::new()), &cancel)
            .await
            .is_err()
    );
    assert!(
        sb.run(RunRequest::new(["true"]).cwd("/etc"), &cancel)
            .await
            .is_err()
    );
    assert!(
        sb.run(RunRequest::new(["true"]).cwd("../.."), &cancel)
            .await
            .is_err()
    );
    let err = sb
        .run(RunRequest::new(["/no/such/program"]), &cancel)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("/no/such/program"), "{err}");
}

#[tokio::test]
async fn first_build_output_goes_to_disk_not_memory() {
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    fs::write(root.join("Cargo.toml"), "[package]\n").unwrap();
    let sb = sandbox(&root);
    let out = sh(
        &sb,
        "mkdir -p target/debug && echo o > target/debug/x && echo lock > Cargo.lock",
    )
    .await;
    assert!(out.success(), "{}", text(&out));
    // target/ was created before the run (Cargo.toml beside it) and bound read-write.
    assert_eq!(
        fs::read_to_string(root.join("target/debug/x")).unwrap(),
        "o\n"
    );
    assert!(out.changes.written_through.is_empty());
    // Cargo.lock is a source file: it comes back as a change, not on disk.
    assert!(
        out.changes
            .get(&root.join("Cargo.lock"))
            .is_some_and(|c| c.created)
    );
    assert!(!root.join("Cargo.lock").exists());
}

#[tokio::test]
async fn runs_join_one_prepared_network_namespace_not_the_hosts() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let host = fs::read_link("/proc/self/ns/net").unwrap();
    // Both runs are alive at once: a namespace's inode number can be reused once it is
    // gone, so only overlapping runs prove that each has its own mount namespace.
    let script = "readlink /proc/self/ns/net /proc/self/ns/mnt; sleep 0.5";
    let (a, b) = tokio::join!(sh(&sb, script), sh(&sb, script));
    let (a, b) = (a.stdout.to_text(), b.stdout.to_text());
    let (net_a, mnt_a) = a.split_once('\n').unwrap();
    let (net_b, mnt_b) = b.split_once('\n').unwrap();
    assert_eq!(net_a, net_b, "the prepared namespace is reused");
    assert_ne!(net_a, host.to_str().unwrap());
    assert_ne!(mnt_a, mnt_b, "mounts are per run");
    // A network grant runs outside it.
    let c = run(
        &sb,
        RunRequest::shell("readlink /proc/self/ns/net").grant(Grant {
            network: true,
            writable: vec![],
        }),
    )
    .await;
    assert_eq!(c.stdout.to_text().trim(), host.to_str().unwrap());
}

#[tokio::test]
async fn cargo_test_sees_the_unsaved_buffer() {
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    fs::create_dir(root.join("src")).unwrap();
    fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"live\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    let test = "#[test]\nfn two() { assert_eq!(super::f(), 2); }\n";
    fs::write(
        root.join("src/lib.rs"),
        format!("pub fn f() -> i32 {{ 1 }}\n#[cfg(test)]\nmod t {{\n{test}}}\n"),
    )
    .unwrap();
    let sb = sandbox(&root);
    let req = || RunRequest::new(["cargo", "test", "--offline", "-q"]).limits(limits(120_000));
    // On disk, f() is 1: the test fails.
    let out = run(&sb, req()).await;
    assert!(!out.success(), "{}", text(&out));
    // The editor shows f() returning 2: the same command passes, against the buffer.
    let buffer = DirtyBuffer::new(
        root.join("src/lib.rs"),
        format!("pub fn f() -> i32 {{ 2 }}\n#[cfg(test)]\nmod t {{\n{test}}}\n"),
    );
    let out = run(&sb, req().buffers([buffer])).await;
    assert!(out.success(), "{}", text(&out));
    // Build output went to disk; Cargo.lock comes back as a change; sources untouched.
    assert!(root.join("target/debug").is_dir());
    assert!(
        out.changes
            .get(&root.join("Cargo.lock"))
            .is_some_and(|c| c.created)
    );
    assert!(
        fs::read_to_string(root.join("src/lib.rs"))
            .unwrap()
            .contains("{ 1 }")
    );
}

/// An outside directory with a file in it, to check it is unchanged afterwards.
#[expect(clippy::unwrap_used, reason = "test setup: a failure is a failed test")]
fn outside_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::write(root.join("victim"), "precious\n").unwrap();
    (dir, root)
}

#[tokio::test]
async fn a_link_planted_by_one_command_is_not_written_through_by_the_next() {
    let (_keep, outside) = outside_dir();
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    let sb = sandbox(&root);
    let victim = outside.join("victim");
    let out = sh(&sb, &format!("ln -s {} out.log", victim.display())).await;
    assert!(out.success(), "{}", text(&out));
    let out = sh(&sb, "rm out.log; echo X > out.log").await;
    assert!(out.success(), "{}", text(&out));
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    // The file the command made is there, in place of the link.
    let meta = fs::symlink_metadata(root.join("out.log")).unwrap();
    assert!(meta.is_file(), "{meta:?}");
    assert_eq!(fs::read_to_string(root.join("out.log")).unwrap(), "X\n");
}

#[tokio::test]
async fn a_linked_directory_replaced_by_a_real_one_leaves_the_outside_alone() {
    let (_keep, outside) = outside_dir();
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    fs::write(root.join(".gitignore"), "linkdir\n").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("linkdir")).unwrap();
    let sb = sandbox(&root);
    let out = sh(
        &sb,
        "rm linkdir && mkdir linkdir && echo new > linkdir/made",
    )
    .await;
    assert!(out.success(), "{}", text(&out));
    // Nothing created, nothing deleted outside.
    let mut names: Vec<_> = fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["victim"]);
    assert_eq!(
        fs::read_to_string(outside.join("victim")).unwrap(),
        "precious\n"
    );
}

#[tokio::test]
async fn a_hard_link_in_a_write_through_path_keeps_its_outside_twin() {
    let (_keep, outside) = outside_dir();
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    let sb = sandbox(&root);
    // The command makes a new ignored file; on disk a hard link to an outside file
    // stands where it lands.
    fs::hard_link(outside.join("victim"), root.join("twin.log")).unwrap();
    let out = sh(&sb, "rm -f twin.log; echo X > twin.log").await;
    assert!(out.success(), "{}", text(&out));
    assert_eq!(
        fs::read_to_string(outside.join("victim")).unwrap(),
        "precious\n"
    );
    assert_eq!(fs::read_to_string(root.join("twin.log")).unwrap(), "X\n");
}

#[tokio::test]
async fn a_planted_target_link_is_not_bound_and_commands_still_start() {
    let (_keep, outside) = outside_dir();
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    fs::write(root.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("target")).unwrap();
    let sb = sandbox(&root);
    let out = sh(&sb, "echo X > target/victim; echo Y > target/new; echo ok").await;
    // Whatever the command did stays off the outside directory.
    assert!(out.stdout.to_text().contains("ok"), "{}", text(&out));
    assert_eq!(
        fs::read_to_string(outside.join("victim")).unwrap(),
        "precious\n"
    );
    assert!(!outside.join("new").exists());
    // And a later command starts.
    let out = sh(&sb, "echo again").await;
    assert!(out.success(), "{}", text(&out));
}

#[tokio::test]
async fn host_terminals_are_out_of_reach() {
    // A pty of the host, as an editor's terminal would be.
    // SAFETY: plain libc calls on a descriptor this test owns.
    let (master, name) = unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_NONBLOCK);
        assert!(fd >= 0);
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let name = std::ffi::CStr::from_ptr(libc::ptsname(fd))
            .to_string_lossy()
            .into_owned();
        (fd, name)
    };
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let out = sh(&sb, &format!("echo INJECTED > {name}")).await;
    assert!(!out.success(), "wrote to the host's {name}: {}", text(&out));
    let mut buf = [0u8; 64];
    // SAFETY: reading into a live buffer from our descriptor.
    let n = unsafe { libc::read(master, buf.as_mut_ptr().cast(), buf.len()) };
    assert!(
        n <= 0,
        "the host terminal received {:?}",
        &buf[..n as usize]
    );
    // SAFETY: closing our descriptor.
    unsafe { libc::close(master) };
}

#[tokio::test]
async fn host_sockets_under_run_are_hidden() {
    let dir = std::path::PathBuf::from(format!("/run/agentls-escape-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("docker.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let out = sh(
        &sb,
        &format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); s.sendall(b'GET /')\"",
            path.display()
        ),
    )
    .await;
    let accepted = listener.accept();
    let _ = fs::remove_dir_all(&dir);
    assert!(!out.success(), "connected to a host socket: {}", text(&out));
    assert!(
        accepted.is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "the host socket saw a connection"
    );
}

#[tokio::test]
async fn private_tmp_and_shm_are_sized() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let out = sh(&sb, "df -k /tmp /dev/shm | tail -n +2").await;
    assert!(out.success(), "{}", text(&out));
    let sizes: Vec<u64> = out
        .stdout
        .to_text()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect();
    assert_eq!(sizes.len(), 2, "{}", text(&out));
    assert!(sizes[0] <= 1024 * 1024, "/tmp is {} KiB", sizes[0]);
    assert!(sizes[1] <= 256 * 1024, "/dev/shm is {} KiB", sizes[1]);
}

/// Set in the process the next test starts as the runner it kills.
const RUNNER_ENV: &str = "AGENTLS_ESCAPE_RUNNER_WS";

/// Not a test of its own: the runner process `a_killed_runner_takes_its_command_along`
/// starts (a no-op when run directly).
#[tokio::test]
async fn runner_for_the_killed_runner_test() {
    let Some(ws) = std::env::var_os(RUNNER_ENV) else {
        return;
    };
    let sb = sandbox(std::path::Path::new(&ws));
    let _ = sh(
        &sb,
        "echo started > target/started; sleep 30.4242; echo late > target/late",
    )
    .await;
}

#[tokio::test]
async fn a_killed_runner_takes_its_command_along() {
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    fs::write(root.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    fs::create_dir(root.join("target")).unwrap();
    let mut runner = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "runner_for_the_killed_runner_test",
            "--nocapture",
        ])
        .env(RUNNER_ENV, &root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !root.join("target/started").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !processes_with("30.4242").is_empty(),
        "the command is not running"
    );
    // SIGKILL: the runner gets no chance to clean up.
    runner.kill().unwrap();
    runner.wait().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while !processes_with("30.4242").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command outlived its killed runner: {:?}",
            processes_with("30.4242")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!root.join("target/late").exists());
}

#[tokio::test]
async fn a_failing_command_in_a_pipeline_fails_the_run() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let out = sh(&sb, "false | tail -1").await;
    assert!(
        !out.success(),
        "a failing pipeline read as success: {}",
        text(&out)
    );
    let out = sh(&sb, "echo ok | tail -1").await;
    assert!(out.success(), "{}", text(&out));
}

/// Directories named `name` (a run's cgroup) anywhere under /sys/fs/cgroup.
fn cgroups_named(name: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![std::path::PathBuf::from("/sys/fs/cgroup")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if e.file_name().to_string_lossy() == name {
                    found.push(e.path().display().to_string());
                } else if stack.len() < 10_000 {
                    stack.push(e.path());
                }
            }
        }
    }
    found
}

/// The run's cgroup as the command saw it (`group=<path>` in its output): its name.
fn run_group(stdout: &str) -> String {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("group="))
        .unwrap_or_else(|| panic!("no group= line: {stdout}"));
    let name = line.rsplit('/').next().unwrap_or_default().to_owned();
    assert!(name.starts_with("agentls-run-"), "{stdout}");
    name
}

/// Prints the command's cgroup in `controller`'s hierarchy as `group=<path>`.
fn print_group(controller: &str) -> String {
    format!(
        "echo \"group=$(grep -E '^[0-9]+:([^:]*,)?{controller}(,[^:]*)?:' /proc/self/cgroup | cut -d: -f3)\""
    )
}

#[tokio::test]
async fn the_total_memory_of_a_run_is_capped() {
    // Three processes of 400 MiB each, under a 768 MiB cap for the run, with a per-process
    // limit each of them would pass on its own. Each holds its memory for 8 s, so all
    // three overlap even when a loaded machine starts them seconds apart.
    assert!(
        agentls_sandbox::cgroup::support().is_some(),
        "no writable cgroup on this machine (CI runs on one that has them)"
    );
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let limits = Limits {
        memory_bytes: Some(1 << 30),
        total_memory_bytes: Some(768 << 20),
        ..limits(60_000)
    };
    let hold = "import time; b = b'x' * (400 << 20); time.sleep(8); print('survived', flush=True)";
    let script = format!(
        "{}; for i in 1 2 3; do python3 -c \"{hold}\" & done; wait; echo finished",
        print_group("memory")
    );
    let out = run(&sb, RunRequest::shell(&script).limits(limits)).await;
    // Each may reach its 400 MiB before another starts; what the cap forbids is all
    // three holding it together to the end.
    let survived = out.stdout.to_text().matches("survived").count();
    assert!(
        survived < 3,
        "all three held 400 MiB together under a 768 MiB cap: {}",
        text(&out)
    );
    assert!(
        out.warnings.iter().any(|w| w.contains("memory cap")),
        "{:?}",
        out.warnings
    );
    let denial = out.denial.as_ref().expect("a denial hint");
    assert_eq!(denial.kind, DenialKind::Resources, "{}", denial.message);
    let group = run_group(&out.stdout.to_text());
    assert!(
        cgroups_named(&group).is_empty(),
        "{:?}",
        cgroups_named(&group)
    );
}

#[tokio::test]
async fn a_cpu_quota_is_set_on_the_run_and_seen_from_inside() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let limits = Limits {
        cpu_millicores: Some(500),
        ..limits(20_000)
    };
    // The group the command is in, and its quota read back through /sys.
    let script = format!(
        "{}\np=$(grep -E '^[0-9]+:([^:]*,)?cpu(,[^:]*)?:' /proc/self/cgroup | cut -d: -f3)\n\
         if [ -f /sys/fs/cgroup/cpu$p/cpu.cfs_quota_us ]; then cat /sys/fs/cgroup/cpu$p/cpu.cfs_quota_us; \
         else cat /sys/fs/cgroup$p/cpu.max; fi",
        print_group("cpu")
    );
    let out = run(&sb, RunRequest::shell(&script).limits(limits)).await;
    assert!(out.success(), "{}", text(&out));
    let stdout = out.stdout.to_text();
    assert!(
        stdout.contains("\n50000\n") || stdout.contains("\n50000 100000\n"),
        "{stdout}"
    );
    let group = run_group(&stdout);
    assert!(
        cgroups_named(&group).is_empty(),
        "{:?}",
        cgroups_named(&group)
    );
}

#[tokio::test]
async fn a_process_that_leaves_every_group_dies_with_the_run() {
    // Without a pid namespace only the cgroup still holds a daemonised process.
    let ws = workspace(false);
    let mut config = agentls_sandbox::SandboxConfig::new(ws.path());
    config.pid_namespace = false;
    let sb = agentls_sandbox::Sandbox::new(config).unwrap();
    // A sleep told apart by its argument (GNU sleep takes fractions).
    let marker = format!("sleep 3000.{}", std::process::id());
    let script = format!("setsid {marker} >/dev/null 2>&1 & sleep 0.2; echo started");
    let out = run(&sb, RunRequest::shell(&script).limits(limits(20_000))).await;
    assert!(out.success(), "{}", text(&out));
    let alive = std::process::Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        alive.stdout.is_empty(),
        "still running after the run: {}",
        String::from_utf8_lossy(&alive.stdout)
    );
}

#[tokio::test]
async fn filling_the_workspace_layer_counts_against_the_runs_memory_cap() {
    // The overlay's writable layer lives on tmpfs: its pages are the run's memory, so a
    // disk fill inside cannot fill the host's memory past the cap.
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let limits = Limits {
        total_memory_bytes: Some(384 << 20),
        ..limits(60_000)
    };
    let out = run(
        &sb,
        RunRequest::shell("dd if=/dev/zero of=big.bin bs=1M count=800 2>&1; echo dd=$?")
            .limits(limits),
    )
    .await;
    let all = text(&out);
    assert!(
        !all.contains("dd=0"),
        "800 MiB written under a 384 MiB cap: {all}"
    );
    assert!(!ws.path().join("big.bin").exists());
}

#[tokio::test]
async fn dev_holds_only_the_sandboxs_own_devices() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let out = sh(
        &sb,
        "ls -A /dev | sort | tr '\\n' ' '; echo; echo hi > /dev/null && head -c 4 /dev/urandom | wc -c; \
         ls /dev/pts | tr '\\n' ' '; echo; test -e /dev/kmsg || echo no-kmsg",
    )
    .await;
    assert!(out.success(), "{}", text(&out));
    let stdout = out.stdout.to_text();
    let mut lines = stdout.lines();
    let listed: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let allowed = [
        "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout", "tty",
        "urandom", "zero",
    ];
    for name in &listed {
        assert!(
            allowed.contains(name),
            "host device {name} in /dev: {listed:?}"
        );
    }
    for needed in ["null", "zero", "urandom", "shm", "fd"] {
        assert!(listed.contains(&needed), "{needed} missing: {listed:?}");
    }
    assert_eq!(lines.next(), Some("4"), "{stdout}");
    // Its own devpts: none of the host's terminals are listed.
    let pts = lines.next().unwrap_or_default();
    assert!(
        pts.split_whitespace().all(|p| p == "ptmx"),
        "host terminals visible: {pts}"
    );
    assert!(stdout.contains("no-kmsg"), "{stdout}");
}

/// A listening Unix socket at `path`, and whether anything connected to it.
struct HostSocket {
    listener: std::os::unix::net::UnixListener,
    path: std::path::PathBuf,
}

impl HostSocket {
    #[expect(clippy::unwrap_used, reason = "test setup: a failure is a failed test")]
    fn bind(path: std::path::PathBuf) -> Self {
        let _ = fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        Self { listener, path }
    }

    fn was_reached(&self) -> bool {
        !self
            .listener
            .accept()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// A script that connects and writes, printing `reached <path>` when it could.
    fn connect_script(&self) -> String {
        format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{0}'); s.sendall(b'GET /'); print('reached {0}')\"; ",
            self.path.display()
        )
    }
}

impl Drop for HostSocket {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

#[tokio::test]
async fn host_sockets_outside_run_and_tmp_are_out_of_reach() {
    // Where a docker or ssh-agent socket, a database's, or a dev server's would be:
    // /var/tmp, the home directory, a folder beside the workspace.
    let pid = std::process::id();
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap());
    let beside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let sockets = [
        HostSocket::bind(format!("/var/tmp/agentls-escape-{pid}.sock").into()),
        HostSocket::bind(home.join(format!(".agentls-escape-{pid}.sock"))),
        HostSocket::bind(beside.path().join("db.sock")),
    ];
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let script: String = sockets.iter().map(HostSocket::connect_script).collect();
    let out = sh(&sb, &format!("{script} true")).await;
    let all = text(&out);
    for socket in &sockets {
        assert!(
            !socket.was_reached() && !all.contains(&format!("reached {}", socket.path.display())),
            "connected to the host's {}: {all}",
            socket.path.display()
        );
    }
    // The home directory is there (empty of the host's files), and /var/tmp is the
    // run's own /tmp.
    let out = sh(&sb, "cd ~ && echo x > /var/tmp/mine && cat /tmp/mine").await;
    assert_eq!(out.stdout.to_text(), "x\n", "{}", text(&out));
}

#[tokio::test]
async fn a_socket_in_a_write_through_folder_is_out_of_reach() {
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    fs::write(root.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    fs::create_dir(root.join("target")).unwrap();
    let socket = HostSocket::bind(root.join("target/app.sock"));
    let sb = sandbox(&root);
    let out = sh(
        &sb,
        &format!("{} echo built > target/out", socket.connect_script()),
    )
    .await;
    assert!(!socket.was_reached(), "connected: {}", text(&out));
    assert!(
        out.warnings.iter().any(|w| w.contains("socket")),
        "{:?}",
        out.warnings
    );
    // Not bound this run, its writes still reach the disk, after the run.
    assert_eq!(
        fs::read_to_string(root.join("target/out")).unwrap(),
        "built\n"
    );
}

#[tokio::test]
async fn a_hard_link_in_target_to_an_outside_file_is_not_written_through() {
    // On the same filesystem as the workspace, as a hard link must be.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let victim = outside.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    fs::write(root.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    fs::create_dir(root.join("target")).unwrap();
    fs::hard_link(&victim, root.join("target/x")).unwrap();
    // Links between files inside target/ (cargo's own) stay as they are.
    fs::write(root.join("target/a"), "a\n").unwrap();
    fs::hard_link(root.join("target/a"), root.join("target/b")).unwrap();
    let sb = sandbox(&root);
    let out = sh(&sb, "echo pwned >> target/x").await;
    assert!(out.success(), "{}", text(&out));
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        fs::read_to_string(root.join("target/x")).unwrap(),
        "precious\npwned\n"
    );
    assert!(
        out.warnings.iter().any(|w| w.contains("hard link")),
        "{:?}",
        out.warnings
    );
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (
        fs::metadata(root.join("target/a")).unwrap(),
        fs::metadata(root.join("target/b")).unwrap(),
    );
    assert_eq!((a.ino(), a.nlink()), (b.ino(), 2));
}

#[tokio::test]
async fn a_planted_git_hook_is_dropped_and_reported() {
    // A workspace without .git: nothing is bound read-only there.
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    let sb = sandbox(&root);
    let out = sh(
        &sb,
        "mkdir -p .git/hooks sub/.hg && printf '#!/bin/sh\\ncurl evil\\n' > .git/hooks/pre-commit \
         && chmod +x .git/hooks/pre-commit && echo '[hooks]' > sub/.hg/hgrc && echo ok > kept.txt",
    )
    .await;
    assert!(out.success(), "{}", text(&out));
    let paths: Vec<_> = out.changes.changes.iter().map(|c| c.path.clone()).collect();
    assert_eq!(paths, [root.join("kept.txt")]);
    let dropped: Vec<_> = out.changes.dropped.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(dropped, [root.join(".git"), root.join("sub/.hg")]);
    // The model is told, in the warnings every result carries.
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains(".git") && w.contains("version-control")),
        "{:?}",
        out.warnings
    );
    assert!(!root.join(".git").exists());
}

#[tokio::test]
async fn without_a_cgroup_the_runs_total_memory_is_still_capped() {
    // The supervisor's cap: three processes of 400 MiB under a 768 MiB cap, each within
    // its per-process limit, as in `the_total_memory_of_a_run_is_capped`.
    let ws = workspace(false);
    let caps = reduced(|c| c.memory_cap.available = false);
    let sb = agentls_sandbox::Sandbox::with_capabilities(
        agentls_sandbox::SandboxConfig::new(ws.path()),
        caps,
    )
    .unwrap();
    let limits = Limits {
        memory_bytes: Some(1 << 30),
        total_memory_bytes: Some(768 << 20),
        ..limits(60_000)
    };
    let hold = "import time; b = bytearray(400 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(8); print('survived', flush=True)";
    let script = format!(
        "for i in 1 2 3; do python3 -c \"{hold}\" & done; wait; echo finished; {}",
        print_group("memory")
    );
    let out = run(&sb, RunRequest::shell(&script).limits(limits.clone())).await;
    let survived = out.stdout.to_text().matches("survived").count();
    assert!(
        survived < 3,
        "all three held 400 MiB together under a 768 MiB cap: {}",
        text(&out)
    );
    assert!(
        out.warnings.iter().any(|w| w.contains("memory cap")),
        "{:?}",
        out.warnings
    );
    let denial = out.denial.as_ref().expect("a denial hint");
    assert_eq!(denial.kind, DenialKind::Resources, "{}", denial.message);
    // /tmp is memory too: filling it past the cap stops the run.
    let limits = Limits {
        total_memory_bytes: Some(384 << 20),
        ..limits
    };
    let out = run(
        &sb,
        RunRequest::shell("dd if=/dev/zero of=/tmp/big bs=1M count=800 2>&1; echo dd=$?")
            .limits(limits),
    )
    .await;
    assert!(!text(&out).contains("dd=0"), "{}", text(&out));
    assert!(
        out.warnings.iter().any(|w| w.contains("memory cap")),
        "{:?}",
        out.warnings
    );
}
