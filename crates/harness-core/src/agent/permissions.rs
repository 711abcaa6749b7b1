//! `Permissions`: deciding per call, from the arguments the model actually sent.

use std::fmt;

use glob::{MatchOptions, Pattern};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::tool::Tool;

/// What a policy says about one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Run it, even if the tool is gated.
    Allow,
    /// Pause the run for a human (or ask the toolbox's approval callback).
    Ask,
    /// Do not run it; the model is told so as the call's result.
    Deny,
}

/// Shell-glob matching as Python's `fnmatchcase`: `*` and `?` cross `/`, `[seq]` and `[!seq]`
/// classes, case-sensitive. A pattern the glob crate cannot parse matches itself literally,
/// as fnmatch treats an unclosed `[`.
#[derive(Clone)]
struct Glob {
    source: String,
    pattern: Pattern,
}

impl Glob {
    fn new(source: &str) -> Self {
        let pattern = Pattern::new(source)
            .or_else(|_| Pattern::new(&Pattern::escape(source)))
            .unwrap_or_default();
        Self {
            source: source.to_owned(),
            pattern,
        }
    }

    fn matches(&self, text: &str) -> bool {
        const OPTIONS: MatchOptions = MatchOptions {
            case_sensitive: true,
            require_literal_separator: false,
            require_literal_leading_dot: false,
        };
        self.pattern.matches_with(text, OPTIONS)
    }
}

/// One permission rule: a tool name or name pattern, optionally narrowed by argument
/// patterns.
///
/// Write it from a tool value (`Rule::from(&WriteFile)`, which reads the name the tool is
/// registered under), from a name or pattern (`"write_*".into()`), or with [`Rule::new`] and
/// [`Rule::arg`] to narrow by arguments. Argument patterns are shell globs matched against
/// the argument's text (a string as is, anything else as JSON); a rule that mentions an
/// argument the call did not send does not match, since an absent argument cannot be vouched
/// for.
///
/// ```
/// use harness_core::agent::Rule;
/// use serde_json::json;
///
/// let rule = Rule::new("run_command").arg("command", "git log*");
/// let args = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
/// assert!(rule.matches("run_command", &args(json!({"command": "git log --oneline"}))));
/// assert!(!rule.matches("run_command", &args(json!({"command": "git push"}))));
/// assert!(!rule.matches("run_command", &args(json!({}))));
/// assert!(Rule::from("read_*").is_pattern());
/// ```
#[derive(Clone)]
pub struct Rule {
    tool: Glob,
    arguments: Vec<(String, Glob)>,
}

impl Rule {
    /// A rule for tools whose name matches `tool` (a name or a glob pattern).
    pub fn new(tool: impl AsRef<str>) -> Self {
        Self {
            tool: Glob::new(tool.as_ref()),
            arguments: Vec::new(),
        }
    }

    /// Narrows the rule to calls whose argument `name` matches the glob `pattern`.
    pub fn arg(mut self, name: impl Into<String>, pattern: impl AsRef<str>) -> Self {
        self.arguments
            .push((name.into(), Glob::new(pattern.as_ref())));
        self
    }

    /// The tool name or pattern as written.
    pub fn tool(&self) -> &str {
        &self.tool.source
    }

    /// True when the rule's tool is a pattern (`*`, `?` or `[`) rather than one name.
    pub fn is_pattern(&self) -> bool {
        self.tool.source.contains(['*', '?', '['])
    }

    /// True when the rule matches a call of `name` with `arguments`.
    pub fn matches(&self, name: &str, arguments: &Map<String, Value>) -> bool {
        self.tool.matches(name)
            && self.arguments.iter().all(|(key, pattern)| {
                arguments
                    .get(key)
                    .is_some_and(|value| pattern.matches(&argument_text(value)))
            })
    }
}

/// An argument's text for matching: a string as is, anything else as compact JSON.
fn argument_text(value: &Value) -> std::borrow::Cow<'_, str> {
    match value {
        Value::String(s) => std::borrow::Cow::Borrowed(s),
        other => std::borrow::Cow::Owned(other.to_string()),
    }
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Rule");
        d.field("tool", &self.tool.source);
        if !self.arguments.is_empty() {
            let args: Vec<(&str, &str)> = self
                .arguments
                .iter()
                .map(|(k, p)| (k.as_str(), p.source.as_str()))
                .collect();
            d.field("arguments", &args);
        }
        d.finish()
    }
}

impl From<&str> for Rule {
    fn from(tool: &str) -> Self {
        Self::new(tool)
    }
}

impl From<String> for Rule {
    fn from(tool: String) -> Self {
        Self::new(tool)
    }
}

impl From<&dyn Tool> for Rule {
    /// A rule for a tool held as a trait object, by the name it is registered under.
    fn from(tool: &dyn Tool) -> Self {
        Self::new(&tool.spec().name)
    }
}

impl From<&std::sync::Arc<dyn Tool>> for Rule {
    /// A rule for a shared tool (as the file and shell tool factories return them).
    fn from(tool: &std::sync::Arc<dyn Tool>) -> Self {
        Self::new(&tool.spec().name)
    }
}

impl<T: Tool> From<&T> for Rule {
    /// A rule for the tool itself, by the name it is registered under (so a tool renamed
    /// with `#[tool(name = ...)]` still matches what the model sees).
    fn from(tool: &T) -> Self {
        Self::new(&tool.spec().name)
    }
}

