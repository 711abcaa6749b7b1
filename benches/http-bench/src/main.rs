//! `cargo xtask bench http`: a two-step agent run (a tool call, then the answer) over
//! loopback HTTP against an OpenAI-compatible mock, through `Agent::run` and
//! `Agent::stream`, beside bare reqwest sending the same two requests (the floor).
//! The xtask builds this binary in release, starts the mock and runs each case in a fresh
//! process:
//!
//! - `http-bench mock [--delay-ms N] [--cpu N]`: the mock (see [`mock`]); prints its base URL, serves
//!   until its standard input closes.
//! - `http-bench cpu <base-url> [--runs N] [--rounds R] [--case C] [--cpu N] [--concurrency K]`:
//!   N runs of each case after a warm-up, one at a time or K in flight at once, in R rounds
//!   that take the cases in turn (floor, library, floor, library), so that the shared
//!   machine's changing load touches each alike; prints
//!   `cpu <case> <CPU µs per run> <wall µs per run> <runs>` per case, its median round's.
//!   CPU is this process's user + system time (`getrusage(RUSAGE_SELF)`), so the mock's work
//!   is not in it.
//! - `http-bench mem <case> <base-url> [--tasks N]`: N concurrent runs (tokio tasks sharing
//!   one client); prints `mem <case> <peak bytes> <tasks> <most requests the mock held at
//!   once> <wall ms>`, the peak being the rise of VmHWM (`/proc/self/status`) over its value
//!   before the runs (after a few warm-up runs).
//!
//! Cases: `run`, `stream` (through `Agent::stream`), `floor_json`, `floor_sse`,
//! `responses_run` and `responses_stream` (the same run with an `OpenAiResponses` model
//! against the mock's Responses API) (the default set), and for locating a gap, `model_json` and `model_sse`: the `OpenAi` provider
//! alone, without the agent (`--case all` takes all six in turn). Every client runs on a
//! current-thread tokio runtime.

mod client;
mod mock;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use futures_util::{StreamExt as _, TryStreamExt as _};
use nix::sys::resource::{Resource, UsageWho, getrlimit, getrusage, setrlimit};
use serde_json::{Value, json};

use crate::client::{Case, Client};

/// The model asked for (the mock answers any).
pub(crate) const MODEL: &str = "gpt-4o-mini";
/// The user's question.
pub(crate) const PROMPT: &str = "What is the weather in Paris?";
/// The mock's answer to the second step.
pub(crate) const ANSWER: &str = "It is sunny in Paris, 22 °C, with a light breeze from the west.";
/// The id of the mock's tool call.
pub(crate) const CALL_ID: &str = "call_ZR5UUuTt3pf61kjwAJIYdVMj";

/// Runs before the measured ones, so that connections, caches and lazily built state exist.
const WARM_UP: usize = 100;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("mock") => pin(&args)
            .and_then(|()| option(&args, "--delay-ms", 0))
            .and_then(|ms| mock::serve(Duration::from_millis(ms as u64))),
        Some("cpu") => match args.get(1) {
            Some(url) => pin(&args)
                .and_then(|()| option(&args, "--runs", 20_000))
                .and_then(|runs| {
                    let only = args
                        .iter()
                        .position(|a| a == "--case")
                        .map(|i| args.get(i + 1));
                    let only = only
                        .map(|name| name.ok_or("--case needs a case"))
                        .transpose()?;
                    cpu(
                        url,
                        runs,
                        option(&args, "--rounds", 40)?,
                        option(&args, "--concurrency", 1)?,
                        only.map(String::as_str),
                    )
                }),
            None => Err("cpu needs the mock's base URL".to_owned()),
        },
        Some("mem") => case_and_url(&args)
            .and_then(|(case, url)| mem(case, url, option(&args, "--tasks", 10_000)?)),
        _ => Err("usage: http-bench mock [--delay-ms N] [--cpu N] | \
             cpu <base-url> [--runs N] [--rounds N] [--case C] [--cpu N] [--concurrency K] | \
             mem <case> <base-url> [--tasks N]"
            .to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("http-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

fn case_and_url(args: &[String]) -> Result<(Case, &str), String> {
    match (args.get(1), args.get(2)) {
        (Some(case), Some(url)) => Ok((Case::parse(case)?, url.as_str())),
        _ => Err(format!("{} needs a case and the mock's base URL", args[0])),
    }
}

fn option(args: &[String], name: &str, default: usize) -> Result<usize, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{name} needs a number")),
    }
}

/// The `tools` array the floor sends: what the provider sends for `get_weather` (checked by
/// a test against the tool's own spec).
pub(crate) fn tool_schemas() -> Value {
    json!([{
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"]
            }
        }
    }])
}

/// With `--cpu N`, keeps this process on CPU N. The xtask puts the client and the mock on
/// one CPU: across two otherwise idle CPUs of this VM, waking the other side costs each
/// request tens of microseconds of CPU (inter-processor interrupts, idle exits), the same
/// for every client, which would blur what the clients themselves cost.
fn pin(args: &[String]) -> Result<(), String> {
    use nix::sched::{CpuSet, sched_setaffinity};
    if !args.iter().any(|a| a == "--cpu") {
        return Ok(());
    }
    let cpu = option(args, "--cpu", 0)?;
    let mut set = CpuSet::new();
    set.set(cpu).map_err(|e| format!("no CPU {cpu}: {e}"))?;
    sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .map_err(|e| format!("cannot keep to CPU {cpu}: {e}"))
}

