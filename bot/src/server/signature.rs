//! Webhook signatures: `X-Hub-Signature-256` is the HMAC-SHA256 of the raw body keyed with the webhook
//! secret, as `sha256=<64 hex digits>`. Verified in constant time before anything reads the body.

use ring::hmac;
use secrecy::{ExposeSecret, SecretString};

/// The header GitHub signs deliveries with.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";

const PREFIX: &str = "sha256=";

/// Why a delivery's signature was refused. None of the variants carries the secret or the expected
/// digest: the messages are safe to answer with and to log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("missing X-Hub-Signature-256 header")]
    Missing,
    #[error("malformed X-Hub-Signature-256 header (expected sha256= and 64 hex digits)")]
    Malformed,
    #[error("signature does not match the payload")]
    Mismatch,
}

/// Checks `header` (the `X-Hub-Signature-256` value) against `body`.
pub fn verify(secret: &SecretString, body: &[u8], header: Option<&str>) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let digits = header.strip_prefix(PREFIX).ok_or(SignatureError::Malformed)?;
    if digits.len() != 64 {
        return Err(SignatureError::Malformed);
    }
    let tag = hex::decode(digits).map_err(|_| SignatureError::Malformed)?;
    // `hmac::verify` compares in constant time; comparing hex strings with `==` would leak, through
    // timing, how many leading digits of a forged signature are right.
    hmac::verify(&key(secret), body, &tag).map_err(|_| SignatureError::Mismatch)
}

/// The `X-Hub-Signature-256` value GitHub would send for `body` (what a test sender puts in the header).
pub fn sign(secret: &SecretString, body: &[u8]) -> String {
    let tag = hmac::sign(&key(secret), body);
    format!("{PREFIX}{}", hex::encode(tag.as_ref()))
}

fn key(secret: &SecretString) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, secret.expose_secret().as_bytes())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// GitHub's documented test vector (`github-docs/webhook-signature-test-vector.json`).
    fn vector() -> (SecretString, String, String) {
        let path = crate::llm::fixture_path("github-docs/webhook-signature-test-vector.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let field = |name: &str| json[name].as_str().unwrap().to_owned();
        (
            SecretString::from(field("secret")),
            field("payload"),
            field("X-Hub-Signature-256"),
        )
    }

    #[test]
    fn github_documented_vector_signs_and_verifies() {
        let (secret, payload, header) = vector();
        assert_eq!(sign(&secret, payload.as_bytes()), header);
        assert_eq!(verify(&secret, payload.as_bytes(), Some(&header)), Ok(()));
    }

    #[test]
    fn uppercase_hex_is_accepted() {
        let (secret, payload, header) = vector();
        let upper = format!("sha256={}", header["sha256=".len()..].to_uppercase());
        assert_eq!(verify(&secret, payload.as_bytes(), Some(&upper)), Ok(()));
    }

    #[test]
    fn tampered_body_wrong_secret_and_bad_headers_are_refused() {
        let (secret, payload, header) = vector();
        assert_eq!(
            verify(&secret, b"Hello, World?", Some(&header)),
            Err(SignatureError::Mismatch)
        );
        let other = SecretString::from("another secret");
        assert_eq!(
            verify(&other, payload.as_bytes(), Some(&header)),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(verify(&secret, payload.as_bytes(), None), Err(SignatureError::Missing));
        let digits = &header["sha256=".len()..];
        for bad in [
            digits.to_owned(),
            format!("sha1={digits}"),
            format!("sha256={}", &digits[..62]),
            format!("sha256={digits}00"),
            format!("sha256={}zz", &digits[..62]),
            format!(" sha256={digits}"),
            String::new(),
        ] {
            assert_eq!(
                verify(&secret, payload.as_bytes(), Some(&bad)),
                Err(SignatureError::Malformed),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn errors_never_mention_the_secret() {
        let (secret, payload, _) = vector();
        let err = verify(&secret, payload.as_bytes(), Some(&format!("sha256={}", "0".repeat(64)))).unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(secret.expose_secret()), "{shown}");
        assert!(!shown.contains("757107ea"), "the expected digest leaked: {shown}");
    }
}
