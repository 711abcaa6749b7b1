//! TLS for every HTTP client of the kit: rustls with the ring provider and the platform's
//! root certificates, handed to reqwest as a built configuration.
//!
//! reqwest's own rustls default brings aws-lc-rs (a long C build) or, without it, needs a
//! process-wide crypto provider installed; building the configuration here avoids both, and
//! leaves the process default to the application.

use std::sync::{Arc, OnceLock};

use harness_core::{Error, Result};

/// A reqwest client builder with the kit's TLS (rustls with the ring provider, the
/// platform's root certificates, HTTP/2 and HTTP/1.1 offered; no process-wide crypto
/// provider installed): what [`HttpClient`](super::HttpClient) is built from, for a vendor
/// or a protocol of your own that needs reqwest itself (a client an SDK takes, a stream the
/// kit does not read), so that every connection verifies certificates the same way.
///
/// # Errors
/// A [`Configuration`](harness_core::ErrorKind::Configuration) error when the TLS configuration
/// cannot be built (no usable root certificates on this machine, say).
pub fn client_builder() -> Result<reqwest::ClientBuilder> {
    Ok(reqwest::Client::builder().tls_backend_preconfigured(tls_config()?))
}

/// The rustls configuration, built once per process: the platform's roots are read from
/// disk when it is built.
fn tls_config() -> Result<rustls::ClientConfig> {
    static CONFIG: OnceLock<rustls::ClientConfig> = OnceLock::new();
    if let Some(config) = CONFIG.get() {
        return Ok(config.clone());
    }
    let config = build().map_err(|e| {
        Error::configuration(format!(
            "cannot set up TLS (rustls with the platform's root certificates): {e}"
        ))
    })?;
    Ok(CONFIG.get_or_init(|| config).clone())
}

fn build() -> std::result::Result<rustls::ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(Arc::clone(&provider))?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous() // not dangerous: the platform verifier is the standard one
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    // A preconfigured config is used as is: offer HTTP/2 and HTTP/1.1 ourselves.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tls_configuration_builds_and_offers_h2() {
        let config = super::tls_config().unwrap();
        assert_eq!(config.alpn_protocols[0], b"h2");
        assert!(super::client_builder().unwrap().build().is_ok());
    }
}
