//! Who is calling the fake GitHub: an App JWT (RS256, checked like GitHub checks it), an
//! installation token the fake issued, a static token a test registered, or nobody. Failures are
//! worded as GitHub words them.

use std::fmt;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::state::GithubState;

/// Longest JWT lifetime GitHub allows: `exp` at most ten minutes ahead.
pub const MAX_JWT_AHEAD_SECS: u64 = 600;

/// How far `iat` may lie before `exp`: ten minutes, plus the sixty seconds of back-dating GitHub's
/// own docs recommend against clock drift (their example signs `iat: now - 60, exp: now + 600`).
pub const MAX_JWT_LIFETIME_SECS: u64 = MAX_JWT_AHEAD_SECS + 60;

/// The test App's private key (PKCS#1 PEM), to sign JWTs in tests.
pub fn test_private_key_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/github-app-test-key.pem")
}

/// The test App's public key, what the fake verifies JWTs with unless told otherwise.
pub fn test_public_key_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/github-app-test-key.pub.pem")
}

/// An RS256 JWT with claims `iat`, `exp` and `iss`, signed with the PEM private key `key_pem`.
///
/// # Errors
/// When the key is not an RSA private key.
pub fn sign_app_jwt(key_pem: &[u8], iss: &Value, iat: u64, exp: u64) -> Result<String, crate::jwt::JwtError> {
    crate::jwt::sign_rs256(key_pem, &json!({"iat": iat, "exp": exp, "iss": iss}))
}

/// The App the fake plays.
pub(crate) struct AppKey {
    pub app_id: u64,
    pub client_id: String,
    /// The App's public key, PKCS#1 `RSAPublicKey` DER.
    pub key: Vec<u8>,
}

impl fmt::Debug for AppKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppKey")
            .field("app_id", &self.app_id)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// How a request authenticated, as recorded (never the credential itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthKind {
    /// No `Authorization` header.
    None,
    /// A valid App JWT.
    AppJwt,
    /// A valid installation token the fake issued.
    InstallationToken,
    /// A valid static token registered by the test.
    StaticToken,
    /// Something the fake refused; the reason, as answered.
    Refused(String),
}

/// Who a request acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Caller {
    Anonymous,
    App,
    Actor {
        login: String,
        installation_id: Option<u64>,
    },
}

impl Caller {
    /// The login a token acts as (the App itself acts as its bot too, for what it creates).
    pub fn login(&self, bot_login: &str) -> String {
        match self {
            Caller::Actor { login, .. } => login.clone(),
            Caller::Anonymous | Caller::App => bot_login.to_owned(),
        }
    }
}

/// What an operation requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    /// `/app/...` and `GET /repos/{o}/{r}/installation`: an App JWT.
    Jwt,
    /// Repository endpoints: a token.
    Token,
    /// `/rate_limit`, and `POST /app-manifests/{code}/conversions` (the code is the credential):
    /// anything, even nothing.
    Anything,
}

impl Needs {
    pub fn of(operation_id: &str, template: &str) -> Needs {
        if template == "/app" || template.starts_with("/app/") || operation_id == "apps/get-repo-installation" {
            Needs::Jwt
        } else if template == "/rate_limit" || operation_id == "apps/create-from-manifest" {
            Needs::Anything
        } else {
            Needs::Token
        }
    }
}

