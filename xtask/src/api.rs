//! `cargo xtask api [--bless] [--counts]`: the public API of every publishable crate, one item
//! per line, checked against the snapshot committed as `api/<package>.txt`.
//!
//! For each package that `cargo metadata` lists without `publish = false`, rustdoc's JSON is
//! built on the nightly toolchain with all of the package's features (`cargo rustdoc --lib
//! --all-features -- --output-format json`), and cargo-public-api, pinned to one version and
//! installed into `target/tools` when absent, turns it into one line per public item:
//! modules, re-exports, types, fields, variants, functions, constants, traits and trait impls
//! with their functions. Left out: blanket impls (`impl<T> From<T> for T`, the same for every
//! type) and impls of the auto traits only nightly can name (`Freeze`, `UnsafeUnpin`), which
//! would make the snapshot change with the nightly. Kept: the stable auto traits (`Send`,
//! `Sync`, `Unpin`, the unwind-safety pair) and derived impls, since losing one breaks users.
//! The lines keep cargo-public-api's order, a sort by path with each type's impls after it,
//! so a diff shows the type it touches. The text names no absolute path and no time.
//!
//! A difference is printed as a unified diff and fails; `--bless` rewrites the snapshots (and
//! removes the snapshot of a crate no longer published). `--counts` prints each crate's
//! number of items. Progress goes to stderr, the result to stdout.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The cargo-public-api release the snapshots are made with. A new one may print items
/// differently: bump it on its own, with `--bless`, so the diff shows only its changes.
const TOOL_VERSION: &str = "0.52.0";

/// The rustdoc JSON format that cargo-public-api `TOOL_VERSION` reads (its `rustdoc-types`
/// 0.57, locked by `cargo install --locked`).
const FORMAT_VERSION: u32 = 57;

/// The toolchain whose rustdoc writes the JSON (`--output-format json` is unstable).
const TOOLCHAIN: &str = "nightly";

/// Where the tool is installed (`cargo install --root`), as for cargo-deny.
const TOOLS: &str = "target/tools";

/// Where the snapshots live.
const SNAPSHOTS: &str = "api";

/// Lines of context around each change in a diff.
const CONTEXT: usize = 3;

/// Auto traits that only nightly can name; their impls are left out of the snapshot.
const UNSTABLE_AUTO_TRAITS: [&str; 2] = ["core::marker::Freeze", "core::marker::UnsafeUnpin"];

/// A publishable package: its name and its library target's name.
#[derive(Debug, PartialEq)]
struct Package {
    name: String,
    lib: String,
}

/// What `cargo xtask api` was asked to do.
#[derive(Debug, Default, PartialEq)]
struct Options {
    bless: bool,
    counts: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self, String> {
        let mut options = Self::default();
        for arg in args {
            match arg.as_str() {
                "--bless" => options.bless = true,
                "--counts" => options.counts = true,
                other => {
                    return Err(format!(
                        "api: unknown option `{other}` (expected --bless or --counts)"
                    ));
                }
            }
        }
        Ok(options)
    }
}

pub(crate) fn api(args: &[String]) -> Result<(), String> {
    let options = Options::parse(args)?;
    let root = fs::canonicalize(".").map_err(|e| format!("api: the workspace root: {e}"))?;
    let (packages, target) = metadata()?;
    check_toolchain()?;
    let tool = install_tool(&root)?;
    let apis = packages
        .iter()
        .map(|p| Ok((p.name.as_str(), package_api(&tool, p, &target, &root)?)))
        .collect::<Result<Vec<_>, String>>()?;

    let result = if options.bless {
        bless(&apis)
    } else {
        compare(&apis)
    };
    if options.counts {
        print!("{}", counts(&apis));
    }
    result
}

/// One package's public API, as its snapshot holds it.
fn package_api(
    tool: &Path,
    package: &Package,
    target: &Path,
    root: &Path,
) -> Result<Vec<String>, String> {
    let json = rustdoc_json(package, target)?;
    let lines = public_api(tool, &json, &package.name)?;
    let root = root.to_string_lossy();
    match lines.iter().find(|l| l.contains(&*root)) {
        Some(line) => Err(format!(
            "api: {}'s API names the absolute path {root}, which differs from machine to \
             machine, in: {line}",
            package.name
        )),
        None => Ok(lines),
    }
}

/// The publishable packages with their library target, and the target directory.
fn metadata() -> Result<(Vec<Package>, PathBuf), String> {
    let metadata = crate::workspace_metadata()?;
    Ok((publishable(&metadata)?, crate::target_directory(&metadata)?))
}

