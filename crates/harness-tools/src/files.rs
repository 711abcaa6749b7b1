//! `file_tools`: reading, listing, searching, writing and editing files inside a workspace.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use harness_core::{Content, Ctx, ParametersBuilder, Tool, ToolError, ToolSpec};
use serde_json::{Map, Value};

use crate::names::ToolName;
use crate::workspace::Workspace;

/// Limits and switches of [`file_tools`].
#[derive(Debug, Clone)]
pub struct FileToolsConfig {
    /// `read_file` stops once this many characters are out (counting one per line end) and
    /// names the offset to continue from. The first line is always returned whole. Default
    /// 200 000.
    pub max_bytes: usize,
    /// `list_files` and `search_files` return at most this many entries. Default 200.
    pub max_matches: usize,
    /// With `false`, only the three read-only tools. Default `true`.
    pub writable: bool,
}

impl Default for FileToolsConfig {
    fn default() -> Self {
        Self {
            max_bytes: 200_000,
            max_matches: 200,
            writable: true,
        }
    }
}

/// The file tools over `workspace`: `read_file`, `list_files`, `search_files`, and unless
/// `config.writable` is false, `write_file` and `edit_file`, both gated
/// (`requires_approval`) out of the box.
///
/// Every path the model sends is resolved through the [`Workspace`] first; a path outside it
/// is refused before any I/O, and the refusal reaches the model as the call's result.
///
/// ```
/// use harness_tools::{FileToolsConfig, Workspace, file_tools};
///
/// let workspace = Workspace::new(std::env::temp_dir())?;
/// let tools = file_tools(&workspace, FileToolsConfig { writable: false, ..Default::default() });
/// let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
/// assert_eq!(names, ["read_file", "list_files", "search_files"]);
/// # Ok::<(), harness_core::Error>(())
/// ```
pub fn file_tools(workspace: &Workspace, config: FileToolsConfig) -> Vec<Arc<dyn Tool>> {
    let shared = Arc::new(Shared {
        workspace: workspace.clone(),
        config,
    });
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        FileTool::boxed(&shared, read_file_spec(), read_file),
        FileTool::boxed(&shared, list_files_spec(), list_files),
        FileTool::boxed(&shared, search_files_spec(), search_files),
    ];
    if shared.config.writable {
        tools.push(FileTool::boxed(&shared, write_file_spec(), write_file));
        tools.push(FileTool::boxed(&shared, edit_file_spec(), edit_file));
    }
    tools
}

struct Shared {
    workspace: Workspace,
    config: FileToolsConfig,
}

/// A tool's body: what the model reads, or why the call failed.
type Result<T> = std::result::Result<T, ToolError>;

type Body = fn(&Shared, &Map<String, Value>) -> Result<String>;

/// One file tool: its spec and the body it runs, on the blocking pool.
struct FileTool {
    spec: Arc<ToolSpec>,
    shared: Arc<Shared>,
    body: Body,
}

impl FileTool {
    fn boxed(shared: &Arc<Shared>, spec: ToolSpec, body: Body) -> Arc<dyn Tool> {
        Arc::new(Self {
            spec: Arc::new(spec),
            shared: Arc::clone(shared),
            body,
        })
    }
}

#[async_trait::async_trait]
impl Tool for FileTool {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    async fn call(&self, arguments: Value, _ctx: Ctx) -> Result<Content> {
        let Value::Object(arguments) = arguments else {
            return Err(ToolError::invalid_arguments(
                "arguments must be a JSON object",
            ));
        };
        let (shared, body) = (Arc::clone(&self.shared), self.body);
        // File I/O blocks: keep it off the runtime's worker threads.
        let outcome = tokio::task::spawn_blocking(move || body(&shared, &arguments)).await;
        match outcome {
            Ok(Ok(text)) => Ok(Content::Text(text)),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(ToolError::failed(format!("the tool stopped: {e}")).with_source(e)),
        }
    }
}

fn text_arg(arguments: &Map<String, Value>, key: &str) -> Result<String> {
    match arguments.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(ToolError::invalid_arguments(format!(
            "`{key}` must be a string, got {other}"
        ))),
        None => Err(ToolError::invalid_arguments(format!(
            "missing field `{key}`"
        ))),
    }
}

fn text_arg_or(arguments: &Map<String, Value>, key: &str, default: &str) -> Result<String> {
    match arguments.get(key) {
        None | Some(Value::Null) => Ok(default.to_owned()),
        _ => text_arg(arguments, key),
    }
}

// Specs -------------------------------------------------------------------------------------

fn spec(name: ToolName, description: &str, params: ParametersBuilder) -> ToolSpec {
    ToolSpec::new(name.as_str(), description, params.build())
}

