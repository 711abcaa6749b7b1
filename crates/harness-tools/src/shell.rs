//! `shell_tool`: `run_command`, a shell command started in the workspace root.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use harness_core::{Ctx, ParametersBuilder, Tool, ToolSpec};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::io::AsyncReadExt as _;

use crate::names::ToolName;
use crate::workspace::Workspace;

/// Settings of [`shell_tool`].
#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// A command still running after this long is killed with every process it started.
    /// Default 60 s.
    pub timeout: Duration,
    /// stdout and stderr are each cut to this many characters. Default 30 000.
    pub max_chars: usize,
    /// Whether each call waits for approval. Default `true`.
    pub requires_approval: bool,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            max_chars: 30_000,
            requires_approval: true,
        }
    }
}

/// `run_command`: runs a command through `sh -c` with the workspace root as its working
/// directory, and reports stdout, then stderr (`[stderr]`), then a non-zero exit code
/// (`[exit N]`). A failing command is a result, not an error.
///
/// The command runs in a process group of its own; at the timeout the whole group is killed,
/// children included, and the result says so.
///
/// **Not a sandbox.** The workspace bounds where the command starts, not what it can reach.
/// It is gated by default: keep the gate, or narrow it per command with
/// [`Permissions`](harness_core::agent::Permissions).
pub fn shell_tool(workspace: &Workspace, config: ShellConfig) -> Arc<dyn Tool> {
    let mut params = ParametersBuilder::new();
    params.param::<String>(
        "command",
        Some("The shell command to run, pipes and redirection allowed."),
        true,
    );
    let spec = ToolSpec::new(
        ToolName::RunCommand.as_str(),
        "Run a shell command in the workspace root and return its output and exit code.",
        params.build(),
    )
    .with_requires_approval(config.requires_approval);
    Arc::new(RunCommand {
        spec,
        workspace: workspace.clone(),
        config,
    })
}

struct RunCommand {
    spec: ToolSpec,
    workspace: Workspace,
    config: ShellConfig,
}

#[async_trait::async_trait]
impl Tool for RunCommand {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, arguments: Value, _ctx: Ctx) -> harness_core::Result<String> {
        let Some(command) = arguments.get("command").and_then(Value::as_str) else {
            return Err(harness_core::Error::InvalidArguments {
                tool: self.spec.name.clone(),
                message: "missing field `command` (a string)".into(),
            });
        };
        let failed = |e: std::io::Error| {
            harness_core::Error::tool_failed(
                &self.spec.name,
                format!("cannot run the command: {e}"),
            )
        };
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(self.workspace.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(failed)?;
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let read_out = async move {
            let mut text = Vec::new();
            if let Some(out) = stdout.as_mut() {
                let _ = out.read_to_end(&mut text).await;
            }
            text
        };
        let read_err = async move {
            let mut text = Vec::new();
            if let Some(err) = stderr.as_mut() {
                let _ = err.read_to_end(&mut text).await;
            }
            text
        };
        let run = async { tokio::join!(child.wait(), read_out, read_err) };
        let Ok((status, out, err)) = tokio::time::timeout(self.config.timeout, run).await else {
            // Kill the whole group, so a child the command started dies with it.
            if let Some(group) = group {
                let _ = killpg(group, Signal::SIGKILL);
            }
            let _ = child.kill().await;
            return Ok(format!(
                "Command timed out after {}s: {command}",
                self.config.timeout.as_secs_f64()
            ));
        };
        let status = status.map_err(failed)?;
        Ok(render(&out, &err, status.code(), self.config.max_chars))
    }
}

fn cut(text: &str, max_chars: usize) -> String {
    text.chars().take(max_chars).collect()
}

fn render(out: &[u8], err: &[u8], code: Option<i32>, max_chars: usize) -> String {
    let mut parts = Vec::new();
    let out = String::from_utf8_lossy(out);
    if !out.trim().is_empty() {
        parts.push(cut(out.trim_end(), max_chars));
    }
    let err = String::from_utf8_lossy(err);
    if !err.trim().is_empty() {
        parts.push(format!("[stderr]\n{}", cut(err.trim_end(), max_chars)));
    }
    match code {
        Some(0) => {}
        Some(code) => parts.push(format!("[exit {code}]")),
        None => parts.push("[killed by a signal]".to_owned()),
    }
    if parts.is_empty() {
        "(no output)".to_owned()
    } else {
        parts.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn output_is_stdout_then_stderr_then_a_non_zero_exit() {
        assert_eq!(render(b"out\n\n", b"", Some(0), 100), "out");
        assert_eq!(render(b"", b"", Some(0), 100), "(no output)");
        assert_eq!(
            render(b"a", b"oops\n", Some(2), 100),
            "a\n[stderr]\noops\n[exit 2]"
        );
        assert_eq!(render("é".repeat(10).as_bytes(), b"", Some(0), 3), "ééé");
    }
}
