//! HTTP access to package registries: the Cargo sparse index, the npm registry, PyPI's JSON API.
//! Base URLs are configurable (mirrors, private registries, tests); answers are capped in size and
//! time, and every failure names the registry and the package, never a credential.

use std::time::Duration;

use url::Url;

use crate::config::deps::Registries;

/// The largest registry answer read: npm's metadata of a popular package runs to megabytes.
pub const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// Why a registry could not answer.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("{registry} has no package `{package}`")]
    NotFound { registry: &'static str, package: String },
    #[error("{registry} answered {status} for `{package}`")]
    Status {
        registry: &'static str,
        package: String,
        status: u16,
    },
    #[error("could not reach {registry} for `{package}`: {message}")]
    Transport {
        registry: &'static str,
        package: String,
        message: String,
    },
    #[error("{registry}'s answer for `{package}` is larger than {MAX_RESPONSE_BYTES} bytes")]
    TooLarge { registry: &'static str, package: String },
    #[error("{registry}'s answer for `{package}` is not what it should be: {message}")]
    Malformed {
        registry: &'static str,
        package: String,
        message: String,
    },
}

/// Why the registry client could not be made (the TLS backend failed to start).
#[derive(Debug, thiserror::Error)]
#[error("could not make the registry client: {0}")]
pub struct ClientError(#[source] reqwest::Error);

/// One HTTP client for every registry.
#[derive(Debug, Clone)]
pub struct RegistryClient {
    http: reqwest::Client,
    pub registries: Registries,
}

impl RegistryClient {
    pub fn new(registries: Registries) -> Result<Self, ClientError> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("pitcrew/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(ClientError)?;
        Ok(RegistryClient { http, registries })
    }

    /// `GET url` as text (with `accept`), capped at [`MAX_RESPONSE_BYTES`]; `Ok(None)` for 404 and
    /// 410, which registries answer for a package they do not have.
    pub async fn get(
        &self,
        registry: &'static str,
        package: &str,
        url: Url,
        accept: &str,
    ) -> Result<Option<String>, RegistryError> {
        let transport = |e: reqwest::Error| RegistryError::Transport {
            registry,
            package: package.to_owned(),
            // Without the URL: a private registry's may carry a token.
            message: crate::net::describe_with_hint(&e),
        };
        let mut response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, accept)
            .send()
            .await
            .map_err(transport)?;
        let status = response.status().as_u16();
        if matches!(status, 404 | 410) {
            return Ok(None);
        }
        if status != 200 {
            return Err(RegistryError::Status {
                registry,
                package: package.to_owned(),
                status,
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(RegistryError::TooLarge {
                    registry,
                    package: package.to_owned(),
                });
            }
            body.extend_from_slice(&chunk);
        }
        String::from_utf8(body).map(Some).map_err(|_| RegistryError::Malformed {
            registry,
            package: package.to_owned(),
            message: "not UTF-8".into(),
        })
    }
}
