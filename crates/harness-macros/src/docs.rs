//! Reading a function's doc comment: the tool description and per-parameter descriptions.

use std::collections::HashMap;

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The doc comment's text as written: the one space rustdoc puts after `///` removed, blank
/// lines at either end dropped.
pub(crate) fn doc_text(attrs: &[Attribute]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let Meta::NameValue(nv) = &attr.meta
            && let Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) = &nv.value
        {
            for line in s.value().split('\n') {
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    while lines.first().is_some_and(String::is_empty) {
        lines.remove(0);
    }
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines.join("\n")
}

/// Descriptions of parameters from bullets such as `` * `city` - The city `` or
/// `- days: how many days` (the rustdoc `# Arguments` convention). Indented lines that follow
/// a bullet continue it.
pub(crate) fn parameter_docs(doc: &str, names: &[String]) -> HashMap<String, String> {
    let mut found: HashMap<String, String> = HashMap::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if let Some((name, text)) = parse_bullet(line) {
            if names.contains(&name) {
                found.insert(name.clone(), text);
                current = Some(name);
            } else {
                current = None;
            }
            continue;
        }
        let continues = line.starts_with(char::is_whitespace) && !line.trim().is_empty();
        match (&current, continues) {
            (Some(name), true) => {
                if let Some(text) = found.get_mut(name) {
                    text.push(' ');
                    text.push_str(line.trim());
                }
            }
            _ => current = None,
        }
    }
    found
}

fn parse_bullet(line: &str) -> Option<(String, String)> {
    let rest = line.trim_start();
    let rest = rest
        .strip_prefix("* ")
        .or_else(|| rest.strip_prefix("- "))?
        .trim_start();
    let (name, after) = if let Some(quoted) = rest.strip_prefix('`') {
        let end = quoted.find('`')?;
        (&quoted[..end], &quoted[end + 1..])
    } else {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (&rest[..end], &rest[end..])
    };
    if name.is_empty() {
        return None;
    }
    let after = after.trim_start();
    let text = ["-", ":", "–", "—"]
        .iter()
        .find_map(|sep| after.strip_prefix(sep))?;
    Some((name.to_owned(), text.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bullets_in_both_styles_with_continuations() {
        let doc = "Look up the weather.\n\n# Arguments\n* `city` - The city's name,\n  in English.\n- days: How many days.\n* `other` - not a parameter\n  still not\n";
        let names = vec!["city".to_owned(), "days".to_owned()];
        let found = parameter_docs(doc, &names);
        assert_eq!(
            found.get("city").map(String::as_str),
            Some("The city's name, in English.")
        );
        assert_eq!(
            found.get("days").map(String::as_str),
            Some("How many days.")
        );
        assert_eq!(found.len(), 2);
    }

    #[test]
    fn ignores_lines_that_are_not_bullets() {
        assert_eq!(parse_bullet("* just a note"), None);
        assert_eq!(parse_bullet("city - no bullet"), None);
        assert_eq!(
            parse_bullet("  * `a` — dash"),
            Some(("a".to_owned(), "dash".to_owned()))
        );
    }
}
