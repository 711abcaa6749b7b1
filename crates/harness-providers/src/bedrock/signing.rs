//! AWS Signature Version 4 over a request about to be sent, by AWS's own signer
//! (`aws-sigv4`): the hook that signs every attempt of a Bedrock request.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings, UriPathNormalizationMode,
    sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use harness_core::{Error, Result};

use super::credentials::CredentialSource;
use crate::rest::{Authenticate, Outgoing};

/// What a signature is made for.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    /// The region, such as `us-east-1`.
    pub(crate) region: String,
    /// The signing name of the service: `bedrock` for Bedrock's runtime.
    pub(crate) service: &'static str,
    /// Whether the path is normalised (`.` and `..` resolved) before it is signed: every
    /// service but S3.
    pub(crate) normalize_path: bool,
    /// Whether the body's SHA-256 is sent as `x-amz-content-sha256` (and signed).
    pub(crate) content_sha256: bool,
}

/// The headers that sign `request` with `credentials` at `time`: `x-amz-date`,
/// `authorization`, and `x-amz-content-sha256` and `x-amz-security-token` when they apply.
pub(crate) fn signature(
    credentials: &Credentials,
    scope: &Scope,
    time: SystemTime,
    request: &Outgoing<'_>,
) -> Result<Vec<(String, String)>> {
    let identity = Identity::from(credentials.clone());
    let mut settings = SigningSettings::default();
    settings.uri_path_normalization_mode = if scope.normalize_path {
        UriPathNormalizationMode::Enabled
    } else {
        UriPathNormalizationMode::Disabled
    };
    settings.payload_checksum_kind = if scope.content_sha256 {
        PayloadChecksumKind::XAmzSha256
    } else {
        PayloadChecksumKind::NoHeader
    };
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&scope.region)
        .name(scope.service)
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| Error::configuration(format!("cannot sign for AWS: {e}")))?
        .into();
    let signable = SignableRequest::new(
        request.method(),
        request.url(),
        request.headers(),
        SignableBody::Bytes(request.body()),
    )
    .map_err(|e| {
        Error::configuration(format!(
            "cannot sign the request to {} for AWS: {e}",
            request.url()
        ))
    })?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|e| {
            Error::configuration(format!(
                "cannot sign the request to {} for AWS: {e}",
                request.url()
            ))
        })?
        .into_parts();
    Ok(instructions
        .headers()
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect())
}

/// Signs every attempt with SigV4, the credentials from their source (refreshed before they
/// expire), the time the attempt is made.
#[derive(Debug)]
pub(crate) struct SigV4 {
    pub(crate) credentials: CredentialSource,
    pub(crate) scope: Scope,
}

#[async_trait::async_trait]
impl Authenticate for SigV4 {
    async fn authenticate(&self, request: &Outgoing<'_>) -> Result<Vec<(String, String)>> {
        let credentials = self.credentials.get().await?;
        signature(&credentials, &self.scope, SystemTime::now(), request)
    }
}

#[cfg(test)]
mod tests {
    //! AWS's published SigV4 test suite (the cases of `tests/fixtures/bedrock/sigv4/`, see
    //! the fixtures README) through [`signature`]: each case's request, credentials, region,
    //! service and time give the `Authorization` header the suite signed.

    use super::*;
    use std::path::Path;

    struct Case {
        method: String,
        url: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    }