/// The packages of `cargo metadata`'s output that `cargo publish` would package, with their
/// library target, in the order cargo lists them.
fn publishable(metadata: &serde_json::Value) -> Result<Vec<Package>, String> {
    crate::publishable_packages(metadata)?
        .into_iter()
        .map(|(name, package)| {
            let lib = package["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|t| {
                    t["kind"].as_array().is_some_and(|kinds| {
                        kinds
                            .iter()
                            .any(|k| matches!(k.as_str(), Some("lib" | "proc-macro")))
                    })
                })
                .and_then(|t| t["name"].as_str())
                .ok_or_else(|| {
                    format!(
                        "api: the publishable package {name} has no library target; \
                         give it `publish = false` or a lib.rs"
                    )
                })?;
            Ok(Package {
                name: name.to_owned(),
                lib: lib.replace('-', "_"),
            })
        })
        .collect()
}

/// Fails, saying how to install it, when the nightly toolchain is missing.
fn check_toolchain() -> Result<(), String> {
    let found = Command::new("rustup")
        .args(["run", TOOLCHAIN, "rustdoc", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        Ok(())
    } else {
        Err(format!(
            "api: rustdoc's JSON output needs the {TOOLCHAIN} toolchain, which rustup does not \
             have; install it with `rustup toolchain install {TOOLCHAIN} --profile minimal` \
             (its rustdoc must write JSON format {FORMAT_VERSION})"
        ))
    }
}

/// cargo-public-api `TOOL_VERSION` in `target/tools`, installed there when absent or of
/// another version.
fn install_tool(root: &Path) -> Result<PathBuf, String> {
    let bin = root.join(TOOLS).join("bin").join("cargo-public-api");
    if installed_version(&bin).as_deref() == Some(TOOL_VERSION) {
        return Ok(bin);
    }
    let args = [
        "install",
        "cargo-public-api",
        "--version",
        TOOL_VERSION,
        "--locked",
        "--quiet",
        "--root",
        TOOLS,
    ];
    // Like cargo-deny in .ci/run: a tool that runs for a second needs no LTO.
    let envs = [
        ("CARGO_PROFILE_RELEASE_LTO", "false"),
        ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16"),
        ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1"),
    ];
    step(Command::new("cargo").args(args).envs(envs)).map_err(|e| {
        format!(
            "api: cannot install cargo-public-api {TOOL_VERSION} ({e}); install it with \
             `cargo {}`",
            args.join(" ")
        )
    })?;
    match installed_version(&bin) {
        Some(version) if version == TOOL_VERSION => Ok(bin),
        other => Err(format!(
            "api: {} reports version {other:?} after installing {TOOL_VERSION}",
            bin.display()
        )),
    }
}

/// The version `cargo-public-api --version` prints, if it runs.
fn installed_version(bin: &Path) -> Option<String> {
    let output = Command::new(bin).arg("--version").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    text.trim()
        .strip_prefix("cargo-public-api ")
        .map(str::to_owned)
}

/// Builds the package's rustdoc JSON, all features on, and returns its path.
fn rustdoc_json(package: &Package, target: &Path) -> Result<PathBuf, String> {
    let mut command = Command::new("rustup");
    command.args(["run", TOOLCHAIN, "cargo", "rustdoc"]);
    command.args(["-p", &package.name, "--lib", "--all-features"]);
    command.args(["--", "-Z", "unstable-options", "--output-format", "json"]);
    step(&mut command).map_err(|e| format!("api: rustdoc JSON of {}: {e}", package.name))?;

    let json = target.join("doc").join(format!("{}.json", package.lib));
    let bytes = fs::read(&json)
        .map_err(|e| format!("api: cannot read rustdoc's output {}: {e}", json.display()))?;
    match format_version(&bytes) {
        Some(FORMAT_VERSION) => Ok(json),
        found => Err(format!(
            "api: {} is in rustdoc JSON format {}, and cargo-public-api {TOOL_VERSION} reads \
             format {FORMAT_VERSION}; use a {TOOLCHAIN} whose rustdoc writes format \
             {FORMAT_VERSION}, or raise TOOL_VERSION (and FORMAT_VERSION) in xtask/src/api.rs \
             to a cargo-public-api release that reads this one and run \
             `cargo xtask api --bless`",
            json.display(),
            found.map_or_else(|| "unknown".to_owned(), |v| v.to_string())
        )),
    }
}

/// The top-level `format_version` of a rustdoc JSON file. The key, quotes included, cannot
/// occur inside a JSON string, where quotes are escaped, so its last occurrence is the one.
fn format_version(json: &[u8]) -> Option<u32> {
    const KEY: &[u8] = b"\"format_version\":";
    let at = json.windows(KEY.len()).rposition(|w| w == KEY)? + KEY.len();
    let digits: String = json[at..]
        .iter()
        .map(|&b| char::from(b))
        .skip_while(char::is_ascii_whitespace)
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The public API in rustdoc JSON `json`, one item a line, as the snapshot holds it.
fn public_api(tool: &Path, json: &Path, package: &str) -> Result<Vec<String>, String> {
    let output = Command::new(tool)
        .arg("--rustdoc-json")
        .arg(json)
        .args(["--omit", "blanket-impls", "--color", "never"])
        .output()
        .map_err(|e| format!("api: cannot run {}: {e}", tool.display()))?;
    if !output.status.success() {
        return Err(format!(
            "api: cargo-public-api failed on {package}'s rustdoc JSON ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let text = String::from_utf8(output.stdout)
        .map_err(|e| format!("api: cargo-public-api's output for {package} is not UTF-8: {e}"))?;
    Ok(snapshot_lines(&text))
}

/// cargo-public-api's output as snapshot lines: no blank lines, no trailing spaces, no impls
/// of the auto traits only nightly can name.
fn snapshot_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim_end)
        .filter(|line| !line.is_empty() && !is_unstable_auto_trait_impl(line))
        .map(str::to_owned)
        .collect()
}

/// Whether `line` is an impl (generic or negative alike) of one of `UNSTABLE_AUTO_TRAITS`.
fn is_unstable_auto_trait_impl(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("impl") else {
        return false;
    };
    let rest = skip_generics(rest).trim_start();
    let rest = rest.strip_prefix('!').unwrap_or(rest);
    UNSTABLE_AUTO_TRAITS
        .iter()
        .any(|t| rest.strip_prefix(t).is_some_and(|r| r.starts_with(' ')))
}

/// `text` after a leading `<...>`, angle brackets balanced; `text` itself when it has none.
fn skip_generics(text: &str) -> &str {
    if !text.starts_with('<') {
        return text;
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return &text[i + 1..];
                }
            }
            _ => {}
        }
    }
    text
}

