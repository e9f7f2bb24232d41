//! Settings read from the environment that every entrypoint shares (`sundial serve` and the four
//! Lambda functions), parsed in one place so both read them the same way.

use std::collections::BTreeMap;

use sundial_core::expand::ENV_PREFIX;

use crate::adapters::http::AddressPolicy;
use crate::app::auth::{ApiToken, Scope};

/// `SUNDIAL_SERVICES`: `name=url,name=url` → the service map for `service://name/…` URLs. Empty
/// entries are ignored; an entry without `=` is an error naming it.
pub fn parse_services(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut services = BTreeMap::new();
    for entry in text.split(',') {
        if entry.trim().is_empty() {
            continue;
        }
        let (name, url) = entry.split_once('=').ok_or_else(|| {
            format!("SUNDIAL_SERVICES: expected name=http://host:port, got {entry:?}")
        })?;
        services.insert(name.trim().to_string(), url.trim().to_string());
    }
    Ok(services)
}

/// The `SUNDIAL_VAR_*` variables among `vars`, which templates may read.
pub fn template_env(vars: impl Iterator<Item = (String, String)>) -> BTreeMap<String, String> {
    vars.filter(|(name, _)| name.starts_with(ENV_PREFIX))
        .collect()
}

/// `SUNDIAL_OUTBOUND_ALLOW`: hosts, IPs or CIDRs (comma-separated) added to `policy`'s allow list.
pub fn allow_outbound(mut policy: AddressPolicy, allow: Option<&str>) -> AddressPolicy {
    if let Some(allow) = allow {
        policy.allow_hosts.extend(
            allow
                .split(',')
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(str::to_string),
        );
    }
    policy
}

/// The fewest characters a bearer token (`SUNDIAL_API_TOKEN`) may have.
pub const MIN_API_TOKEN_CHARS: usize = 16;

/// The fewest bytes the signing secret (`SUNDIAL_SIGNING_SECRET`) may have: the HMAC-SHA256 key of
/// feedback tokens and webhook signatures, so anything shorter than the hash is a weaker key.
pub const MIN_SIGNING_SECRET_BYTES: usize = 32;

/// `SUNDIAL_API_TOKEN`: at least [`MIN_API_TOKEN_CHARS`] visible ASCII characters (`!` to `~`),
/// so no spaces, no padding, nothing a header cannot carry as written. The message never repeats
/// the value.
pub fn api_token(value: &str) -> Result<String, String> {
    let rule = format!(
        "must be at least {MIN_API_TOKEN_CHARS} visible ASCII characters (no spaces), e.g. the output of `openssl rand -hex 32`"
    );
    if let Some(at) = value.chars().position(|c| !c.is_ascii_graphic()) {
        return Err(format!(
            "SUNDIAL_API_TOKEN: character {} is a space or not visible ASCII; the token {rule}",
            at + 1
        ));
    }
    if value.len() < MIN_API_TOKEN_CHARS {
        return Err(format!(
            "SUNDIAL_API_TOKEN: {} characters are too few; the token {rule}",
            value.len()
        ));
    }
    Ok(value.to_string())
}

/// The API's tokens from `SUNDIAL_API_TOKENS` (`name:scope:secret,…`, scope `read` or `write`)
/// and `SUNDIAL_API_TOKEN` (one secret, the token [`ApiToken::DEFAULT_NAME`] with scope write).
/// Both may be given: the single token is then one more, named `default`, so no named token may
/// take that name. Names are 1–64 of `A–Z a–z 0–9 _ . @ -` and unique; every secret follows the
/// rule of [`api_token`] (no commas, as they separate entries) and no two tokens share one, so a
/// request's token names one actor. A malformed entry is refused naming its position and name;
/// the message never repeats a secret.
pub fn api_tokens(list: Option<&str>, single: Option<&str>) -> Result<Vec<ApiToken>, String> {
    let mut tokens: Vec<ApiToken> = Vec::new();
    let entries = list
        .map(|list| list.split(',').collect::<Vec<_>>())
        .unwrap_or_default();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("SUNDIAL_API_TOKENS: entry {}", i + 1);
        let mut parts = entry.trim().splitn(3, ':');
        let (Some(name), Some(scope), Some(secret)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("{at}: expected name:scope:secret"));
        };
        let named = format!("{at} ({name:?})");
        let name_ok = (1..=64).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.@-".contains(c));
        if !name_ok {
            return Err(format!(
                "{at}: the name must be 1 to 64 characters of A-Z a-z 0-9 _ . @ -"
            ));
        }
        let scope = Scope::parse(scope)
            .ok_or_else(|| format!("{named}: the scope must be read or write"))?;
        let secret = api_token(secret).map_err(|e| {
            format!(
                "{named}: {}",
                e.trim_start_matches("SUNDIAL_API_TOKEN: ")
                    .replace("the token", "the secret")
            )
        })?;
        tokens.push(ApiToken::new(name, scope, secret));
    }
    if let Some(single) = single {
        tokens.push(ApiToken::new(
            ApiToken::DEFAULT_NAME,
            Scope::Write,
            api_token(single)?,
        ));
    }
    for (i, token) in tokens.iter().enumerate() {
        let earlier = &tokens[..i];
        if earlier.iter().any(|t| t.name == token.name) {
            return Err(format!(
                "SUNDIAL_API_TOKENS: the name {:?} is given twice{}",
                token.name,
                if token.name == ApiToken::DEFAULT_NAME {
                    " (\"default\" is the token of SUNDIAL_API_TOKEN)"
                } else {
                    ""
                }
            ));
        }
        if let Some(other) = earlier.iter().find(|t| t.secret() == token.secret()) {
            return Err(format!(
                "SUNDIAL_API_TOKENS: tokens {:?} and {:?} have the same secret; each needs its own",
                other.name, token.name
            ));
        }
    }
    Ok(tokens)
}

