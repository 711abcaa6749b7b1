//! `cargo xtask bench http [--runs N] [--python-runs N] [--tasks N] [--delay-ms N] [--cpu N]
//! [--load N]`: a two-step agent run (a tool call, then the answer) over loopback HTTP,
//! through `Agent::run` and `Agent::stream` (with Chat Completions, and again with the OpenAI
//! Responses API, held to it), beside bare reqwest sending the same two requests (the floor)
//! and the Python original, all against one OpenAI-compatible mock in a
//! process of its own: one run at a time, then the Rust clients again with `--load` runs in
//! flight at once (16 by default), as a busy server has; then 10,000 concurrent runs of each
//! Rust client, each in a fresh process, for their peak memory. The benchmark is
//! `benches/http-bench` (built in release).

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const PYTHON_BENCH: &str = "benches/http-bench/http_python.py";

/// The Rust clients measured, each floor before the library path held to it; then the same
/// runs through the Responses API, held to the Chat Completions ones.
const RUST_CASES: [&str; 6] = [
    "floor_json",
    "run",
    "floor_sse",
    "stream",
    "responses_run",
    "responses_stream",
];

struct Options {
    runs: usize,
    python_runs: usize,
    tasks: usize,
    delay_ms: u64,
    cpu: usize,
    /// Runs in flight at once in the second CPU pass.
    load: usize,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self, String> {
        let mut options = Self {
            runs: 20_000,
            python_runs: 2000,
            tasks: 10_000,
            delay_ms: 1000,
            cpu: 0,
            load: 16,
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let value = args
                .next()
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or_else(|| format!("{flag} needs a number"))?;
            match flag.as_str() {
                "--runs" => options.runs = value,
                "--python-runs" => options.python_runs = value,
                "--tasks" => options.tasks = value,
                "--delay-ms" => options.delay_ms = value as u64,
                "--cpu" => options.cpu = value,
                "--load" => options.load = value,
                other => {
                    return Err(format!(
                        "unknown option `{other}` (--runs, --python-runs, --tasks, --delay-ms, \
                         --cpu, --load)"
                    ));
                }
            }
        }
        Ok(options)
    }
}

/// The mock, in a process of its own; it ends when its standard input closes.
struct Mock {
    child: Child,
    url: String,
}