/// Checks the `Authorization` header against what the operation needs; on failure the reason is
/// the message of GitHub's 401.
pub(crate) fn authorize(
    needs: Needs,
    authorization: Option<&str>,
    app: &AppKey,
    state: &GithubState,
    now: u64,
) -> (AuthKind, Result<Caller, String>) {
    let Some(header) = authorization else {
        if needs == Needs::Anything {
            return (AuthKind::None, Ok(Caller::Anonymous));
        }
        let message = match needs {
            Needs::Jwt => "A JSON web token could not be decoded",
            _ => "Requires authentication",
        };
        return (AuthKind::None, Err(message.to_owned()));
    };
    let (scheme, credential) = header.trim().split_once(' ').unwrap_or((header, ""));
    let credential = credential.trim();
    let bearer = scheme.eq_ignore_ascii_case("bearer");
    let token_scheme = bearer || scheme.eq_ignore_ascii_case("token");
    let looks_like_jwt = credential.split('.').count() == 3;

    if looks_like_jwt && needs != Needs::Token {
        // GitHub only takes a JWT as `Bearer`.
        let verdict = if bearer {
            verify_jwt(credential, app, now)
        } else {
            Err("A JSON web token could not be decoded".to_owned())
        };
        return match verdict {
            Ok(()) => (AuthKind::AppJwt, Ok(Caller::App)),
            Err(reason) => (AuthKind::Refused(reason.clone()), Err(reason)),
        };
    }
    if needs == Needs::Jwt {
        let reason = "A JSON web token could not be decoded".to_owned();
        return (AuthKind::Refused(reason.clone()), Err(reason));
    }
    match state.valid_token(credential, now).filter(|_| token_scheme) {
        Some(token) => {
            let kind = if token.installation_id.is_some() {
                AuthKind::InstallationToken
            } else {
                AuthKind::StaticToken
            };
            let caller = Caller::Actor {
                login: token.login.clone(),
                installation_id: token.installation_id,
            };
            (kind, Ok(caller))
        }
        None => {
            let reason = "Bad credentials".to_owned();
            (AuthKind::Refused(reason.clone()), Err(reason))
        }
    }
}

/// GitHub's checks: an RS256 signature by the App's key, `iss` the App id (number or string) or
/// client id, `iat` not in the future, `exp` in the future but at most ten minutes ahead.
fn verify_jwt(token: &str, app: &AppKey, now: u64) -> Result<(), String> {
    // Only RS256 by the App's key counts (no `none`, no HS256 keyed with the public key); the time
    // claims are checked below, with GitHub's messages and without leeway.
    let claims = crate::jwt::verify_rs256(token, &app.key)
        .map_err(|_| "A JSON web token could not be decoded".to_owned())?
        .claims;
    let iat = claims["iat"]
        .as_u64()
        .ok_or("'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")?;
    let exp = claims["exp"]
        .as_u64()
        .ok_or("'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")?;
    let issuer_ok = match &claims["iss"] {
        Value::Number(n) => n.as_u64() == Some(app.app_id),
        Value::String(s) => *s == app.app_id.to_string() || *s == app.client_id,
        _ => false,
    };
    if !issuer_ok {
        return Err("'Issuer' claim ('iss') must be the ID or client ID of an existing GitHub App".to_owned());
    }
    if iat > now {
        return Err("'Issued at' claim ('iat') must be an Integer representing a time in the past".to_owned());
    }
    if exp <= now {
        return Err(
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
                .to_owned(),
        );
    }
    if exp - now > MAX_JWT_AHEAD_SECS || exp - iat > MAX_JWT_LIFETIME_SECS {
        return Err("'Expiration time' claim ('exp') is too far in the future".to_owned());
    }
    Ok(())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::fake_github::wire::unix_now;

    fn app() -> AppKey {
        let pem = std::fs::read(test_public_key_path()).unwrap();
        AppKey {
            app_id: 42,
            client_id: "Iv1.abc".to_owned(),
            key: crate::jwt::rsa_public_key(&pem).unwrap(),
        }
    }

    fn jwt(iss: Value, iat: u64, exp: u64) -> String {
        sign_app_jwt(&std::fs::read(test_private_key_path()).unwrap(), &iss, iat, exp).unwrap()
    }

    #[test]
    fn jwt_time_and_issuer_rules() {
        let app = app();
        let now = unix_now();
        assert_eq!(verify_jwt(&jwt(json!(42), now - 60, now + 600), &app, now), Ok(()));
        assert_eq!(verify_jwt(&jwt(json!("42"), now, now + 60), &app, now), Ok(()));
        assert_eq!(verify_jwt(&jwt(json!("Iv1.abc"), now, now + 60), &app, now), Ok(()));
        let refused = |iss: Value, iat: u64, exp: u64| verify_jwt(&jwt(iss, iat, exp), &app, now).unwrap_err();
        assert!(refused(json!(41), now, now + 60).contains("'iss'"));
        assert!(refused(json!(42), now + 30, now + 60).contains("'iat'"));
        assert!(refused(json!(42), now - 700, now - 1).contains("future time"));
        assert!(refused(json!(42), now, now + 601).contains("too far in the future"));
        assert!(refused(json!(42), now - 300, now + 500).contains("too far in the future"));
        assert_eq!(
            verify_jwt("not.a.jwt", &app, now).unwrap_err(),
            "A JSON web token could not be decoded"
        );
    }
}
