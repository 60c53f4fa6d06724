//! Start-up overhead: sandboxed `true` vs bare `true` (same tokio spawn path), and vs
//! `bwrap` with an equivalent policy when bubblewrap is installed, all in one run.
//!
//! Run with `cargo bench -p agentls-sandbox --bench sandbox_start`. Prints medians and
//! ratios against bare `true` measured in the same run (machines are shared and noisy).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use agentls_sandbox::{CancellationToken, DirtyBuffer, RunRequest, Sandbox, SandboxConfig};

const WARMUP: usize = 20;

fn runs() -> usize {
    std::env::var("AGENTLS_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// Median and minimum: the median is what a user sees on this (shared) machine, the
/// minimum is the floor the code allows when the machine is idle.
async fn measure<F, Fut>(mut f: F) -> (Duration, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..WARMUP {
        f().await;
    }
    let mut samples: Vec<Duration> = Vec::with_capacity(runs());
    for _ in 0..runs() {
        let t = Instant::now();
        f().await;
        samples.push(t.elapsed());
    }
    samples.sort();
    (samples[samples.len() / 2], samples[0])
}

async fn bare(program: &str, args: &[&str]) {
    let status = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .await
        .unwrap();
    assert!(
        status.status.success(),
        "{program} failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

fn which(program: &str) -> Option<String> {
    std::env::var("PATH")
        .ok()?
        .split(':')
        .map(|d| format!("{d}/{program}"))
        .find(|p| std::path::Path::new(p).is_file())
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench());
}

async fn bench() {
    // Outside /tmp, as real workspaces are (a workspace under /tmp costs one more mount).
    let ws = tempfile::Builder::new()
        .prefix("agentls-bench")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::create_dir(root.join("target")).unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "disk\n").unwrap();
    let sb = Sandbox::new(SandboxConfig::new(&root)).unwrap();
    let cancel = CancellationToken::new();

    let true_path = which("true").expect("`true` on PATH");
    println!("# agentls sandbox start-up benchmark");
    println!(
        "machine: {} cores, kernel {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
    );
    println!(
        "runs: {} (after {WARMUP} warm-up), median wall time per command",
        runs()
    );
    print!("{}", sb.capabilities());
    println!();

    let bare_t = measure(|| bare(&true_path, &[])).await;
    let sandboxed = measure(|| async {
        let out = sb.run(RunRequest::new(["true"]), &cancel).await.unwrap();
        assert!(out.success());
    })
    .await;
    let with_buffer = measure(|| async {
        let req = RunRequest::new(["true"])
            .buffers([DirtyBuffer::new(root.join("src/lib.rs"), "buffer\n")]);
        let out = sb.run(req, &cancel).await.unwrap();
        assert!(out.success());
    })
    .await;

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{:<44} {:>9} {:>10} {:>9} {:>9}",
        "", "median", "ratio", "overhead", "min"
    );
    let row = |name: &str, (t, min): (Duration, Duration)| {
        println!(
            "{name:<44} {:>6.3} ms {:>8.2}x {:>6.3} ms {:>6.3} ms",
            ms(t),
            ms(t) / ms(bare_t.0),
            ms(t) - ms(bare_t.0),
            ms(min),
        )
    };
    row("bare `true`", bare_t);
    row("agentls sandbox `true`", sandboxed);
    row("agentls sandbox `true`, 1 dirty buffer", with_buffer);

    let mut config = SandboxConfig::new(&root);
    config.pid_namespace = false;
    let sb_nopid = Sandbox::new(config).unwrap();
    let no_pid = measure(|| async {
        let out = sb_nopid
            .run(RunRequest::new(["true"]), &cancel)
            .await
            .unwrap();
        assert!(out.success());
    })
    .await;
    row("agentls sandbox `true`, no pid namespace", no_pid);

    if let Some(bwrap) = which("bwrap") {
        let ws_s = root.to_str().unwrap().to_string();
        let git = root.join(".git").to_str().unwrap().to_string();
        let args: Vec<String> = [
            "--unshare-user",
            "--unshare-net",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--new-session",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--bind",
            &ws_s,
            &ws_s,
            "--ro-bind",
            &git,
            &git,
            "--tmpfs",
            "/tmp",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--chdir",
            &ws_s,
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/bin:/bin",
            &true_path,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let bw = measure(|| bare(&bwrap, &argv)).await;
        row("bwrap `true` (user/net/pid ns, ro /, rw ws)", bw);
        println!(
            "agentls vs bwrap: {:.2}x",
            sandboxed.0.as_secs_f64() / bw.0.as_secs_f64()
        );
    } else {
        println!("bwrap not installed: no comparison (apt-get install bubblewrap)");
    }
}
