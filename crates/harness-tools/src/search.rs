//! `TavilySearch`: web search as a tool, over the providers' retrying HTTP client.

use std::sync::Arc;

use harness_core::{Content, Ctx, Error, Result, Tool, ToolError, ToolSpec};
use harness_providers::{HttpClient, HttpConfig};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How deep Tavily searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SearchDepth {
    /// Tavily's quick search.
    #[default]
    Basic,
    /// Tavily's thorough (and dearer) search.
    Advanced,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// The page's title.
    pub title: String,
    /// The page's address.
    pub url: String,
    /// An excerpt of the page.
    pub content: String,
    /// Tavily's relevance score, when it gave one.
    pub score: Option<f64>,
}

/// Tavily's search API as a tool: the settings live on the object, so the model chooses only
/// the query. Requests go through the providers' retrying HTTP client, so a rate-limited
/// search backs off and retries instead of costing the agent a turn.
///
/// ```
/// use harness_tools::TavilySearch;
///
/// let search = TavilySearch::builder().api_key("tvly-test").max_results(10).build()?;
/// assert_eq!(harness_core::Tool::spec(&search.as_tool()).name, "web_search");
/// let news = search.as_tool().with_name("news_search");
/// assert_eq!(harness_core::Tool::spec(&news).name, "news_search");
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct TavilySearch {
    client: HttpClient,
    max_results: u32,
    depth: SearchDepth,
}

/// Builds a [`TavilySearch`].
#[derive(Debug, Clone, Default)]
#[must_use = "call build() to get the search"]
pub struct TavilySearchBuilder {
    api_key: Option<String>,
    base_url: Option<String>,
    max_results: Option<u32>,
    depth: SearchDepth,
}

impl TavilySearch {
    /// A search with the key from `TAVILY_API_KEY`, five results, basic depth.
    ///
    /// # Errors
    /// As [`TavilySearchBuilder::build`].
    pub fn new() -> Result<Self> {
        Self::builder().build()
    }

    /// A builder.
    pub fn builder() -> TavilySearchBuilder {
        TavilySearchBuilder::default()
    }

    /// Searches, returning typed results.
    ///
    /// # Errors
    /// A [`Provider`](harness_core::ErrorKind::Provider) error for a failure that survived the
    /// retries (a 401 for a bad key).
    pub async fn search(&self, query: &str) -> Result<Vec<SearchResult>> {
        let body =
            json!({"query": query, "max_results": self.max_results, "search_depth": self.depth});
        let answer = self.client.post_json("/search", &body).await?;
        Ok(parse_results(&answer))
    }

    /// The search as a tool named `web_search` taking one `query`, returning the results as
    /// text; [`SearchTool::with_name`] and [`SearchTool::with_description`] choose others.
    pub fn as_tool(&self) -> SearchTool {
        let parameters = json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to search the web for."}},
            "required": ["query"],
        });
        let description = "Search the web for current information. Returns the title, URL and \
                           an excerpt of each result.";
        SearchTool {
            search: Arc::new(self.clone()),
            spec: Arc::new(ToolSpec::new("web_search", description, parameters)),
        }
    }
}

impl TavilySearchBuilder {
    /// The API key; `TAVILY_API_KEY` otherwise.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Another base URL (default `https://api.tavily.com`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// How many results to ask for (at least 1; default 5).
    pub fn max_results(mut self, n: u32) -> Self {
        self.max_results = Some(n);
        self
    }

    /// How deep to search.
    pub fn depth(mut self, depth: SearchDepth) -> Self {
        self.depth = depth;
        self
    }

    /// The search.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error without a key or with
    /// `max_results` 0.
    pub fn build(self) -> Result<TavilySearch> {
        let key = self
            .api_key
            .or_else(|| std::env::var("TAVILY_API_KEY").ok())
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| {
                Error::configuration(
                    "TavilySearch needs an API key: pass it to the builder's api_key() or set \
                     TAVILY_API_KEY",
                )
            })?;
        let max_results = self.max_results.unwrap_or(5);
        if max_results == 0 {
            return Err(Error::configuration(
                "max_results must be at least 1, got 0",
            ));
        }
        let mut config = HttpConfig::new(
            "tavily",
            self.base_url
                .unwrap_or_else(|| "https://api.tavily.com".to_owned()),
        );
        config
            .headers
            .push(("authorization".into(), format!("Bearer {key}")));
        Ok(TavilySearch {
            client: HttpClient::new(config)?,
            max_results,
            depth: self.depth,
        })
    }
}

/// Tavily's `results`, each with its score only when Tavily gave one.
fn parse_results(answer: &Value) -> Vec<SearchResult> {
    let text = |r: &Value, key: &str| {
        r.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    answer
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r.is_object())
        .map(|r| SearchResult {
            title: text(r, "title"),
            url: text(r, "url"),
            content: text(r, "content"),
            score: r.get("score").and_then(Value::as_f64),
        })
        .collect()
}

/// Results as the model reads them: title, URL and excerpt, a blank line between results.
pub fn format_results(results: &[SearchResult], query: &str) -> String {
    if results.is_empty() {
        return format!("No results for {query:?}.");
    }
    results
        .iter()
        .map(|r| format!("{}\n{}\n{}", r.title, r.url, r.content))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// [`TavilySearch`] as a tool; see [`TavilySearch::as_tool`].
#[derive(Debug, Clone)]
pub struct SearchTool {
    search: Arc<TavilySearch>,
    spec: Arc<ToolSpec>,
}

impl SearchTool {
    /// The tool under another name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.spec).name = name.into();
        self
    }

    /// The tool with another description, as the model reads it.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.spec).description = description.into();
        self
    }
}

#[async_trait::async_trait]
impl Tool for SearchTool {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    async fn call(&self, arguments: Value, _ctx: Ctx) -> std::result::Result<Content, ToolError> {
        let Some(query) = arguments.get("query").and_then(Value::as_str) else {
            return Err(ToolError::invalid_arguments(
                "missing field `query` (a string)",
            ));
        };
        let results = self
            .search
            .search(query)
            .await
            .map_err(|e| ToolError::failed(e.to_string()).with_source(e))?;
        Ok(format_results(&results, query).into())
    }
}