/// Compares every crate's API with its snapshot, prints a diff for each that differs, and
/// fails naming them.
fn compare(apis: &[(&str, Vec<String>)]) -> Result<(), String> {
    let mut differ = Vec::new();
    for (name, lines) in apis {
        let path = snapshot_path(name);
        let committed = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("api: cannot read {}: {e}", path.display())),
        };
        let committed: Vec<&str> = committed.lines().collect();
        let current: Vec<&str> = lines.iter().map(String::as_str).collect();
        if committed != current {
            let old = format!("{} (committed)", path.display());
            let new = format!("{name} (the code)");
            print!("{}", unified_diff(&committed, &current, &old, &new));
            differ.push(path.display().to_string());
        }
    }
    let stale = stale_snapshots(apis)?;
    if differ.is_empty() && stale.is_empty() {
        println!(
            "api: {} crates, each API matches its snapshot in {SNAPSHOTS}/",
            apis.len()
        );
        return Ok(());
    }
    let mut message = String::from("api: the public API differs from its snapshot");
    if !differ.is_empty() {
        let _ = write!(message, "; changed: {}", differ.join(", "));
    }
    if !stale.is_empty() {
        let _ = write!(
            message,
            "; snapshots of no publishable crate: {}",
            stale.join(", ")
        );
    }
    message.push_str(
        ".\nIf the change is intended, run `cargo xtask api --bless` and commit api/ with it \
         (and list any break in CHANGELOG.md).",
    );
    Err(message)
}

/// Writes every crate's snapshot and removes those of crates no longer published.
fn bless(apis: &[(&str, Vec<String>)]) -> Result<(), String> {
    fs::create_dir_all(SNAPSHOTS).map_err(|e| format!("api: cannot create {SNAPSHOTS}/: {e}"))?;
    for (name, lines) in apis {
        let path = snapshot_path(name);
        let text = snapshot_text(lines);
        if fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            fs::write(&path, text)
                .map_err(|e| format!("api: cannot write {}: {e}", path.display()))?;
            println!("api: wrote {} ({} items)", path.display(), lines.len());
        }
    }
    for stale in stale_snapshots(apis)? {
        fs::remove_file(&stale).map_err(|e| format!("api: cannot remove {stale}: {e}"))?;
        println!("api: removed {stale}, the snapshot of no publishable crate");
    }
    println!("api: {} snapshots in {SNAPSHOTS}/ up to date", apis.len());
    Ok(())
}

