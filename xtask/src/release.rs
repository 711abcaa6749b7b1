//! `cargo xtask release <version> [--dry-run]`: bump every crate to `version` together, check
//! the changelog, package every crate as crates.io would (`cargo publish --workspace
//! --dry-run`, which goes in dependency order), and build the packages from their tarballs.
//! It never uploads: commit the bump, then `cargo publish --workspace`. With `--dry-run` the
//! manifests are put back after.
//!
//! Before anything is packaged, every package name is looked up in the crates.io index: a
//! name that is there already belongs to someone (none of ours is published yet), and a
//! release under it would be refused, or worse, shadowed. That is why the packages are
//! `deepharness-*`: `harness-core`, `harness-tools` and `harness-macros` are other owners'.
//!
//! Why the build is our own: cargo's verification takes a dependency from crates.io when that
//! version is already there, which would build our crates against whatever holds the name.
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
    let (names, depended_on) = publishable_crates()?;
    check_names_are_ours(&names, &index_has)?;
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
    .and_then(|()| build_packages(version, &names, &depended_on));
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
fn build_packages(version: &str, names: &[String], depended_on: &[String]) -> Result<(), String> {
    // `cargo package` leaves each tarball at target/package/<name>-<version>.crate.
    let mut package = vec!["package", "--no-verify", "--allow-dirty"];
    for name in names {
        package.extend(["-p", name.as_str()]);
    }
    run("cargo", &package, &[])?;
    let package_dir = Path::new("target/package");
    let verify = package_dir.join("verify");
    let _ = fs::remove_dir_all(&verify);
    fs::create_dir_all(&verify).map_err(|e| format!("{}: {e}", verify.display()))?;
    let mut members = Vec::new();
    for name in names {
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
        verify_manifest(names, depended_on, version),
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
    let metadata = crate::workspace_metadata()?;
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

/// The names this project has published itself, so their index entries are its own. None
/// yet: add a name here with its first release.
const PUBLISHED_BY_US: &[&str] = &[];

/// Refuses a package name that the crates.io index already holds and that is not ours.
fn check_names_are_ours(
    names: &[String],
    index_has: &dyn Fn(&str) -> Result<bool, String>,
) -> Result<(), String> {
    let mut taken = Vec::new();
    for name in names {
        if !PUBLISHED_BY_US.contains(&name.as_str()) && index_has(name)? {
            taken.push(name.as_str());
        }
    }
    if taken.is_empty() {
        println!(
            "release: no package name is taken on crates.io: {}",
            names.join(", ")
        );
        Ok(())
    } else {
        Err(format!(
            "these package names already belong to someone on crates.io: {}; rename the \
             package (keeping `[lib] name` so the code does not change) or, if the name is \
             this project's, add it to PUBLISHED_BY_US in xtask/src/release.rs",
            taken.join(", ")
        ))
    }
}

/// Whether the crates.io sparse index has an entry for `name` (`curl`, which CI has).
fn index_has(name: &str) -> Result<bool, String> {
    let url = format!("https://index.crates.io/{}", index_path(name));
    let output = std::process::Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "20",
            &url,
        ])
        .output()
        .map_err(|e| format!("cannot run curl to look up {name} in the crates.io index: {e}"))?;
    match String::from_utf8_lossy(&output.stdout).trim() {
        "200" => Ok(true),
        "404" => Ok(false),
        other => Err(format!(
            "looking up {name} in the crates.io index ({url}) answered {other:?}: the check \
             needs the index; try again when it can be reached"
        )),
    }
}

/// Where the sparse index keeps a crate: `1/a`, `2/ab`, `3/a/abc`, `ab/cd/abcd...`.
fn index_path(name: &str) -> String {
    let name = name.to_ascii_lowercase();
    match name.len() {
        1 => format!("1/{name}"),
        2 => format!("2/{name}"),
        3 => format!("3/{}/{name}", &name[..1]),
        _ => format!("{}/{}/{name}", &name[..2], &name[2..4]),
    }
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
        let names = ["deepharness-core".to_owned(), "deepharness".to_owned()];
        let manifest = super::verify_manifest(&names, &names[..1], "0.2.0");
        assert!(manifest.contains(
            "members = [\n    \"deepharness-core-0.2.0\",\n    \"deepharness-0.2.0\",\n]"
        ));
        assert!(manifest.contains(
            "[patch.crates-io]\ndeepharness-core = { path = \"deepharness-core-0.2.0\" }\n"
        ));
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
    fn a_name_in_the_index_that_is_not_ours_is_refused() {
        let names = ["deepharness-core".to_owned(), "harness-core".to_owned()];
        let index = |name: &str| Ok(name == "harness-core");
        let err = check_names_are_ours(&names, &index).unwrap_err();
        assert!(
            err.starts_with(
                "these package names already belong to someone on crates.io: harness-core;"
            ),
            "{err}"
        );
        assert!(check_names_are_ours(&names[..1], &index).is_ok());
        assert_eq!(index_path("deepharness-core"), "de/ep/deepharness-core");
        assert_eq!(index_path("abc"), "3/a/abc");
        assert_eq!(index_path("ab"), "2/ab");
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
