//! `shell_tool`: `run_command`, a shell command started in the workspace root.

mod capture;
mod procs;

use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use harness_core::{Content, Ctx, ParametersBuilder, Tool, ToolError, ToolSpec};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::time::Instant;

use crate::names::ToolName;
use crate::workspace::Workspace;
use capture::Capture;
use procs::Running;

/// Settings of [`shell_tool`].
#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// A command still running after this long is killed, its process group and the
    /// descendants that left it too (see [`shell_tool`] for what is reached), and the
    /// result says so. Default 60 s.
    pub timeout: Duration,
    /// stdout and stderr are each cut to this many characters, keeping the start and the
    /// end with the count of characters cut between them (see [`shell_tool`]). Default
    /// 30 000.
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
/// directory, and reports what it printed and how it ended. A failing command is a result,
/// not an error.
///
/// # The result
///
/// Parts joined with `\n`: stdout right-trimmed (only if it is not blank); `[stderr]`, a
/// line break and stderr right-trimmed (only if it is not blank); `[exit N]` for a non-zero
/// exit code, or `[killed by a signal]`. Nothing at all gives `(no output)`. Invalid UTF-8
/// becomes U+FFFD, as [`String::from_utf8_lossy`] does.
///
/// A stream longer than [`ShellConfig::max_chars`] characters after the trim is cut in the
/// middle: its first `max_chars - max_chars / 5` characters, a line
/// `... [N characters cut] ...` (N counts the characters left out; `1 character` for one),
/// then its last `max_chars / 5` characters, so the end of a build log or a test run stays
/// visible. The marker has a line of its own; where the cut falls on a line break, that
/// break is the output's own rather than an added one.
///
/// At the timeout the result starts with `Command timed out after {timeout}s: {command}`
/// (the timeout in seconds, `0.5s`, `60s`), followed, on the next lines, by the parts the
/// command printed before it was killed (stdout and `[stderr]`, cut as above; no exit part).
///
/// # The command's processes
///
/// The command runs in a process group of its own, and its output is read while it runs,
/// keeping only the head and tail above, so a command printing without end (`yes`) holds a
/// few hundred kilobytes, not what it printed. The call ends:
///
/// - when `sh` has exited and stdout and stderr are closed: nothing is killed, so a
///   background process whose output goes elsewhere (`server > log 2>&1 &`) keeps running;
/// - when `sh` has exited but something it started still holds stdout or stderr open
///   250 ms later (`sleep 100 &`, whose end could be far off): the call stops reading,
///   kills the command's processes as at the timeout (a detached background process of the
///   same command included), and adds the line
///   `[the output stayed open after the command exited; its remaining processes were killed]`
///   after the other parts;
/// - at the timeout;
/// - when the call's future is dropped (a cancelled run, an outer timeout, an aborted
///   task): the command's processes are killed as at the timeout.
///
/// Killing the command's processes reaches, at that moment, every process still in its
/// process group, wherever its parent is, and every process descending from one of those
/// by parent link (`/proc/<pid>/stat`), including one that left the group with `setpgid`
/// or the session with `setsid`. Each process found is stopped (`SIGSTOP`) before `/proc`
/// is walked again, so what it forked in between is found too; when a walk finds nothing
/// new (at most 8 walks), the group and every process found get `SIGKILL`.
///
/// Not reached: a process that left the group after its parent had exited, since an orphan
/// is re-parented to init (or to a subreaper) and the parent link to the command is gone,
/// so a daemon that double-forks, or `(setsid server &)`, survives; and anything such a
/// process starts. A pid read from `/proc` could be reused by an unrelated process in the
/// microseconds before the signal. Keeping orphans linked would need the host to become a
/// subreaper (`PR_SET_CHILD_SUBREAPER`), a process-wide setting that would make every
/// orphan of every child of the host its zombie to reap, so it is not done; confining a
/// command for good needs a cgroup or a container around the agent.
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
        spec: Arc::new(spec),
        workspace: workspace.clone(),
        config,
    })
}

/// How long the call keeps reading after `sh` exits while its output is still held open.
const OUTPUT_GRACE: Duration = Duration::from_millis(250);

/// The line added when processes holding the output open after `sh` exited were killed.
const HELD_OPEN: &str =
    "[the output stayed open after the command exited; its remaining processes were killed]";

/// The size of each read from stdout and stderr.
const READ_BUFFER: usize = 64 * 1024;

struct RunCommand {
    spec: Arc<ToolSpec>,
    workspace: Workspace,
    config: ShellConfig,
}

/// How the reading ended.
enum Ending {
    /// `sh` exited and the output closed.
    Exited(ExitStatus),
    /// `sh` exited but the output was still open after [`OUTPUT_GRACE`].
    HeldOpen(ExitStatus),
    TimedOut,
}

