//! `run_command`: output, exit codes, cutting long output, and the command's processes: killed
//! with the descendants that left its group at the timeout and when the call is dropped, and
//! not waited for when they hold the output open after `sh` exits.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

use harness_core::Ctx;
use harness_tools::{ShellConfig, Workspace, shell_tool};
use serde_json::json;

fn workspace(name: &str) -> (std::path::PathBuf, Workspace) {
    let root = std::env::temp_dir().join(format!("harness-shell-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let w = Workspace::new(&root).unwrap();
    (root, w)
}

#[tokio::test]
async fn output_stderr_and_exit_code_in_the_workspace_root() {
    let (root, w) = workspace("out");
    let tool = shell_tool(&w, ShellConfig::default());
    assert!(tool.spec().requires_approval);
    assert_eq!(tool.spec().parameters["required"], json!(["command"]));
    std::fs::write(root.join("here.txt"), "").unwrap();
    let out = tool
        .call(json!({"command": "ls; echo oops >&2; exit 3"}), Ctx::new())
        .await
        .unwrap()
        .text()
        .into_owned();
    assert_eq!(out, "here.txt\n[stderr]\noops\n[exit 3]");
    let out = tool
        .call(json!({"command": "true"}), Ctx::new())
        .await
        .unwrap()
        .text()
        .into_owned();
    assert_eq!(out, "(no output)");
    let out = tool
        .call(json!({"command": "printf 'abcdef' | cat"}), Ctx::new())
        .await
        .unwrap()
        .text()
        .into_owned();
    assert_eq!(out, "abcdef");
    let ungated = shell_tool(
        &w,
        ShellConfig {
            requires_approval: false,
            max_chars: 3,
            ..ShellConfig::default()
        },
    );
    assert!(!ungated.spec().requires_approval);
    assert_eq!(
        ungated
            .call(json!({"command": "echo abcdef"}), Ctx::new())
            .await
            .unwrap()
            .text(),
        "abc\n... [3 characters cut] ..."
    );
    let _ = std::fs::remove_dir_all(root);
}

/// The fields of `/proc/<pid>/stat` after the command name: state, ppid, pgrp, session, ...
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

fn alive(pid: i32) -> bool {
    // A zombie has exited; only a process still running (or stopped) counts.
    stat_fields(pid).is_some_and(|fields| fields[0] != "Z")
}

/// Polls for up to 5 s until `pid` is gone or a zombie.
async fn dies(pid: i32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Polls for up to 10 s until `file` holds a pid.
async fn pid_in(file: &Path) -> i32 {
    for _ in 0..200 {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} holds no pid", file.display());
}

/// The process group and session of `pid`.
fn group_and_session(pid: i32) -> (String, String) {
    let fields = stat_fields(pid).unwrap();
    (fields[2].clone(), fields[3].clone())
}

/// A command that starts a background child in its group and a grandchild that leaves the
/// group and the session, writes the three pids, then sleeps.
const SPAWNS_AND_SLEEPS: &str = "sleep 1000 & echo $! > child.pid; \
    setsid sh -c 'echo $$ > escaped.pid; exec sleep 1000' & \
    echo $$ > shell.pid; echo before; echo warning >&2; sleep 1000";

/// Waits for the pids `SPAWNS_AND_SLEEPS` writes, and checks the escaped one did escape.
async fn spawned_pids(root: &Path) -> [i32; 3] {
    let shell = pid_in(&root.join("shell.pid")).await;
    let child = pid_in(&root.join("child.pid")).await;
    let escaped = pid_in(&root.join("escaped.pid")).await;
    assert_eq!(group_and_session(child).0, shell.to_string());
    let (group, session) = group_and_session(escaped);
    assert_ne!(group, shell.to_string(), "the grandchild left the group");
    assert_eq!(
        session,
        escaped.to_string(),
        "the grandchild leads a session of its own"
    );
    [shell, child, escaped]
}

async fn all_die(pids: [i32; 3]) {
    for (name, pid) in ["shell", "child", "escaped grandchild"].iter().zip(pids) {
        assert!(dies(pid).await, "the {name} ({pid}) is still alive");
    }
}

#[tokio::test]
async fn a_timeout_kills_the_group_and_the_descendants_that_left_it_and_keeps_the_output() {
    let (root, w) = workspace("timeout");
    let tool = shell_tool(
        &w,
        ShellConfig {
            timeout: Duration::from_secs(2),
            ..ShellConfig::default()
        },
    );
    let call = tool.call(json!({"command": SPAWNS_AND_SLEEPS}), Ctx::new());
    let (out, pids) = tokio::join!(call, spawned_pids(&root));
    assert_eq!(
        out.unwrap().text(),
        format!("Command timed out after 2s: {SPAWNS_AND_SLEEPS}\nbefore\n[stderr]\nwarning")
    );
    all_die(pids).await;
    // Nothing printed: the spec's line alone.
    let quiet = shell_tool(
        &w,
        ShellConfig {
            timeout: Duration::from_millis(200),
            ..ShellConfig::default()
        },
    );
    let out = quiet
        .call(json!({"command": "sleep 30"}), Ctx::new())
        .await
        .unwrap()
        .text()
        .into_owned();
    assert_eq!(out, "Command timed out after 0.2s: sleep 30");
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test]
async fn dropping_the_call_kills_the_group_and_the_descendants_that_left_it() {
    let (root, w) = workspace("dropped");
    let tool = shell_tool(&w, ShellConfig::default());
    // The call's future is dropped as soon as the command has started everything, as an
    // outer timeout or a cancelled run would drop it.
    let pids = tokio::select! {
        out = tool.call(json!({"command": SPAWNS_AND_SLEEPS}), Ctx::new()) => {
            panic!("the command ended: {out:?}")
        }
        pids = spawned_pids(&root) => pids,
    };
    all_die(pids).await;
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test]
async fn aborting_the_task_running_the_call_kills_the_command() {
    let (root, w) = workspace("aborted");
    let tool = shell_tool(&w, ShellConfig::default());
    let task = tokio::spawn({
        let tool = tool.clone();
        async move {
            tool.call(json!({"command": SPAWNS_AND_SLEEPS}), Ctx::new())
                .await
        }
    });
    let pids = spawned_pids(&root).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    all_die(pids).await;
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test]
async fn a_background_child_holding_the_output_open_is_killed_soon_after_sh_exits() {
    let (root, w) = workspace("held");
    let tool = shell_tool(&w, ShellConfig::default());
    let started = Instant::now();
    let out = tool
        .call(
            json!({"command": "sleep 1000 & echo $! > child.pid; echo done; exit 4"}),
            Ctx::new(),
        )
        .await
        .unwrap()
        .text()
        .into_owned();
    // Not the 60 s timeout, nor the 1000 s of the sleeper.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        out,
        "done\n[exit 4]\n[the output stayed open after the command exited; its remaining processes were killed]"
    );
    let child = pid_in(&root.join("child.pid")).await;
    assert!(
        dies(child).await,
        "the background child ({child}) is still alive"
    );
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test]
async fn a_background_child_with_its_output_elsewhere_is_left_running() {
    let (root, w) = workspace("detached");
    let tool = shell_tool(&w, ShellConfig::default());
    let out = tool
        .call(
            json!({"command": "sleep 1000 > /dev/null 2>&1 & echo $! > child.pid; echo started"}),
            Ctx::new(),
        )
        .await
        .unwrap()
        .text()
        .into_owned();
    assert_eq!(out, "started");
    let child = pid_in(&root.join("child.pid")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        alive(child),
        "a detached background child is not the call's to kill"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test]
async fn a_command_that_closes_its_output_still_runs_until_the_timeout() {
    let (root, w) = workspace("closed");
    let tool = shell_tool(
        &w,
        ShellConfig {
            timeout: Duration::from_millis(800),
            ..ShellConfig::default()
        },
    );
    let command = "echo early; echo $$ > shell.pid; exec >&- 2>&-; sleep 1000";
    let started = Instant::now();
    let out = tool
        .call(json!({"command": command}), Ctx::new())
        .await
        .unwrap()
        .text()
        .into_owned();
    assert!(started.elapsed() >= Duration::from_millis(800));
    assert_eq!(
        out,
        format!("Command timed out after 0.8s: {command}\nearly")
    );
    let shell = pid_in(&root.join("shell.pid")).await;
    assert!(dies(shell).await);
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test]
async fn invalid_utf8_becomes_replacement_characters() {
    let (root, w) = workspace("utf8");
    let tool = shell_tool(&w, ShellConfig::default());
    let out = tool
        .call(
            json!({"command": r"printf 'a\377b\303\251c'; printf '\342\202' >&2"}),
            Ctx::new(),
        )
        .await
        .unwrap()
        .text()
        .into_owned();
    assert_eq!(out, "a\u{FFFD}béc\n[stderr]\n\u{FFFD}");
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test]
async fn long_stdout_and_stderr_are_each_cut_in_the_middle_with_the_count() {
    let (root, w) = workspace("long");
    let tool = shell_tool(
        &w,
        ShellConfig {
            max_chars: 1000,
            ..ShellConfig::default()
        },
    );
    // 100 000 bytes on each stream, written in turns so both pipes fill.
    let command =
        "for i in $(seq 100); do yes out | head -c 1000; yes err | head -c 1000 >&2; done";
    let out = tool
        .call(json!({"command": command}), Ctx::new())
        .await
        .unwrap()
        .text()
        .into_owned();
    // Each stream is 99 999 characters once trimmed: 800 shown from the start, 200 from the
    // end, 98 999 cut. Both cuts fall on a line break, so no break is added around the marker.
    let stream = |word: &str| {
        format!(
            "{}... [98999 characters cut] ...\n{}{word}",
            format!("{word}\n").repeat(200),
            format!("{word}\n").repeat(49)
        )
    };
    assert_eq!(
        out,
        format!("{}\n[stderr]\n{}", stream("out"), stream("err"))
    );
    let _ = std::fs::remove_dir_all(root);
}

/// Set in the copy of this test binary that runs `yes`, so its memory is measured alone.
const YES_CHILD: &str = "HARNESS_SHELL_YES_CHILD";

fn high_water_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn yes_for_the_whole_timeout_stays_within_a_few_megabytes() {
    if std::env::var_os(YES_CHILD).is_some() {
        let (root, w) = workspace("yes");
        let tool = shell_tool(
            &w,
            ShellConfig {
                timeout: Duration::from_secs(2),
                ..ShellConfig::default()
            },
        );
        let before = high_water_kb();
        let out = tool
            .call(json!({"command": "yes"}), Ctx::new())
            .await
            .unwrap()
            .text()
            .into_owned();
        let after = high_water_kb();
        println!(
            "VmHWM before={before} after={after} chars={}",
            out.chars().count()
        );
        assert!(
            out.starts_with("Command timed out after 2s: yes\ny\ny\n"),
            "{out:.100}"
        );
        assert!(out.ends_with("y\ny"));
        assert!(out.contains(" characters cut] ...\n"));
        assert!(out.chars().count() <= 30_000 + 100);
        let _ = std::fs::remove_dir_all(root);
        return;
    }
    // Run this test alone in a copy of the binary, so the high-water mark is its own.
    let run = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "yes_for_the_whole_timeout_stays_within_a_few_megabytes",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(YES_CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The harness may print the test's name on the same line first.
    let line = stdout
        .lines()
        .find_map(|line| line.find("VmHWM ").map(|at| &line[at..]))
        .unwrap();
    let kb = |key: &str| -> u64 {
        line.split_whitespace()
            .find_map(|field| field.strip_prefix(key))
            .unwrap()
            .parse()
            .unwrap()
    };
    let grown = kb("after=").saturating_sub(kb("before="));
    println!("{line}: grown by {grown} kB");
    // Reading it all would take hundreds of megabytes a second.
    assert!(grown < 16 * 1024, "the high-water mark grew by {grown} kB");
}
