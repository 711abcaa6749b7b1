//! `cargo xtask features [-p <package>]...`: every publishable crate checked with no default
//! features, with each feature alone and with all of them, warnings denied.
//!
//! Each combination is checked twice: the library alone (`--lib`), as a crate depending on it
//! builds it, without the dev-dependencies whose features would otherwise leak into it; then
//! every target (`--all-targets`: tests, benches, examples). The feature lists come from
//! `cargo metadata`; a combination that enables the same features as one checked before (all
//! of a crate's features when it has only one, say) is not checked twice. Every check runs,
//! failed or not, and a summary with each one's time ends the output.
//!
//! The checks share one target directory of their own, `target/features`: `RUSTFLAGS` is part
//! of what cargo fingerprints, so `-D warnings` in the main one would rebuild it every time.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A publishable package and its `[features]` table.
#[derive(Debug, PartialEq)]
struct Package {
    name: String,
    features: BTreeMap<String, Vec<String>>,
}

/// How one check selects a package's features.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Selection {
    /// `--no-default-features`.
    None,
    /// `--no-default-features --features <name>`.
    Only(String),
    /// `--all-features`.
    All,
}

impl Selection {
    fn args(&self) -> Vec<&str> {
        match self {
            Self::None => vec!["--no-default-features"],
            Self::Only(feature) => vec!["--no-default-features", "--features", feature],
            Self::All => vec!["--all-features"],
        }
    }

    fn label(&self) -> String {
        match self {
            Self::None => "no default features".to_owned(),
            Self::Only(feature) => format!("only {feature}"),
            Self::All => "all features".to_owned(),
        }
    }
}

/// One `cargo check` run and how it went.
struct Outcome {
    package: String,
    what: String,
    passed: bool,
    took: Duration,
}

pub(crate) fn features(args: &[String]) -> Result<(), String> {
    let mut only = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-p" | "--package" => only.push(
                args.next()
                    .ok_or_else(|| format!("features: {arg} takes a package name"))?
                    .clone(),
            ),
            other => return Err(format!("features: unknown option `{other}`")),
        }
    }

    let (packages, target) = metadata()?;
    if let Some(unknown) = only
        .iter()
        .find(|name| !packages.iter().any(|p| &p.name == *name))
    {
        return Err(format!(
            "features: `{unknown}` is not a publishable package of the workspace"
        ));
    }
    let target = target.join("features");
    let target = target.to_string_lossy();
    let rustflags = match std::env::var("RUSTFLAGS") {
        Ok(flags) if !flags.trim().is_empty() => format!("{flags} -D warnings"),
        _ => "-D warnings".to_owned(),
    };

    let started = Instant::now();
    let mut outcomes = Vec::new();
    for package in packages
        .iter()
        .filter(|p| only.is_empty() || only.contains(&p.name))
    {
        for selection in selections(&package.features) {
            for targets in ["--lib", "--all-targets"] {
                let mut args = vec!["check", "--quiet", "-p", &package.name, targets];
                args.extend(selection.args());
                println!("\n==> cargo {}", args.join(" "));
                let start = Instant::now();
                let status = Command::new("cargo")
                    .args(&args)
                    .env("CARGO_TARGET_DIR", &*target)
                    .env("RUSTFLAGS", &rustflags)
                    .status()
                    .map_err(|e| format!("could not start cargo: {e}"))?;
                outcomes.push(Outcome {
                    package: package.name.clone(),
                    what: format!("{}, {}", selection.label(), &targets[2..]),
                    passed: status.success(),
                    took: start.elapsed(),
                });
            }
        }
    }

    print!("{}", summary(&outcomes, started.elapsed()));
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    if failed == 0 {
        Ok(())
    } else {
        Err(format!(
            "features: {failed} of {} checks failed",
            outcomes.len()
        ))
    }
}

/// The publishable packages with their features, and the target directory.
fn metadata() -> Result<(Vec<Package>, PathBuf), String> {
    let metadata = crate::workspace_metadata()?;
    Ok((publishable(&metadata)?, crate::target_directory(&metadata)?))
}

/// The packages of `cargo metadata`'s output that `cargo publish` would package, with their
/// features, in the order cargo lists them.
fn publishable(metadata: &Value) -> Result<Vec<Package>, String> {
    let packages = crate::publishable_packages(metadata)?
        .into_iter()
        .map(|(name, package)| {
            let features = package["features"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(feature, enables)| {
                    let enables = enables
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect();
                    (feature.clone(), enables)
                })
                .collect();
            Package {
                name: name.to_owned(),
                features,
            }
        })
        .collect();
    Ok(packages)
}

/// What to check: no default features, each feature alone (`default` is not one), all of
/// them; a selection enabling the same features as an earlier one is left out.
fn selections(features: &BTreeMap<String, Vec<String>>) -> Vec<Selection> {
    let mut candidates = vec![Selection::None];
    candidates.extend(
        features
            .keys()
            .filter(|f| *f != "default")
            .map(|f| Selection::Only(f.clone())),
    );
    candidates.push(Selection::All);

    let mut seen = Vec::new();
    candidates
        .into_iter()
        .filter(|selection| {
            let roots: Vec<&str> = match selection {
                Selection::None => Vec::new(),
                Selection::Only(feature) => vec![feature.as_str()],
                Selection::All => features
                    .keys()
                    .map(String::as_str)
                    .filter(|f| *f != "default")
                    .collect(),
            };
            let set = enabled(features, &roots);
            if seen.contains(&set) {
                false
            } else {
                seen.push(set);
                true
            }
        })
        .collect()
}