#[async_trait::async_trait]
impl Tool for RunCommand {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    async fn call(&self, arguments: Value, _ctx: Ctx) -> Result<Content, ToolError> {
        let Some(command) = arguments.get("command").and_then(Value::as_str) else {
            return Err(ToolError::invalid_arguments(
                "missing field `command` (a string)",
            ));
        };
        let failed = |e: std::io::Error| {
            ToolError::failed(format!("cannot run the command: {e}")).with_source(e)
        };
        let child = tokio::process::Command::new("sh")
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
        // From here on, dropping `running` (this future dropped included) kills the command.
        let mut running = Running::new(child);
        let mut stdout = running.child.stdout.take();
        let mut stderr = running.child.stderr.take();
        let mut out = Capture::new(self.config.max_chars);
        let mut err = Capture::new(self.config.max_chars);
        let mut out_buffer = vec![0; READ_BUFFER];
        let mut err_buffer = vec![0; READ_BUFFER];
        let deadline = Instant::now() + self.config.timeout;
        let mut status = None;
        let mut held_until = None;
        let ending = loop {
            if let Some(status) = status
                && stdout.is_none()
                && stderr.is_none()
            {
                break Ending::Exited(status);
            }
            tokio::select! {
                read = read_some(&mut stdout, &mut out_buffer) => match read {
                    Some(bytes) => out.feed(bytes_of(&out_buffer, bytes)),
                    None => stdout = None,
                },
                read = read_some(&mut stderr, &mut err_buffer) => match read {
                    Some(bytes) => err.feed(bytes_of(&err_buffer, bytes)),
                    None => stderr = None,
                },
                exited = running.child.wait(), if status.is_none() => {
                    status = Some(exited.map_err(failed)?);
                    held_until = Some(Instant::now() + OUTPUT_GRACE);
                }
                () = sleep_until_some(held_until) => {
                    if let Some(status) = status {
                        break Ending::HeldOpen(status);
                    }
                }
                () = tokio::time::sleep_until(deadline) => break Ending::TimedOut,
            }
        };
        // Close the pipes before killing, so nothing blocks writing to them.
        drop((stdout, stderr));
        match ending {
            Ending::Exited(status) => {
                running.finished();
                Ok(render(out, err, Some(status), None).into())
            }
            Ending::HeldOpen(status) => {
                running.kill();
                Ok(render(out, err, Some(status), Some(HELD_OPEN)).into())
            }
            Ending::TimedOut => {
                running.kill();
                // Reap `sh` now rather than leave it to the runtime.
                let _ = tokio::time::timeout(Duration::from_secs(1), running.child.wait()).await;
                let header = format!(
                    "Command timed out after {}s: {command}",
                    self.config.timeout.as_secs_f64()
                );
                Ok(match render_streams(out, err) {
                    Some(parts) => format!("{header}\n{parts}"),
                    None => header,
                }
                .into())
            }
        }
    }
}

/// Reads from `stream` if it is still open: `Some(n)` bytes, `None` at its end (or on a
/// read error, which ends the stream too). A closed stream never completes.
async fn read_some<R: AsyncRead + Unpin>(
    stream: &mut Option<R>,
    buffer: &mut [u8],
) -> Option<usize> {
    let Some(stream) = stream else {
        return std::future::pending().await;
    };
    match stream.read(buffer).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}

fn bytes_of(buffer: &[u8], len: usize) -> &[u8] {
    buffer.get(..len).unwrap_or(buffer)
}

async fn sleep_until_some(instant: Option<Instant>) {
    match instant {
        Some(instant) => tokio::time::sleep_until(instant).await,
        None => std::future::pending().await,
    }
}

/// stdout, then `[stderr]` and stderr, each only if not blank; `None` if both are.
fn render_streams(out: Capture, err: Capture) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(out) = out.render() {
        parts.push(out);
    }
    if let Some(err) = err.render() {
        parts.push(format!("[stderr]\n{err}"));
    }
    (!parts.is_empty()).then(|| parts.join("\n"))
}

fn render(out: Capture, err: Capture, status: Option<ExitStatus>, note: Option<&str>) -> String {
    let mut parts = Vec::new();
    if let Some(streams) = render_streams(out, err) {
        parts.push(streams);
    }
    match status.map(|status| status.code()) {
        None | Some(Some(0)) => {}
        Some(Some(code)) => parts.push(format!("[exit {code}]")),
        Some(None) => parts.push("[killed by a signal]".to_owned()),
    }
    if let Some(note) = note {
        parts.push(note.to_owned());
    }
    if parts.is_empty() {
        "(no output)".to_owned()
    } else {
        parts.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt as _;
    use std::process::ExitStatus;

    use super::{Capture, render};

    fn show(out: &[u8], err: &[u8], status: ExitStatus, max_chars: usize) -> String {
        let mut captured = [Capture::new(max_chars), Capture::new(max_chars)];
        captured[0].feed(out);
        captured[1].feed(err);
        let [out, err] = captured;
        render(out, err, Some(status), None)
    }

    #[test]
    fn output_is_stdout_then_stderr_then_a_non_zero_exit() {
        let ok = ExitStatus::from_raw(0);
        assert_eq!(show(b"out\n\n", b"", ok, 100), "out");
        assert_eq!(show(b"", b" \n", ok, 100), "(no output)");
        assert_eq!(
            show(b"a", b"oops\n", ExitStatus::from_raw(2 << 8), 100),
            "a\n[stderr]\noops\n[exit 2]"
        );
        assert_eq!(
            show(b"", b"", ExitStatus::from_raw(9), 100),
            "[killed by a signal]"
        );
        assert_eq!(
            show("é".repeat(10).as_bytes(), b"", ok, 5),
            "éééé\n... [5 characters cut] ...\né"
        );
    }
}