fn read_file_spec() -> ToolSpec {
    let mut p = ParametersBuilder::new();
    p.param::<String>(
        "path",
        Some("The file to read, relative to the workspace root."),
        true,
    );
    p.param_with_default::<u64>(
        "offset",
        Some("The 1-based line to start at, to continue a long file."),
        &0,
    );
    spec(
        ToolName::ReadFile,
        "Read a text file of the workspace, with numbered lines. A long file is cut off with a \
         note naming the offset to continue from.",
        p,
    )
}

fn list_files_spec() -> ToolSpec {
    let mut p = ParametersBuilder::new();
    p.param_with_default::<String>(
        "pattern",
        Some("A glob such as **/*.rs; ** spans directories."),
        &"**/*".to_owned(),
    );
    spec(
        ToolName::ListFiles,
        "List the files of the workspace whose paths match a glob.",
        p,
    )
}

fn search_files_spec() -> ToolSpec {
    let mut p = ParametersBuilder::new();
    p.param::<String>(
        "pattern",
        Some("The text to look for (plain, case-sensitive)."),
        true,
    );
    p.param_with_default::<String>(
        "glob",
        Some("Which files to search, as a glob."),
        &"**/*".to_owned(),
    );
    spec(
        ToolName::SearchFiles,
        "Search the workspace's text files for lines containing some text; each hit is \
         path:line: text.",
        p,
    )
}

fn write_file_spec() -> ToolSpec {
    let mut p = ParametersBuilder::new();
    p.param::<String>(
        "path",
        Some("The file to write, relative to the workspace root."),
        true,
    );
    p.param::<String>("content", Some("The whole new content of the file."), true);
    spec(
        ToolName::WriteFile,
        "Create or replace a file of the workspace with the given content, creating its \
         directories.",
        p,
    )
    .with_requires_approval(true)
}

fn edit_file_spec() -> ToolSpec {
    let mut p = ParametersBuilder::new();
    p.param::<String>(
        "path",
        Some("The file to edit, relative to the workspace root."),
        true,
    );
    p.param::<String>(
        "old",
        Some("The exact text to replace; it must occur exactly once."),
        true,
    );
    p.param::<String>("new", Some("The text to put in its place."), true);
    spec(
        ToolName::EditFile,
        "Replace one exact piece of text in a file of the workspace. Include enough of the \
         surrounding lines for it to occur only once.",
        p,
    )
    .with_requires_approval(true)
}

// Bodies ------------------------------------------------------------------------------------

fn read_file(shared: &Shared, arguments: &Map<String, Value>) -> Result<String> {
    let path = text_arg(arguments, "path")?;
    let offset = match arguments.get("offset") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_u64().ok_or_else(|| {
            ToolError::invalid_arguments(format!(
                "`offset` must be a non-negative integer, got {v}"
            ))
        })?,
    };
    let bytes = shared.workspace.read(&path)?;
    let text = String::from_utf8_lossy(&bytes);
    let lines = split_lines(&text);
    let total = lines.len();
    let start = usize::try_from(offset.saturating_sub(1)).unwrap_or(usize::MAX);
    let mut kept: Vec<String> = Vec::new();
    let mut size = 0_usize;
    for (i, line) in lines.iter().enumerate().skip(start) {
        let n = i + 1;
        size += line.chars().count() + 1;
        if size > shared.config.max_bytes && !kept.is_empty() {
            kept.push(format!(
                "... [{} more lines; read from offset {n}]",
                total - n + 1
            ));
            break;
        }
        kept.push(format!("{n}\t{line}"));
    }
    Ok(if kept.is_empty() {
        "(empty file)".to_owned()
    } else {
        kept.join("\n")
    })
}

/// Lines as Python's `str.splitlines` finds them: any of `\n`, `\r\n`, `\r`, `\v`, `\f`,
/// `\x1c`-`\x1e`, `\x85`, U+2028, U+2029 ends a line; a final line end adds no empty line.
pub(crate) fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !is_break {
            continue;
        }
        lines.push(&text[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r' && chars.peek().is_some_and(|&(_, next)| next == '\n') {
            chars.next();
            end += 1;
        }
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

fn matcher(pattern: &str) -> Result<GlobMatcher> {
    // `*` stays within one directory and `**` spans them, as in a shell or pathlib.
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::invalid_arguments(format!("invalid glob {pattern:?}: {e}")))
}