/// As many descriptors as the hard limit allows: 10,000 concurrent connections need them.
pub(crate) fn raise_fd_limit() {
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))
}

/// This process's CPU time so far, user and system.
fn cpu_time() -> Result<Duration, String> {
    let usage = getrusage(UsageWho::RUSAGE_SELF).map_err(|e| format!("getrusage: {e}"))?;
    let micros = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec().unsigned_abs())
            + Duration::from_micros(t.tv_usec().unsigned_abs())
    };
    Ok(micros(usage.user_time()) + micros(usage.system_time()))
}

/// Every case in one process, in interleaved rounds: a drift in the load of this shared
/// machine touches the floor and the library alike. Prints each case's median round.
///
/// One run at a time, every event of a stream finds the client's code evicted by the mock's,
/// which ran on the same CPU in between, so the figure weighs code size as much as work.
/// With `concurrency` runs in flight, one wake-up serves several runs, as on a busy server.
fn cpu(
    url: &str,
    runs: usize,
    rounds: usize,
    concurrency: usize,
    only: Option<&str>,
) -> Result<(), String> {
    let runtime = runtime()?;
    let cases = match only {
        Some("all") => Case::ALL.to_vec(),
        Some(name) => vec![Case::parse(name)?],
        None => Case::ALL
            .into_iter()
            .filter(|case| !matches!(case, Case::ModelJson | Case::ModelSse))
            .collect(),
    };
    let clients = cases
        .iter()
        .map(|&case| Client::new(case, url))
        .collect::<Result<Vec<_>, _>>()?;
    let rounds = rounds.max(1);
    let per_round = u32::try_from(runs.div_ceil(rounds).max(1))
        .map_err(|_| format!("{runs} runs are too many"))?;
    let mut cpu_us = vec![Vec::new(); cases.len()];
    let mut wall_us = vec![Vec::new(); cases.len()];
    runtime.block_on(async {
        for client in &clients {
            for _ in 0..WARM_UP {
                client.run_once().await?;
            }
        }
        for _ in 0..rounds {
            for (i, client) in clients.iter().enumerate() {
                let (cpu_start, wall_start) = (cpu_time()?, Instant::now());
                if concurrency <= 1 {
                    for _ in 0..per_round {
                        client.run_once().await?;
                    }
                } else {
                    futures_util::stream::iter(0..per_round)
                        .map(|_| client.run_once())
                        .buffer_unordered(concurrency)
                        .try_for_each(|()| std::future::ready(Ok(())))
                        .await?;
                }
                let cpu = cpu_time()?.saturating_sub(cpu_start);
                cpu_us[i].push(cpu.as_secs_f64() * 1e6 / f64::from(per_round));
                wall_us[i].push(wall_start.elapsed().as_secs_f64() * 1e6 / f64::from(per_round));
            }
        }
        Ok::<(), String>(())
    })?;
    for (i, case) in cases.iter().enumerate() {
        println!(
            "cpu {} {:.2} {:.2} {}",
            case.name(),
            median(&mut cpu_us[i]),
            median(&mut wall_us[i]),
            per_round as usize * rounds
        );
    }
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Kilobytes on a `/proc/self/status` line such as `VmHWM:    1234 kB`.
fn status_kb(field: &str) -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("no {field} in /proc/self/status"))
}

fn mem(case: Case, url: &str, tasks: usize) -> Result<(), String> {
    raise_fd_limit();
    let runtime = runtime()?;
    let client = Client::new(case, url)?;
    runtime.block_on(async {
        for _ in 0..3 {
            client.run_once().await?;
        }
        Ok::<(), String>(())
    })?;
    let before = status_kb("VmHWM")?;
    let started = Instant::now();
    let failures = runtime.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..tasks {
            let client = client.clone();
            set.spawn(async move { client.run_once().await });
        }
        let mut failures = Vec::new();
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.push(e),
                Err(e) => failures.push(e.to_string()),
            }
        }
        failures
    });
    let elapsed = started.elapsed();
    let after = status_kb("VmHWM")?;
    if let Some(first) = failures.first() {
        return Err(format!(
            "{} of {tasks} runs failed; the first: {first}",
            failures.len()
        ));
    }
    let held = runtime.block_on(max_in_flight(url))?;
    println!(
        "mem {} {} {tasks} {held} {:.0}",
        case.name(),
        (after.saturating_sub(before)) * 1024,
        elapsed.as_secs_f64() * 1e3
    );
    Ok(())
}

/// The most requests the mock held at once.
async fn max_in_flight(url: &str) -> Result<u64, String> {
    let http = harness_providers::rest::client_builder()
        .map_err(|e| e.to_string())?
        .build()
        .map_err(|e| e.to_string())?;
    let bytes = http
        .get(format!("{url}/stats"))
        .send()
        .await
        .map_err(|e| e.to_string())?
        .bytes()
        .await
        .map_err(|e| e.to_string())?;
    let stats: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    stats["max_in_flight"]
        .as_u64()
        .ok_or_else(|| format!("bad stats from the mock: {stats}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_floor_sends_the_tool_the_provider_sends() {
        let spec = crate::client::tool_spec();
        let floor = &super::tool_schemas()[0]["function"];
        assert_eq!(floor["name"], spec.name.as_str());
        assert_eq!(floor["description"], spec.description.as_str());
        assert_eq!(floor["parameters"], spec.parameters);
    }
}