/// A per-call policy: allow, ask and deny rules.
///
/// `deny` beats `allow`, which beats `ask`: adding an allow can never quietly override a deny
/// already written down. A call no rule matches gets no opinion, and the tool's own
/// `requires_approval` stands, so a policy narrows what tools declare; `Permissions::new()`
/// changes nothing.
///
/// ```
/// use harness_core::agent::{Decision, Permissions, Rule};
/// use serde_json::json;
///
/// let policy = Permissions::new()
///     .allow("read_file")
///     .allow(Rule::new("run_command").arg("command", "git log*"))
///     .ask("run_command")
///     .deny(Rule::new("run_command").arg("command", "*rm -rf*"));
/// let args = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
/// assert_eq!(policy.decide("run_command", &args(json!({"command": "git log -3"}))), Some(Decision::Allow));
/// assert_eq!(policy.decide("run_command", &args(json!({"command": "git push"}))), Some(Decision::Ask));
/// assert_eq!(policy.decide("run_command", &args(json!({"command": "rm -rf /"}))), Some(Decision::Deny));
/// assert_eq!(policy.decide("write_file", &args(json!({}))), None);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
}

impl Permissions {
    /// A policy with no rules: it changes nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an allow rule: matching calls run, even when the tool is gated.
    pub fn allow(mut self, rule: impl Into<Rule>) -> Self {
        self.allow.push(rule.into());
        self
    }

    /// Adds an ask rule: matching calls pause for a human.
    pub fn ask(mut self, rule: impl Into<Rule>) -> Self {
        self.ask.push(rule.into());
        self
    }

    /// Adds a deny rule: matching calls never run, and the model is told so.
    pub fn deny(mut self, rule: impl Into<Rule>) -> Self {
        self.deny.push(rule.into());
        self
    }

    /// What the policy says about a call of `name` with `arguments`: the first of deny,
    /// allow, ask with a matching rule, or `None` when no rule matches.
    pub fn decide(&self, name: &str, arguments: &Map<String, Value>) -> Option<Decision> {
        let hit = |rules: &[Rule]| rules.iter().any(|r| r.matches(name, arguments));
        if hit(&self.deny) {
            Some(Decision::Deny)
        } else if hit(&self.allow) {
            Some(Decision::Allow)
        } else if hit(&self.ask) {
            Some(Decision::Ask)
        } else {
            None
        }
    }

    /// Every rule: deny, then allow, then ask.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.deny.iter().chain(&self.allow).chain(&self.ask)
    }

    /// The deny and ask rules: the ones whose silence would be unsafe.
    pub fn gates(&self) -> impl Iterator<Item = &Rule> {
        self.deny.iter().chain(&self.ask)
    }

    /// Refuses gate rules that name (not pattern-match) a tool the agent does not have: a
    /// misspelled deny rule matches nothing and so allows what it was written to stop.
    pub(crate) fn check_against(&self, registered: &[&str]) -> Result<()> {
        let mut unknown: Vec<&str> = self
            .gates()
            .filter(|r| !r.is_pattern())
            .map(Rule::tool)
            .filter(|name| !registered.contains(name))
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        unknown.sort_unstable();
        unknown.dedup();
        let mut known: Vec<&str> = registered.to_vec();
        known.sort_unstable();
        let known = if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        };
        Err(Error::configuration(format!(
            "permission rules deny or ask about unregistered tools: {}. Registered tools: \
             {known}. A rule that names no tool matches no call, so it would silently allow \
             what it was written to stop",
            unknown.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn globs_follow_fnmatchcase() {
        let cases = [
            ("read_*", "read_file", true),
            ("read_*", "Read_file", false),
            ("?ead_file", "read_file", true),
            ("[rw]*", "write_file", true),
            ("[!rw]*", "write_file", false),
            ("a*", "a/b/c", true),
            ("[abc", "[abc", true),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(
                Glob::new(pattern).matches(text),
                expected,
                "{pattern} ~ {text}"
            );
        }
    }

    #[test]
    fn non_string_arguments_match_by_their_json_text() {
        let rule = Rule::new("wire").arg("amount", "5*");
        assert!(rule.matches("wire", &args(json!({"amount": 500}))));
        assert!(!rule.matches("wire", &args(json!({"amount": 40}))));
    }

    #[test]
    fn deny_beats_allow_beats_ask() {
        let policy = Permissions::new().ask("t").allow("t").deny("t");
        assert_eq!(policy.decide("t", &Map::new()), Some(Decision::Deny));
        let policy = Permissions::new().ask("t").allow("t");
        assert_eq!(policy.decide("t", &Map::new()), Some(Decision::Allow));
        assert_eq!(policy.rules().count(), 2);
        assert_eq!(policy.gates().count(), 1);
    }

    #[test]
    fn gates_naming_unregistered_tools_are_refused_patterns_and_allows_are_not() {
        let policy = Permissions::new()
            .deny("run_comand")
            .ask("zap")
            .allow("not_here")
            .deny("write_*");
        let err = policy
            .check_against(&["run_command", "read_file"])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "permission rules deny or ask about unregistered tools: run_comand, zap. Registered \
             tools: read_file, run_command. A rule that names no tool matches no call, so it \
             would silently allow what it was written to stop"
        );
        assert!(Permissions::new().allow("x").check_against(&["y"]).is_ok());
    }
}
