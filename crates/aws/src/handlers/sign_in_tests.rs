//! The console's sign-in at an OpenID Connect issuer (`AuthMode=JWT`, `ConsoleClientId`) through
//! the API function's router, against an issuer served on loopback by the test: its discovery
//! document, its JWKS (the first fixture key of `crates/lambda-local/tests/fixtures`) and a token
//! endpoint that checks the PKCE verifier against the challenge of the authorization request. The
//! test plays the browser: it follows the console to the issuer's authorization URL, "signs in"
//! there by registering a code for that request, and comes back to the callback.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{header, Request};
use http_body_util::BodyExt;
use lambda_http::tower::ServiceExt;
use serde_json::{json, Value};

use super::api_router_with_console;
use super::tests::{memory_rig, FIXTURE_SECRET};
use crate::jwt_scopes::JwtScopes;
use crate::oidc::{pkce_challenge, OidcClient};

const CLIENT: &str = "console-client";
const CLIENT_SECRET: &str = "console-client-secret-0123456789";
const PUBLIC_URL: &str = "https://console.example";

/// A code the issuer gave out: the challenge it was asked with and the ID token it redeems for.
#[derive(Clone)]
struct Grant {
    challenge: String,
    id_token: String,
}

/// The issuer on loopback.
struct Issuer {
    url: String,
    grants: Arc<Mutex<HashMap<String, Grant>>>,
}

async fn issuer() -> Issuer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let grants: Arc<Mutex<HashMap<String, Grant>>> = Arc::default();
    let mut keys: Value = serde_json::from_str(include_str!(
        "../../../lambda-local/tests/fixtures/jwks.json"
    ))
    .unwrap();
    keys["keys"].as_array_mut().unwrap().truncate(1);
    let discovery = json!({
        "issuer": url,
        "authorization_endpoint": format!("{url}/authorize"),
        "token_endpoint": format!("{url}/token"),
        "jwks_uri": format!("{url}/jwks"),
    });
    let redeem = Arc::clone(&grants);
    let app = axum::Router::new()
        .route(
            "/.well-known/openid-configuration",
            axum::routing::get(move || async move { axum::Json(discovery) }),
        )
        .route(
            "/jwks",
            axum::routing::get(move || async move { axum::Json(keys) }),
        )
        .route(
            "/token",
            axum::routing::post(
                move |headers: axum::http::HeaderMap,
                      axum::Form(form): axum::Form<HashMap<String, String>>| {
                    let grants = Arc::clone(&redeem);
                    async move { token_endpoint(&grants, &headers, &form) }
                },
            ),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Issuer { url, grants }
}

/// The token endpoint: a known code, this client with its secret (client_secret_basic), the
/// callback, and a verifier whose S256 challenge is the one the code was asked with.
fn token_endpoint(
    grants: &Mutex<HashMap<String, Grant>>,
    headers: &axum::http::HeaderMap,
    form: &HashMap<String, String>,
) -> (axum::http::StatusCode, axum::Json<Value>) {
    use base64::Engine as _;
    let refuse = |error: &str| {
        (
            axum::http::StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": error})),
        )
    };
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT}:{CLIENT_SECRET}"))
    );
    if headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(basic.as_str())
    {
        return refuse("invalid_client");
    }
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
    if field("grant_type") != "authorization_code"
        || field("client_id") != CLIENT
        || field("redirect_uri") != format!("{PUBLIC_URL}/ui/login/callback")
    {
        return refuse("invalid_request");
    }
    // A code is redeemed once.
    let Some(grant) = grants.lock().unwrap().remove(field("code")) else {
        return refuse("invalid_grant");
    };
    if pkce_challenge(field("code_verifier")) != grant.challenge {
        return refuse("invalid_grant");
    }
    (
        axum::http::StatusCode::OK,
        axum::Json(json!({"id_token": grant.id_token, "access_token": "opaque",
                          "token_type": "Bearer", "expires_in": 3600})),
    )
}

/// An ID token signed with the fixture key `signer`, under the published key's id.
fn id_token(signer: &str, claims: &Value) -> String {
    let der = match signer {
        "local-test-1" => {
            include_bytes!("../../../lambda-local/tests/fixtures/jwt-local-test-1.der").as_slice()
        }
        _ => include_bytes!("../../../lambda-local/tests/fixtures/jwt-local-test-2.der").as_slice(),
    };
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("local-test-1".into());
    jsonwebtoken::encode(
        &header,
        claims,
        &jsonwebtoken::EncodingKey::from_rsa_der(der),
    )
    .unwrap()
}

