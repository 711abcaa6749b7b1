//! `run_command`: output, exit codes, and a timeout that kills the command's children too.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

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
        .unwrap();
    assert_eq!(out, "here.txt\n[stderr]\noops\n[exit 3]");
    let out = tool
        .call(json!({"command": "true"}), Ctx::new())
        .await
        .unwrap();
    assert_eq!(out, "(no output)");
    let out = tool
        .call(json!({"command": "printf 'abcdef' | cat"}), Ctx::new())
        .await
        .unwrap();
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
            .unwrap(),
        "abc"
    );
    let _ = std::fs::remove_dir_all(root);
}

fn alive(pid: i32) -> bool {
    // A zombie has exited; only a process still running counts.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z'))
    })
}

#[tokio::test]
async fn a_timeout_kills_the_command_and_the_child_it_spawned() {
    let (root, w) = workspace("timeout");
    let tool = shell_tool(
        &w,
        ShellConfig {
            timeout: Duration::from_millis(500),
            ..ShellConfig::default()
        },
    );
    // The command starts a background child that would outlive it, records both pids, and
    // sleeps past the timeout.
    let command = "sleep 30 & echo $! > child.pid; echo $$ > shell.pid; sleep 30";
    let out = tool
        .call(json!({"command": command}), Ctx::new())
        .await
        .unwrap();
    assert_eq!(out, format!("Command timed out after 0.5s: {command}"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    for file in ["shell.pid", "child.pid"] {
        let pid: i32 = std::fs::read_to_string(root.join(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!alive(pid), "{file} ({pid}) is still alive");
    }
    let _ = std::fs::remove_dir_all(root);
}
