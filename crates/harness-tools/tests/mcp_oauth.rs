//! OAuth 2.1 for MCP over streamable HTTP, against an authorization server and a protected
//! MCP endpoint written here on one loopback `TcpListener` (feature `mcp-auth`): discovery,
//! registration, the PKCE code flow with the headless and the loopback redirects, refresh
//! after a 401, step-up after a 403 and its limit, and tokens kept out of errors.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use harness_core::{CallOptions, Error, ErrorKind};
use harness_tools::mcp::auth::{OAuth, Redirect, StoredTokens, TokenStore};
use harness_tools::mcp::{McpError, McpServer};
use serde_json::{Value, json};
use sha2::Digest as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TIMEOUT: Duration = Duration::from_secs(20);

/// What the fake servers were asked, and how they behave.
#[derive(Default)]
struct Auth {
    origin: String,
    /// Paths requested, in order (`GET /.well-known/...`, `POST /token`, ...).
    requests: Vec<String>,
    /// The query of each authorization request.
    authorizations: Vec<HashMap<String, String>>,
    /// The form of each token request.
    token_requests: Vec<HashMap<String, String>>,
    /// `code` → (its PKCE challenge, the scopes asked for).
    codes: HashMap<String, (String, Vec<String>)>,
    /// Access token → its scopes.
    tokens: HashMap<String, Vec<String>>,
    refresh_tokens: HashSet<String>,
    /// Every token and refresh token issued, to look for in error messages.
    issued: Vec<String>,
    /// Authorization headers the MCP endpoint got.
    bearer: Vec<Option<String>>,
    /// Scopes `tools/call` needs (a 403 `insufficient_scope` without them).
    call_needs: Vec<String>,
    /// Scopes the authorization server never grants.
    withheld: Vec<String>,
    /// The MCP endpoint refuses every token (401).
    refuse_all: bool,
    /// Refresh tokens are refused.
    refuse_refresh: bool,
    /// `token_endpoint_auth_methods_supported` (default `["none"]`).
    endpoint_methods: Vec<String>,
    counter: usize,
}

impl Auth {
    fn count(&self, path: &str) -> usize {
        self.requests.iter().filter(|r| r.as_str() == path).count()
    }
}

type Shared = Arc<Mutex<Auth>>;

async fn servers(setup: impl FnOnce(&mut Auth)) -> (String, Shared) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let state = Arc::new(Mutex::new(Auth {
        origin: origin.clone(),
        ..Auth::default()
    }));
    setup(&mut state.lock().unwrap());
    let shared = Arc::clone(&state);
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(handle(socket, Arc::clone(&shared)));
        }
    });
    (format!("{origin}/mcp"), state)
}

struct HttpRequest {
    verb: String,
    path: String,
    query: HashMap<String, String>,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

async fn read_request(socket: &mut TcpStream) -> Option<HttpRequest> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.lines();
    let mut first = lines.next()?.split(' ');
    let verb = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| {
            let (name, value) = l.split_once(':')?;
            Some((name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        })
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    Some(HttpRequest {
        verb,
        path: path.to_owned(),
        query: form(query),
        headers,
        body: buf[head_end..head_end + length].to_vec(),
    })
}

fn form(text: &str) -> HashMap<String, String> {
    url_pairs(text).into_iter().collect()
}

fn url_pairs(text: &str) -> Vec<(String, String)> {
    let url = reqwest::Url::parse(&format!("http://x/?{text}")).unwrap();
    url.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

async fn send(socket: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &str) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body.as_bytes()).await;
}

async fn send_json(socket: &mut TcpStream, status: &str, body: &Value) {
    send(
        socket,
        status,
        &[("content-type", "application/json".to_owned())],
        &body.to_string(),
    )
    .await;
}

fn s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier))
}