impl Mock {
    /// A mock that holds each answer `delay_ms`, kept to one CPU when given one.
    fn start(bin: &Path, delay_ms: u64, cpu: Option<usize>) -> Result<Self, String> {
        let mut command = Command::new(bin);
        command.args(["mock", "--delay-ms", &delay_ms.to_string()]);
        if let Some(cpu) = cpu {
            command.args(["--cpu", &cpu.to_string()]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the mock ({}): {e}", bin.display()))?;
        let mut url = String::new();
        let stdout = child.stdout.take().ok_or("the mock has no stdout")?;
        BufReader::new(stdout)
            .read_line(&mut url)
            .map_err(|e| format!("cannot read the mock's address: {e}"))?;
        let url = url.trim().to_owned();
        if !url.starts_with("http://127.0.0.1:") {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the mock printed {url:?} instead of its address"));
        }
        Ok(Self { child, url })
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU and wall time per run of one client.
struct PerRun {
    cpu_us: f64,
    wall_us: f64,
    runs: u32,
}

/// Peak memory of concurrent runs of one client.
struct Memory {
    peak_bytes: f64,
    tasks: u32,
    held: u32,
    wall_ms: f64,
}

pub(super) fn http(args: &[String]) -> Result<(), String> {
    let options = Options::parse(args)?;
    build()?;
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".to_owned());
    let bin = PathBuf::from(target).join("release/http-bench");

    let python = super::python_venv()?;
    // The clients and the mock share one CPU (see `pin` in the benchmark's main.rs).
    let cpu_arg = options.cpu.to_string();
    let mock = Mock::start(&bin, 0, Some(options.cpu))?;
    println!(
        "\n==> CPU per run, {} sequential runs per client, all on CPU {}, mock at {}",
        options.runs, options.cpu, mock.url
    );
    let mut cpu = rust_cpu(&bin, &mock.url, &options, 1)?;
    let python_runs = options.python_runs.to_string();
    let python_args = [PYTHON_BENCH, &mock.url, &python_runs, &cpu_arg];
    println!("\n==> {} {}", python.display(), python_args.join(" "));
    let python_lines = output(&python, &python_args)?;
    println!("{python_lines}");
    for case in ["arun", "astream_events"] {
        cpu.push((case, parse_cpu(&python_lines, case)?));
    }
    println!(
        "\n==> CPU per run under load, {} runs per client, {} in flight at once",
        options.runs, options.load
    );
    let loaded = rust_cpu(&bin, &mock.url, &options, options.load)?;
    drop(mock);

    println!(
        "\n==> memory: {} concurrent runs per client, each answer held {} ms by the mock",
        options.tasks, options.delay_ms
    );
    let tasks = options.tasks.to_string();
    let mut memory = Vec::new();
    for case in RUST_CASES {
        // A fresh mock (a fresh port) per case: the last case's connections are still in
        // TIME_WAIT, and 10,000 of them would crowd the ephemeral ports of one address.
        let mock = Mock::start(&bin, options.delay_ms, None)?;
        let line = output(&bin, &["mem", case, &mock.url, "--tasks", &tasks])?;
        println!("{line}");
        memory.push((case, parse_memory(&line, case)?));
    }

    print_tables(&cpu, &loaded, options.load, &memory);
    Ok(())
}

/// One CPU pass of the Rust clients, `concurrency` runs in flight at once.
fn rust_cpu(
    bin: &Path,
    url: &str,
    options: &Options,
    concurrency: usize,
) -> Result<Vec<(&'static str, PerRun)>, String> {
    let (runs, cpu) = (options.runs.to_string(), options.cpu.to_string());
    let concurrency = concurrency.to_string();
    let args = [
        "cpu",
        url,
        "--runs",
        &runs,
        "--cpu",
        &cpu,
        "--concurrency",
        &concurrency,
    ];
    let lines = output(bin, &args)?;
    println!("{lines}");
    RUST_CASES
        .into_iter()
        .map(|case| Ok((case, parse_cpu(&lines, case)?)))
        .collect()
}

/// Builds the benchmark in release. `cargo xtask` runs under `cargo run`, which sets
/// CARGO_MANIFEST_DIR to xtask's; ring's build script tracks that variable, so passing it on
/// would rebuild the TLS stack whenever a plain `cargo build` ran in between.
fn build() -> Result<(), String> {
    let args = [
        "build",
        "--release",
        "-p",
        "deepharness-http-bench",
        "--bin",
        "http-bench",
    ];
    println!("\n==> cargo {}", args.join(" "));
    let status = Command::new("cargo")
        .args(args)
        .env_remove("CARGO_MANIFEST_DIR")
        .status()
        .map_err(|e| format!("could not start cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the benchmark's release build failed ({status})"))
    }
}

/// Runs a command to its end and returns its standard output.
fn output(program: &Path, args: &[&str]) -> Result<String, String> {
    let shown = format!("{} {}", program.display(), args.join(" "));
    let out = Command::new(program)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!("`{shown}` failed ({})", out.status))
    }
}

/// The line `cpu <case> <cpu µs> <wall µs> <runs>` among `lines`.
fn parse_cpu(lines: &str, case: &str) -> Result<PerRun, String> {
    let line = lines
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(case))
        .ok_or_else(|| format!("no figure for {case} in:\n{lines}"))?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    match fields.as_slice() {
        ["cpu", name, cpu_us, wall_us, runs] if *name == case => Ok(PerRun {
            cpu_us: number(cpu_us, line)?,
            wall_us: number(wall_us, line)?,
            runs: number(runs, line)?,
        }),
        _ => Err(format!("unexpected line for {case}: {line}")),
    }
}