/// `SUNDIAL_SIGNING_SECRET`: at least [`MIN_SIGNING_SECRET_BYTES`] bytes, taken as they are.
pub fn signing_secret(value: &str) -> Result<Vec<u8>, String> {
    if value.len() < MIN_SIGNING_SECRET_BYTES {
        return Err(format!(
            "SUNDIAL_SIGNING_SECRET: {} bytes are too few; it must be at least {MIN_SIGNING_SECRET_BYTES} bytes, e.g. the output of `openssl rand -hex 32`",
            value.len()
        ));
    }
    Ok(value.as_bytes().to_vec())
}

/// A boolean switch: `1` or `true` (any case).
pub fn flag(value: Option<&str>) -> bool {
    value.is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_parse_and_name_bad_entries() {
        let map =
            parse_services("main=http://127.0.0.1:9000, oa = http://oa ,").unwrap_or_default();
        assert_eq!(
            map.get("main").map(String::as_str),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(map.get("oa").map(String::as_str), Some("http://oa"));
        let err = parse_services("main").err().unwrap_or_default();
        assert!(err.contains("\"main\""), "{err}");
    }

    #[test]
    fn template_env_keeps_only_the_prefix() {
        let vars =
            [("SUNDIAL_VAR_A", "1"), ("PATH", "/bin")].map(|(k, v)| (k.to_string(), v.to_string()));
        let env = template_env(vars.into_iter());
        assert_eq!(env.len(), 1);
    }

    #[test]
    fn api_tokens_are_16_visible_ascii_characters() {
        let cases: &[(&str, bool)] = &[
            ("0123456789abcdef", true),
            ("test-token-7f3a-9c21", true),
            ("!\"#$%&'()*+,-./~", true),
            ("0123456789abcde", false),
            ("x", false),
            ("                ", false),
            ("  0123456789abcdef", false),
            ("0123456789abcdef ", false),
            ("0123456789 abcdef", false),
            ("0123456789abcdef\t", false),
            ("0123456789abcdéf", false),
            ("ключключключключключ", false),
            ("0123456789abcdef\u{0}", false),
        ];
        for (token, valid) in cases {
            let checked = api_token(token);
            assert_eq!(checked.is_ok(), *valid, "{token:?}: {checked:?}");
            if let Err(message) = checked {
                assert!(message.starts_with("SUNDIAL_API_TOKEN: "), "{message}");
                assert!(message.contains("16 visible ASCII"), "{message}");
            }
        }
    }

    #[test]
    fn signing_secrets_are_32_bytes() {
        assert!(signing_secret(&"k".repeat(32)).is_ok());
        for short in ["", "x", "sample-signing-secret", &"k".repeat(31)] {
            let message = signing_secret(short).err().unwrap_or_default();
            assert!(
                message.starts_with("SUNDIAL_SIGNING_SECRET: ") && message.contains("32 bytes"),
                "{short:?}: {message}"
            );
        }
    }

    #[test]
    fn flags_and_allow_lists() {
        assert!(flag(Some("TRUE")) && flag(Some("1")) && !flag(Some("no")) && !flag(None));
        let policy = allow_outbound(AddressPolicy::aws(), Some("10.0.0.0/8, ,api.internal"));
        assert_eq!(policy.allow_hosts, vec!["10.0.0.0/8", "api.internal"]);
    }

    #[test]
    fn named_tokens_have_a_scope_and_refuse_malformed_entries_without_their_secret() {
        let tokens = api_tokens(
            Some("ci:read:read-secret-0123456, ops:write:write:secret-012345"),
            Some("single-secret-0123456"),
        )
        .expect("valid");
        let summary: Vec<(&str, Scope, &str)> = tokens
            .iter()
            .map(|t| (t.name.as_str(), t.scope, t.secret()))
            .collect();
        assert_eq!(
            summary,
            [
                ("ci", Scope::Read, "read-secret-0123456"),
                ("ops", Scope::Write, "write:secret-012345"),
                ("default", Scope::Write, "single-secret-0123456"),
            ]
        );
        let secret = "hidden-secret-0123456";
        for (list, expected) in [
            (
                format!("ci:admin:{secret}"),
                "entry 1 (\"ci\"): the scope must be read or write",
            ),
            (
                format!("a:read:{secret},b"),
                "entry 2: expected name:scope:secret",
            ),
            (
                format!("bad name:read:{secret}"),
                "entry 1: the name must be",
            ),
            (
                "ci:read:short".to_string(),
                "entry 1 (\"ci\"): 5 characters are too few",
            ),
            (
                format!("a:read:{secret},a:write:other-secret-01234"),
                "the name \"a\" is given twice",
            ),
            (
                format!("a:read:{secret},b:write:{secret}"),
                "tokens \"a\" and \"b\" have the same secret",
            ),
            (
                format!("default:read:{secret}"),
                "\"default\" is the token of SUNDIAL_API_TOKEN",
            ),
        ] {
            let error = api_tokens(Some(&list), Some("single-secret-0123456")).expect_err(&list);
            assert!(error.contains(expected), "{list}: {error}");
            assert!(!error.contains(secret), "{error}");
        }
    }
}