async fn handle(mut socket: TcpStream, state: Shared) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let origin = state.lock().unwrap().origin.clone();
    state
        .lock()
        .unwrap()
        .requests
        .push(format!("{} {}", request.verb, request.path));
    match (request.verb.as_str(), request.path.as_str()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => {
            let body = json!({
                "resource": format!("{origin}/mcp"),
                "authorization_servers": [origin],
            });
            send_json(&mut socket, "200 OK", &body).await;
        }
        ("GET", "/.well-known/oauth-authorization-server") => {
            let mut auth_methods = state.lock().unwrap().endpoint_methods.clone();
            if auth_methods.is_empty() {
                auth_methods.push("none".to_owned());
            }
            let body = json!({
                "issuer": origin,
                "authorization_endpoint": format!("{origin}/authorize"),
                "token_endpoint": format!("{origin}/token"),
                "registration_endpoint": format!("{origin}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": auth_methods,
            });
            send_json(&mut socket, "200 OK", &body).await;
        }
        ("POST", "/register") => {
            let asked: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let body = json!({
                "client_id": "client-1",
                "redirect_uris": asked["redirect_uris"],
                "client_name": asked["client_name"],
            });
            send_json(&mut socket, "201 Created", &body).await;
        }
        ("GET", "/authorize") => authorize(&mut socket, &state, &request).await,
        ("POST", "/token") => token(&mut socket, &state, &request).await,
        ("POST", "/mcp") => mcp(&mut socket, &state, &request, &origin).await,
        ("DELETE", "/mcp") => send(&mut socket, "200 OK", &[], "").await,
        _ => send(&mut socket, "404 Not Found", &[], "").await,
    }
}

/// The authorization endpoint: a code at once, redirected back with the state.
async fn authorize(socket: &mut TcpStream, state: &Shared, request: &HttpRequest) {
    let query = request.query.clone();
    let location = {
        let mut auth = state.lock().unwrap();
        auth.counter += 1;
        let code = format!("code-{}", auth.counter);
        let scopes: Vec<String> = query
            .get("scope")
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        let challenge = query.get("code_challenge").cloned().unwrap_or_default();
        auth.codes.insert(code.clone(), (challenge, scopes));
        auth.authorizations.push(query.clone());
        let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
        back.query_pairs_mut()
            .append_pair("code", &code)
            .append_pair("state", &query["state"]);
        back.to_string()
    };
    send(socket, "302 Found", &[("location", location)], "").await;
}

/// The token endpoint: PKCE-checked codes and refresh tokens, for tokens it remembers.
async fn token(socket: &mut TcpStream, state: &Shared, request: &HttpRequest) {
    let body = form(&String::from_utf8_lossy(&request.body));
    let answer = {
        let mut auth = state.lock().unwrap();
        auth.token_requests.push(body.clone());
        let scopes = match body.get("grant_type").map(String::as_str) {
            Some("authorization_code") => {
                let code = body.get("code").cloned().unwrap_or_default();
                match auth.codes.remove(&code) {
                    Some((challenge, scopes))
                        if body.get("code_verifier").map(|v| s256(v)).as_ref()
                            == Some(&challenge) =>
                    {
                        Some(scopes)
                    }
                    _ => None,
                }
            }
            Some("client_credentials") => {
                let basic = request
                    .headers
                    .get("authorization")
                    .and_then(|v| v.strip_prefix("Basic "))
                    .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
                    .map(|v| String::from_utf8_lossy(&v).into_owned());
                (basic.as_deref() == Some("svc:s3cret")).then(|| {
                    body.get("scope")
                        .map(|s| s.split_whitespace().map(str::to_owned).collect())
                        .unwrap_or_default()
                })
            }
            Some("refresh_token") if !auth.refuse_refresh => body
                .get("refresh_token")
                .filter(|t| auth.refresh_tokens.contains(*t))
                .map(|_| Vec::new()),
            _ => None,
        };
        scopes.map(|scopes| {
            let withheld = auth.withheld.clone();
            let scopes: Vec<String> = scopes
                .into_iter()
                .filter(|s| !withheld.contains(s))
                .collect();
            auth.counter += 1;
            let token = format!("at-SECRET-{}", auth.counter);
            let refresh = format!("rt-SECRET-{}", auth.counter);
            auth.tokens.insert(token.clone(), scopes.clone());
            auth.refresh_tokens.insert(refresh.clone());
            auth.issued.push(token.clone());
            auth.issued.push(refresh.clone());
            json!({
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": refresh,
                "scope": scopes.join(" "),
            })
        })
    };
    match answer {
        Some(body) => send_json(socket, "200 OK", &body).await,
        None => {
            send_json(
                socket,
                "400 Bad Request",
                &json!({"error": "invalid_grant"}),
            )
            .await;
        }
    }
}

