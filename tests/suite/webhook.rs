//! Posting a webhook delivery to a running `pitcrew serve`, signed as GitHub signs it.

use pitcrew::server::signature::sign;
use secrecy::SecretString;

/// Posts `body` as delivery `delivery` of `event` to `server_url/webhook`, signed with `secret`
/// (or carrying `signature` as it is); returns the status and the response text.
pub(crate) async fn post(
    server_url: &str,
    secret: &str,
    event: &str,
    delivery: &str,
    body: Vec<u8>,
    signature: Option<String>,
) -> (u16, String) {
    let signature = signature.unwrap_or_else(|| sign(&SecretString::from(secret), &body));
    let response = reqwest::Client::new()
        .post(format!("{server_url}/webhook"))
        .header("X-GitHub-Event", event)
        .header("X-GitHub-Delivery", delivery)
        .header("X-Hub-Signature-256", signature)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("posting delivery {delivery}: {e}"));
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}