fn snapshot_path(package: &str) -> PathBuf {
    Path::new(SNAPSHOTS).join(format!("{package}.txt"))
}

/// The file's text: the lines, each ending in a newline.
fn snapshot_text(lines: &[String]) -> String {
    lines.iter().flat_map(|l| [l.as_str(), "\n"]).collect()
}

/// The `.txt` files in `api/` that belong to none of the crates.
fn stale_snapshots(apis: &[(&str, Vec<String>)]) -> Result<Vec<String>, String> {
    let entries = match fs::read_dir(SNAPSHOTS) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("api: cannot list {SNAPSHOTS}/: {e}")),
    };
    let mut stale = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("api: cannot list {SNAPSHOTS}/: {e}"))?
            .path();
        let known = apis
            .iter()
            .any(|(name, _)| path.file_name() == snapshot_path(name).file_name());
        if path.extension().is_some_and(|e| e == "txt") && !known {
            stale.push(path.display().to_string());
        }
    }
    stale.sort();
    Ok(stale)
}

/// Each crate's number of public items (lines of its snapshot), then the total.
fn counts(apis: &[(&str, Vec<String>)]) -> String {
    let width = apis.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    let mut out = String::from("public items per crate (lines of api/<crate>.txt):\n");
    for (name, lines) in apis {
        let _ = writeln!(out, "  {name:<width$}  {:>6}", lines.len());
    }
    let total: usize = apis.iter().map(|(_, lines)| lines.len()).sum();
    let _ = writeln!(out, "  {:<width$}  {total:>6}", "total");
    out
}

/// One line of a diff: kept, removed (from the old text) or added (from the new).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Edit {
    Keep(usize, usize),
    Remove(usize),
    Add(usize),
}