/// The protected MCP endpoint: a bearer token it issued, with the scopes the method needs.
async fn mcp(socket: &mut TcpStream, state: &Shared, request: &HttpRequest, origin: &str) {
    let message: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let token = request
        .headers
        .get("authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let challenge = |scope: &str, error: Option<&str>| {
        let mut value = format!(
            "Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\", \
             scope=\"{scope}\""
        );
        if let Some(error) = error {
            let _ = write!(value, ", error=\"{error}\"");
        }
        value
    };
    let verdict = {
        let mut auth = state.lock().unwrap();
        auth.bearer.push(token.clone());
        let scopes = token.as_ref().and_then(|t| auth.tokens.get(t)).cloned();
        match scopes {
            None => Err(("401 Unauthorized", challenge("mcp:read", None))),
            Some(_) if auth.refuse_all => Err(("401 Unauthorized", challenge("mcp:read", None))),
            Some(scopes)
                if method == "tools/call"
                    && !auth.call_needs.iter().all(|s| scopes.contains(s)) =>
            {
                let mut needed = vec!["mcp:read".to_owned()];
                needed.extend(auth.call_needs.iter().cloned());
                Err((
                    "403 Forbidden",
                    challenge(&needed.join(" "), Some("insufficient_scope")),
                ))
            }
            Some(_) => Ok(()),
        }
    };
    if let Err((status, header)) = verdict {
        let body = json!({"error": "invalid_token"}).to_string();
        send(
            socket,
            status,
            &[
                ("www-authenticate", header),
                ("content-type", "application/json".to_owned()),
            ],
            &body,
        )
        .await;
        return;
    }
    let id = message["id"].clone();
    let result = match method.as_str() {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "protected", "version": "1"},
        }),
        "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "ok"}]}),
        _ => {
            send(socket, "202 Accepted", &[], "").await;
            return;
        }
    };
    send_json(
        socket,
        "200 OK",
        &json!({"jsonrpc": "2.0", "id": id, "result": result}),
    )
    .await;
}

fn headless() -> OAuth {
    OAuth::new().with_redirect(Redirect::follow_headless())
}

fn server(url: &str, oauth: OAuth) -> McpServer {
    McpServer::http(url, &[])
        .unwrap()
        .with_oauth(oauth)
        .with_timeout(TIMEOUT)
}

/// The text of a call to `name` (no arguments) that succeeded.
async fn echo(mcp: &McpServer) -> String {
    let result = mcp
        .call("echo", json!({}), CallOptions::new())
        .await
        .unwrap();
    assert!(!result.is_error, "echo failed: {}", result.text());
    result.text()
}

/// True for an MCP failure whose `McpError` is an authorization failure.
fn is_authorization(error: &Error) -> bool {
    error.kind() == ErrorKind::Mcp
        && error
            .downcast_ref::<McpError>()
            .is_some_and(McpError::is_authorization)
}

/// A token store that counts what it is given.
#[derive(Default, Clone)]
struct CountingStore(Arc<Mutex<Vec<StoredTokens>>>);

#[async_trait::async_trait]
impl TokenStore for CountingStore {
    async fn load(&self) -> Result<Option<StoredTokens>, McpError> {
        Ok(self.0.lock().unwrap().last().cloned())
    }
    async fn save(&self, tokens: StoredTokens) -> Result<(), McpError> {
        self.0.lock().unwrap().push(tokens);
        Ok(())
    }
    async fn clear(&self) -> Result<(), McpError> {
        self.0.lock().unwrap().clear();
        Ok(())
    }
}

#[tokio::test]
async fn discovery_registration_and_the_pkce_code_flow_reach_the_tools() {
    let (url, state) = servers(|_| {}).await;
    let store = CountingStore::default();
    let mcp = server(&url, headless().with_token_store(store.clone()));
    let tools = mcp.list_tools().await.unwrap();
    assert_eq!(tools[0].name, "echo");
    assert_eq!(echo(&mcp).await, "ok");

    let auth = state.lock().unwrap();
    // Discovery: the resource's metadata (the challenge's resource_metadata), then the
    // authorization server's; then registration, one authorization and one token request.
    let first_prm = auth
        .requests
        .iter()
        .position(|r| r == "GET /.well-known/oauth-protected-resource/mcp")
        .expect("protected-resource metadata fetched");
    let first_as = auth
        .requests
        .iter()
        .position(|r| r == "GET /.well-known/oauth-authorization-server")
        .expect("authorization-server metadata fetched");
    assert!(first_prm < first_as, "{:?}", auth.requests);
    assert_eq!(auth.count("POST /register"), 1);
    assert_eq!(auth.authorizations.len(), 1);
    let asked = &auth.authorizations[0];
    assert_eq!(asked["code_challenge_method"], "S256");
    assert_eq!(asked["client_id"], "client-1");
    assert_eq!(asked["scope"], "mcp:read", "the challenge's scope");
    assert_eq!(asked["resource"], url, "RFC 8707 resource");
    let token_request = &auth.token_requests[0];
    assert_eq!(token_request["grant_type"], "authorization_code");
    assert_eq!(
        s256(&token_request["code_verifier"]),
        asked["code_challenge"],
        "the verifier matches the challenge"
    );
    // The first MCP request went without a token; later ones carry the one issued.
    assert_eq!(auth.bearer[0], None);
    let last = auth.bearer.last().unwrap().clone().unwrap();
    assert!(auth.tokens.contains_key(&last));
    // The store got the tokens; its Debug does not show them.
    let saved = store.0.lock().unwrap();
    assert!(saved.last().unwrap().as_json().contains(&last));
    assert!(!format!("{:?}", saved.last().unwrap()).contains(&last));
}