/// The package's own features that `roots` turn on, themselves included: a value naming a
/// feature enables it, and so does `name/feature` (not the weak `name?/feature`), which
/// enables the optional dependency `name` and its implicit feature, when it has one.
fn enabled(features: &BTreeMap<String, Vec<String>>, roots: &[&str]) -> BTreeSet<String> {
    let mut on = BTreeSet::new();
    let mut todo: Vec<&str> = roots.to_vec();
    while let Some(feature) = todo.pop() {
        let Some(enables) = features.get(feature) else {
            continue;
        };
        if !on.insert(feature.to_owned()) {
            continue;
        }
        for value in enables {
            let named = match value.split_once('/') {
                Some((dependency, _)) if !dependency.ends_with('?') => dependency,
                Some(_) => continue,
                None if value.starts_with("dep:") => continue,
                None => value.as_str(),
            };
            todo.push(named);
        }
    }
    on
}

/// Each check with its time, then the totals.
fn summary(outcomes: &[Outcome], took: Duration) -> String {
    let package = outcomes.iter().map(|o| o.package.len()).max().unwrap_or(0);
    let what = outcomes.iter().map(|o| o.what.len()).max().unwrap_or(0);
    let mut out = String::from("\nfeature checks:\n");
    for o in outcomes {
        let _ = writeln!(
            out,
            "  {:<4} {:<package$}  {:<what$}  {:>6.1}s",
            if o.passed { "ok" } else { "FAIL" },
            o.package,
            o.what,
            o.took.as_secs_f64()
        );
    }
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    let _ = writeln!(
        out,
        "features: {} passed, {failed} failed, in {:.0}s",
        outcomes.len() - failed,
        took.as_secs_f64()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(entries: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        entries
            .iter()
            .map(|(f, enables)| {
                (
                    (*f).to_owned(),
                    enables.iter().map(|e| (*e).to_owned()).collect(),
                )
            })
            .collect()
    }

    fn only(feature: &str) -> Selection {
        Selection::Only(feature.to_owned())
    }

    #[test]
    fn none_each_alone_and_all() {
        let features = table(&[
            ("default", &["search", "mcp", "mcp-http"]),
            ("search", &["dep:harness-providers"]),
            ("mcp", &["dep:rmcp"]),
            (
                "mcp-http",
                &[
                    "mcp",
                    "dep:reqwest",
                    "rmcp/transport-streamable-http-client-reqwest",
                ],
            ),
        ]);
        assert_eq!(
            selections(&features),
            [
                Selection::None,
                only("mcp"),
                only("mcp-http"),
                only("search"),
                Selection::All
            ]
        );
    }

    #[test]
    fn a_selection_enabling_the_same_features_is_checked_once() {
        // No features: "all" is "none".
        assert_eq!(selections(&BTreeMap::new()), [Selection::None]);
        // One feature: "all" is that one alone.
        let one = table(&[
            ("default", &["macros"]),
            ("macros", &["dep:harness-macros"]),
        ]);
        assert_eq!(selections(&one), [Selection::None, only("macros")]);
        // A feature that turns on every other one is "all".
        let chain = table(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]);
        assert_eq!(
            selections(&chain),
            [Selection::None, only("a"), only("b"), only("c")]
        );
    }

    #[test]
    fn features_enable_features_directly_and_through_dependencies() {
        let features = table(&[
            ("tools", &["dep:harness-tools", "harness-tools/mcp"]),
            ("harness-tools", &["dep:harness-tools"]),
            (
                "providers",
                &["dep:harness-providers", "harness-tools?/search"],
            ),
            ("all", &["tools", "providers"]),
        ]);
        let names = |set: BTreeSet<String>| set.into_iter().collect::<Vec<_>>();
        assert_eq!(
            names(enabled(&features, &["tools"])),
            ["harness-tools", "tools"]
        );
        assert_eq!(names(enabled(&features, &["providers"])), ["providers"]);
        assert_eq!(
            names(enabled(&features, &["all"])),
            ["all", "harness-tools", "providers", "tools"]
        );
        assert!(enabled(&features, &[]).is_empty());
    }

    #[test]
    fn publishable_packages_with_their_features_from_cargo_metadata() {
        let metadata = serde_json::json!({
            "packages": [
                {
                    "name": "deepharness-tools",
                    "publish": null,
                    "features": {"default": ["search"], "search": ["dep:harness-providers"]}
                },
                {"name": "xtask", "publish": [], "features": {}},
                {"name": "deepharness-macros", "publish": null, "features": {}},
            ],
            "target_directory": "/tmp/target"
        });
        let packages = publishable(&metadata).unwrap();
        assert_eq!(
            packages,
            [
                Package {
                    name: "deepharness-tools".to_owned(),
                    features: table(&[
                        ("default", &["search"]),
                        ("search", &["dep:harness-providers"])
                    ]),
                },
                Package {
                    name: "deepharness-macros".to_owned(),
                    features: BTreeMap::new(),
                },
            ]
        );
        assert!(publishable(&serde_json::json!({})).is_err());
    }

    #[test]
    fn the_summary_names_each_check_and_counts_failures() {
        let outcomes = [
            Outcome {
                package: "deepharness-core".to_owned(),
                what: "no default features, lib".to_owned(),
                passed: true,
                took: Duration::from_millis(1500),
            },
            Outcome {
                package: "deepharness".to_owned(),
                what: "only tools, all-targets".to_owned(),
                passed: false,
                took: Duration::from_secs(12),
            },
        ];
        let text = summary(&outcomes, Duration::from_secs(14));
        assert!(
            text.contains("  ok   deepharness-core  no default features, lib     1.5s\n"),
            "{text}"
        );
        assert!(
            text.contains("  FAIL deepharness       only tools, all-targets     12.0s\n"),
            "{text}"
        );
        assert!(
            text.ends_with("features: 1 passed, 1 failed, in 14s\n"),
            "{text}"
        );
    }
}
