//! `cargo xtask release <version> [--dry-run]`: bump every crate to `version` together, check
//! the changelog, package every crate as crates.io would (`cargo publish --workspace
//! --dry-run`, which goes in dependency order), and build the packages from their tarballs.
//! It never uploads: commit the bump, then `cargo publish --workspace`. With `--dry-run` the
//! manifests are put back after.
//!
//! Why the build is our own: cargo's verification takes a dependency from crates.io when that
//! version is already there, and `harness-core`, `harness-tools` and `harness-macros` exist
//! on crates.io under other owners, so it would build our crates against strangers' code.
//! Here each tarball is unpacked into one workspace with `[patch.crates-io]` pointing every
//! one of our crates at its own tarball: what users get once all of them are published.

use std::fs;
use std::path::{Path, PathBuf};

use crate::run;

const MANIFEST: &str = "Cargo.toml";
const LOCKFILE: &str = "Cargo.lock";
const CHANGELOG: &str = "CHANGELOG.md";

pub(crate) fn release(args: &[String]) -> Result<(), String> {
    let dry_run = args.iter().any(|a| a == "--dry-run");
    let version = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .ok_or("usage: cargo xtask release <version> [--dry-run]")?;
    check_version(version)?;
    let changelog = fs::read_to_string(CHANGELOG)
        .map_err(|e| format!("cannot read {CHANGELOG}: {e}; it must describe the release"))?;
    if !changelog.lines().any(|l| is_section_for(l, version)) {
        return Err(format!(
            "{CHANGELOG} has no section for {version}: add a `## [{version}]` heading with the \
             release's changes"
        ));
    }
    let manifest =
        fs::read_to_string(MANIFEST).map_err(|e| format!("cannot read {MANIFEST}: {e}"))?;
    let lockfile = fs::read_to_string(LOCKFILE).ok();
    let bumped = bump(&manifest, version)?;
    fs::write(MANIFEST, &bumped).map_err(|e| format!("cannot write {MANIFEST}: {e}"))?;
    println!("release: every crate and inter-crate dependency now at {version}");
    let outcome = run(
        "cargo",
        &[
            "publish",
            "--workspace",
            "--dry-run",
            "--allow-dirty",
            "--no-verify",
        ],
        &[],
    )
    .and_then(|()| build_packages(version));
    if dry_run {
        fs::write(MANIFEST, &manifest).map_err(|e| format!("cannot restore {MANIFEST}: {e}"))?;
        if let Some(lockfile) = lockfile {
            fs::write(LOCKFILE, lockfile).map_err(|e| format!("cannot restore {LOCKFILE}: {e}"))?;
        }
        println!("release: dry run, {MANIFEST} and {LOCKFILE} restored");
    }
    outcome?;
    if !dry_run {
        println!(
            "release: {version} is ready; commit it, tag v{version}, then `cargo publish --workspace`"
        );
    }
    Ok(())
}

/// Builds every packaged crate from its tarball in `target/package/verify`, our crates
/// patched in for one another.
fn build_packages(version: &str) -> Result<(), String> {
    let (names, depended_on) = publishable_crates()?;
    // `cargo package` leaves each tarball at target/package/<name>-<version>.crate.
    let mut package = vec!["package", "--no-verify", "--allow-dirty"];
    for name in &names {
        package.extend(["-p", name.as_str()]);
    }
    run("cargo", &package, &[])?;
    let package_dir = Path::new("target/package");
    let verify = package_dir.join("verify");
    let _ = fs::remove_dir_all(&verify);
    fs::create_dir_all(&verify).map_err(|e| format!("{}: {e}", verify.display()))?;
    let mut members = Vec::new();
    for name in &names {
        let tarball = package_dir.join(format!("{name}-{version}.crate"));
        run(
            "tar",
            &[
                "-xzf",
                &tarball.to_string_lossy(),
                "-C",
                &verify.to_string_lossy(),
            ],
            &[],
        )?;
        members.push(format!("{name}-{version}"));
    }
    fs::write(
        verify.join("Cargo.toml"),
        verify_manifest(&names, &depended_on, version),
    )
    .map_err(|e| format!("cannot write the verification manifest: {e}"))?;
    // The workspace's lock file, so the build uses the versions CI tested.
    fs::copy(LOCKFILE, verify.join(LOCKFILE)).map_err(|e| format!("{LOCKFILE}: {e}"))?;
    let target = absolute(Path::new("target"))?;
    let manifest = verify.join("Cargo.toml");
    run(
        "cargo",
        &[
            "build",
            "--manifest-path",
            &manifest.to_string_lossy(),
            "--workspace",
            "--all-features",
        ],
        &[("CARGO_TARGET_DIR", &target.to_string_lossy())],
    )?;
    println!(
        "release: {} packages built from their tarballs: {}",
        members.len(),
        members.join(", ")
    );
    Ok(())
}

/// A workspace of the unpacked packages, each of our crates that another depends on patched
/// to its own tarball.
fn verify_manifest(names: &[String], depended_on: &[String], version: &str) -> String {
    let members: Vec<String> = names
        .iter()
        .map(|n| format!("    \"{n}-{version}\","))
        .collect();
    let patches: Vec<String> = depended_on
        .iter()
        .map(|n| format!("{n} = {{ path = \"{n}-{version}\" }}"))
        .collect();
    format!(
        "# Written by `cargo xtask release`: the packaged crates, built as published.\n\
         [workspace]\nresolver = \"3\"\nmembers = [\n{}\n]\n\n[patch.crates-io]\n{}\n",
        members.join("\n"),
        patches.join("\n")
    )
}

