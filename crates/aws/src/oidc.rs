//! The console's sign-in at the stack's OpenID Connect issuer (`AuthMode=JWT`, `JwtIssuer`): the
//! authorization-code flow with PKCE (RFC 7636, S256) for the client `ConsoleClientId`, its
//! secret (if the provider gave it one) read from Secrets Manager at cold start. The ID token is
//! checked by `jsonwebtoken` (on ring) against the issuer's JWKS, never by hand: its key found by
//! `kid` in the cached key set, fetched again for a `kid` it does not know (a rotation); `iss`
//! the issuer, `aud` the client, not expired, and `nonce` the one the login started with. The
//! signed-in person's scope comes from the same [`JwtScopes`] as the API's: from the ID token's
//! claim (a list claim such as `cognito:groups`), or, for `scope`, from the scopes the token
//! endpoint granted.

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use sundial_console::sign_in::{
    Identity, IdentityProvider, PendingLogin, ProviderFuture, SignInError,
};
use tokio::sync::Mutex;

use crate::jwt_scopes::{listed_values, JwtScopes};

/// How long a request to the issuer may take.
const ISSUER_TIMEOUT: Duration = Duration::from_secs(10);

/// The algorithms an ID token may be signed with: the asymmetric ones, as the issuer's JWKS
/// publishes public keys (never `none` or an HMAC, which a public key cannot check).
const ALGORITHMS: [Algorithm; 8] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
];

/// The client of the console at an OpenID Connect issuer.
#[derive(Debug)]
pub struct OidcClient {
    issuer: String,
    client_id: String,
    client_secret: Option<String>,
    redirect_uri: String,
    scopes: JwtScopes,
    http: reqwest::Client,
    endpoints: Mutex<Option<Endpoints>>,
    keys: Mutex<Option<JwkSet>>,
}

/// The issuer's endpoints, from its discovery document.
#[derive(Clone, Debug)]
struct Endpoints {
    authorization: String,
    token: String,
    jwks: String,
}

impl OidcClient {
    /// The client `client_id` (with `client_secret`, if the provider gave it one) of `issuer`,
    /// which sends people back to `public_url` + `/ui/login/callback`, their scope by `scopes`.
    pub fn new(
        issuer: &str,
        client_id: &str,
        client_secret: Option<String>,
        public_url: &str,
        scopes: JwtScopes,
    ) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(ISSUER_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("the issuer's client: {e}"))?;
        Ok(OidcClient {
            issuer: issuer.trim_end_matches('/').to_owned(),
            client_id: client_id.to_owned(),
            client_secret,
            redirect_uri: format!("{}/ui/login/callback", public_url.trim_end_matches('/')),
            scopes,
            http,
            endpoints: Mutex::new(None),
            keys: Mutex::new(None),
        })
    }

    /// The callback URL the provider must allow for this client.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// The issuer's endpoints, read once from `{issuer}/.well-known/openid-configuration`.
    async fn endpoints(&self) -> Result<Endpoints, SignInError> {
        let mut cached = self.endpoints.lock().await;
        if let Some(endpoints) = cached.as_ref() {
            return Ok(endpoints.clone());
        }
        let url = format!("{}/.well-known/openid-configuration", self.issuer);
        let document = self.get_json(&url).await?;
        let named = |name: &str| {
            document[name].as_str().map(str::to_owned).ok_or_else(|| {
                SignInError(format!("the issuer's discovery document has no {name}"))
            })
        };
        if document["issuer"].as_str().map(|i| i.trim_end_matches('/')) != Some(&self.issuer) {
            return Err(SignInError(format!(
                "the discovery document at {url} names another issuer"
            )));
        }
        let endpoints = Endpoints {
            authorization: named("authorization_endpoint")?,
            token: named("token_endpoint")?,
            jwks: named("jwks_uri")?,
        };
        *cached = Some(endpoints.clone());
        Ok(endpoints)
    }

    /// The key `kid`, from the cached key set or, when it is not there, a fresh one.
    async fn key(&self, kid: &str) -> Result<DecodingKey, SignInError> {
        let mut keys = self.keys.lock().await;
        let known = keys.as_ref().and_then(|set| set.find(kid).cloned());
        let jwk = match known {
            Some(jwk) => jwk,
            None => {
                let url = self.endpoints().await?.jwks;
                let fresh: JwkSet = serde_json::from_value(self.get_json(&url).await?)
                    .map_err(|e| SignInError(format!("{url}: not a JWKS: {e}")))?;
                let found = fresh.find(kid).cloned();
                *keys = Some(fresh);
                found.ok_or_else(|| SignInError(format!("no key {kid} in the issuer's JWKS")))?
            }
        };
        DecodingKey::from_jwk(&jwk).map_err(|e| SignInError(format!("key {kid}: {e}")))
    }

    async fn get_json(&self, url: &str) -> Result<Value, SignInError> {
        let answer = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| SignInError(format!("{url}: {e}")))?;
        if !answer.status().is_success() {
            return Err(SignInError(format!("{url}: {}", answer.status())));
        }
        let body = answer
            .bytes()
            .await
            .map_err(|e| SignInError(format!("{url}: {e}")))?;
        serde_json::from_slice(&body).map_err(|e| SignInError(format!("{url}: {e}")))
    }

    /// The claims of `id_token` once it passes every check for `pending`'s login.
    async fn checked_claims(
        &self,
        id_token: &str,
        pending: &PendingLogin,
    ) -> Result<Map<String, Value>, SignInError> {
        let header =
            decode_header(id_token).map_err(|e| SignInError(format!("not an ID token: {e}")))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(SignInError(format!(
                "the ID token is signed with {:?}, not a public-key algorithm",
                header.alg
            )));
        }
        let kid = header
            .kid
            .ok_or_else(|| SignInError("the ID token's header has no kid".into()))?;
        let key = self.key(&kid).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer, &format!("{}/", self.issuer)]);
        validation.set_audience(&[&self.client_id]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = 60;
        let claims = decode::<Map<String, Value>>(id_token, &key, &validation)
            .map_err(|e| SignInError(format!("the ID token is refused: {e}")))?
            .claims;
        if claims.get("nonce").and_then(Value::as_str) != Some(pending.nonce.as_str()) {
            return Err(SignInError(
                "the ID token's nonce is not this sign-in's".into(),
            ));
        }
        Ok(claims)
    }
}

