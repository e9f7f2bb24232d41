//! SigV4 request signing for the API on AWS with `AuthMode=IAM` (docs/deploy.md): API Gateway
//! checks that each request is signed for the service `execute-api` by a principal allowed
//! `execute-api:Invoke`.
//!
//! Credentials come from the standard AWS chain (`aws-config`): environment variables, the shared
//! config and credentials files with `AWS_PROFILE` (SSO and `credential_process` included), web
//! identity, and container and instance roles, refreshed as they expire. The providers that call
//! AWS (STS, SSO, the container and instance metadata endpoints) do it through reqwest, the HTTP
//! client the CLI already has ([`http_client`]), instead of the SDK's default aws-lc client or a
//! second hyper stack. The signature itself is `aws-sigv4`'s; [`sign_request`] is a pure function
//! so AWS's published test vectors can check it.

use std::time::{Duration, SystemTime};

use aws_config::{BehaviorVersion, Region};
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::http::{
    http_client_fn, HttpConnector, HttpConnectorFuture, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;

use crate::error::{Class, CliError};

/// The signing name of API Gateway's invoke API.
pub(crate) const SERVICE: &str = "execute-api";

/// Signs requests with the credentials of the standard chain for one region.
pub(crate) struct Signer {
    credentials: SharedCredentialsProvider,
    region: String,
}

impl Signer {
    /// Loads the credential chain. The region is `region` (`--region`), else the one an
    /// `execute-api` host names, else the SDK's (`AWS_REGION`, the profile).
    pub(crate) async fn from_environment(
        region: Option<String>,
        host: &str,
    ) -> Result<Signer, CliError> {
        let known = region.or_else(|| region_of_host(host));
        let mut loader =
            aws_config::defaults(BehaviorVersion::latest()).http_client(http_client()?);
        if let Some(region) = &known {
            loader = loader.region(Region::new(region.clone()));
        }
        let config = loader.load().await;
        let region = known
            .or_else(|| config.region().map(|r| r.to_string()))
            .ok_or_else(|| {
                CliError::usage(
                    "--region: IAM signing needs the API's region: give --region, or set AWS_REGION",
                )
            })?;
        let credentials = config
            .credentials_provider()
            .ok_or_else(|| CliError::usage("--auth iam: no AWS credential chain is available"))?;
        Ok(Signer {
            credentials,
            region,
        })
    }

    /// The headers that sign `method url` with `body` now: `authorization`, `x-amz-date` and,
    /// with temporary credentials, `x-amz-security-token`.
    pub(crate) async fn sign(
        &self,
        method: &str,
        url: &str,
        body: &[u8],
    ) -> Result<Vec<(String, String)>, CliError> {
        let credentials = self.credentials.provide_credentials().await.map_err(|e| {
            CliError::new(
                Class::Refused,
                format!("AWS credentials for IAM signing: {}", chain(&e)),
            )
        })?;
        sign_request(
            &credentials,
            &self.region,
            SERVICE,
            SystemTime::now(),
            method,
            url,
            &[],
            body,
        )
        .map_err(|e| CliError::usage(format!("signing the request: {e}")))
    }
}

/// The HTTP client of the credential providers: reqwest (rustls on ring), with the connect and read
/// timeouts each provider asks for as one limit per request (the instance metadata provider asks
/// for a second each, so a machine outside AWS is not kept waiting). Like the SDK's own client it
/// ignores proxy variables: the metadata endpoints are link-local.
fn http_client() -> Result<SharedHttpClient, CliError> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| CliError::new(Class::Server, format!("starting the HTTP client: {e}")))?;
    Ok(http_client_fn(move |settings, _components| {
        let limit = match (settings.connect_timeout(), settings.read_timeout()) {
            (Some(connect), Some(read)) => Some(connect + read),
            (one, other) => one.or(other),
        };
        SharedHttpConnector::new(Connector {
            client: client.clone(),
            limit,
        })
    }))
}

/// One provider's connection settings over the shared reqwest client.
#[derive(Debug)]
struct Connector {
    client: reqwest::Client,
    limit: Option<Duration>,
}

