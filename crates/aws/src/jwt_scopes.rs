//! What a JWT's claims grant under `AuthMode=JWT`: the claim that lists its holder's rights, and
//! the values in it that grant scope write and scope read (template parameters `JwtScopeClaim`,
//! `JwtWriteScope`, `JwtReadScope`; docs/deploy.md, "JWT"). The API function's identity layer
//! ([`crate::handlers::identity`]) applies it to each request.

use axum::http::StatusCode;
use lambda_http::aws_lambda_events::apigw::ApiGatewayRequestAuthorizerJwtDescription;
use sundial_api::ApiError;
use sundial_service::app::Scope;
use sundial_service::Actor;

/// How a JWT's claims grant a scope (`AuthMode=JWT`; template parameters `JwtScopeClaim`,
/// `JwtWriteScope`, `JwtReadScope`): the claim that lists the holder's rights, and the value in
/// it that grants each scope. Write implies read; a token that grants neither is refused (403).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtScopes {
    /// The claim: `scope` (OAuth 2.0's space-separated scopes, e.g. a Cognito resource server's
    /// `sundial/write`), or a list claim such as `cognito:groups` or `roles`.
    pub claim: String,
    /// The value that grants scope write.
    pub write: String,
    /// The value that grants scope read.
    pub read: String,
}

impl Default for JwtScopes {
    /// `scope` with `sundial/write` and `sundial/read`: the scopes of a Cognito resource server
    /// named `sundial` (docs/deploy.md, "JWT").
    fn default() -> Self {
        JwtScopes {
            claim: "scope".into(),
            write: "sundial/write".into(),
            read: "sundial/read".into(),
        }
    }
}

impl JwtScopes {
    /// The scope a token with these claims (as API Gateway passes them) has, if any.
    pub fn scope_of(&self, jwt: &ApiGatewayRequestAuthorizerJwtDescription) -> Option<Scope> {
        self.scope_of_values(&self.values(jwt))
    }

    /// The scope that the claim's `values` grant, if any.
    pub fn scope_of_values(&self, values: &[&str]) -> Option<Scope> {
        if values.iter().any(|v| *v == self.write) {
            Some(Scope::Write)
        } else if values.iter().any(|v| *v == self.read) {
            Some(Scope::Read)
        } else {
            None
        }
    }

    /// The values of the claim. API Gateway hands every claim to the function as a string, a
    /// list one as `[a b c]`, and the `scope` (or `scp`) claim also parsed, in `scopes`.
    fn values<'a>(&self, jwt: &'a ApiGatewayRequestAuthorizerJwtDescription) -> Vec<&'a str> {
        if matches!(self.claim.as_str(), "scope" | "scp") {
            if let Some(scopes) = jwt.scopes.as_ref().filter(|s| !s.is_empty()) {
                return scopes.iter().map(String::as_str).collect();
            }
        }
        jwt.claims
            .get(&self.claim)
            .map(|text| listed_values(text))
            .unwrap_or_default()
    }

    /// The 403 of a token whose claims grant neither scope.
    pub(crate) fn refusal(&self, actor: &Actor) -> ApiError {
        ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "scope: token {actor} grants no scope: its claim {:?} holds neither {:?} (scope \
                 write) nor {:?} (scope read)",
                self.claim, self.write, self.read
            ),
        )
    }
}

/// The values of a claim written as text: space- or comma-separated, optionally in brackets
/// (API Gateway's form of a list claim, `[a b]`).
pub fn listed_values(text: &str) -> Vec<&str> {
    let text = text.trim();
    let listed = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    listed
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|v| !v.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn jwt(
        claims: &[(&str, &str)],
        scopes: Option<&[&str]>,
    ) -> ApiGatewayRequestAuthorizerJwtDescription {
        let mut description = ApiGatewayRequestAuthorizerJwtDescription::default();
        description.claims = claims
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<HashMap<_, _>>();
        description.scopes = scopes.map(|s| s.iter().map(|v| (*v).to_owned()).collect());
        description
    }

    #[test]
    fn the_scope_claim_grants_write_read_or_nothing() {
        let scopes = JwtScopes::default();
        let write = jwt(
            &[("scope", "openid sundial/write")],
            Some(&["openid", "sundial/write"]),
        );
        assert_eq!(scopes.scope_of(&write), Some(Scope::Write));
        // Both: write wins.
        let both = jwt(&[], Some(&["sundial/read", "sundial/write"]));
        assert_eq!(scopes.scope_of(&both), Some(Scope::Write));
        let read = jwt(&[("scope", "sundial/read")], None);
        assert_eq!(scopes.scope_of(&read), Some(Scope::Read));
        let none = jwt(&[("scope", "openid profile")], Some(&["openid", "profile"]));
        assert_eq!(scopes.scope_of(&none), None);
        assert_eq!(scopes.scope_of(&jwt(&[("sub", "u")], None)), None);
        // A value only contains the scope's name: no match.
        let near = jwt(&[("scope", "sundial/writer xsundial/read")], None);
        assert_eq!(scopes.scope_of(&near), None);
    }

    #[test]
    fn a_list_claim_as_api_gateway_flattens_it_grants_a_scope() {
        let groups = JwtScopes {
            claim: "cognito:groups".into(),
            write: "sundial-operators".into(),
            read: "sundial-viewers".into(),
        };
        let operator = jwt(&[("cognito:groups", "[staff sundial-operators]")], None);
        assert_eq!(groups.scope_of(&operator), Some(Scope::Write));
        let viewer = jwt(
            &[("cognito:groups", "[sundial-viewers]")],
            Some(&["sundial/write"]),
        );
        // The `scopes` API Gateway parses are the `scope` claim's, not this claim's.
        assert_eq!(groups.scope_of(&viewer), Some(Scope::Read));
        let commas = jwt(&[("cognito:groups", "staff,sundial-viewers")], None);
        assert_eq!(groups.scope_of(&commas), Some(Scope::Read));
        assert_eq!(
            groups.scope_of(&jwt(&[("cognito:groups", "[]")], None)),
            None
        );
    }
}