/// PKCE's S256 challenge of `verifier`: base64url of its SHA-256, without padding.
pub fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

impl IdentityProvider for OidcClient {
    fn authorization_url<'a>(&'a self, pending: &'a PendingLogin) -> ProviderFuture<'a, String> {
        Box::pin(async move {
            let endpoints = self.endpoints().await?;
            let mut url = reqwest::Url::parse(&endpoints.authorization)
                .map_err(|e| SignInError(format!("the issuer's authorization endpoint: {e}")))?;
            // With the `scope` claim, ask for the two scopes: the provider grants what the client
            // and the person may have.
            let scope = if matches!(self.scopes.claim.as_str(), "scope" | "scp") {
                format!("openid {} {}", self.scopes.write, self.scopes.read)
            } else {
                "openid".to_owned()
            };
            url.query_pairs_mut()
                .append_pair("response_type", "code")
                .append_pair("client_id", &self.client_id)
                .append_pair("redirect_uri", &self.redirect_uri)
                .append_pair("scope", &scope)
                .append_pair("state", &pending.state)
                .append_pair("nonce", &pending.nonce)
                .append_pair("code_challenge", &pkce_challenge(&pending.verifier))
                .append_pair("code_challenge_method", "S256");
            Ok(url.to_string())
        })
    }

    fn finish<'a>(
        &'a self,
        pending: &'a PendingLogin,
        code: &'a str,
    ) -> ProviderFuture<'a, Identity> {
        Box::pin(async move {
            let endpoints = self.endpoints().await?;
            let form = [
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", self.redirect_uri.as_str()),
                ("client_id", self.client_id.as_str()),
                ("code_verifier", pending.verifier.as_str()),
            ];
            let mut request = self.http.post(&endpoints.token).form(&form);
            if let Some(secret) = &self.client_secret {
                // client_secret_basic: what Cognito and most providers take.
                request = request.basic_auth(&self.client_id, Some(secret));
            }
            let answer = request
                .send()
                .await
                .map_err(|e| SignInError(format!("the token endpoint: {e}")))?;
            let status = answer.status();
            let body: Value = match answer.bytes().await {
                Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                Err(_) => Value::Null,
            };
            if !status.is_success() {
                let error = body["error"].as_str().unwrap_or("no error code");
                return Err(SignInError(format!(
                    "the token endpoint answered {status} ({error})"
                )));
            }
            let id_token = body["id_token"]
                .as_str()
                .ok_or_else(|| SignInError("the token endpoint sent no ID token".into()))?;
            let claims = self.checked_claims(id_token, pending).await?;
            let actor = claims
                .get("sub")
                .and_then(Value::as_str)
                .filter(|sub| !sub.is_empty())
                .ok_or_else(|| SignInError("the ID token has no subject".into()))?
                .to_owned();
            let values: Vec<&str> = match claims.get(&self.scopes.claim) {
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
                Some(Value::String(text)) => listed_values(text),
                _ if matches!(self.scopes.claim.as_str(), "scope" | "scp") => body["scope"]
                    .as_str()
                    .map(listed_values)
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            let scope = self.scopes.scope_of_values(&values);
            Ok(Identity { actor, scope })
        })
    }

    fn name(&self) -> String {
        self.issuer
            .split("://")
            .nth(1)
            .unwrap_or(&self.issuer)
            .split('/')
            .next()
            .unwrap_or_default()
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7636, appendix B.
    #[test]
    fn the_pkce_challenge_is_rfc_7636s() {
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
