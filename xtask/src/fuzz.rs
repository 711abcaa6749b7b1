//! `cargo xtask fuzz [--cases N] [--seed S]`: the seeded property suites with many cases.
//!
//! `cargo test` runs each property target with 2,000 cases; this runs them with 100,000
//! (or `--cases`), in the test profile, so overflow checks stay on. A failing case prints
//! its seed; `--seed <that seed> --cases 1` replays it.

use crate::run;

/// The test targets that hold property suites, as `(package, test)`.
const SUITES: [(&str, &str); 2] = [
    ("deepharness-core", "properties"),
    ("deepharness-providers", "properties"),
];

pub(crate) fn fuzz(args: &[String]) -> Result<(), String> {
    let mut cases = "100000".to_owned();
    let mut seed = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let value = args
            .next()
            .filter(|v| v.parse::<u64>().is_ok())
            .ok_or_else(|| format!("fuzz: {arg} takes a whole number"))?;
        match arg.as_str() {
            "--cases" => cases.clone_from(value),
            "--seed" => seed = Some(value.clone()),
            other => return Err(format!("fuzz: unknown option `{other}`")),
        }
    }
    let mut envs = vec![("DEEPHARNESS_FUZZ_CASES", cases.as_str())];
    if let Some(seed) = &seed {
        envs.push(("DEEPHARNESS_FUZZ_SEED", seed));
    }
    for (package, test) in SUITES {
        run(
            "cargo",
            &["test", "-p", package, "--test", test, "--", "--nocapture"],
            &envs,
        )?;
    }
    Ok(())
}