impl HttpConnector for Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let client = self.client.clone();
        let limit = self.limit;
        HttpConnectorFuture::new(async move {
            let other = |e: String| ConnectorError::other(e.into(), None);
            // Credential requests are small forms and queries, always in memory.
            let body = request
                .body()
                .bytes()
                .ok_or_else(|| other("a streaming request body".into()))?
                .to_vec();
            let method = reqwest::Method::from_bytes(request.method().as_bytes())
                .map_err(|e| other(e.to_string()))?;
            let mut builder = client.request(method, request.uri()).body(body);
            for (name, value) in request.headers().iter() {
                builder = builder.header(name, value);
            }
            if let Some(limit) = limit {
                builder = builder.timeout(limit);
            }
            let failed = |e: reqwest::Error| {
                if e.is_timeout() {
                    ConnectorError::timeout(e.into())
                } else {
                    ConnectorError::io(e.into())
                }
            };
            let response = builder.send().await.map_err(failed)?;
            let status = StatusCode::try_from(response.status().as_u16())
                .map_err(|e| other(e.to_string()))?;
            let headers: Vec<(String, String)> = response
                .headers()
                .iter()
                .filter_map(|(name, value)| {
                    value
                        .to_str()
                        .ok()
                        .map(|value| (name.as_str().to_string(), value.to_string()))
                })
                .collect();
            let bytes = response.bytes().await.map_err(failed)?;
            let mut answer = HttpResponse::new(status, SdkBody::from(bytes));
            for (name, value) in headers {
                answer.headers_mut().insert(name, value);
            }
            Ok(answer)
        })
    }
}

/// The SigV4 headers for one request: `headers` are signed along with `host` (from `url`), and
/// the body's SHA-256 is part of the signature.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sign_request(
    credentials: &Credentials,
    region: &str,
    service: &str,
    time: SystemTime,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Vec<(String, String)>, String> {
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| e.to_string())?
        .into();
    let request = SignableRequest::new(
        method,
        url,
        headers.iter().copied(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| e.to_string())?;
    let (instructions, _signature) = sign(request, &params)
        .map_err(|e| e.to_string())?
        .into_parts();
    Ok(instructions
        .headers()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect())
}

/// The region in an execute-api host: `abc123.execute-api.eu-west-1.amazonaws.com`.
pub(crate) fn region_of_host(host: &str) -> Option<String> {
    let rest = host.split_once(".execute-api.")?.1;
    let region = rest.split('.').next()?;
    (!region.is_empty()).then(|| region.to_string())
}

fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The credentials, region, service and time of AWS's SigV4 test suite
    /// (docs.aws.amazon.com/general/latest/gr/signature-v4-test-suite.html).
    fn suite(method: &str, url: &str) -> Vec<(String, String)> {
        let credentials = Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            None,
            None,
            "test-suite",
        );
        // 2015-08-30T12:36:00Z
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        sign_request(
            &credentials,
            "us-east-1",
            "service",
            time,
            method,
            url,
            &[],
            b"",
        )
        .unwrap()
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {name} in {headers:?}"))
    }

    #[test]
    fn get_vanilla() {
        let headers = suite("GET", "https://example.amazonaws.com/");
        assert_eq!(header(&headers, "x-amz-date"), "20150830T123600Z");
        assert_eq!(
            header(&headers, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }

    #[test]
    fn post_vanilla() {
        let headers = suite("POST", "https://example.amazonaws.com/");
        assert!(
            header(&headers, "authorization").ends_with(
                "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"
            ),
            "{headers:?}"
        );
    }

    #[test]
    fn session_tokens_are_sent() {
        let credentials = Credentials::new("AKID", "SECRET", Some("TOKEN".into()), None, "t");
        let headers = sign_request(
            &credentials,
            "eu-west-1",
            SERVICE,
            SystemTime::now(),
            "GET",
            "https://abc.execute-api.eu-west-1.amazonaws.com/jobs",
            &[],
            b"",
        )
        .unwrap();
        assert_eq!(header(&headers, "x-amz-security-token"), "TOKEN");
        assert!(header(&headers, "authorization").contains("/eu-west-1/execute-api/aws4_request"));
    }

    #[test]
    fn regions_of_execute_api_hosts() {
        assert_eq!(
            region_of_host("abc123.execute-api.eu-west-1.amazonaws.com").as_deref(),
            Some("eu-west-1")
        );
        assert_eq!(region_of_host("api.example.com"), None);
        assert_eq!(region_of_host("127.0.0.1"), None);
    }
}
