//! What each file tool returns, exactly (spec §8.2, with its oddities fixed).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use harness_core::{Ctx, Tool};
use harness_tools::{FileToolsConfig, ToolName, Workspace, file_tools};
use serde_json::{Value, json};

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn setup(name: &str, config: FileToolsConfig) -> (Dir, Vec<Arc<dyn Tool>>) {
    let root = std::env::temp_dir().join(format!("harness-files-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::create_dir_all(root.join(".hidden")).unwrap();
    std::fs::write(root.join("README.md"), "# Title\nsome text\n").unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/deep/lib.rs"),
        "pub fn hi() {}\n// hi again\n",
    )
    .unwrap();
    std::fs::write(root.join(".hidden/notes.txt"), "hi there\n").unwrap();
    std::fs::write(root.join("binary.bin"), [0xff, 0xfe, b'h', b'i']).unwrap();
    let workspace = Workspace::new(&root).unwrap();
    (Dir(root), file_tools(&workspace, config))
}

async fn call(tools: &[Arc<dyn Tool>], name: ToolName, args: Value) -> Result<String, String> {
    let tool = tools
        .iter()
        .find(|t| t.spec().name == name.as_str())
        .unwrap();
    tool.call(args, Ctx::new())
        .await
        .map(|content| content.text().into_owned())
        .map_err(|e| e.model_text())
}

#[tokio::test]
async fn the_tools_their_schemas_and_their_gates() {
    let (_dir, tools) = setup("specs", FileToolsConfig::default());
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "list_files",
            "search_files",
            "write_file",
            "edit_file"
        ]
    );
    let gated: Vec<bool> = tools.iter().map(|t| t.spec().requires_approval).collect();
    assert_eq!(gated, [false, false, false, true, true]);
    let read = &tools[0].spec().parameters;
    assert_eq!(read["required"], json!(["path"]));
    assert_eq!(read["properties"]["offset"]["default"], json!(0));
    assert_eq!(
        tools[1].spec().parameters["properties"]["pattern"]["default"],
        json!("**/*")
    );
    assert_eq!(tools[2].spec().parameters["required"], json!(["pattern"]));
    assert_eq!(
        tools[4].spec().parameters["required"],
        json!(["path", "old", "new"])
    );
}

