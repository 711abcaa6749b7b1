//! `cargo xtask bench [graph|http]`: the benchmarks, and the graph executor and the agent over
//! HTTP against the Python original measured in the same run.

mod http;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::run;

const VENV: &str = "target/peers/bench-py";
const ORIGINAL: &str = "deepharness==0.2.0";
const PYTHON_BENCH: &str = "crates/harness-graph/benches/graph_python.py";
/// Seconds the Python side spends on each graph.
const PYTHON_BUDGET: &str = "5";

/// `cargo bench --workspace`, or with `graph` the graph benchmark and its comparison, or with
/// `http` the agent over loopback HTTP against bare reqwest and the Python original.
pub(crate) fn bench(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        None => run("cargo", &["bench", "--workspace"], &[]),
        Some("graph") => graph(),
        Some("http") => http::http(&args[1..]),
        Some("durable") => durable(),
        Some(other) => Err(format!(
            "unknown benchmark `{other}`: `cargo xtask bench` runs them all, \
             `cargo xtask bench graph` the graph executor against the Python original, \
             `cargo xtask bench http [--runs N] [--python-runs N] [--tasks N] [--delay-ms N] [--cpu N] [--load N]` \
             a two-step agent run over loopback HTTP against bare reqwest and the Python \
             original, `cargo xtask bench durable` durable runs on a real Restate server"
        )),
    }
}

/// Durable runs on a real Restate server (installed as `cargo xtask e2e-durable` does) with a
/// model that answers after 100 ms: a two-step run's wall time against the same run in
/// process, the journal's cost per step, 1,000 concurrent runs on one node and one worker,
/// the worker's memory. Release build; prints a Markdown table.
fn durable() -> Result<(), String> {
    crate::peers::restate_server()?;
    run(
        "cargo",
        &[
            "test",
            "--release",
            "-p",
            "deepharness-durable",
            "--test",
            "restate",
            "--",
            "--ignored",
            "--exact",
            "benchmark",
            "--nocapture",
        ],
        &[("DURABLE_BENCH", "1")],
    )
}

/// One graph's figures: the node runs in one run of it, and seconds per run on each side.
struct Row {
    name: &'static str,
    nodes: f64,
    rust: f64,
    python: f64,
}

fn graph() -> Result<(), String> {
    run(
        "cargo",
        &["bench", "-p", "deepharness-graph", "--bench", "graph"],
        &[],
    )?;
    let python = python_figures()?;
    let mut rows = Vec::new();
    for name in ["fan_out_fan_in_1000", "loop_10000"] {
        let (python, nodes) = python
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, secs, nodes)| (*secs, *nodes))
            .ok_or_else(|| format!("the Python benchmark printed no figure for {name}"))?;
        rows.push(Row {
            name,
            nodes,
            rust: criterion_mean_seconds(name)?,
            python,
        });
    }
    println!("\ngraph                  node runs   Rust µs/node   Python µs/node   Python/Rust");
    for row in rows {
        let rust = row.rust / row.nodes * 1e6;
        let python = row.python / row.nodes * 1e6;
        println!(
            "{:<22} {:>9}   {rust:>12.2}   {python:>14.2}   {:>10.1}x",
            row.name,
            row.nodes,
            python / rust
        );
    }
    Ok(())
}

/// Installs the original into a venv of its own (once); the venv's Python.
fn python_venv() -> Result<PathBuf, String> {
    let python = Path::new(VENV).join("bin/python");
    if !python.exists() {
        run("python3", &["-m", "venv", VENV], &[])?;
    }
    run(
        &format!("{VENV}/bin/pip"),
        &[
            "install",
            "--quiet",
            "--disable-pip-version-check",
            ORIGINAL,
        ],
        &[],
    )?;
    Ok(python)
}

/// Runs the same two graphs on the original.
fn python_figures() -> Result<Vec<(String, f64, f64)>, String> {
    let python = python_venv()?;
    println!("\n==> {} {PYTHON_BENCH} {PYTHON_BUDGET}", python.display());
    let output = Command::new(&python)
        .args([PYTHON_BENCH, PYTHON_BUDGET])
        .output()
        .map_err(|e| format!("could not start {}: {e}", python.display()))?;
    if !output.status.success() {
        return Err(format!(
            "the Python benchmark failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .map(|line| {
            let mut fields = line.split_whitespace();
            let parsed = (|| {
                let name = fields.next()?.to_owned();
                let secs = fields.next()?.parse().ok()?;
                let nodes = fields.next()?.parse().ok()?;
                Some((name, secs, nodes))
            })();
            parsed.ok_or_else(|| format!("unexpected line from the Python benchmark: {line}"))
        })
        .collect()
}

/// Criterion's mean time per run, in seconds, from the estimates it just wrote.
fn criterion_mean_seconds(name: &str) -> Result<f64, String> {
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".to_owned());
    let path = Path::new(&target)
        .join("criterion/graph")
        .join(name)
        .join("new/estimates.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read criterion's figures at {}: {e}", path.display()))?;
    let estimates: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not criterion's JSON: {e}", path.display()))?;
    estimates["mean"]["point_estimate"]
        .as_f64()
        .map(|nanos| nanos / 1e9)
        .ok_or_else(|| format!("{} has no mean.point_estimate", path.display()))
}