#[tokio::test]
async fn a_rejected_token_is_refreshed_without_a_new_sign_in() {
    let (url, state) = servers(|_| {}).await;
    let mcp = server(&url, headless());
    mcp.list_tools().await.unwrap();
    // The server forgets the token it issued (revoked, say): the next request gets a 401.
    {
        let mut auth = state.lock().unwrap();
        auth.tokens.clear();
    }
    assert_eq!(echo(&mcp).await, "ok");
    let auth = state.lock().unwrap();
    assert_eq!(auth.authorizations.len(), 1, "no second sign-in");
    let grants: Vec<&str> = auth
        .token_requests
        .iter()
        .map(|r| r["grant_type"].as_str())
        .collect();
    assert_eq!(grants, ["authorization_code", "refresh_token"]);
}

#[tokio::test]
async fn a_refused_refresh_means_a_new_sign_in() {
    let (url, state) = servers(|_| {}).await;
    let mcp = server(&url, headless());
    mcp.list_tools().await.unwrap();
    {
        let mut auth = state.lock().unwrap();
        auth.tokens.clear();
        auth.refuse_refresh = true;
    }
    assert_eq!(echo(&mcp).await, "ok");
    assert_eq!(state.lock().unwrap().authorizations.len(), 2);
}

#[tokio::test]
async fn step_up_on_403_asks_for_the_wider_scopes() {
    let (url, state) = servers(|auth| auth.call_needs = vec!["mcp:write".to_owned()]).await;
    let mcp = server(&url, headless());
    mcp.list_tools().await.unwrap();
    assert_eq!(echo(&mcp).await, "ok");
    let auth = state.lock().unwrap();
    assert_eq!(auth.authorizations.len(), 2);
    let scopes: HashSet<&str> = auth.authorizations[1]["scope"].split(' ').collect();
    assert!(
        scopes.contains("mcp:read") && scopes.contains("mcp:write"),
        "{scopes:?}"
    );
}

#[tokio::test]
async fn step_up_stops_at_its_limit_and_the_token_stays_out_of_the_error() {
    // The server wants a scope the authorization server never grants.
    let (url, state) = servers(|auth| {
        auth.call_needs = vec!["mcp:admin".to_owned()];
        auth.withheld = vec!["mcp:admin".to_owned()];
    })
    .await;
    let mcp = server(&url, headless());
    mcp.list_tools().await.unwrap();
    let error = mcp
        .call("echo", json!({}), CallOptions::new())
        .await
        .unwrap_err();
    assert!(is_authorization(&error), "{error:?}");
    assert!(error.to_string().contains("step-up"), "{error}");
    {
        let auth = state.lock().unwrap();
        // The first sign-in, then the default two step-ups for this call.
        assert_eq!(auth.authorizations.len(), 3);
        for secret in &auth.issued {
            assert!(!error.to_string().contains(secret.as_str()), "{error}");
            assert!(!format!("{error:?}").contains(secret.as_str()));
        }
    }

    // With the limit at 0, a 403 is an error at once.
    let (url, state) = servers(|auth| auth.call_needs = vec!["mcp:write".to_owned()]).await;
    let mcp = server(&url, headless().with_max_step_ups(0));
    mcp.list_tools().await.unwrap();
    let error = mcp
        .call("echo", json!({}), CallOptions::new())
        .await
        .unwrap_err();
    assert!(is_authorization(&error), "{error:?}");
    assert_eq!(state.lock().unwrap().authorizations.len(), 1);
}

