//! What pitcrew's HTTP clients (the model's, GitHub's, the registries') share in saying why a
//! request failed: the error's causes, which carry the useful part (`connection refused`,
//! `invalid peer certificate: UnknownIssuer`), without its URL (a private registry's or a proxy's
//! may carry a token), and what to do about a refused certificate.
//!
//! The clients trust the system's certificate store (and `SSL_CERT_FILE` / `SSL_CERT_DIR`) besides
//! the bundled Mozilla roots, and go through `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` unless
//! `NO_PROXY` exempts the host (reqwest's defaults, which no client turns off).

/// What to do when a server's certificate is refused.
pub const CERTIFICATE_HINT: &str = "a proxy or an internal CA signs its certificate? put the CA in the system's trust \
                                    store, or name a file of trusted CAs with SSL_CERT_FILE (a directory with \
                                    SSL_CERT_DIR)";

/// A failed request in words: what failed, then each cause.
pub fn describe(err: &reqwest::Error) -> String {
    let kind = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "connection failed"
    } else if err.is_body() || err.is_decode() {
        "reading the response failed"
    } else {
        "request failed"
    };
    let mut message = kind.to_owned();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// Whether a described failure is the server's certificate being refused.
pub fn refused_certificate(message: &str) -> bool {
    let lower = message.to_lowercase();
    [
        "invalid peer certificate",
        "unknownissuer",
        "certificate verify failed",
        "certificate has expired",
    ]
    .iter()
    .any(|words| lower.contains(words))
}

/// [`describe`], with [`CERTIFICATE_HINT`] after a refused certificate.
pub fn describe_with_hint(err: &reqwest::Error) -> String {
    let message = describe(err);
    if refused_certificate(&message) {
        format!("{message} ({CERTIFICATE_HINT})")
    } else {
        message
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rustls_refusals_are_certificate_errors() {
        assert!(refused_certificate(
            "connection failed: client error (Connect): invalid peer certificate: UnknownIssuer"
        ));
        assert!(!refused_certificate(
            "connection failed: tcp connect error: Connection refused (os error 111)"
        ));
    }
}
