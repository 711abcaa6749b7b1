//! The npm peers the real-peer suites talk to, installed into `target/peers` before a suite
//! runs. The suites can install them on their own when run directly; installing here first
//! gives CI, which starts from a clean clone, one place that retries a failed download.

use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::Duration;

use crate::run;

/// The MCP servers of `mcp_peers` and of the durable elicitation test, in `target/peers/mcp`.
pub(crate) fn mcp_servers() -> Result<PathBuf, String> {
    npm_install(
        "target/peers/mcp",
        &[
            "@modelcontextprotocol/server-filesystem",
            "@modelcontextprotocol/server-everything",
        ],
        "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    )
}

/// The Restate server of `e2e-durable` and `bench durable`, in `target/peers/restate`.
/// The version is the one `crates/harness-durable/tests/restate.rs` installs when run alone.
pub(crate) fn restate_server() -> Result<PathBuf, String> {
    // The binary comes in a package per platform, an optional dependency npm picks.
    let platform = match (std::env::consts::OS, std::env::consts::ARCH) {
        (os @ ("linux" | "macos"), "x86_64") => format!("{}-x64", npm_os(os)),
        (os @ ("linux" | "macos"), "aarch64") => format!("{}-arm64", npm_os(os)),
        (os, arch) => {
            return Err(format!(
                "restate-server is published on npm for Linux and macOS on x86_64 and aarch64, \
                 not {os} on {arch}: run the durable suite on one of those"
            ));
        }
    };
    npm_install(
        "target/peers/restate",
        &["@restatedev/restate-server@1.7"],
        &format!("node_modules/@restatedev/restate-server-{platform}/bin/restate-server"),
    )
}

/// npm's name for an operating system.
fn npm_os(os: &str) -> &str {
    if os == "macos" { "darwin" } else { os }
}

/// Delays before the second and third attempts: long enough for a registry's or a
/// network's passing fault to clear, short next to a CI run.
const RETRY_DELAYS: [Duration; 2] = [Duration::from_secs(10), Duration::from_secs(30)];

/// Installs npm packages into `prefix` unless `entry` (a path under it) is already there, and
/// returns the entry's full path. A failed install is tried again after each of
/// [`RETRY_DELAYS`]; npm prints its own reason each time.
pub(crate) fn npm_install(prefix: &str, packages: &[&str], entry: &str) -> Result<PathBuf, String> {
    let path = Path::new(prefix).join(entry);
    if !path.exists() {
        // npm retries a failed fetch twice itself; more would let one stalled download
        // (each waits up to five minutes) outlast CI.
        let mut args = vec!["install", "--no-audit", "--no-fund", "--prefix", prefix];
        args.extend_from_slice(packages);
        // A dependency of restate-server reports installs to an analytics service unless
        // told not to; CI has no business calling it.
        let envs = [("SCARF_ANALYTICS", "false")];
        let mut outcome = run("npm", &args, &envs);
        for delay in RETRY_DELAYS {
            let Err(failure) = &outcome else { break };
            eprintln!("{failure}; trying again in {} s", delay.as_secs());
            sleep(delay);
            outcome = run("npm", &args, &envs);
        }
        outcome.map_err(|failure| {
            format!(
                "npm could not install {} into {prefix}, {} times (the last: {failure}; \
                 npm's reasons are above). Check that registry.npmjs.org is reachable (or set \
                 npm_config_registry to a mirror) and run the command again",
                packages.join(" "),
                RETRY_DELAYS.len() + 1
            )
        })?;
    }
    std::fs::canonicalize(&path).map_err(|e| format!("{} after npm install: {e}", path.display()))
}