/// The edits that turn `old` into `new`: the common start and end kept, the middle by a
/// longest common subsequence; a middle too large for that (more than 16 million pairs of
/// lines) is all removed, then all added.
fn edits(old: &[&str], new: &[&str]) -> Vec<Edit> {
    let start = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let end = old[start..]
        .iter()
        .rev()
        .zip(new[start..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (o, n) = (&old[start..old.len() - end], &new[start..new.len() - end]);

    let mut out: Vec<Edit> = (0..start).map(|i| Edit::Keep(i, i)).collect();
    if o.len().saturating_mul(n.len()) <= 16_000_000 {
        out.extend(middle_edits(o, n, start));
    } else {
        out.extend((0..o.len()).map(|i| Edit::Remove(start + i)));
        out.extend((0..n.len()).map(|j| Edit::Add(start + j)));
    }
    let (old_end, new_end) = (old.len() - end, new.len() - end);
    out.extend((0..end).map(|k| Edit::Keep(old_end + k, new_end + k)));
    out
}

/// The edits between `o` and `n` by a longest common subsequence, indices offset by `at`.
fn middle_edits(o: &[&str], n: &[&str], at: usize) -> Vec<Edit> {
    // lcs[i][j]: the length of the longest common subsequence of o[i..] and n[j..].
    let width = n.len() + 1;
    let mut lcs = vec![0u32; (o.len() + 1) * width];
    for i in (0..o.len()).rev() {
        for j in (0..n.len()).rev() {
            lcs[i * width + j] = if o[i] == n[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < o.len() || j < n.len() {
        if i < o.len() && j < n.len() && o[i] == n[j] {
            out.push(Edit::Keep(at + i, at + j));
            (i, j) = (i + 1, j + 1);
        } else if j == n.len()
            || (i < o.len() && lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])
        {
            out.push(Edit::Remove(at + i));
            i += 1;
        } else {
            out.push(Edit::Add(at + j));
            j += 1;
        }
    }
    out
}

/// A unified diff of `old` and `new` with `CONTEXT` lines around each change; empty when
/// they are the same.
fn unified_diff(old: &[&str], new: &[&str], old_name: &str, new_name: &str) -> String {
    let edits = edits(old, new);
    let changed: Vec<usize> = (0..edits.len())
        .filter(|&k| !matches!(edits[k], Edit::Keep(..)))
        .collect();
    let Some(&first) = changed.first() else {
        return String::new();
    };
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    // Hunks: runs of changes at most 2 * CONTEXT kept lines apart, with their context.
    let mut hunk_start = first;
    let mut hunk_end = first;
    for &k in &changed[1..] {
        if k - hunk_end - 1 > 2 * CONTEXT {
            write_hunk(&mut out, &edits, hunk_start, hunk_end, old, new);
            hunk_start = k;
        }
        hunk_end = k;
    }
    write_hunk(&mut out, &edits, hunk_start, hunk_end, old, new);
    out
}

/// One hunk: the edits from `first` to `last` (both changes) with `CONTEXT` kept lines on
/// either side, under its `@@ -a,b +c,d @@` header.
fn write_hunk(
    out: &mut String,
    edits: &[Edit],
    first: usize,
    last: usize,
    old: &[&str],
    new: &[&str],
) {
    let from = first.saturating_sub(CONTEXT);
    let to = (last + CONTEXT + 1).min(edits.len());
    let hunk = &edits[from..to];
    // Where the hunk starts in each text: the first line it shows from that text, or, when it
    // shows none, the line before which it applies.
    let (mut old_at, mut new_at) = (0, 0);
    for edit in &edits[..from] {
        match edit {
            Edit::Keep(..) => (old_at, new_at) = (old_at + 1, new_at + 1),
            Edit::Remove(_) => old_at += 1,
            Edit::Add(_) => new_at += 1,
        }
    }
    let old_len = hunk.iter().filter(|e| !matches!(e, Edit::Add(_))).count();
    let new_len = hunk
        .iter()
        .filter(|e| !matches!(e, Edit::Remove(_)))
        .count();
    // A range of no lines is written with the line before it, as diff -u does.
    let start = |at: usize, len: usize| if len == 0 { at } else { at + 1 };
    let _ = writeln!(
        out,
        "@@ -{},{old_len} +{},{new_len} @@",
        start(old_at, old_len),
        start(new_at, new_len)
    );
    for edit in hunk {
        let _ = match *edit {
            Edit::Keep(i, _) => writeln!(out, " {}", old[i]),
            Edit::Remove(i) => writeln!(out, "-{}", old[i]),
            Edit::Add(j) => writeln!(out, "+{}", new[j]),
        };
    }
}

/// Runs one command with its progress on stderr (its stdout too, so that this command's
/// stdout holds only the result), echoing it first.
fn step(command: &mut Command) -> Result<(), String> {
    let shown = format!(
        "{} {}",
        command.get_program().to_string_lossy(),
        command
            .get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    eprintln!("==> {shown}");
    let status = command
        .stdout(Stdio::from(io::stderr()))
        .status()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    #[test]
    fn options() {
        assert_eq!(Options::parse(&[]).unwrap(), Options::default());
        let both = ["--counts".to_owned(), "--bless".to_owned()];
        assert_eq!(
            Options::parse(&both).unwrap(),
            Options {
                bless: true,
                counts: true
            }
        );
        let err = Options::parse(&["--blessed".to_owned()]).unwrap_err();
        assert!(err.contains("unknown option `--blessed`"), "{err}");
    }

    #[test]
    fn publishable_packages_with_their_library_from_cargo_metadata() {
        let metadata = serde_json::json!({
            "packages": [
                {
                    "name": "deepharness-core",
                    "publish": null,
                    "targets": [
                        {"name": "toolbox", "kind": ["bench"]},
                        {"name": "harness_core", "kind": ["lib"]}
                    ]
                },
                {"name": "xtask", "publish": [], "targets": [{"name": "xtask", "kind": ["bin"]}]},
                {
                    "name": "deepharness-macros",
                    "publish": null,
                    "targets": [{"name": "harness-macros", "kind": ["proc-macro"]}]
                },
            ]
        });
        assert_eq!(
            publishable(&metadata).unwrap(),
            [
                Package {
                    name: "deepharness-core".to_owned(),
                    lib: "harness_core".to_owned()
                },
                Package {
                    name: "deepharness-macros".to_owned(),
                    lib: "harness_macros".to_owned()
                },
            ]
        );
        let no_lib = serde_json::json!({
            "packages": [{"name": "tool", "publish": null, "targets": [{"name": "tool", "kind": ["bin"]}]}]
        });
        let err = publishable(&no_lib).unwrap_err();
        assert!(err.contains("tool has no library target"), "{err}");
        assert!(publishable(&serde_json::json!({})).is_err());
    }

    #[test]
    fn the_format_version_is_read_from_the_top_level_key() {
        let json = br#"{"root":0,"index":{"1":{"docs":"see \"format_version\": 99"}},"format_version": 57}"#;
        assert_eq!(format_version(json), Some(57));
        assert_eq!(format_version(br#"{"format_version":58}"#), Some(58));
        assert_eq!(format_version(br#"{"root":0}"#), None);
    }

    #[test]
    fn impls_of_unstable_auto_traits_are_left_out() {
        let text = "\
pub struct harness_core::Usage
impl core::marker::Freeze for harness_core::Usage
impl core::marker::Send for harness_core::Usage
impl core::marker::UnsafeUnpin for harness_core::Usage
impl<T> core::marker::Freeze for harness_core::Wrapper<T> where T: core::marker::Freeze
impl<T: core::marker::Send> core::marker::Sync for harness_core::Wrapper<T>
impl<T> !core::marker::UnsafeUnpin for harness_core::Wrapper<T>
impl core::marker::FreezeDried for harness_core::Usage   

pub fn harness_core::freeze()
";
        assert_eq!(
            snapshot_lines(text),
            [
                "pub struct harness_core::Usage",
                "impl core::marker::Send for harness_core::Usage",
                "impl<T: core::marker::Send> core::marker::Sync for harness_core::Wrapper<T>",
                "impl core::marker::FreezeDried for harness_core::Usage",
                "pub fn harness_core::freeze()",
            ]
        );
    }

    #[test]
    fn the_same_texts_have_no_diff() {
        let text = lines("a\nb\nc");
        assert_eq!(unified_diff(&text, &text, "old", "new"), "");
        assert_eq!(unified_diff(&[], &[], "old", "new"), "");
    }

    #[test]
    fn a_diff_shows_changes_with_three_lines_of_context() {
        let old = lines("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20");
        let new = lines("1\n2\n3\n4\n5\nfive\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n17\n18\n19\n20");
        assert_eq!(
            unified_diff(&old, &new, "api/x.txt (committed)", "x (the code)"),
            "\
--- api/x.txt (committed)
+++ x (the code)
@@ -3,6 +3,7 @@
 3
 4
 5
+five
 6
 7
 8
@@ -13,7 +14,6 @@
 13
 14
 15
-16
 17
 18
 19
"
        );
    }

    #[test]
    fn nearby_changes_share_a_hunk() {
        let old = lines("a\nb\nc\nd\ne\nf\ng\nh");
        let new = lines("a\nB\nc\nd\ne\nf\nG\nh");
        assert_eq!(
            unified_diff(&old, &new, "o", "n"),
            "--- o\n+++ n\n@@ -1,8 +1,8 @@\n a\n-b\n+B\n c\n d\n e\n f\n-g\n+G\n h\n"
        );
    }

    #[test]
    fn a_diff_from_or_to_nothing() {
        assert_eq!(
            unified_diff(&[], &lines("a\nb"), "o", "n"),
            "--- o\n+++ n\n@@ -0,0 +1,2 @@\n+a\n+b\n"
        );
        assert_eq!(
            unified_diff(&lines("a\nb"), &[], "o", "n"),
            "--- o\n+++ n\n@@ -1,2 +0,0 @@\n-a\n-b\n"
        );
    }

    #[test]
    fn edits_keep_the_longest_common_subsequence() {
        let old = lines("a\nb\nc\nd\ne");
        let new = lines("a\nc\nx\nd\ne");
        assert_eq!(
            edits(&old, &new),
            [
                Edit::Keep(0, 0),
                Edit::Remove(1),
                Edit::Keep(2, 1),
                Edit::Add(2),
                Edit::Keep(3, 3),
                Edit::Keep(4, 4),
            ]
        );
    }

    #[test]
    fn counts_per_crate_and_in_all() {
        let apis = [
            ("deepharness-core", vec!["a".to_owned(), "b".to_owned()]),
            ("deepharness", vec!["c".to_owned()]),
        ];
        assert_eq!(
            counts(&apis),
            "public items per crate (lines of api/<crate>.txt):\n  \
             deepharness-core       2\n  deepharness            1\n  total                  3\n"
        );
    }

    #[test]
    fn a_snapshot_ends_every_line_with_a_newline() {
        assert_eq!(snapshot_text(&["a".to_owned(), "b".to_owned()]), "a\nb\n");
        assert_eq!(snapshot_text(&[]), "");
    }
}
