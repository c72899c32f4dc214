//! Base64 as GitHub sends it: the contents API's file bodies and the PEM of the App's private key
//! both wrap standard base64 into lines.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// Decodes standard base64 (RFC 4648, padded) as GitHub wraps it: the contents API breaks it into
/// 60-column lines, PEM into 64-column ones, so ASCII whitespace is dropped before decoding. The
/// error never quotes a character of the text: a PEM body is key material.
pub(super) fn decode_wrapped_base64(text: &str) -> Result<Vec<u8>, String> {
    let compact: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    STANDARD.decode(&compact).map_err(|err| match err {
        base64::DecodeError::InvalidByte(offset, _) => {
            format!("invalid base64 character at offset {offset} (whitespace not counted)")
        }
        base64::DecodeError::InvalidLength(_) => "base64 text ends in the middle of a group".to_owned(),
        base64::DecodeError::InvalidLastSymbol(..) => "base64 text has stray bits in its last character".to_owned(),
        base64::DecodeError::InvalidPadding => "base64 padding missing or in the wrong place".to_owned(),
    })
}
