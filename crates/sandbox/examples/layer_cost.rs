//! What each layer costs: runs `true` 40 times in a workspace with some layers turned
//! off and prints min / median / max.
//!
//! `cargo run --release -p agentls-sandbox --example layer_cost -- WORKSPACE [net,pid,ovl,mnt,ll,sec]`
//! (`SCRATCH=dir` overrides the scratch root). Used to find that a disk-backed overlay
//! upper cost ~35 ms per run (the sync at unmount), hence the tmpfs default.
#![allow(clippy::unwrap_used, clippy::print_stdout)]
use agentls_sandbox::*;
use std::time::{Duration, Instant};
#[tokio::main]
async fn main() {
    let ws = std::env::args().nth(1).unwrap();
    let off = std::env::args().nth(2).unwrap_or_default();
    let mut caps = probe().clone();
    let no = |s: &mut FeatureStatus| s.available = false;
    if off.contains("net") {
        no(&mut caps.net_namespace)
    }
    if off.contains("pid") {
        no(&mut caps.pid_namespace)
    }
    if off.contains("ovl") {
        no(&mut caps.overlayfs)
    }
    if off.contains("mnt") {
        no(&mut caps.mount_namespace)
    }
    if off.contains("ll") {
        no(&mut caps.landlock);
        caps.landlock_abi = None;
    }
    if off.contains("sec") {
        no(&mut caps.seccomp)
    }
    if off.contains("lim") {
        no(&mut caps.pid_limit)
    }
    let caps: &'static Capabilities = Box::leak(Box::new(caps));
    let mut cfg = SandboxConfig::new(&ws);
    if let Ok(s) = std::env::var("SCRATCH") {
        cfg.scratch_root = Some(s.into());
    }
    let sb = Sandbox::with_capabilities(cfg, caps).unwrap();
    let c = CancellationToken::new();
    let mut v = Vec::new();
    for _ in 0..40 {
        let t = Instant::now();
        let out = sb
            .run(RunRequest::new(["/usr/bin/true"]), &c)
            .await
            .unwrap();
        assert!(out.success());
        v.push(t.elapsed());
    }
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "off={off:<10} min {:.2} median {:.2} max {:.2} ms",
        ms(v[0]),
        ms(v[v.len() / 2]),
        ms(v[v.len() - 1])
    );
}
