//! Degraded kernels: every missing layer is a warning in each result, or a refusal.

mod common;

use std::fs;

use agentls_sandbox::{
    DegradedMode, DirtyBuffer, RunRequest, Sandbox, SandboxConfig, SandboxError,
};
use common::*;

#[tokio::test]
async fn refuse_mode_refuses_an_incomplete_sandbox() {
    let ws = workspace(false);
    let caps = reduced(|c| {
        c.landlock.available = false;
        c.landlock_abi = None;
    });
    let mut config = SandboxConfig::new(ws.path());
    config.degraded = DegradedMode::Refuse;
    let err = Sandbox::with_capabilities(config, caps).unwrap_err();
    assert!(
        matches!(err, SandboxError::Unavailable(ref m) if m.contains("Landlock")),
        "{err}"
    );
    assert!(caps.to_string().contains("landlock") && caps.to_string().contains("MISSING"));
}

#[tokio::test]
async fn without_overlay_the_run_warns_and_writes_land_on_disk() {
    let ws = workspace(false);
    let root = ws.path().canonicalize().unwrap();
    fs::write(root.join("a.txt"), "disk\n").unwrap();
    let caps = reduced(|c| c.overlayfs.available = false);
    let sb = Sandbox::with_capabilities(SandboxConfig::new(&root), caps).unwrap();
    let req = RunRequest::shell("cat a.txt; echo x > b.txt")
        .buffers([DirtyBuffer::new(root.join("a.txt"), "buffer\n")])
        .limits(limits(20_000));
    let out = run(&sb, req).await;
    assert!(out.success(), "{}", text(&out));
    // Honest about it: the disk was shown and written, and the result says so.
    assert_eq!(out.stdout.to_text(), "disk\n");
    assert!(
        out.warnings.iter().any(|w| w.contains("no overlayfs")),
        "{:?}",
        out.warnings
    );
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("dirty buffers were not laid over"))
    );
    assert_eq!(fs::read_to_string(root.join("b.txt")).unwrap(), "x\n");
}

#[tokio::test]
async fn without_net_namespace_ip_sockets_are_still_denied() {
    let ws = workspace(false);
    let caps = reduced(|c| c.net_namespace.available = false);
    let sb = Sandbox::with_capabilities(SandboxConfig::new(ws.path()), caps).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'");
    let out = sh(&sb, &script).await;
    assert!(!out.success(), "{}", text(&out));
    assert!(
        listener
            .accept()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock)
    );
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("no network namespace"))
    );
}

#[tokio::test]
async fn grant_makes_an_outside_path_writable() {
    let ws = workspace(false);
    let outside = workspace(false);
    let sb = sandbox(ws.path());
    let target = outside.path().join("granted");
    let script = format!("echo ok > {}", target.display());
    let out = sh(&sb, &script).await;
    assert!(!out.success());
    let grant = agentls_sandbox::Grant {
        network: false,
        writable: vec![outside.path().to_path_buf()],
    };
    let out = run(&sb, RunRequest::shell(&script).grant(grant)).await;
    assert!(out.success(), "{}", text(&out));
    assert_eq!(fs::read_to_string(&target).unwrap(), "ok\n");
}

#[tokio::test]
async fn without_pid_namespace_the_process_group_is_still_killed() {
    let ws = workspace(false);
    let mut config = SandboxConfig::new(ws.path());
    config.pid_namespace = false;
    let sb = Sandbox::new(config).unwrap();
    let marker = "agentlsnopidns55";
    let script = format!("trap '' TERM; (exec -a {marker} sleep 1000) & wait");
    let out = run(
        &sb,
        RunRequest::new(["bash", "-c", &script]).limits(limits(500)),
    )
    .await;
    assert_eq!(out.termination, agentls_sandbox::Termination::TimedOut);
    assert!(out.warnings.iter().any(|w| w.contains("pid namespace off")));
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(processes_with(marker).is_empty());
}

/// The home directory is read-only inside; tools that cache under `~/.cache` (Go's
/// build cache, pip) write to the run's `/tmp` through `XDG_CACHE_HOME` instead.
#[tokio::test]
async fn build_caches_have_a_writable_home() {
    let ws = common::workspace(false);
    let sb = common::sandbox(ws.path());
    let out = common::run(
        &sb,
        agentls_sandbox::RunRequest::shell(
            "mkdir -p \"$XDG_CACHE_HOME/go-build\" && echo ok > \"$XDG_CACHE_HOME/go-build/x\" && cat \"$XDG_CACHE_HOME/go-build/x\"",
        )
        .limits(common::limits(20_000)),
    )
    .await;
    assert!(out.success(), "{}", common::text(&out));
    assert_eq!(out.stdout.to_text(), "ok\n");
}
