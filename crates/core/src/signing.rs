//! HMAC-SHA256 signing: the per-execution feedback token and the signature on outbound webhooks.
//!
//! Two things Sundial hands to the outside world must be unforgeable without a database lookup:
//!
//! * the **feedback URL** of an execution carries a token, `HMAC(secret, "sundial-feedback-v1:" +
//!   execution_id)`, so a job's endpoint can report back for *its* execution and nobody can guess
//!   the URL of another one;
//! * every **outbound call** can carry a [`SIGNATURE_HEADER`] of the form `t=<ts>,v1=<hex>` where
//!   the MAC covers `"<ts>." + body` (the Stripe scheme): receivers check that the body came from
//!   Sundial and, because the timestamp is signed too, reject old requests replayed later.
//!
//! The two messages cannot collide even under one secret: a feedback message starts with `s`, a
//! webhook message with the digits (or `-`) of its timestamp. Everything here is pure; comparisons
//! of MACs go through [`Mac::verify_slice`], which is constant-time.

use hmac::digest::Key;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The HTTP header carrying a webhook signature (see [`webhook_signature_header`]).
pub const SIGNATURE_HEADER: &str = "Sundial-Signature";

/// Domain separation for feedback tokens, versioned so the scheme can change later.
const FEEDBACK_PREFIX: &[u8] = b"sundial-feedback-v1:";

/// An HMAC-SHA256 keyed with `secret`.
///
/// The key is brought to the block size as RFC 2104 prescribes (hashed when longer, zero-padded
/// when shorter) so construction is infallible: `KeyInit::new_from_slice` never fails for HMAC but its
/// signature says it may, and this crate does not `expect`. Checked by the RFC 4231 vectors below,
/// including the one with a key longer than a block.
fn keyed(secret: &[u8]) -> HmacSha256 {
    let mut key = Key::<HmacSha256>::default();
    if secret.len() > key.len() {
        let digest = Sha256::digest(secret);
        key[..digest.len()].copy_from_slice(&digest);
    } else {
        key[..secret.len()].copy_from_slice(secret);
    }
    <HmacSha256 as KeyInit>::new(&key)
}

fn mac_of(secret: &[u8], parts: &[&[u8]]) -> HmacSha256 {
    let mut mac = keyed(secret);
    for part in parts {
        mac.update(part);
    }
    mac
}

fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// Decodes hex (either case); `None` on odd length or a non-hex character.
fn from_hex(text: &str) -> Option<Vec<u8>> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes
        .chunks_exact(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

fn verify_parts(secret: &[u8], parts: &[&[u8]], signature_hex: &str) -> bool {
    match from_hex(signature_hex) {
        Some(signature) => mac_of(secret, parts).verify_slice(&signature).is_ok(),
        None => false,
    }
}

/// `HMAC-SHA256(secret, message)` as 64 lowercase hex digits.
pub fn sign(secret: &[u8], message: &[u8]) -> String {
    to_hex(&mac_of(secret, &[message]).finalize().into_bytes())
}

/// True if `signature_hex` (either case) is `HMAC-SHA256(secret, message)`.
///
/// The comparison is constant-time; malformed hex or a wrong length is simply `false`.
pub fn verify(secret: &[u8], message: &[u8], signature_hex: &str) -> bool {
    verify_parts(secret, &[message], signature_hex)
}

/// The token carried in the feedback URL of execution `execution_id`: 64 lowercase hex digits,
/// safe in a URL path or query as is.
pub fn feedback_token(secret: &[u8], execution_id: &str) -> String {
    to_hex(
        &mac_of(secret, &[FEEDBACK_PREFIX, execution_id.as_bytes()])
            .finalize()
            .into_bytes(),
    )
}

/// True if `token` is the [`feedback_token`] of `execution_id` under `secret` (constant-time).
pub fn verify_feedback_token(secret: &[u8], execution_id: &str, token: &str) -> bool {
    verify_parts(secret, &[FEEDBACK_PREFIX, execution_id.as_bytes()], token)
}

/// The value of [`SIGNATURE_HEADER`] for a call sent at `timestamp_secs` (Unix seconds) with
/// `body`: `t=<timestamp_secs>,v1=<hex of HMAC(secret, "<timestamp_secs>." + body)>`.
pub fn webhook_signature_header(secret: &[u8], timestamp_secs: i64, body: &[u8]) -> String {
    let timestamp = timestamp_secs.to_string();
    let mac = mac_of(secret, &[timestamp.as_bytes(), b".", body]);
    format!("t={timestamp},v1={}", to_hex(&mac.finalize().into_bytes()))
}

/// Checks a [`SIGNATURE_HEADER`] value as a receiver would: true if it has exactly one `t=`, its
/// timestamp is within `tolerance_secs` of `now_secs` (either side), and at least one `v1=` entry
/// is the MAC of `"<t>." + body` under `secret`.
///
/// Several `v1=` entries are accepted so a sender can sign with an old and a new secret while
/// rotating; unknown keys are ignored so the scheme can grow. The timestamp is compared as written,
/// so a receiver rejecting replays only needs to pick the tolerance.
pub fn verify_webhook_signature(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now_secs: i64,
    tolerance_secs: u64,
) -> bool {
    let mut timestamp: Option<&str> = None;
    let mut signatures = Vec::new();
    for item in header.split(',') {
        match item.trim().split_once('=') {
            Some(("t", _)) if timestamp.is_some() => return false,
            Some(("t", value)) => timestamp = Some(value),
            Some(("v1", value)) => signatures.push(value),
            _ => {}
        }
    }
    let Some(timestamp) = timestamp else {
        return false;
    };
    let Ok(sent_at) = timestamp.parse::<i64>() else {
        return false;
    };
    // Only the canonical spelling, so the signed text is the number the tolerance was checked on.
    if sent_at.to_string() != timestamp || sent_at.abs_diff(now_secs) > tolerance_secs {
        return false;
    }
    signatures
        .iter()
        .any(|signature| verify_parts(secret, &[timestamp.as_bytes(), b".", body], signature))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231 §4.3, test case 2.
    const RFC4231_2: &str = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";

    #[test]
    fn rfc4231_test_vectors() {
        let cases: &[(Vec<u8>, &[u8], &str)] = &[
            // Test case 1: a 20-byte key.
            (
                vec![0x0b; 20],
                b"Hi There",
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            ),
            // Test case 2: a key shorter than the output.
            (b"Jefe".to_vec(), b"what do ya want for nothing?", RFC4231_2),
            // Test case 6: a 131-byte key, longer than a block, so it is hashed first.
            (
                vec![0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
            // Test case 7: long key and long message.
            (
                vec![0xaa; 131],
                b"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
            ),
        ];
        for (key, message, expected) in cases {
            assert_eq!(sign(key, message), *expected, "key of {} bytes", key.len());
            assert!(verify(key, message, expected));
        }
    }

    #[test]
    fn keys_of_exactly_one_block_and_empty_keys_match_the_library() {
        for len in [0usize, 1, 32, 63, 64, 65, 200] {
            let key = vec![0x5a; len];
            let mut reference = match HmacSha256::new_from_slice(&key) {
                Ok(mac) => mac,
                Err(e) => panic!("hmac refused a {len}-byte key: {e}"),
            };
            reference.update(b"message");
            assert_eq!(
                sign(&key, b"message"),
                to_hex(&reference.finalize().into_bytes()),
                "key of {len} bytes"
            );
        }
    }

    #[test]
    fn verify_rejects_wrong_and_malformed_signatures() {
        let good = sign(b"Jefe", b"what do ya want for nothing?");
        assert!(verify(
            b"Jefe",
            b"what do ya want for nothing?",
            &good.to_uppercase()
        ));
        let cases: &[(&str, &[u8], &[u8], &str)] = &[
            (
                "other secret",
                b"jefe",
                b"what do ya want for nothing?",
                &good,
            ),
            (
                "other message",
                b"Jefe",
                b"what do ya want for nothing!",
                &good,
            ),
            ("empty", b"Jefe", b"what do ya want for nothing?", ""),
            (
                "truncated",
                b"Jefe",
                b"what do ya want for nothing?",
                &good[..62],
            ),
            (
                "odd length",
                b"Jefe",
                b"what do ya want for nothing?",
                &good[..63],
            ),
            ("not hex", b"Jefe", b"what do ya want for nothing?", "zz"),
            (
                "longer",
                b"Jefe",
                b"what do ya want for nothing?",
                &format!("{good}00"),
            ),
        ];
        for (name, secret, message, signature) in cases {
            assert!(!verify(secret, message, signature), "{name}");
        }
    }

    #[test]
    fn hex_round_trips() {
        let bytes: Vec<u8> = (0..=255).collect();
        let hex = to_hex(&bytes);
        assert_eq!(hex.len(), 512);
        assert_eq!(&hex[..8], "00010203");
        assert_eq!(from_hex(&hex), Some(bytes.clone()));
        assert_eq!(from_hex(&hex.to_uppercase()), Some(bytes));
        assert_eq!(from_hex("0g"), None);
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("+1"), None);
        assert_eq!(from_hex(""), Some(Vec::new()));
    }

    #[test]
    fn feedback_tokens_are_per_execution_and_per_secret() {
        let token = feedback_token(b"secret", "exec-1");
        assert_eq!(token.len(), 64);
        assert!(token
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert_eq!(token, feedback_token(b"secret", "exec-1"));
        assert!(verify_feedback_token(b"secret", "exec-1", &token));
        assert!(!verify_feedback_token(b"secret", "exec-2", &token));
        assert!(!verify_feedback_token(b"other", "exec-1", &token));
        assert!(!verify_feedback_token(b"secret", "exec-1", "not-a-token"));
        assert!(!verify_feedback_token(b"secret", "exec-1", ""));
        // Domain-separated from a plain signature of the id.
        assert_ne!(token, sign(b"secret", b"exec-1"));
    }

    #[test]
    fn webhook_header_has_the_stripe_shape() {
        let header = webhook_signature_header(b"Jefe", 1_700_000_000, b"{\"a\":1}");
        let expected_mac = sign(b"Jefe", b"1700000000.{\"a\":1}");
        assert_eq!(header, format!("t=1700000000,v1={expected_mac}"));
    }

    #[test]
    fn webhook_signature_verification() {
        let secret: &[u8] = b"whsec";
        let body: &[u8] = b"{\"executionId\":\"e1\"}";
        let ts = 1_700_000_000;
        let header = webhook_signature_header(secret, ts, body);
        let mut message = format!("{ts}.").into_bytes();
        message.extend_from_slice(body);
        let v1 = sign(secret, &message);
        let rotated = format!("t={ts},v1={},v1={v1}", sign(b"old", b"x"));
        // (name, secret, header, body, now, valid)
        type Case<'a> = (&'a str, &'a [u8], String, &'a [u8], i64, bool);
        let cases: Vec<Case<'_>> = vec![
            ("fresh", secret, header.clone(), body, ts, true),
            (
                "within tolerance later",
                secret,
                header.clone(),
                body,
                ts + 300,
                true,
            ),
            (
                "within tolerance earlier",
                secret,
                header.clone(),
                body,
                ts - 300,
                true,
            ),
            ("too old", secret, header.clone(), body, ts + 301, false),
            (
                "from the future",
                secret,
                header.clone(),
                body,
                ts - 301,
                false,
            ),
            ("other secret", b"other", header.clone(), body, ts, false),
            ("other body", secret, header.clone(), b"{}", ts, false),
            (
                "spaces after commas",
                secret,
                format!("t={ts}, v1={v1}"),
                body,
                ts,
                true,
            ),
            ("rotated secrets", secret, rotated, body, ts, true),
            (
                "unknown keys ignored",
                secret,
                format!("t={ts},v0=abc,v1={v1}"),
                body,
                ts,
                true,
            ),
            (
                "timestamp changed",
                secret,
                format!("t={},v1={v1}", ts + 1),
                body,
                ts,
                false,
            ),
            (
                "two timestamps",
                secret,
                format!("t={ts},t={ts},v1={v1}"),
                body,
                ts,
                false,
            ),
            ("no timestamp", secret, format!("v1={v1}"), body, ts, false),
            ("no signature", secret, format!("t={ts}"), body, ts, false),
            (
                "bad timestamp",
                secret,
                format!("t=abc,v1={v1}"),
                body,
                ts,
                false,
            ),
            (
                "non-canonical timestamp",
                secret,
                format!("t=+{ts},v1={v1}"),
                body,
                ts,
                false,
            ),
            ("bad hex", secret, format!("t={ts},v1=xyz"), body, ts, false),
            ("empty", secret, String::new(), body, ts, false),
        ];
        for (name, secret, header, body, now, expected) in cases {
            assert_eq!(
                verify_webhook_signature(secret, &header, body, now, 300),
                expected,
                "{name}: {header}"
            );
        }
    }

    #[test]
    fn webhook_timestamps_at_the_extremes_do_not_overflow() {
        let header = webhook_signature_header(b"k", i64::MIN, b"");
        assert!(verify_webhook_signature(b"k", &header, b"", i64::MIN, 0));
        assert!(!verify_webhook_signature(
            b"k",
            &header,
            b"",
            i64::MAX,
            u64::MAX - 1
        ));
        assert!(verify_webhook_signature(
            b"k",
            &header,
            b"",
            i64::MAX,
            u64::MAX
        ));
    }

    /// docs/deploy.md says which secret signed the token of `events/api-feedback.json`: keep the
    /// two in step (and the secret long enough for the 32-byte rule).
    #[test]
    fn the_feedback_fixture_is_signed_with_the_documented_secret() {
        let secret = "sample-signing-secret-for-the-fixtures";
        assert!(secret.len() >= 32);
        let docs = include_str!("../../../docs/deploy.md");
        assert!(docs.contains(&format!("SUNDIAL_SIGNING_SECRET={secret}")));
        let event: serde_json::Value =
            serde_json::from_str(include_str!("../../../events/api-feedback.json")).unwrap();
        let query = event["queryStringParameters"].clone();
        let execution_id = query["executionId"].as_str().unwrap();
        let token = query["token"].as_str().unwrap();
        assert_eq!(feedback_token(secret.as_bytes(), execution_id), token);
    }
}