/// The workspace's crates that `cargo publish` packages (no `publish = false`), and those of
/// them another one depends on.
fn publishable_crates() -> Result<(Vec<String>, Vec<String>), String> {
    let output = std::process::Command::new("cargo")
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata's output: {e}"))?;
    let packages = metadata["packages"]
        .as_array()
        .ok_or("cargo metadata's output has no packages")?;
    let publishable: Vec<&serde_json::Value> = packages
        .iter()
        .filter(|p| !p["publish"].as_array().is_some_and(Vec::is_empty))
        .collect();
    let names: Vec<String> = publishable
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect();
    let depended_on = names
        .iter()
        .filter(|name| {
            publishable.iter().any(|p| {
                p["dependencies"].as_array().is_some_and(|deps| {
                    deps.iter()
                        .any(|d| d["name"].as_str() == Some(name.as_str()))
                })
            })
        })
        .cloned()
        .collect();
    Ok((names, depended_on))
}

fn absolute(path: &Path) -> Result<PathBuf, String> {
    fs::create_dir_all(path).map_err(|e| format!("{}: {e}", path.display()))?;
    fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// `MAJOR.MINOR.PATCH` with an optional `-pre` part.
fn check_version(version: &str) -> Result<(), String> {
    let core = version.split_once('-').map_or(version, |(core, _)| core);
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        Ok(())
    } else {
        Err(format!(
            "`{version}` is not a version: write MAJOR.MINOR.PATCH, like 0.2.0 or 1.0.0-rc.1"
        ))
    }
}

/// `## [0.1.0]`, `## [0.1.0] - 2026-11-30` or `## 0.1.0`.
fn is_section_for(line: &str, version: &str) -> bool {
    line.strip_prefix("## ").is_some_and(|rest| {
        let rest = rest.trim_start_matches('[');
        rest.strip_prefix(version).is_some_and(|after| {
            after.is_empty() || after.starts_with(']') || after.starts_with(' ')
        })
    })
}

/// The workspace manifest with `[workspace.package]`'s version and every path dependency's
/// version (the inter-crate ones) set to `version`.
fn bump(manifest: &str, version: &str) -> Result<String, String> {
    let mut section = "";
    let mut bumped_package = false;
    let mut out = String::with_capacity(manifest.len());
    for line in manifest.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            section = trimmed;
        }
        let line = if section == "[workspace.package]" && trimmed.starts_with("version") {
            bumped_package = true;
            format!("version = \"{version}\"")
        } else if section == "[workspace.dependencies]" && trimmed.contains("path = \"crates/") {
            set_version(line, version)?
        } else {
            line.to_owned()
        };
        out.push_str(&line);
        out.push('\n');
    }
    if bumped_package {
        Ok(out)
    } else {
        Err(format!("{MANIFEST} has no version in [workspace.package]"))
    }
}

/// `name = { path = "...", version = "old", ... }` with the version replaced.
fn set_version(line: &str, version: &str) -> Result<String, String> {
    let start = line
        .find("version = \"")
        .ok_or_else(|| format!("a path dependency without a version: {line}"))?
        + "version = \"".len();
    let end = line[start..]
        .find('"')
        .ok_or_else(|| format!("an unterminated version: {line}"))?
        + start;
    Ok(format!("{}{version}{}", &line[..start], &line[end..]))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_verification_manifest_patches_every_crate_to_its_tarball() {
        let names = ["harness-core".to_owned(), "deepharness".to_owned()];
        let manifest = super::verify_manifest(&names, &names[..1], "0.2.0");
        assert!(
            manifest.contains(
                "members = [\n    \"harness-core-0.2.0\",\n    \"deepharness-0.2.0\",\n]"
            )
        );
        assert!(
            manifest
                .contains("[patch.crates-io]\nharness-core = { path = \"harness-core-0.2.0\" }\n")
        );
        assert!(!manifest.contains("deepharness = "));
    }

    use super::*;

    #[test]
    fn bumps_the_package_and_the_path_dependencies_only() {
        let manifest = "[workspace.package]\nversion = \"0.1.0\"\n\n[workspace.dependencies]\n\
                        harness-core = { path = \"crates/harness-core\", version = \"0.1.0\", default-features = false }\n\
                        serde = { version = \"1\" }\n";
        let bumped = bump(manifest, "0.2.0").unwrap();
        assert_eq!(
            bumped,
            "[workspace.package]\nversion = \"0.2.0\"\n\n[workspace.dependencies]\n\
             harness-core = { path = \"crates/harness-core\", version = \"0.2.0\", default-features = false }\n\
             serde = { version = \"1\" }\n"
        );
    }

    #[test]
    fn versions_and_changelog_sections() {
        assert!(check_version("0.1.0").is_ok());
        assert!(check_version("1.0.0-rc.1").is_ok());
        assert!(check_version("1.0").is_err());
        assert!(check_version("v1.0.0").is_err());
        assert!(is_section_for("## [0.1.0] - 2026-11-30", "0.1.0"));
        assert!(is_section_for("## 0.1.0", "0.1.0"));
        assert!(!is_section_for("## [0.1.01]", "0.1.0"));
        assert!(!is_section_for("### [0.1.0]", "0.1.0"));
    }
}