/// Every regular file beneath the root (symlinks to files inside included), walked through
/// the workspace's directory handle so a directory swapped for a symlink mid-walk cannot lead
/// the walk outside; sorted. Written by hand because a path-based walker (`ignore`,
/// `walkdir`) would open each directory by name, following such a swap.
fn files(workspace: &Workspace) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(dir) = pending.pop() {
        let entries = if dir.as_os_str().is_empty() {
            workspace.dir().entries()
        } else {
            workspace.dir().read_dir(&dir)
        };
        let Ok(entries) = entries else { continue };
        for entry in entries.flatten() {
            let path = dir.join(entry.file_name());
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                found.push(path);
            } else if kind.is_symlink() {
                // A link counts when it leads to a file inside; a linked directory is not
                // walked, so it never widens a listing.
                let target = path.to_string_lossy().into_owned();
                if workspace.inside(&target).is_ok()
                    && workspace.dir().metadata(&path).is_ok_and(|m| m.is_file())
                {
                    found.push(path);
                }
            }
        }
    }
    found.sort();
    found
}

fn shown(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn list_files(shared: &Shared, arguments: &Map<String, Value>) -> Result<String> {
    let pattern = text_arg_or(arguments, "pattern", "**/*")?;
    let glob = matcher(&pattern)?;
    let matching: Vec<String> = files(&shared.workspace)
        .iter()
        .map(|p| shown(p))
        .filter(|p| glob.is_match(p))
        .collect();
    if matching.is_empty() {
        return Ok(format!("No files match {pattern:?}."));
    }
    let max = shared.config.max_matches;
    let mut lines: Vec<String> = matching.iter().take(max).cloned().collect();
    if matching.len() > max {
        lines.push(format!("... [{} more]", matching.len() - max));
    }
    Ok(lines.join("\n"))
}

fn search_files(shared: &Shared, arguments: &Map<String, Value>) -> Result<String> {
    let pattern = text_arg(arguments, "pattern")?;
    let glob_text = text_arg_or(arguments, "glob", "**/*")?;
    let glob = matcher(&glob_text)?;
    let max = shared.config.max_matches;
    let mut hits = Vec::new();
    for path in files(&shared.workspace) {
        let rel = shown(&path);
        if !glob.is_match(&rel) {
            continue;
        }
        let Ok(bytes) = shared.workspace.dir().read(&path) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        for (i, line) in split_lines(&text).into_iter().enumerate() {
            if !line.contains(pattern.as_str()) {
                continue;
            }
            if hits.len() == max {
                hits.push("... [more matches not shown]".to_owned());
                return Ok(hits.join("\n"));
            }
            hits.push(format!("{rel}:{}: {}", i + 1, line.trim()));
        }
    }
    if hits.is_empty() {
        Ok(format!("No matches for {pattern:?}."))
    } else {
        Ok(hits.join("\n"))
    }
}

fn write_file(shared: &Shared, arguments: &Map<String, Value>) -> Result<String> {
    let path = text_arg(arguments, "path")?;
    let content = text_arg(arguments, "content")?;
    let existed = shared.workspace.write(&path, content.as_bytes())?;
    let rel = shared.workspace.relative(&shared.workspace.resolve(&path)?);
    Ok(format!(
        "{} {rel} ({} characters).",
        if existed { "Replaced" } else { "Created" },
        content.chars().count()
    ))
}

fn edit_file(shared: &Shared, arguments: &Map<String, Value>) -> Result<String> {
    let path = text_arg(arguments, "path")?;
    let old = text_arg(arguments, "old")?;
    let new = text_arg(arguments, "new")?;
    let rel = shared.workspace.relative(&shared.workspace.resolve(&path)?);
    let bytes = shared.workspace.read(&path)?;
    let text = String::from_utf8(bytes).map_err(|_| {
        ToolError::failed(format!(
            "{rel} is not UTF-8 text; edit_file changes text files only"
        ))
    })?;
    let count = if old.is_empty() {
        0
    } else {
        text.matches(old.as_str()).count()
    };
    match count {
        0 => Err(ToolError::failed(format!(
            "{rel} does not contain that text"
        ))),
        1 => {
            shared
                .workspace
                .write(&path, text.replacen(old.as_str(), &new, 1).as_bytes())?;
            Ok(format!("Edited {rel}."))
        }
        n => Err(ToolError::failed(format!(
            "that text appears {n} times in {rel}; include more surrounding lines to make it unique"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::split_lines;

    #[test]
    fn lines_split_as_python_does() {
        assert_eq!(
            split_lines("a\nb\r\nc\rd\u{0b}e\u{2028}f\n"),
            ["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(split_lines(""), Vec::<&str>::new());
        assert_eq!(split_lines("\n\n"), ["", ""]);
        assert_eq!(split_lines("x"), ["x"]);
    }
}
