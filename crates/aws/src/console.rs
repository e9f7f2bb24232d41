//! The operator console on AWS (docs/deploy.md, "The operator console"): the API function serves
//! the pages `sundial serve` serves, on the routes API Gateway leaves to the function (`/`,
//! `/ui/…`), behind the console's own login. The login's tokens are the value of a Secrets
//! Manager secret the stack creates (its ARN in `SUNDIAL_CONSOLE_TOKENS_SECRET`), read once per
//! cold start: never in the function's environment, and never the API's credentials, which the
//! pages neither hold nor forward (they call the use cases in the process, as on `serve`).
//! With `AuthMode=JWT` the login is a sign-in at the stack's issuer instead ([`crate::oidc`]),
//! as the client `SUNDIAL_CONSOLE_CLIENT_ID`, its secret (if any) read from the Secrets Manager
//! secret `SUNDIAL_CONSOLE_CLIENT_SECRET` names, at cold start too.

use aws_config::SdkConfig;
use futures_util::FutureExt;
use sundial_console::{ConsoleAuth, ConsoleConfig};
use sundial_service::app::ApiAuth;
use sundial_service::settings;

use crate::runtime::ConfigError;

/// The console's login tokens from the secret's value: `name:scope:secret,…` as
/// `SUNDIAL_API_TOKENS` (scope `read` or `write`), or one bare token (no `:`), the token named
/// `default` with scope write, as `SUNDIAL_API_TOKEN` — what the stack generates at its first
/// deploy. Errors name the entry and never repeat a secret.
pub fn tokens_of_secret(value: &str) -> Result<ApiAuth, String> {
    let value = value.trim();
    let tokens = if value.contains(':') {
        settings::api_tokens(Some(value), None)?
    } else {
        settings::api_tokens(None, Some(value))?
    };
    if tokens.is_empty() {
        return Err("the secret holds no token".into());
    }
    Ok(ApiAuth::tokens(tokens))
}

/// The console's settings on AWS: a token login with `auth`, sessions of the default lifetime,
/// and `Secure` cookies (API Gateway serves HTTPS only).
pub fn config(auth: ApiAuth) -> ConsoleConfig {
    config_with(ConsoleAuth::Tokens(auth))
}

/// The console's settings on AWS with the sign-in `auth`.
pub fn config_with(auth: ConsoleAuth) -> ConsoleConfig {
    ConsoleConfig {
        auth,
        session_lifetime: ConsoleConfig::DEFAULT_SESSION_LIFETIME,
        secure_cookie: true,
    }
}

/// The value of the Secrets Manager secret `secret_id` (`GetSecretValue`, which the function's
/// role allows on that secret only), read for the setting `setting`.
pub async fn read_secret(
    sdk: &SdkConfig,
    setting: &str,
    secret_id: &str,
) -> Result<String, ConfigError> {
    let client = aws_sdk_secretsmanager::Client::new(sdk);
    let output = client
        .get_secret_value()
        .secret_id(secret_id)
        .send()
        .boxed()
        .await
        .map_err(|e| {
            ConfigError::new(format!(
                "{setting}: cannot read {secret_id}: {}",
                aws_sdk_secretsmanager::error::DisplayErrorContext(&e)
            ))
        })?;
    Ok(output.secret_string().unwrap_or_default().to_owned())
}

/// Reads the secret `secret_id` and parses its tokens: what the API function does at its cold
/// start when the console is on with the token login. A missing or malformed secret stops the
/// function from starting, naming the setting.
pub async fn tokens_from_secret(sdk: &SdkConfig, secret_id: &str) -> Result<ApiAuth, ConfigError> {
    let value = read_secret(sdk, "SUNDIAL_CONSOLE_TOKENS_SECRET", secret_id).await?;
    tokens_of_secret(&value).map_err(|e| {
        ConfigError::new(format!(
            "SUNDIAL_CONSOLE_TOKENS_SECRET ({secret_id}): {}",
            e.replace("SUNDIAL_API_TOKENS", "the secret")
                .replace("SUNDIAL_API_TOKEN", "the secret")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_service::app::auth::Scope;

    #[test]
    fn a_bare_secret_is_one_write_token_named_default() {
        let auth = tokens_of_secret("  Generated0123456789abcdefghijklmnop\n").unwrap();
        let token = auth.find("Generated0123456789abcdefghijklmnop").unwrap();
        assert_eq!(
            (token.name.as_str(), token.scope),
            ("default", Scope::Write)
        );
    }

    #[test]
    fn named_tokens_keep_their_names_and_scopes() {
        let auth = tokens_of_secret(
            "alice:write:alice-0123456789abcdef0123,ci:read:ci-0123456789abcdef01234",
        )
        .unwrap();
        let ci = auth.find("ci-0123456789abcdef01234").unwrap();
        assert_eq!((ci.name.as_str(), ci.scope), ("ci", Scope::Read));
        assert_eq!(auth.named("alice").map(|t| t.scope), Some(Scope::Write));
        assert!(auth.find("nope-0123456789abcdef0123").is_none());
    }

    #[test]
    fn a_bad_secret_is_refused_without_repeating_it() {
        for bad in ["", "short", "bob:admin:bob-0123456789abcdef01234"] {
            let error = tokens_of_secret(bad).err().unwrap_or_default();
            assert!(!error.is_empty(), "{bad:?} refused");
            assert!(!error.contains("0123456789abcdef"), "{error}");
        }
    }

    #[test]
    fn cookies_are_secure_on_aws() {
        let config = config(ApiAuth::from(Some("x".repeat(32))));
        assert!(config.secure_cookie);
    }
}