    /// A request of the suite: `METHOD path HTTP/1.1`, `Name:value` lines, a blank line,
    /// the body.
    fn parse_request(text: &str) -> Case {
        let (head, body) = text.split_once("\n\n").unwrap_or((text, ""));
        let mut lines = head.lines();
        let first = lines.next().unwrap();
        let mut words = first.split(' ');
        let method = words.next().unwrap().to_owned();
        let path = words.next().unwrap();
        let mut headers: Vec<(String, String)> = Vec::new();
        for line in lines {
            if let Some(rest) = line.strip_prefix(' ').or_else(|| line.strip_prefix('\t')) {
                // A folded line continues the header before it.
                let last = headers.last_mut().unwrap();
                last.1.push('\n');
                last.1.push_str(rest);
                continue;
            }
            let (name, value) = line.split_once(':').unwrap();
            headers.push((name.to_owned(), value.to_owned()));
        }
        let host = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("host"))
            .map(|(_, v)| v.clone())
            .unwrap();
        Case {
            method,
            url: format!("https://{host}{path}"),
            headers,
            body: body.as_bytes().to_vec(),
        }
    }

    fn authorization(signed: &str) -> String {
        signed
            .lines()
            .find_map(|l| l.strip_prefix("Authorization:"))
            .unwrap()
            .trim()
            .to_owned()
    }

    fn run(name: &str) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/bedrock/sigv4")
            .join(name);
        let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap();
        let context: serde_json::Value = serde_json::from_str(&read("context.json")).unwrap();
        let creds = &context["credentials"];
        let credentials = Credentials::new(
            creds["access_key_id"].as_str().unwrap(),
            creds["secret_access_key"].as_str().unwrap(),
            creds["token"].as_str().map(str::to_owned),
            None,
            "test-suite",
        );
        let scope = Scope {
            region: context["region"].as_str().unwrap().to_owned(),
            service: Box::leak(
                context["service"]
                    .as_str()
                    .unwrap()
                    .to_owned()
                    .into_boxed_str(),
            ),
            normalize_path: context["normalize"].as_bool().unwrap(),
            content_sha256: context["sign_body"].as_bool().unwrap_or(true),
        };
        let time = aws_smithy_types::DateTime::from_str(
            context["timestamp"].as_str().unwrap(),
            aws_smithy_types::date_time::Format::DateTime,
        )
        .unwrap();
        let time = SystemTime::try_from(time).unwrap();
        let mut case = parse_request(&read("request.txt"));
        // The signer sets the date itself.
        case.headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case("x-amz-date"));
        let headers = signature(
            &credentials,
            &scope,
            time,
            &Outgoing::new(&case.method, &case.url, &case.headers, &case.body),
        )
        .unwrap();
        let got = headers
            .iter()
            .find(|(k, _)| k == "authorization")
            .map(|(_, v)| v.clone())
            .unwrap();
        assert_eq!(
            got,
            authorization(&read("header-signed-request.txt")),
            "{name}"
        );
        let date = headers.iter().find(|(k, _)| k == "x-amz-date").unwrap();
        let signed = read("header-signed-request.txt");
        assert!(signed.contains(&date.1), "{name}: {}", date.1);
        if creds["token"].is_string() {
            assert!(headers.iter().any(|(k, _)| k == "x-amz-security-token"));
        }
    }

    #[test]
    fn a_bedrock_request_signs_as_botocore_signs_it() {
        // The expected headers were computed by botocore 1.44.8's `SigV4Auth(credentials,
        // "bedrock", "us-east-1")` for this request, with `X-Amz-Content-SHA256` set to the
        // body's hash: the model id's `%3A` is signed double-encoded (`%253A`), as Bedrock
        // checks it.
        let body = br#"{"messages":[{"role":"user","content":[{"text":"hi"}]}]}"#;
        let url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/\
                   us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse";
        let headers = [("content-type".to_owned(), "application/json".to_owned())];
        let request = Outgoing::new("POST", url, &headers, body);
        let time = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_796_319_124);
        let scope = Scope {
            region: "us-east-1".to_owned(),
            service: "bedrock",
            normalize_path: true,
            content_sha256: true,
        };
        for (token, signature) in [
            (
                None,
                "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, \
                 Signature=c431d911d9b09ad39da1d28ba6a00de2c08823673975fbb1fe5b10bb77a831eb",
            ),
            (
                Some("session-token-example"),
                "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;\
                 x-amz-security-token, \
                 Signature=d7ae44b64fc089d05c82eabe5a486fa27d57cad57f743c94d11363f7f4706e4c",
            ),
        ] {
            let credentials = Credentials::new(
                "AKIDEXAMPLE",
                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                token.map(str::to_owned),
                None,
                "test",
            );
            let signed = signature_headers(&credentials, &scope, time, &request);
            let get = |name: &str| {
                signed
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.as_str())
            };
            assert_eq!(get("x-amz-date"), Some("20261203T173204Z"));
            assert_eq!(
                get("x-amz-content-sha256"),
                Some("c3335e07d6e89650bf94cb98664be69f8774dbc3198df221f113db0a59ea14f0")
            );
            assert_eq!(
                get("authorization"),
                Some(
                    format!(
                        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261203/us-east-1/bedrock/\
                         aws4_request, {signature}"
                    )
                    .as_str()
                )
            );
            assert_eq!(get("x-amz-security-token"), token);
        }
    }

    fn signature_headers(
        credentials: &Credentials,
        scope: &Scope,
        time: SystemTime,
        request: &Outgoing<'_>,
    ) -> Vec<(String, String)> {
        signature(credentials, scope, time, request).unwrap()
    }

    #[test]
    fn the_aws_sigv4_test_suite_signs_as_published() {
        for name in [
            "get-vanilla",
            "get-vanilla-query-order-key-case",
            "get-vanilla-with-session-token",
            "get-vanilla-query-order-encoded",
            "get-relative-relative-normalized",
            "get-slash-dot-slash-unnormalized",
            "get-header-value-trim",
            "post-vanilla",
            "post-header-key-sort",
            "post-x-www-form-urlencoded",
            // A percent-encoded path (a Lambda ARN, as a Bedrock model id's `:` is) signed
            // double-encoded.
            "double-url-encode",
        ] {
            run(name);
        }
    }
}
