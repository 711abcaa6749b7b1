//! `cargo xtask release <version> [--dry-run]`: bump every crate to `version` together, check
//! the changelog, and package and build every crate as crates.io would (`cargo publish
//! --workspace --dry-run`, which goes in dependency order). It never uploads: commit the
//! bump, then `cargo publish --workspace`. With `--dry-run` the manifests are put back after.

use std::fs;

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
        &["publish", "--workspace", "--dry-run", "--allow-dirty"],
        &[],
    );
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
