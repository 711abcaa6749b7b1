//! Reading a vendor's JSON, and the errors its parser reports: each a
//! [`ProviderError`] of the right [`ProviderErrorKind`], carrying the provider id and naming
//! the service, so that a Groq failure says Groq and not OpenAI.

use std::fmt;

use harness_core::{Error, ProviderError, ProviderErrorKind, Result};
use serde::Deserialize;
use serde_json::Value;
use serde_json::error::Category;

/// Who is answering: the provider id every error carries (the client's
/// [`HttpConfig::provider`](super::HttpConfig::provider), such as `groq`) and the service's
/// name its messages use (`Groq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vendor<'a> {
    /// The provider id, as [`ProviderError::provider`] reports it.
    pub id: &'a str,
    /// The service's name, as messages say it.
    pub name: &'a str,
}

impl<'a> Vendor<'a> {
    /// The vendor `id`, called `name` in messages.
    pub const fn new(id: &'a str, name: &'a str) -> Self {
        Self { id, name }
    }

    /// A failure of this vendor, of `kind`, with `message`.
    pub fn error(self, kind: ProviderErrorKind, message: impl Into<String>) -> ProviderError {
        ProviderError::new(self.id, message).with_kind(kind)
    }
}

impl fmt::Display for Vendor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// Reads a non-streamed answer's body (what [`HttpClient::post`](super::HttpClient::post)
/// returned for `path`) into the vendor's wire type `T`, borrowing from `body` where `T`
/// does.
///
/// # Errors
/// [`Incomplete`](ProviderErrorKind::Incomplete) for an empty body or one whose JSON stops
/// short (a cut connection), [`Malformed`](ProviderErrorKind::Malformed) for one that is not
/// JSON or not of `T`'s shape; each keeps an excerpt of the body.
pub fn answer<'de, T: Deserialize<'de>>(
    vendor: Vendor<'_>,
    path: &str,
    body: &'de [u8],
) -> Result<T> {
    let failure = |kind: ProviderErrorKind, message: String| {
        Error::from(
            vendor
                .error(kind, message)
                .with_body(&String::from_utf8_lossy(body)),
        )
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(failure(
            ProviderErrorKind::Incomplete,
            format!("the {vendor} response to {path} is empty"),
        ));
    }
    serde_json::from_slice(body).map_err(|e| match e.classify() {
        // JSON that stops short: the body was cut, not garbled.
        Category::Eof => failure(
            ProviderErrorKind::Incomplete,
            format!("the {vendor} response to {path} ended in the middle of its JSON: {e}"),
        ),
        Category::Data => failure(
            ProviderErrorKind::Malformed,
            format!("the {vendor} response to {path} cannot be read: {e}"),
        ),
        Category::Syntax | Category::Io => failure(
            ProviderErrorKind::Malformed,
            format!("the {vendor} response to {path} is not JSON: {e}"),
        ),
    })
}

/// A field an answer must have, or the [`Malformed`](ProviderErrorKind::Malformed) error that
/// names it, quoting the start of the answer (`body`, read only when the field is missing).
///
/// # Errors
/// When `field` is `None`.
pub fn required<T>(vendor: Vendor<'_>, field: Option<T>, key: &str, body: &[u8]) -> Result<T> {
    field.ok_or_else(|| malformed(vendor, format_args!("is missing '{key}'"), body))
}

/// An answer that cannot be what the vendor means, as the
/// [`Malformed`](ProviderErrorKind::Malformed) error that says what is wrong (`problem`, such
/// as "has no choices") and quotes the start of the answer.
pub fn malformed(vendor: Vendor<'_>, problem: impl fmt::Display, body: &[u8]) -> Error {
    vendor
        .error(
            ProviderErrorKind::Malformed,
            format!(
                "{vendor} response {problem}: {}",
                clip(&String::from_utf8_lossy(body))
            ),
        )
        .into()
}

/// A stream that ended before the vendor's end mark (`missing`, such as "message_stop"), as
/// the [`Incomplete`](ProviderErrorKind::Incomplete) error that says so.
pub fn incomplete(vendor: Vendor<'_>, missing: &str) -> Error {
    vendor
        .error(
            ProviderErrorKind::Incomplete,
            format!(
                "the {vendor} stream ended before {missing}: the answer is incomplete (a dropped \
                 connection or a proxy that cut the body)"
            ),
        )
        .into()
}

/// A stream event that is not the vendor's JSON, as the
/// [`Malformed`](ProviderErrorKind::Malformed) error that quotes it.
pub fn unreadable(vendor: Vendor<'_>, error: &serde_json::Error, data: &str) -> Error {
    vendor
        .error(
            ProviderErrorKind::Malformed,
            format!("unreadable {vendor} stream event: {error}"),
        )
        .with_body(data)
        .into()
}

