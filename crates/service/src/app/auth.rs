//! Who acts and what they may do, as the use cases see it: named tokens with a [`Scope`], the
//! token set a server checks requests against ([`ApiAuth`]) and the [`Caller`] an inbound adapter
//! (the HTTP API, the console, the API Lambda's layer) puts on each request. No HTTP here: the
//! adapters read headers and cookies and answer 401 and 403 themselves (`sundial-api`'s `auth`).

use super::{Actor, ChangeBy};

/// What a token may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Read everything, change nothing.
    Read,
    /// Everything.
    Write,
}

impl Scope {
    /// The scope's name in `SUNDIAL_API_TOKENS` and in error messages.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
        }
    }

    /// The scope named `name`.
    pub fn parse(name: &str) -> Option<Scope> {
        match name {
            "read" => Some(Scope::Read),
            "write" => Some(Scope::Write),
            _ => None,
        }
    }
}

/// A named API token (`SUNDIAL_API_TOKENS=name:scope:secret,…`).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiToken {
    /// The actor its requests are recorded as.
    pub name: String,
    /// What it may do.
    pub scope: Scope,
    secret: String,
}

impl ApiToken {
    /// The name of the token `SUNDIAL_API_TOKEN` (the single, unnamed token) stands for.
    pub const DEFAULT_NAME: &'static str = "default";

    /// A token; the secret is checked by [`crate::settings::api_tokens`], not here.
    pub fn new(name: impl Into<String>, scope: Scope, secret: impl Into<String>) -> Self {
        ApiToken {
            name: name.into(),
            scope,
            secret: secret.into(),
        }
    }

    /// The secret, to compare with what a request presents.
    pub fn secret(&self) -> &str {
        &self.secret
    }
}

/// Never shows the secret.
impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiToken")
            .field("name", &self.name)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// How the router authenticates: with no tokens every request is [`Actor::ANONYMOUS`] with
/// scope write (or whatever [`Caller`] a layer in front put on it); with tokens every route but
/// the public ones requires one of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiAuth {
    tokens: Vec<ApiToken>,
}

impl ApiAuth {
    /// Authentication by `tokens` (none: open).
    pub fn tokens(tokens: Vec<ApiToken>) -> Self {
        ApiAuth { tokens }
    }

    /// Whether any token is required.
    pub fn is_open(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The token named `name`.
    pub fn named(&self, name: &str) -> Option<&ApiToken> {
        self.tokens.iter().find(|t| t.name == name)
    }

    /// The token whose secret is `presented`, compared with every token in constant time.
    pub fn find(&self, presented: &str) -> Option<&ApiToken> {
        let mut found = None;
        for token in &self.tokens {
            if constant_time_eq(presented.as_bytes(), token.secret.as_bytes()) {
                found = Some(token);
            }
        }
        found
    }
}

/// The single token of `SUNDIAL_API_TOKEN`, named [`ApiToken::DEFAULT_NAME`] with scope write;
/// `None` is an open API.
impl From<Option<String>> for ApiAuth {
    fn from(token: Option<String>) -> Self {
        ApiAuth::tokens(
            token
                .map(|secret| ApiToken::new(ApiToken::DEFAULT_NAME, Scope::Write, secret))
                .into_iter()
                .collect(),
        )
    }
}

/// Who makes a request and what they may do: the extension the API's and the console's
/// auth layers (or the API Lambda's) put on every request, read by handlers. A request without one (an
/// open API) is [`Actor::ANONYMOUS`] with scope write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// Who, as the audit trail records it.
    pub actor: Actor,
    /// What they may do.
    pub scope: Scope,
}

impl Caller {
    /// A caller with scope write.
    pub fn writer(actor: Actor) -> Self {
        Caller {
            actor,
            scope: Scope::Write,
        }
    }

    /// A change by this caller, for no stated reason.
    pub fn change(&self) -> ChangeBy {
        ChangeBy::new(self.actor.clone())
    }
}

impl Caller {
    /// Whether this caller may change something.
    pub fn may_write(&self) -> bool {
        self.scope == Scope::Write
    }
}

/// Compares without an early exit, so response timing does not reveal how much of a token matched.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_found_is_the_one_whose_secret_matches() {
        let auth = ApiAuth::tokens(vec![
            ApiToken::new("ci", Scope::Read, "read-secret-0123456"),
            ApiToken::new("ops", Scope::Write, "write-secret-012345"),
        ]);
        assert_eq!(
            auth.find("write-secret-012345").map(|t| t.name.as_str()),
            Some("ops")
        );
        assert_eq!(
            auth.find("read-secret-0123456").map(|t| t.scope),
            Some(Scope::Read)
        );
        assert!(auth.find("read-secret-012345").is_none());
        assert!(!format!("{auth:?}").contains("secret-0"), "{auth:?}");
    }
}