/// An answer of the router: status, headers and page.
struct Answer {
    status: u16,
    location: String,
    cookies: Vec<String>,
    page: String,
}

impl Answer {
    /// The CSRF token its page's forms carry.
    fn csrf(&self) -> String {
        let marker = "name=\"csrf\" value=\"";
        let at = self.page.find(marker).expect("a form");
        let rest = &self.page[at + marker.len()..];
        rest[..rest.find('"').unwrap_or(0)].to_owned()
    }

    /// The value of the cookie `name` it set.
    fn cookie(&self, name: &str) -> Option<String> {
        self.cookies.iter().find_map(|c| {
            c.strip_prefix(&format!("{name}="))
                .map(|rest| rest.split(';').next().unwrap_or_default().to_owned())
        })
    }
}

async fn call(
    router: &axum::Router,
    method: &str,
    path: &str,
    cookies: &[(&str, &str)],
    form: Option<&str>,
) -> Answer {
    let mut request = Request::builder().method(method).uri(path);
    if !cookies.is_empty() {
        let header: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
        request = request.header(header::COOKIE, header.join("; "));
    }
    if form.is_some() {
        request = request.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    }
    let request = request
        .body(form.map_or_else(Body::empty, |f| Body::from(f.to_owned())))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let headers = response.headers().clone();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        location: headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
        cookies: headers
            .get_all(header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect(),
        page: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// One sign-in: the console's start, the issuer's code for claims made by `claims` (given the
/// authorization request's nonce) signed by `signer`, and the callback with the login cookie.
/// Returns the authorization request's query and the callback's answer.
async fn sign_in(
    router: &axum::Router,
    issuer: &Issuer,
    signer: &str,
    claims: impl Fn(&str) -> Value,
) -> (HashMap<String, String>, Answer) {
    let start = call(router, "GET", "/ui/login/start", &[], None).await;
    assert_eq!(start.status, 303, "{}", start.page);
    let login = start.cookie("sundial_login").expect("the login cookie");
    let url = reqwest::Url::parse(&start.location).unwrap();
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    let code = format!("code-{}", query["state"]);
    issuer.grants.lock().unwrap().insert(
        code.clone(),
        Grant {
            challenge: query["code_challenge"].clone(),
            id_token: id_token(signer, &claims(&query["nonce"])),
        },
    );
    let callback = format!("/ui/login/callback?code={code}&state={}", query["state"]);
    let answer = call(router, "GET", &callback, &[("sundial_login", &login)], None).await;
    (query, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_signs_people_in_at_the_issuer_with_pkce_and_their_groups_scope() {
    let issuer = issuer().await;
    let rig = memory_rig("2024-06-10T12:00:00Z", FIXTURE_SECRET);
    let (status, body) = rig
        .api(
            "POST",
            "/jobs/sample-report",
            Some(json!({
        "jobName": "report", "creator": "001", "creatorName": "tests",
        "timer": {"period": "external"},
        "request": [{"method": "POST", "url": "http://127.0.0.1:9/run"}]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let scopes = JwtScopes {
        claim: "cognito:groups".into(),
        write: "operators".into(),
        read: "viewers".into(),
    };
    let client = OidcClient::new(
        &issuer.url,
        CLIENT,
        Some(CLIENT_SECRET.into()),
        PUBLIC_URL,
        scopes,
    )
    .unwrap();
    let console = crate::console::config_with(sundial_console::ConsoleAuth::SignIn(
        sundial_console::sign_in::Provider(Arc::new(client)),
    ));
    let router = api_router_with_console(&rig.sundial, Some(console));
    // The issuer checks `exp` against real time: the tokens are made now.
    let now = chrono::Utc::now().timestamp();
    let person = |sub: &'static str, groups: Value| {
        let issuer_url = issuer.url.clone();
        move |nonce: &str| {
            json!({"iss": issuer_url, "sub": sub, "aud": CLIENT, "iat": now, "exp": now + 300,
                   "nonce": nonce, "cognito:groups": groups})
        }
    };

    // No session: the login page offers the issuer.
    let first = call(&router, "GET", "/ui/jobs", &[], None).await;
    assert_eq!((first.status, first.location.as_str()), (303, "/ui/login"));
    let login = call(&router, "GET", "/ui/login", &[], None).await;
    assert_eq!(login.status, 200);
    assert!(
        login.page.contains("href=\"/ui/login/start\""),
        "{}",
        login.page
    );

    // An operator signs in: the authorization request is a PKCE one for this client and callback,
    // the login cookie is Lax (the issuer's redirect back is cross-site) and the session Strict.
    let start = call(&router, "GET", "/ui/login/start", &[], None).await;
    let login_cookie = start
        .cookies
        .iter()
        .find(|c| c.starts_with("sundial_login="))
        .cloned()
        .unwrap_or_default();
    for attribute in [
        "Path=/ui/login",
        "HttpOnly",
        "SameSite=Lax",
        "Max-Age=600",
        "Secure",
    ] {
        assert!(
            login_cookie.contains(attribute),
            "{attribute}: {login_cookie}"
        );
    }
    let (query, signed_in) = sign_in(
        &router,
        &issuer,
        "local-test-1",
        person("ana", json!(["staff", "operators"])),
    )
    .await;
    assert!(
        start
            .location
            .starts_with(&format!("{}/authorize?", issuer.url)),
        "{}",
        start.location
    );
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], CLIENT);
    assert_eq!(
        query["redirect_uri"],
        format!("{PUBLIC_URL}/ui/login/callback")
    );
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["scope"], "openid");
    assert_eq!(signed_in.status, 200, "{}", signed_in.page);
    assert!(
        signed_in.page.contains("url=/"),
        "moves on by itself: {}",
        signed_in.page
    );
    let session = signed_in.cookie("sundial_session").expect("a session");
    assert!(
        signed_in
            .cookies
            .iter()
            .any(|c| c.starts_with("sundial_session=")
                && c.contains("SameSite=Strict")
                && c.contains("Secure")),
        "{:?}",
        signed_in.cookies
    );
    assert_eq!(
        signed_in.cookie("sundial_login").as_deref(),
        Some(""),
        "the login cookie is cleared"
    );
    let jobs = call(
        &router,
        "GET",
        "/ui/jobs",
        &[("sundial_session", &session)],
        None,
    )
    .await;
    assert_eq!(jobs.status, 200, "{}", jobs.page);
    // Her change is recorded under her subject.
    let page = call(
        &router,
        "GET",
        "/ui/jobs/sample-report",
        &[("sundial_session", &session)],
        None,
    )
    .await;
    let csrf = page.csrf();
    let paused = call(
        &router,
        "POST",
        "/ui/jobs/sample-report/pause",
        &[("sundial_session", &session)],
        Some(&format!("csrf={csrf}&notes=by+ana")),
    )
    .await;
    assert_eq!(paused.status, 303, "{}", paused.page);
    let (status, history) = rig.api("GET", "/jobs/sample-report/history", None).await;
    assert_eq!(status, 200, "{history}");
    assert_eq!(history["entries"][0]["actor"], "ana", "{history}");

    // A viewer's session reads and is refused a change.
    let (_, viewer) = sign_in(
        &router,
        &issuer,
        "local-test-1",
        person("vic", json!(["viewers"])),
    )
    .await;
    assert_eq!(viewer.status, 200, "{}", viewer.page);
    let session = viewer.cookie("sundial_session").unwrap();
    let page = call(
        &router,
        "GET",
        "/ui/jobs/sample-report",
        &[("sundial_session", &session)],
        None,
    )
    .await;
    assert_eq!(page.status, 200);
    let csrf = page.csrf();
    let refused = call(
        &router,
        "POST",
        "/ui/jobs/sample-report/unpause",
        &[("sundial_session", &session)],
        Some(&format!("csrf={csrf}")),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.page);
    assert!(
        refused.page.contains("vic, of scope read"),
        "{}",
        refused.page
    );

    // Someone in neither group signs in at the issuer but gets no session.
    let (_, stranger) = sign_in(
        &router,
        &issuer,
        "local-test-1",
        person("sam", json!(["staff"])),
    )
    .await;
    assert_eq!(stranger.status, 403, "{}", stranger.page);
    assert!(
        stranger.page.contains("grants neither scope"),
        "{}",
        stranger.page
    );
    assert_eq!(stranger.cookie("sundial_session"), None);

    // Refused: a token signed by a key the issuer does not publish, another sign-in's nonce,
    // another audience, an expired token.
    let eve = person("eve", json!(["operators"]));
    let cases = [
        ("local-test-2", None, "ID token is refused"),
        ("local-test-1", Some(("nonce", json!("another"))), "nonce"),
        (
            "local-test-1",
            Some(("aud", json!("another-client"))),
            "InvalidAudience",
        ),
        (
            "local-test-1",
            Some(("exp", json!(now - 120))),
            "ExpiredSignature",
        ),
    ];
    for (signer, change, why) in cases {
        let claims = |nonce: &str| {
            let mut claims = eve(nonce);
            if let Some((name, value)) = &change {
                claims[*name] = value.clone();
            }
            claims
        };
        let (_, refused) = sign_in(&router, &issuer, signer, claims).await;
        assert_eq!(refused.status, 401, "{change:?}: {}", refused.page);
        assert!(refused.page.contains(why), "{change:?}: {}", refused.page);
        assert_eq!(refused.cookie("sundial_session"), None);
    }

    // Refused before the issuer is asked: a callback without the login cookie, or with another
    // sign-in's state; and a code redeemed with another verifier (the issuer refuses it).
    let start = call(&router, "GET", "/ui/login/start", &[], None).await;
    let login = start.cookie("sundial_login").unwrap();
    let url = reqwest::Url::parse(&start.location).unwrap();
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    let no_cookie = call(
        &router,
        "GET",
        &format!("/ui/login/callback?code=x&state={}", query["state"]),
        &[],
        None,
    )
    .await;
    assert_eq!(no_cookie.status, 400, "{}", no_cookie.page);
    let wrong_state = call(
        &router,
        "GET",
        "/ui/login/callback?code=x&state=0123",
        &[("sundial_login", &login)],
        None,
    )
    .await;
    assert_eq!(wrong_state.status, 400, "{}", wrong_state.page);
    issuer.grants.lock().unwrap().insert(
        "stolen".into(),
        Grant {
            challenge: pkce_challenge("someone-else's-verifier"),
            id_token: id_token(
                "local-test-1",
                &person("eve", json!(["operators"]))(&query["nonce"]),
            ),
        },
    );
    let stolen = call(
        &router,
        "GET",
        &format!("/ui/login/callback?code=stolen&state={}", query["state"]),
        &[("sundial_login", &login)],
        None,
    )
    .await;
    assert_eq!(stolen.status, 401, "{}", stolen.page);
    assert!(stolen.page.contains("invalid_grant"), "{}", stolen.page);
    // The issuer said no.
    let denied = call(
        &router,
        "GET",
        "/ui/login/callback?error=access_denied",
        &[("sundial_login", &login)],
        None,
    )
    .await;
    assert_eq!(denied.status, 401, "{}", denied.page);
    assert!(denied.page.contains("access_denied"), "{}", denied.page);
    // A login cookie altered by hand fails its signature.
    let altered = login.replacen(&query["state"], "00000000000000000000000000000000", 1);
    let tampered = call(
        &router,
        "GET",
        "/ui/login/callback?code=x&state=00000000000000000000000000000000",
        &[("sundial_login", &altered)],
        None,
    )
    .await;
    assert_eq!(tampered.status, 400, "{}", tampered.page);
}

/// With the `scope` claim (a Cognito resource server's scopes), the console asks for both scopes
/// and takes what the token endpoint granted.
#[tokio::test]
async fn with_the_scope_claim_the_console_asks_for_both_scopes() {
    let issuer = issuer().await;
    let client =
        OidcClient::new(&issuer.url, CLIENT, None, PUBLIC_URL, JwtScopes::default()).unwrap();
    let pending = sundial_console::sign_in::PendingLogin {
        state: "s".into(),
        nonce: "n".into(),
        verifier: "v".into(),
    };
    use sundial_console::sign_in::IdentityProvider as _;
    let url = client.authorization_url(&pending).await.unwrap();
    let query: HashMap<String, String> = reqwest::Url::parse(&url)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(query["scope"], "openid sundial/write sundial/read");
    assert_eq!(query["code_challenge"], pkce_challenge("v"));
    assert_eq!(
        client.redirect_uri(),
        "https://console.example/ui/login/callback"
    );
}
