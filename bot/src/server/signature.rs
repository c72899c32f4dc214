//! Webhook signatures: `X-Hub-Signature-256` is the HMAC-SHA256 of the raw body keyed with the webhook
//! secret, as `sha256=<64 hex digits>`. Verified in constant time before anything parses the body;
//! [`Verifier`] computes it while the body streams in, so the route never needs a second pass.

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
    let mut verifier = Verifier::new(secret, header)?;
    verifier.update(body);
    verifier.finish()
}

/// The HMAC of a body being received, fed chunk by chunk. The header is checked for form first
/// ([`Verifier::new`]), so a request without a well-formed signature is refused before its body is
/// read at all.
pub struct Verifier {
    expected: [u8; 32],
    context: hmac::Context,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier").finish_non_exhaustive()
    }
}

impl Verifier {
    /// Starts checking against `header` (the `X-Hub-Signature-256` value).
    pub fn new(secret: &SecretString, header: Option<&str>) -> Result<Verifier, SignatureError> {
        let header = header.ok_or(SignatureError::Missing)?;
        let digits = header.strip_prefix(PREFIX).ok_or(SignatureError::Malformed)?;
        let mut expected = [0_u8; 32];
        if digits.len() != 64 {
            return Err(SignatureError::Malformed);
        }
        hex::decode_to_slice(digits, &mut expected).map_err(|_| SignatureError::Malformed)?;
        Ok(Verifier {
            expected,
            context: hmac::Context::with_key(&key(secret)),
        })
    }

    pub fn update(&mut self, chunk: &[u8]) {
        self.context.update(chunk);
    }

    /// Whether the body fed so far is the one signed.
    pub fn finish(self) -> Result<(), SignatureError> {
        let tag = self.context.sign();
        // Every byte is compared whatever the earlier ones were: `==` would stop at the first
        // difference and leak, through timing, how much of a forged signature is right.
        let difference = tag
            .as_ref()
            .iter()
            .zip(self.expected.iter())
            .fold(0_u8, |acc, (a, b)| acc | (a ^ b));
        if std::hint::black_box(difference) == 0 && tag.as_ref().len() == self.expected.len() {
            Ok(())
        } else {
            Err(SignatureError::Mismatch)
        }
    }
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
    fn the_streaming_verifier_agrees_with_verify_whatever_the_chunking() {
        let (secret, payload, header) = vector();
        for size in [1, 3, 7, payload.len()] {
            let mut verifier = Verifier::new(&secret, Some(&header)).unwrap();
            for chunk in payload.as_bytes().chunks(size) {
                verifier.update(chunk);
            }
            assert_eq!(verifier.finish(), Ok(()), "chunks of {size}");
        }
        let mut verifier = Verifier::new(&secret, Some(&header)).unwrap();
        verifier.update(b"Hello, World?");
        assert_eq!(verifier.finish(), Err(SignatureError::Mismatch));
        assert_eq!(Verifier::new(&secret, None).unwrap_err(), SignatureError::Missing);
        assert_eq!(
            Verifier::new(&secret, Some("sha256=zz")).unwrap_err(),
            SignatureError::Malformed
        );
        let upper = format!("sha256={}", header["sha256=".len()..].to_uppercase());
        let mut verifier = Verifier::new(&secret, Some(&upper)).unwrap();
        verifier.update(payload.as_bytes());
        assert_eq!(verifier.finish(), Ok(()));
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
