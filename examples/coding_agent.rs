//! A coding agent over a directory: file tools and a shell confined to it, a permission
//! policy deciding each call, and approval asked on the terminal for the rest.
//!
//! ```text
//! cargo run --example coding_agent                        # a demo project in a temp dir
//! cargo run --example coding_agent -- ./my-project "Fix the failing test"
//! cargo run --example coding_agent -- ./my-project --yes  # approve every asked call
//! ```
//!
//! The policy: reading, listing and searching run freely; `git log`, `git status` and `ls`
//! commands too; any command containing `rm -rf` is refused outright; writes, edits and
//! every other command ask you first (no answer, as when stdin is not a terminal, is no).
//! A refusal is not the end of the run: the model reads it as the call's result.
//!
//! The shell tool is **not a sandbox**: the workspace bounds where a command starts, not what
//! it can reach. Keep the asking gate for commands on a machine you care about.
//!
//! With no key set it runs on the offline `TestModel`, which calls every tool once with
//! generated arguments; `model_from_env_or_test` picks a real provider when one is configured (and says when it falls back).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use deepharness::Budget;
use deepharness::agent::{AgentEvent, Toolbox};
use deepharness::prelude::*;
use deepharness::providers::ModelChoice;
use deepharness::tools::{
    FileToolsConfig, Permissions, Rule, ShellConfig, ToolName, Workspace, approve_fn, file_tools,
    shell_tool,
};
use serde_json::Value;

const DEFAULT_TASK: &str = "greet.sh prints a misspelled greeting. Find it, fix the spelling, \
                            and run the script to check.";

fn main() -> Result<(), Error> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let approve_all = args.iter().any(|a| a == "--yes");
    args.retain(|a| a != "--yes");
    let root = match args.first() {
        Some(dir) => PathBuf::from(dir),
        None => demo_project()?,
    };
    let task = args.get(1).map_or(DEFAULT_TASK, String::as_str);

    let workspace = Workspace::new(&root)?;
    println!("workspace: {}", workspace.root().display());

    let toolbox = Toolbox::builder()
        .tools(file_tools(&workspace, FileToolsConfig::default()))
        .tool(shell_tool(&workspace, ShellConfig::default()))
        // Consulted for every call the policy says to ask about.
        .human(approve_fn(move |name, arguments| {
            approve_all || ask(name, arguments)
        }))
        .build()?;

    let policy = Permissions::new()
        .allow(ToolName::ReadFile)
        .allow(ToolName::ListFiles)
        .allow(ToolName::SearchFiles)
        .allow(Rule::new(ToolName::RunCommand).arg("command", "git log*"))
        .allow(Rule::new(ToolName::RunCommand).arg("command", "git status*"))
        .allow(Rule::new(ToolName::RunCommand).arg("command", "ls*"))
        .deny(Rule::new(ToolName::RunCommand).arg("command", "*rm -rf*"))
        .ask(ToolName::WriteFile)
        .ask(ToolName::EditFile)
        .ask(ToolName::RunCommand);

    let agent = Agent::builder(model()?.model)
        .name("coder")
        .system(
            "You are a careful coding agent working in one directory. Read before you edit, \
             make the smallest change that does the task, and run a command to check it.",
        )
        .toolbox(toolbox)
        .permissions(policy)
        .budget(Budget::new().with_steps(20))
        .build()?;

    // The blocking iterator runs one tool at a time, so terminal prompts never interleave.
    for event in agent.stream(task).blocking()? {
        match event? {
            AgentEvent::ToolStarted {
                name, arguments, ..
            } => println!("→ {name} {}", Value::Object(arguments)),
            AgentEvent::ToolFinished { result, failed, .. } => {
                let mark = if failed { "✗" } else { "←" };
                let first = result.lines().next().unwrap_or("");
                println!("{mark} {first}");
            }
            AgentEvent::Finished(state) => {
                println!("\n{} ({})", state.output_text(), state.stop_reason);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Asks on the terminal whether `name` may run with `arguments`; anything but "y" is no.
fn ask(name: &str, arguments: &Value) -> bool {
    print!("allow {name} {arguments}? [y/N] ");
    std::io::stdout().flush().ok();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        println!("(no answer: refused)");
        return false;
    }
    matches!(line.trim(), "y" | "Y" | "yes")
}

/// A small project with a bug to fix, in a fresh temporary directory.
fn demo_project() -> Result<PathBuf, Error> {
    let root = std::env::temp_dir().join(format!("deepharness-coding-{}", std::process::id()));
    let write = |path: &str, text: &str| {
        std::fs::create_dir_all(&root)
            .and_then(|()| std::fs::write(root.join(path), text))
            .map_err(|e| Error::io(root.join(path), e))
    };
    write("greet.sh", "#!/bin/sh\necho \"Helo, $1!\"\n")?;
    write("README.md", "# greet\n\n`sh greet.sh NAME` greets NAME.\n")?;
    Ok(root)
}

/// The model, chosen before the blocking run starts a runtime of its own.
fn model() -> Result<ModelChoice, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::configuration(format!("cannot start a runtime: {e}")))?;
    runtime.block_on(model_from_env_or_test())
}