#[tokio::test]
async fn read_file_numbers_lines_and_names_the_offset_to_continue_from() {
    let (dir, tools) = setup(
        "read",
        FileToolsConfig {
            max_bytes: 12,
            ..Default::default()
        },
    );
    std::fs::write(dir.0.join("long.txt"), "aaaa\nbbbb\ncccc\ndddd\n").unwrap();
    let out = call(&tools, ToolName::ReadFile, json!({"path": "long.txt"}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "1\taaaa\n2\tbbbb\n... [2 more lines; read from offset 3]"
    );
    let out = call(
        &tools,
        ToolName::ReadFile,
        json!({"path": "long.txt", "offset": 3}),
    )
    .await
    .unwrap();
    assert_eq!(out, "3\tcccc\n4\tdddd");
    let out = call(
        &tools,
        ToolName::ReadFile,
        json!({"path": "long.txt", "offset": 99}),
    )
    .await
    .unwrap();
    assert_eq!(out, "(empty file)");
    // The first line is always whole, even past the cap.
    std::fs::write(dir.0.join("wide.txt"), "x".repeat(50)).unwrap();
    let out = call(&tools, ToolName::ReadFile, json!({"path": "wide.txt"}))
        .await
        .unwrap();
    assert_eq!(out, format!("1\t{}", "x".repeat(50)));
    // Invalid UTF-8 is replaced, not refused.
    let out = call(&tools, ToolName::ReadFile, json!({"path": "binary.bin"}))
        .await
        .unwrap();
    assert_eq!(out, "1\t\u{fffd}\u{fffd}hi");
    let err = call(&tools, ToolName::ReadFile, json!({"path": "missing.txt"}))
        .await
        .unwrap_err();
    assert!(err.starts_with("Error: missing.txt: "), "{err}");
    let err = call(&tools, ToolName::ReadFile, json!({}))
        .await
        .unwrap_err();
    assert!(err.contains("missing field `path`"), "{err}");
}

#[tokio::test]
async fn list_files_globs_relative_sorted_hidden_included_and_capped() {
    let (_dir, tools) = setup(
        "list",
        FileToolsConfig {
            max_matches: 3,
            ..Default::default()
        },
    );
    let out = call(&tools, ToolName::ListFiles, json!({"pattern": "**/*.rs"}))
        .await
        .unwrap();
    assert_eq!(out, "src/deep/lib.rs\nsrc/main.rs");
    let out = call(&tools, ToolName::ListFiles, json!({"pattern": "*.md"}))
        .await
        .unwrap();
    assert_eq!(out, "README.md", "`*` stays in one directory");
    let out = call(&tools, ToolName::ListFiles, json!({})).await.unwrap();
    assert_eq!(
        out,
        ".hidden/notes.txt\nREADME.md\nbinary.bin\n... [2 more]"
    );
    let out = call(&tools, ToolName::ListFiles, json!({"pattern": "**/*.py"}))
        .await
        .unwrap();
    assert_eq!(out, "No files match \"**/*.py\".");
}

#[tokio::test]
async fn search_files_reports_path_line_and_text_and_says_more_only_when_there_is_more() {
    let (_dir, tools) = setup(
        "search",
        FileToolsConfig {
            max_matches: 3,
            ..Default::default()
        },
    );
    let out = call(
        &tools,
        ToolName::SearchFiles,
        json!({"pattern": "hi", "glob": "**/*.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        "src/deep/lib.rs:1: pub fn hi() {}\nsrc/deep/lib.rs:2: // hi again\nsrc/main.rs:2: println!(\"hi\");"
    );
    let out = call(&tools, ToolName::SearchFiles, json!({"pattern": "hi"}))
        .await
        .unwrap();
    assert_eq!(
        out,
        ".hidden/notes.txt:1: hi there\nsrc/deep/lib.rs:1: pub fn hi() {}\nsrc/deep/lib.rs:2: // hi again\n... [more matches not shown]"
    );
    let out = call(
        &tools,
        ToolName::SearchFiles,
        json!({"pattern": "nothing like it"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "No matches for \"nothing like it\".");
}

#[tokio::test]
async fn write_and_edit_report_what_they_did_and_refuse_ambiguity() {
    let (dir, tools) = setup("write", FileToolsConfig::default());
    let out = call(
        &tools,
        ToolName::WriteFile,
        json!({"path": "new/dir/a.txt", "content": "one two two"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "Created new/dir/a.txt (11 characters).");
    let out = call(
        &tools,
        ToolName::WriteFile,
        json!({"path": "new/dir/a.txt", "content": "one two two ✓"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "Replaced new/dir/a.txt (13 characters).");
    let err = call(
        &tools,
        ToolName::EditFile,
        json!({"path": "new/dir/a.txt", "old": "two", "new": "2"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        "Error: that text appears 2 times in new/dir/a.txt; include more surrounding lines to make it unique"
    );
    let err = call(
        &tools,
        ToolName::EditFile,
        json!({"path": "new/dir/a.txt", "old": "three", "new": "3"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err, "Error: new/dir/a.txt does not contain that text");
    let out = call(
        &tools,
        ToolName::EditFile,
        json!({"path": "new/dir/a.txt", "old": "one", "new": "1"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "Edited new/dir/a.txt.");
    assert_eq!(
        std::fs::read_to_string(dir.0.join("new/dir/a.txt")).unwrap(),
        "1 two two ✓"
    );
}

#[tokio::test]
async fn read_only_tools_are_three() {
    let (_dir, tools) = setup(
        "ro",
        FileToolsConfig {
            writable: false,
            ..Default::default()
        },
    );
    assert_eq!(tools.len(), 3);
}