/// `mem <case> <peak bytes> <tasks> <held at once> <wall ms>`.
fn parse_memory(line: &str, case: &str) -> Result<Memory, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    match fields.as_slice() {
        ["mem", name, peak, tasks, held, wall_ms] if *name == case => Ok(Memory {
            peak_bytes: number(peak, line)?,
            tasks: number(tasks, line)?,
            held: number(held, line)?,
            wall_ms: number(wall_ms, line)?,
        }),
        _ => Err(format!("unexpected line for {case}: {line}")),
    }
}

fn number<T: std::str::FromStr>(field: &str, line: &str) -> Result<T, String> {
    field
        .parse()
        .map_err(|_| format!("`{field}` is not a number in: {line}"))
}

fn label(case: &str) -> &'static str {
    match case {
        "floor_json" => "bare reqwest, non-streamed (floor)",
        "run" => "deepharness Agent::run",
        "floor_sse" => "bare reqwest, streamed (floor)",
        "stream" => "deepharness Agent::stream",
        "responses_run" => "Agent::run, Responses API",
        "responses_stream" => "Agent::stream, Responses API",
        "arun" => "Python original, Agent.arun",
        "astream_events" => "Python original, Agent.astream_events",
        _ => "?",
    }
}

/// CPU and wall time per run of each case, each against its floor.
fn print_cpu_table(title: &str, cpu: &[(&str, PerRun)]) {
    let find = |case: &str| cpu.iter().find(|(c, _)| *c == case).map(|(_, f)| f);
    println!(
        "\n{:<40} {:>7} {:>12} {:>9} {:>13}",
        title, "runs", "CPU µs/run", "/ floor", "wall µs/run"
    );
    for (case, figures) in cpu {
        let ratio = find(floor_of(case)).map_or(f64::NAN, |floor| figures.cpu_us / floor.cpu_us);
        println!(
            "{:<40} {:>7} {:>12.1} {:>8.2}x {:>13.1}",
            label(case),
            figures.runs,
            figures.cpu_us,
            ratio,
            figures.wall_us
        );
    }
}

/// The floor a case is held to.
fn floor_of(case: &str) -> &'static str {
    match case {
        "run" | "floor_json" => "floor_json",
        // Held to the same run through Chat Completions.
        "responses_run" => "run",
        "responses_stream" => "stream",
        // The original's arun streams the model too.
        _ => "floor_sse",
    }
}

fn print_tables(
    cpu: &[(&str, PerRun)],
    loaded: &[(&str, PerRun)],
    load: usize,
    memory: &[(&str, Memory)],
) {
    print_cpu_table("two-step run (tool call, answer)", cpu);
    print_cpu_table(&format!("the same, {load} runs in flight"), loaded);
    let find = |case: &str| cpu.iter().find(|(c, _)| *c == case).map(|(_, f)| f);
    for (responses, chat) in [("responses_run", "run"), ("responses_stream", "stream")] {
        if let (Some(r), Some(c)) = (find(responses), find(chat)) {
            println!(
                "CPU per run, {} / {}: {:.2}x",
                label(responses),
                label(chat),
                r.cpu_us / c.cpu_us
            );
        }
    }
    for (python, rust) in [("arun", "run"), ("astream_events", "stream")] {
        if let (Some(p), Some(r)) = (find(python), find(rust)) {
            println!(
                "CPU per run, {} / {}: {:.1}x",
                label(python),
                label(rust),
                p.cpu_us / r.cpu_us
            );
        }
    }
    let find = |case: &str| memory.iter().find(|(c, _)| *c == case).map(|(_, f)| f);
    println!(
        "\n{:<40} {:>7} {:>9} {:>9} {:>9} {:>10} {:>8}",
        "concurrent runs", "tasks", "peak MB", "KB/run", "/ floor", "held once", "wall s"
    );
    for (case, figures) in memory {
        let ratio =
            find(floor_of(case)).map_or(f64::NAN, |floor| figures.peak_bytes / floor.peak_bytes);
        println!(
            "{:<40} {:>7} {:>9.1} {:>9.1} {:>8.2}x {:>10} {:>8.2}",
            label(case),
            figures.tasks,
            figures.peak_bytes / 1e6,
            figures.peak_bytes / 1e3 / f64::from(figures.tasks),
            ratio,
            figures.held,
            figures.wall_ms / 1e3
        );
    }
}
