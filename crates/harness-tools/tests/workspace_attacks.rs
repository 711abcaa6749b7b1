//! The workspace against escapes: `..` chains, absolute paths, symlinked files and
//! directories pointing out, symlink loops, a hard link, and a race that keeps swapping a
//! directory for a symlink to `/` while the tools read and write.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use harness_core::{Ctx, Error, ErrorKind};
use harness_tools::{FileToolsConfig, Workspace, file_tools};
use serde_json::json;

struct Sandbox {
    base: PathBuf,
    root: PathBuf,
    outside: PathBuf,
}

impl Sandbox {
    fn new(name: &str) -> Self {
        let base =
            std::env::temp_dir().join(format!("harness-tools-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "SECRET").unwrap();
        std::fs::write(root.join("sub/inside.txt"), "inside").unwrap();
        Self {
            base,
            root,
            outside,
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn assert_outside(result: Result<impl std::fmt::Debug, Error>, what: &str) {
    match result {
        Err(err) if err.kind() == ErrorKind::Workspace => {}
        other => panic!("{what}: expected a Workspace error, got {other:?}"),
    }
}

#[test]
fn dot_dot_chains_and_absolute_paths_are_refused() {
    let s = Sandbox::new("dots");
    let w = Workspace::new(&s.root).unwrap();
    for path in [
        "..",
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "sub/../../../../../../etc/passwd",
        "./sub/./../..",
        "/etc/passwd",
        s.outside.join("secret.txt").to_str().unwrap(),
    ] {
        assert_outside(w.resolve(path), path);
        assert_outside(w.read(path), path);
        assert_outside(w.write(path, b"x"), path);
    }
    assert!(!s.outside.join("x").exists());
    // Inside is fine, however it is spelled.
    assert_eq!(
        w.resolve("sub/../sub/inside.txt").unwrap(),
        w.root().join("sub/inside.txt")
    );
    assert_eq!(
        w.resolve(w.root().join("sub").to_str().unwrap()).unwrap(),
        w.root().join("sub")
    );
    assert_eq!(w.read("sub/inside.txt").unwrap(), b"inside");
    assert_eq!(w.relative(w.root()), ".");
    assert_eq!(
        w.relative(&w.root().join("sub/inside.txt")),
        "sub/inside.txt"
    );
}

#[test]
fn symlinks_pointing_out_are_refused_and_do_not_widen_a_listing() {
    let s = Sandbox::new("links");
    symlink(s.outside.join("secret.txt"), s.root.join("leak.txt")).unwrap();
    symlink(&s.outside, s.root.join("leakdir")).unwrap();
    symlink("/", s.root.join("slash")).unwrap();
    symlink("sub/inside.txt", s.root.join("fine.txt")).unwrap();
    let w = Workspace::new(&s.root).unwrap();
    for path in [
        "leak.txt",
        "leakdir/secret.txt",
        "leakdir",
        "slash/etc/passwd",
        "leakdir/new.txt",
    ] {
        assert_outside(w.resolve(path), path);
        assert_outside(w.read(path), path);
    }
    assert_outside(
        w.write("leakdir/new.txt", b"x"),
        "write through a linked dir",
    );
    assert!(!s.outside.join("new.txt").exists());
    // A link that stays inside works.
    assert_eq!(w.read("fine.txt").unwrap(), b"inside");
}

#[tokio::test]
async fn the_tools_refuse_escapes_as_results_and_never_list_what_is_outside() {
    let s = Sandbox::new("tools");
    symlink(&s.outside, s.root.join("leakdir")).unwrap();
    symlink(s.outside.join("secret.txt"), s.root.join("leak.txt")).unwrap();
    let w = Workspace::new(&s.root).unwrap();
    let tools = file_tools(&w, FileToolsConfig::default());
    let call = |i: usize, args: serde_json::Value| {
        let tool = Arc::clone(&tools[i]);
        async move { tool.call(args, Ctx::new()).await }
    };
    let err = call(0, json!({"path": "../outside/secret.txt"}))
        .await
        .unwrap_err();
    assert!(
        err.model_text().contains("is outside the workspace root"),
        "{}",
        err.model_text()
    );
    let err = call(0, json!({"path": "leak.txt"})).await.unwrap_err();
    assert!(err.model_text().contains("is outside the workspace root"));
    let listing = call(1, json!({})).await.unwrap();
    assert_eq!(listing.text(), "sub/inside.txt");
    let hits = call(2, json!({"pattern": "SECRET"})).await.unwrap();
    assert_eq!(hits.text(), "No matches for \"SECRET\".");
    let err = call(3, json!({"path": "leakdir/planted.txt", "content": "x"}))
        .await
        .unwrap_err();
    assert!(err.model_text().contains("is outside the workspace root"));
    assert!(!s.outside.join("planted.txt").exists());
}

#[test]
fn a_symlink_loop_is_a_typed_error_not_a_hang() {
    let s = Sandbox::new("loop");
    symlink("b", s.root.join("a")).unwrap();
    symlink("a", s.root.join("b")).unwrap();
    let w = Workspace::new(&s.root).unwrap();
    let err = w.read("a").unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Io | ErrorKind::Workspace),
        "{err:?}"
    );
}

#[test]
fn a_hard_link_is_the_same_file_as_documented() {
    let s = Sandbox::new("hard");
    // Making the link needs access to the outside file; the workspace bounds paths, not
    // inodes, so the linked file reads as the file it is.
    if std::fs::hard_link(s.outside.join("secret.txt"), s.root.join("hard.txt")).is_err() {
        return; // a file system without hard links across these folders
    }
    let w = Workspace::new(&s.root).unwrap();
    assert_eq!(w.read("hard.txt").unwrap(), b"SECRET");
}

#[test]
fn a_root_that_is_not_a_directory_is_a_configuration_error() {
    let s = Sandbox::new("root");
    let err = Workspace::new(s.root.join("sub/inside.txt")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration, "{err:?}");
    assert!(
        err.to_string().contains("is not an existing directory"),
        "{err:?}"
    );
    assert!(Workspace::new(s.base.join("missing")).is_err());
}

/// Another thread keeps replacing `race` (a real directory) with a symlink to `/` and back,
/// while this one reads, writes and lists through the workspace. Whatever the interleaving,
/// nothing outside the root is read or written.
#[test]
fn a_directory_swapped_for_a_symlink_never_lets_a_read_or_write_escape() {
    let s = Sandbox::new("race");
    let w = Workspace::new(&s.root).unwrap();
    let race = s.root.join("race");
    std::fs::create_dir_all(&race).unwrap();
    std::fs::write(race.join("passwd"), "decoy").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (race, stop) = (race.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let staged = race.with_file_name("race-staged");
            let mut swaps = 0_u32;
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::remove_file(&staged);
                let _ = std::fs::remove_dir_all(&staged);
                if swaps.is_multiple_of(2) {
                    let _ = symlink("/etc", &staged);
                } else {
                    let _ = std::fs::create_dir(&staged);
                    let _ = std::fs::write(staged.join("passwd"), "decoy");
                }
                let _ = std::fs::remove_dir_all(&race).or_else(|_| std::fs::remove_file(&race));
                let _ = std::fs::rename(&staged, &race);
                swaps += 1;
            }
            swaps
        })
    };
    let tools = file_tools(&w, FileToolsConfig::default());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut refused = 0;
    for i in 0..3000 {
        match w.read("race/passwd") {
            Ok(bytes) => assert_eq!(bytes, b"decoy", "attempt {i} read outside the root"),
            Err(err) if matches!(err.kind(), ErrorKind::Workspace | ErrorKind::Io) => refused += 1,
            Err(other) => panic!("untyped refusal: {other:?}"),
        }
        let marker = format!("race/escape-{i}.txt");
        match w.write(&marker, b"x") {
            Ok(_) => {}
            Err(err) if matches!(err.kind(), ErrorKind::Workspace | ErrorKind::Io) => {}
            Err(other) => panic!("untyped refusal: {other:?}"),
        }
        if i % 100 == 0 {
            let listing = runtime
                .block_on(tools[1].call(json!({"pattern": "**/*"}), Ctx::new()))
                .unwrap()
                .text()
                .into_owned();
            assert!(
                !listing.contains("shadow") && !listing.contains("hostname"),
                "listed outside: {listing}"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 10, "the swapper ran ({swaps} swaps)");
    // Nothing was written outside.
    let escaped: Vec<PathBuf> = std::fs::read_dir("/etc")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("escape-"))
        })
        .collect();
    assert!(escaped.is_empty(), "escaped writes: {escaped:?}");
    eprintln!("race: {swaps} swaps, {refused} of 3000 reads refused");
    let _ = Path::new(&race);
}
