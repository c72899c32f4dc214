//! RS256 JSON web tokens for the tests, with `ring` alone: signing with a PEM private key (PKCS#1
//! `RSA PRIVATE KEY` or PKCS#8 `PRIVATE KEY`) and verifying with a PEM public key (SPKI `PUBLIC KEY`
//! or PKCS#1 `RSA PUBLIC KEY`), header, claims and signature. The fake GitHub checks the App's JWTs
//! with it, and pitcrew's own tests check the JWTs pitcrew signs, so neither trusts the code under
//! test to verify itself.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_SHA256, RsaKeyPair, UnparsedPublicKey};
use serde_json::{Value, json};

/// Why a token could not be made or was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtError(pub String);

impl std::fmt::Display for JwtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JwtError {}

fn error(text: impl Into<String>) -> JwtError {
    JwtError(text.into())
}

/// A verified token's parts.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    pub header: Value,
    pub claims: Value,
}

/// The first PEM block of `pem`: its label and DER contents.
///
/// # Errors
/// When there is no block or its body is not base64.
pub fn pem_der(pem: &[u8]) -> Result<(String, Vec<u8>), JwtError> {
    let text = std::str::from_utf8(pem).map_err(|_| error("the PEM file is not text"))?;
    let begin = text.find("-----BEGIN ").ok_or_else(|| error("no PEM block"))?;
    let after = &text[begin + "-----BEGIN ".len()..];
    let label_end = after.find("-----").ok_or_else(|| error("a PEM label does not end"))?;
    let label = &after[..label_end];
    let body = &after[label_end + 5..];
    let end = body
        .find(&format!("-----END {label}-----"))
        .ok_or_else(|| error(format!("the {label} block does not end")))?;
    let compact: Vec<u8> = body[..end].bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let der = STANDARD
        .decode(compact)
        .map_err(|e| error(format!("the PEM body is not base64: {e}")))?;
    Ok((label.to_owned(), der))
}

/// An RSA key pair from a PEM private key, PKCS#1 or PKCS#8.
///
/// # Errors
/// When the PEM is not an RSA private key.
pub fn key_pair(private_pem: &[u8]) -> Result<RsaKeyPair, JwtError> {
    let (label, der) = pem_der(private_pem)?;
    match label.as_str() {
        "RSA PRIVATE KEY" => RsaKeyPair::from_der(&der).map_err(|e| error(format!("PKCS#1 key: {e}"))),
        "PRIVATE KEY" => RsaKeyPair::from_pkcs8(&der).map_err(|e| error(format!("PKCS#8 key: {e}"))),
        other => Err(error(format!("a {other} block is no RSA private key"))),
    }
}

/// `header.claims.signature` with an RS256 signature by `private_pem`.
///
/// # Errors
/// When the key is not an RSA private key.
pub fn sign_rs256(private_pem: &[u8], claims: &Value) -> Result<String, JwtError> {
    let key = key_pair(private_pem)?;
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "typ": "JWT"}).to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| error("RSA signing failed"))?;
    Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// The PKCS#1 `RSAPublicKey` DER that ring verifies with, from a PEM public key: SPKI
/// (`PUBLIC KEY`, what `openssl rsa -pubout` writes) or PKCS#1 (`RSA PUBLIC KEY`).
///
/// # Errors
/// When the PEM is neither.
pub fn rsa_public_key(public_pem: &[u8]) -> Result<Vec<u8>, JwtError> {
    let (label, der) = pem_der(public_pem)?;
    match label.as_str() {
        "RSA PUBLIC KEY" => Ok(der),
        "PUBLIC KEY" => spki_key(&der)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| error("malformed SubjectPublicKeyInfo")),
        other => Err(error(format!("a {other} block is no RSA public key"))),
    }
}

/// Checks `token` as GitHub checks an App's JWT up to its claims' values: three base64url parts, a
/// header saying RS256 (and, when it says one, type JWT), JSON claims, and an RS256 signature
/// by `public_key` (PKCS#1 DER, see [`rsa_public_key`]) over the first two parts.
///
/// # Errors
/// What is wrong, for the test's message.
pub fn verify_rs256(token: &str, public_key: &[u8]) -> Result<Verified, JwtError> {
    let mut parts = token.split('.');
    let (Some(header), Some(claims), Some(signature), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(error("a JWT has three dot-separated parts"));
    };
    let decode_json = |part: &str, what: &str| -> Result<Value, JwtError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|e| error(format!("the {what} is not base64url: {e}")))?;
        serde_json::from_slice(&bytes).map_err(|e| error(format!("the {what} is not JSON: {e}")))
    };
    let header_json = decode_json(header, "header")?;
    if header_json["alg"] != "RS256" {
        return Err(error(format!("the header's alg is {}, not RS256", header_json["alg"])));
    }
    if !header_json["typ"].is_null() && header_json["typ"] != "JWT" {
        return Err(error(format!("the header's typ is {}, not JWT", header_json["typ"])));
    }
    let claims_json = decode_json(claims, "claims")?;
    if !claims_json.is_object() {
        return Err(error("the claims are not a JSON object"));
    }
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|e| error(format!("the signature is not base64url: {e}")))?;
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, public_key)
        .verify(format!("{header}.{claims}").as_bytes(), &signature)
        .map_err(|_| error("the signature does not verify with the public key"))?;
    Ok(Verified {
        header: header_json,
        claims: claims_json,
    })
}

