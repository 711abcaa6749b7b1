//! `ToolName`: the names the built-in tools register under.

use std::fmt;
use std::ops::Deref;

use harness_core::agent::Rule;

/// The names of the built-in tools, as one enum: a member is a `&str` wherever one is
/// expected, and a typo is a compile error instead of a permission rule that silently
/// matches nothing.
///
/// ```
/// use harness_core::agent::{Permissions, Rule};
/// use harness_tools::ToolName;
///
/// let policy = Permissions::new()
///     .allow(ToolName::ReadFile)
///     .allow(Rule::new(ToolName::RunCommand).arg("command", "git log*"))
///     .ask(ToolName::WriteFile);
/// assert_eq!(&*ToolName::RunCommand, "run_command");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ToolName {
    /// `read_file`.
    ReadFile,
    /// `list_files`.
    ListFiles,
    /// `search_files`.
    SearchFiles,
    /// `write_file`.
    WriteFile,
    /// `edit_file`.
    EditFile,
    /// `run_command`.
    RunCommand,
}

impl ToolName {
    /// Every built-in name, in the order the factories register them.
    pub const ALL: [Self; 6] = [
        Self::ReadFile,
        Self::ListFiles,
        Self::SearchFiles,
        Self::WriteFile,
        Self::EditFile,
        Self::RunCommand,
    ];

    /// The name as registered.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ReadFile => "read_file",
            Self::ListFiles => "list_files",
            Self::SearchFiles => "search_files",
            Self::WriteFile => "write_file",
            Self::EditFile => "edit_file",
            Self::RunCommand => "run_command",
        }
    }
}

impl Deref for ToolName {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for ToolName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<ToolName> for Rule {
    fn from(name: ToolName) -> Self {
        Rule::new(name.as_str())
    }
}

impl PartialEq<str> for ToolName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}
