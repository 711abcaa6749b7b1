//! `cargo deny check`, as `cargo xtask ci` runs it: licenses, bans (duplicates, wildcards)
//! and sources always; advisories when the advisory database can be fetched.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::run;

/// Where `.ci/run` installs cargo-deny (`cargo install --root`).
const TOOLS: &str = "target/tools";

pub(crate) fn deny() -> Result<(), String> {
    let path = search_path()?;
    let envs = [("PATH", path.as_str())];
    let installed = Command::new("cargo")
        .args(["deny", "--version"])
        .env("PATH", &path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        return Err(format!(
            "cargo-deny is not installed; install it with \
             `cargo install cargo-deny --locked --root {TOOLS}` (what .ci/run does)"
        ));
    }
    run(
        "cargo",
        &["deny", "check", "bans", "licenses", "sources"],
        &envs,
    )?;
    // The advisory database is a git repository on github.com; where that cannot be
    // reached, say so instead of failing every other check with it.
    match run("cargo", &["deny", "fetch", "db"], &envs) {
        Ok(()) => run("cargo", &["deny", "check", "advisories"], &envs),
        Err(e) => {
            println!(
                "cargo deny: advisories skipped: the advisory database \
                 (github.com/rustsec/advisory-db) could not be fetched ({e})"
            );
            Ok(())
        }
    }
}

/// PATH with the project's own tool directory first.
fn search_path() -> Result<String, String> {
    let tools = std::fs::canonicalize(".")
        .map_err(|e| format!("the current directory: {e}"))?
        .join(Path::new(TOOLS).join("bin"));
    let rest = std::env::var("PATH").unwrap_or_default();
    Ok(format!("{}:{rest}", tools.display()))
}