/// The `subjectPublicKey` of a `SubjectPublicKeyInfo`
/// (`SEQUENCE { SEQUENCE algorithm, BIT STRING subjectPublicKey }`), without the BIT STRING's
/// unused-bits byte.
fn spki_key(der: &[u8]) -> Option<&[u8]> {
    let (tag, info, _) = der_element(der)?;
    if tag != 0x30 {
        return None;
    }
    let (algorithm_tag, _, rest) = der_element(info)?;
    let (key_tag, key, _) = der_element(rest)?;
    let (&unused_bits, key) = key.split_first()?;
    (algorithm_tag == 0x30 && key_tag == 0x03 && unused_bits == 0).then_some(key)
}

/// One DER element: tag, contents, and what follows it.
fn der_element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let length = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let (bytes, after) = rest.split_at(count);
        rest = after;
        bytes.iter().fold(0_usize, |acc, &b| acc << 8 | usize::from(b))
    };
    if rest.len() < length {
        return None;
    }
    let (contents, after) = rest.split_at(length);
    Some((tag, contents, after))
}

/// `contents` as one DER element with `tag`, for tests that build keys (PKCS#8 from PKCS#1).
pub fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = contents.len();
    if len < 0x80 {
        out.extend(u8::try_from(len));
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.extend(u8::try_from(bytes.len()).map(|n| 0x80 | n));
        out.extend(bytes);
    }
    out.extend_from_slice(contents);
    out
}

/// `der` as a PEM block with `label`, 64 columns, as OpenSSL writes it.
pub fn pem(label: &str, der: &[u8]) -> String {
    let encoded = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// A PKCS#1 PEM private key rewrapped as PKCS#8 (`PrivateKeyInfo`, rsaEncryption), as
/// `openssl pkcs8 -topk8 -nocrypt` writes it.
///
/// # Errors
/// When `pkcs1_pem` is not an `RSA PRIVATE KEY` block.
pub fn pkcs1_to_pkcs8(pkcs1_pem: &[u8]) -> Result<String, JwtError> {
    let (label, pkcs1) = pem_der(pkcs1_pem)?;
    if label != "RSA PRIVATE KEY" {
        return Err(error(format!("a {label} block is no PKCS#1 private key")));
    }
    // AlgorithmIdentifier { rsaEncryption (1.2.840.113549.1.1.1), NULL }.
    let rsa_encryption = [
        0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
    ];
    let info = [der(0x02, &[0]), der(0x30, &rsa_encryption), der(0x04, &pkcs1)].concat();
    Ok(pem("PRIVATE KEY", &der(0x30, &info)))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures")
                .join(name),
        )
        .unwrap()
    }

    #[test]
    fn a_token_signed_with_either_key_form_verifies_and_a_tampered_one_does_not() {
        let public = rsa_public_key(&fixture("github-app-test-key.pub.pem")).unwrap();
        let pkcs1 = fixture("github-app-test-key.pem");
        let pkcs8 = pkcs1_to_pkcs8(&pkcs1).unwrap();
        let claims = json!({"iat": 1, "exp": 2, "iss": "7"});
        for key in [pkcs1.clone(), pkcs8.into_bytes()] {
            let token = sign_rs256(&key, &claims).unwrap();
            let verified = verify_rs256(&token, &public).unwrap();
            assert_eq!(verified.header, json!({"alg": "RS256", "typ": "JWT"}));
            assert_eq!(verified.claims, claims);
        }
        let token = sign_rs256(&pkcs1, &claims).unwrap();
        let (_, signature) = token.rsplit_once('.').unwrap();
        let other_claims = URL_SAFE_NO_PAD.encode(json!({"iat": 1, "exp": 3, "iss": "7"}).to_string());
        let header = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "typ": "JWT"}).to_string());
        let forged = format!("{header}.{other_claims}.{signature}");
        assert!(verify_rs256(&forged, &public).unwrap_err().0.contains("signature"));
        let none = format!("{}.{other_claims}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#));
        assert!(verify_rs256(&none, &public).unwrap_err().0.contains("alg"));
    }
}