#[tokio::test]
async fn a_server_that_refuses_every_token_is_an_authorization_error_without_tokens_in_it() {
    let (url, state) = servers(|auth| auth.refuse_all = true).await;
    let mcp = server(&url, headless());
    let error = mcp.list_tools().await.unwrap_err();
    assert!(is_authorization(&error), "{error:?}");
    let auth = state.lock().unwrap();
    assert!(!auth.issued.is_empty());
    for secret in &auth.issued {
        assert!(!error.to_string().contains(secret.as_str()), "{error}");
    }
}

#[tokio::test]
async fn without_oauth_a_401_is_an_authorization_error_that_says_what_to_do() {
    let (url, _state) = servers(|_| {}).await;
    let mcp = McpServer::http(&url, &[]).unwrap().with_timeout(TIMEOUT);
    let error = mcp.list_tools().await.unwrap_err();
    assert!(is_authorization(&error), "{error:?}");
    assert!(error.to_string().contains("with_oauth"), "{error}");
}

#[tokio::test]
async fn the_loopback_redirect_gets_the_code_from_the_browser() {
    let (url, state) = servers(|_| {}).await;
    // The "browser": follows the authorization URL and its redirect to the listener.
    let redirect = Redirect::loopback().on_url(|authorization_url| {
        let authorization_url = authorization_url.to_owned();
        tokio::spawn(async move {
            let browser = harness_providers::rest::client_builder()
                .unwrap()
                .build()
                .unwrap();
            let page = browser.get(&authorization_url).send().await.unwrap();
            assert!(page.status().is_success());
            assert!(page.text().await.unwrap().contains("Signed in"));
        });
    });
    let mcp = server(&url, OAuth::new().with_redirect(redirect));
    assert_eq!(mcp.list_tools().await.unwrap().len(), 1);
    let auth = state.lock().unwrap();
    let redirect_uri = &auth.authorizations[0]["redirect_uri"];
    assert!(
        redirect_uri.starts_with("http://127.0.0.1:") && redirect_uri.ends_with("/callback"),
        "{redirect_uri}"
    );
}

#[tokio::test]
async fn stored_tokens_spare_a_new_client_the_sign_in_until_they_are_refused() {
    let (url, state) = servers(|_| {}).await;
    let store = CountingStore::default();
    let first = server(&url, headless().with_token_store(store.clone()));
    first.list_tools().await.unwrap();
    first.close().await.unwrap();

    // A new client (a new run of the program) with the same store: no registration, no
    // sign-in.
    let second = server(&url, headless().with_token_store(store.clone()));
    assert_eq!(echo(&second).await, "ok");
    {
        let auth = state.lock().unwrap();
        assert_eq!(auth.authorizations.len(), 1);
        assert_eq!(auth.count("POST /register"), 1);
    }
    second.close().await.unwrap();

    // The stored tokens revoked and their refresh refused: the next client signs in afresh.
    {
        let mut auth = state.lock().unwrap();
        auth.tokens.clear();
        auth.refuse_refresh = true;
    }
    let third = server(&url, headless().with_token_store(store));
    assert_eq!(echo(&third).await, "ok");
    assert_eq!(state.lock().unwrap().authorizations.len(), 2);
}

#[tokio::test]
async fn client_credentials_get_a_token_without_a_redirect_and_a_wrong_secret_stays_out_of_the_error()
 {
    let (url, state) =
        servers(|auth| auth.endpoint_methods = vec!["client_secret_basic".to_owned()]).await;
    let mcp = server(&url, OAuth::client_credentials("svc", "s3cret"));
    assert_eq!(echo(&mcp).await, "ok");
    {
        let auth = state.lock().unwrap();
        assert!(auth.authorizations.is_empty(), "no redirect");
        assert_eq!(auth.count("POST /register"), 0);
        assert_eq!(auth.token_requests[0]["grant_type"], "client_credentials");
        assert_eq!(auth.token_requests[0]["resource"], url);
        assert!(
            !auth.token_requests[0].contains_key("client_secret"),
            "Basic, not the body"
        );
    }
    let wrong = server(&url, OAuth::client_credentials("svc", "wrong-SECRET"));
    let error = wrong.list_tools().await.unwrap_err();
    assert!(is_authorization(&error), "{error:?}");
    assert!(error.to_string().contains("client credentials"), "{error}");
    assert!(!error.to_string().contains("wrong-SECRET"), "{error}");
}
