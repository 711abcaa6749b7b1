//! `Permissions`: deciding per call, from the arguments the model actually sent.

use std::fmt;

use serde_json::{Map, Value};

use super::fnmatch::Pattern;
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

/// A pattern as written, and compiled with fnmatch's meaning.
#[derive(Clone)]
struct Glob {
    source: String,
    pattern: Pattern,
}

impl Glob {
    fn new(source: &str) -> Self {
        Self {
            source: source.to_owned(),
            pattern: Pattern::new(source),
        }
    }

    fn matches(&self, text: &str) -> bool {
        self.pattern.matches(text)
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
/// Patterns mean exactly what Python's `fnmatch.fnmatchcase` makes of them: `*` is any run
/// of characters (`/` included; `**` is two of them), `?` one character, `[seq]` / `[!seq]`
/// one character in or not in `seq`, with ranges such as `a-z`; matching is case-sensitive
/// and covers the whole text. A pattern that cannot mean what it says (an unclosed `[`,
/// which fnmatch reads as a literal `[`; a backwards range such as `z-a`; a class that
/// matches nothing) is refused when the agent is built, as is an empty tool name:
/// [`Rule::problems`] names them.
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

    /// What in the rule cannot mean what it says, each naming the pattern: an empty tool
    /// name, an unclosed `[`, a backwards range, a class that matches nothing. Empty for a
    /// sound rule; an agent refuses to build with a rule that has any.
    ///
    /// ```
    /// use harness_core::agent::Rule;
    ///
    /// assert!(Rule::new("run_command").arg("command", "*rm -rf**").problems().is_empty());
    /// let problems = Rule::new("run_command").arg("command", "rm [-rf").problems();
    /// assert!(problems[0].starts_with("argument `command` pattern `rm [-rf`: the `[`"));
    /// ```
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.tool.source.is_empty() {
            problems.push("the tool name is empty: a rule must name a tool or a pattern".into());
        }
        for problem in self.tool.pattern.problems() {
            problems.push(format!("tool pattern `{}`: {problem}", self.tool.source));
        }
        for (name, glob) in &self.arguments {
            for problem in glob.pattern.problems() {
                problems.push(format!(
                    "argument `{name}` pattern `{}`: {problem}",
                    glob.source
                ));
            }
        }
        problems
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

    /// Refuses a rule that cannot mean what it says (see [`Rule::problems`]): a deny rule
    /// whose pattern is read literally matches nothing, and so allows what it was written to
    /// stop. The error names every such rule and what is wrong with it.
    ///
    /// # Errors
    /// A [`Configuration`](crate::ErrorKind::Configuration) error listing the rules and their
    /// problems.
    pub fn check(&self) -> Result<()> {
        let lists = [
            ("deny", &self.deny),
            ("allow", &self.allow),
            ("ask", &self.ask),
        ];
        let mut found = Vec::new();
        for (list, rules) in lists {
            for rule in rules {
                for problem in rule.problems() {
                    found.push(format!("{list} rule {rule:?}: {problem}"));
                }
            }
        }
        if found.is_empty() {
            return Ok(());
        }
        Err(Error::configuration(format!(
            "permission rules that cannot mean what they say: {}. Fix the pattern (a literal \
             `[` is written `[[]`); a rule that matches nothing would silently allow what it \
             was written to stop",
            found.join("; ")
        )))
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
    fn a_deny_rule_written_with_a_double_star_fires() {
        // The old matcher could not parse `**` and matched this rule only literally.
        let policy = Permissions::new().deny(Rule::new("run_command").arg("command", "*rm -rf**"));
        assert!(policy.check().is_ok());
        assert_eq!(
            policy.decide("run_command", &args(json!({"command": "cd / && rm -rf ~"}))),
            Some(Decision::Deny)
        );
    }

    #[test]
    fn rules_that_cannot_mean_what_they_say_are_refused_with_the_rule_named() {
        let policy = Permissions::new()
            .allow("read_*")
            .deny(Rule::new("run_command").arg("command", "rm [-rf"))
            .ask("[z-a]*")
            .deny("");
        let err = policy.check().unwrap_err();
        assert_eq!(
            err.to_string(),
            "permission rules that cannot mean what they say: deny rule Rule { tool: \
             \"run_command\", arguments: [(\"command\", \"rm [-rf\")] }: argument `command` \
             pattern `rm [-rf`: the `[` at character 4 opens a class that never closes, so it \
             would match only a literal `[` (write `[[]` for that); deny rule Rule { tool: \
             \"\" }: the tool name is empty: a rule must name a tool or a pattern; ask rule \
             Rule { tool: \"[z-a]*\" }: tool pattern `[z-a]*`: the range `z-a` in `[z-a]` \
             runs backwards, so it matches nothing; ask rule Rule { tool: \"[z-a]*\" }: tool \
             pattern `[z-a]*`: the class `[z-a]` matches no character. Fix the pattern (a \
             literal `[` is written `[[]`); a rule that matches nothing would silently allow \
             what it was written to stop"
        );
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