/// The vendor's own error reported inside an answer (`{"error": {...}}` in a 200 body or a
/// stream event), as a [`Vendor`](ProviderErrorKind::Vendor) error keeping its type and
/// message; `data` is the body or event it came in.
pub fn vendor_error(vendor: Vendor<'_>, error: &Value, data: &str) -> Error {
    let (kind, message) = error_fields(error);
    let message = message
        .unwrap_or_else(|| format!("{vendor} reported an error: {}", clip(&error.to_string())));
    let mut failure = vendor
        .error(ProviderErrorKind::Vendor, message)
        .with_body(data);
    if let Some(kind) = kind {
        failure = failure.with_error_type(kind);
    }
    failure.into()
}

/// `text` cut to 200 characters (never inside a character), `...` marking the cut: how much
/// of an answer a message quotes.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

/// The type and message of a vendor's error object (`{"type"|"status"|"code", "message"}`,
/// as OpenAI, Anthropic, Gemini and llama.cpp send it; Cohere's `error_type`), or the text of
/// an error given as a plain string.
pub(crate) fn error_fields(error: &Value) -> (Option<String>, Option<String>) {
    if let Value::String(message) = error {
        return (None, Some(message.clone()));
    }
    let text = |key: &str| {
        error.get(key).and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    // AWS's JSON services: `"__type": "ThrottlingException"`, or a namespaced
    // `com.amazon.coral.service#ThrottlingException`.
    let aws = || text("__type").map(|t| t.rsplit('#').next().unwrap_or(&t).to_owned());
    // Gemini's `status` is a name (`INVALID_ARGUMENT`); Azure's is the HTTP status, a number,
    // beside the `code` that names the error (`content_filter`): a named code comes first.
    let status = |named: bool| {
        error
            .get("status")
            .filter(|s| s.is_string() == named)
            .and_then(|_| text("status"))
    };
    let kind = text("type")
        .or_else(|| status(true))
        .or_else(|| text("code"))
        .or_else(|| text("error_type"))
        .or_else(aws)
        .or_else(|| status(false));
    (kind, text("message"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GROQ: Vendor<'static> = Vendor::new("groq", "Groq");

    #[test]
    fn clip_cuts_at_200_characters_never_inside_one() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(300);
        let clipped = clip(&long);
        assert_eq!(clipped.chars().count(), 203);
        assert!(clipped.ends_with("..."));
        assert_eq!(clip(&"x".repeat(200)), "x".repeat(200));
    }

    #[test]
    fn answers_are_read_or_fail_with_the_kind_that_says_why() {
        #[derive(Deserialize, Debug)]
        struct Answer {
            #[allow(dead_code)]
            n: u8,
        }
        let failure = |body: &str| {
            let err = answer::<Answer>(GROQ, "/x", body.as_bytes()).unwrap_err();
            let provider = err.provider().unwrap();
            assert_eq!(provider.provider(), "groq");
            (provider.kind(), provider.message().to_owned())
        };
        assert_eq!(
            failure(" \n"),
            (
                ProviderErrorKind::Incomplete,
                "the Groq response to /x is empty".to_owned()
            )
        );
        assert_eq!(failure("{\"n\": ").0, ProviderErrorKind::Incomplete);
        assert_eq!(failure("<html>").0, ProviderErrorKind::Malformed);
        let (kind, message) = failure("{\"n\": \"x\"}");
        assert_eq!(kind, ProviderErrorKind::Malformed);
        assert!(message.contains("cannot be read"), "{message}");
    }

    #[test]
    fn errors_carry_the_id_and_name_the_service() {
        let err = incomplete(GROQ, "a finish_reason");
        let provider = err.provider().map(|p| (p.provider(), p.kind()));
        assert_eq!(provider, Some(("groq", ProviderErrorKind::Incomplete)));
        assert!(err.to_string().contains("the Groq stream ended"), "{err}");
        let err = vendor_error(GROQ, &serde_json::json!({"code": 7}), "{}");
        assert_eq!(err.provider().and_then(|p| p.error_type()), Some("7"));
        assert!(err.to_string().contains("Groq reported an error"), "{err}");
        // Azure: a numeric HTTP `status` beside the `code` that names the error.
        let azure = serde_json::json!({"message": "filtered", "type": null, "param": "prompt",
            "code": "content_filter", "status": 400, "innererror": {"code": "ResponsibleAIPolicyViolation"}});
        assert_eq!(
            error_fields(&azure),
            (Some("content_filter".into()), Some("filtered".into()))
        );
        assert_eq!(
            error_fields(&serde_json::json!({"status": 503}))
                .0
                .as_deref(),
            Some("503")
        );
        let err = required::<u8>(GROQ, None, "choices", b"{}").unwrap_err();
        assert!(
            err.to_string()
                .contains("Groq response is missing 'choices': {}"),
            "{err}"
        );
    }
}
