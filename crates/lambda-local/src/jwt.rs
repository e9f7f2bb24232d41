//! API Gateway's JWT authorizer, as HTTP APIs document it ("Controlling access to HTTP APIs with
//! JWT authorizers"): the token from the identity source (`Authorization`, with or without
//! `Bearer `), its key found by `kid` in the issuer's JWKS (from
//! `{issuer}/.well-known/openid-configuration`'s `jwks_uri`, cached, fetched again for a `kid` it
//! does not know, as when the issuer rotates its keys), its RSA signature, `iss` equal to the
//! issuer, `aud` (or, without one, `client_id`) among the audiences, `exp` in the future and
//! `nbf` in the past. A request that fails any of it gets 401 `{"message":"Unauthorized"}`; one
//! that passes reaches the function with the claims in `requestContext.authorizer.jwt`.
//! Signatures are checked by `jsonwebtoken` (on ring), never by hand.

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use serde_json::{json, Map, Value};
use tokio::sync::Mutex;

/// One JWT authorizer of the template.
#[derive(Debug)]
pub struct JwtAuthorizer {
    /// `JwtConfiguration.Issuer`.
    pub issuer: String,
    /// `JwtConfiguration.Audience`.
    pub audiences: Vec<String>,
    client: reqwest::Client,
    keys: Mutex<Option<JwkSet>>,
}

impl JwtAuthorizer {
    /// The authorizer of a template's `AWS::ApiGatewayV2::Authorizer` properties, if it is a JWT
    /// one with an issuer.
    pub fn from_properties(properties: &Value) -> Option<JwtAuthorizer> {
        if properties["AuthorizerType"].as_str() != Some("JWT") {
            return None;
        }
        let config = &properties["JwtConfiguration"];
        let issuer = config["Issuer"].as_str()?.trim_end_matches('/').to_owned();
        let audiences = match &config["Audience"] {
            Value::Array(list) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            Value::String(one) => one.split(',').map(|a| a.trim().to_owned()).collect(),
            _ => Vec::new(),
        };
        let client = reqwest::Client::builder().no_proxy().build().ok()?;
        Some(JwtAuthorizer {
            issuer,
            audiences,
            client,
            keys: Mutex::new(None),
        })
    }

    /// The `requestContext.authorizer` of a request whose identity source is `authorization`, or
    /// why it is refused.
    pub async fn authorize(&self, authorization: Option<&str>) -> Result<Value, String> {
        let header = authorization.ok_or("no Authorization header")?.trim();
        let token = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .unwrap_or(header);
        let head = decode_header(token).map_err(|e| format!("not a JWT: {e}"))?;
        if !matches!(
            head.alg,
            Algorithm::RS256 | Algorithm::RS384 | Algorithm::RS512
        ) {
            return Err(format!(
                "algorithm {:?} (API Gateway verifies RSA only)",
                head.alg
            ));
        }
        let kid = head.kid.ok_or("no kid in the token's header")?;
        let key = self.key(&kid).await?;
        let mut validation = Validation::new(head.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.validate_aud = false; // `aud` or `client_id`: checked below
        validation.validate_nbf = true;
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "iss"]);
        let claims = decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| format!("token refused: {e}"))?
            .claims;
        let audiences: Vec<&str> = match claims.get("aud") {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            _ => claims
                .get("client_id")
                .and_then(Value::as_str)
                .into_iter()
                .collect(),
        };
        if !audiences
            .iter()
            .any(|a| self.audiences.iter().any(|b| b == a))
        {
            return Err(format!(
                "audience {audiences:?} is not one of {:?}",
                self.audiences
            ));
        }
        let scopes: Option<Vec<&str>> = claims
            .get("scope")
            .and_then(Value::as_str)
            .map(|s| s.split_whitespace().collect());
        // API Gateway hands every claim to the function as a string.
        let as_text: Map<String, Value> = claims
            .iter()
            .map(|(name, value)| {
                let text = match value {
                    Value::String(s) => s.clone(),
                    Value::Array(items) => format!(
                        "[{}]",
                        items
                            .iter()
                            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                    other => other.to_string(),
                };
                (name.clone(), Value::String(text))
            })
            .collect();
        Ok(json!({"jwt": {"claims": as_text, "scopes": scopes}}))
    }

    /// The key `kid`, from the cached JWKS or, when it is not there, a fresh one.
    async fn key(&self, kid: &str) -> Result<DecodingKey, String> {
        let mut keys = self.keys.lock().await;
        let known = keys.as_ref().and_then(|set| set.find(kid).cloned());
        let jwk = match known {
            Some(jwk) => jwk,
            None => {
                let fresh = self.fetch_keys().await?;
                let found = fresh.find(kid).cloned();
                *keys = Some(fresh);
                found.ok_or_else(|| format!("no key {kid} in the issuer's JWKS"))?
            }
        };
        DecodingKey::from_jwk(&jwk).map_err(|e| format!("key {kid}: {e}"))
    }

    async fn fetch_keys(&self) -> Result<JwkSet, String> {
        let discovery = format!("{}/.well-known/openid-configuration", self.issuer);
        let document: Value = self.get_json(&discovery).await?;
        let jwks_uri = document["jwks_uri"]
            .as_str()
            .ok_or_else(|| format!("{discovery} has no jwks_uri"))?;
        let keys: Value = self.get_json(jwks_uri).await?;
        serde_json::from_value(keys).map_err(|e| format!("{jwks_uri}: not a JWKS: {e}"))
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let answer = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !answer.status().is_success() {
            return Err(format!("{url}: {}", answer.status()));
        }
        let body = answer.bytes().await.map_err(|e| format!("{url}: {e}"))?;
        serde_json::from_slice(&body).map_err(|e| format!("{url}: {e}"))
    }
}
