//! The pages through the console's router on the in-memory store: what a browser without
//! JavaScript gets. (The real server in headless Chromium: `crates/cli/tests/console.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use maud::Render;
use serde_json::{json, Value};
use sundial_console::execution_page::ExecutionPage;
use sundial_console::job_page::{JobPage, RunsQuery, ShownRequest};
use sundial_console::jobs_page::JobsPage;
use sundial_console::ledger_page::{LedgerPage, RangeError, RangeQuery};
use sundial_console::stats::DashboardPage;
use sundial_console::upcoming::{ListedFire, UpcomingPage, UpcomingQuery};
use sundial_console::{ConsoleAuth, ConsoleConfig};
use sundial_core::execution::ExecutionId;
use sundial_core::job::{HttpMethod, JobId, LabelSelector, OverlapPolicy};
use sundial_core::ledger::Fate;
use sundial_core::stats::{Figures, NotRun, Rollup, SeriesPoint, StatsWindow};
use sundial_ports::memory::{ManualClock, MemoryStore};
use sundial_ports::store::{JobFilter, JobOrder, RollupRecord, Store, Write};
use sundial_service::app::{DaySuccess, UpcomingCut};
use sundial_service::{App, AppConfig, AppError};
use support::urlencode;
use tower::ServiceExt;

struct Console {
    router: Router,
    app: Arc<App<MemoryStore>>,
    clock: Arc<ManualClock>,
    cookie: String,
    csrf: String,
}

struct Page {
    status: StatusCode,
    location: Option<String>,
    html: String,
}

impl Console {
    async fn open() -> Console {
        let clock = Arc::new(ManualClock::new("2026-01-05T10:00:00Z".parse().unwrap()));
        let app = Arc::new(App::new(
            MemoryStore::new(),
            clock.clone(),
            AppConfig::new(b"console-test-signing-secret-0123456789".to_vec()),
        ));
        let router = support::open_router(Arc::clone(&app));
        let first = router
            .clone()
            .oneshot(Request::get("/ui/jobs/new").body(Body::empty()).unwrap())
            .await
            .unwrap();
        let cookie = support::session_cookie(&first);
        let html = body_text(first.into_body()).await;
        let csrf = support::csrf_of(&html);
        Console {
            router,
            app,
            clock,
            cookie,
            csrf,
        }
    }

    async fn send(&self, request: Request<Body>) -> Page {
        let response = self.router.clone().oneshot(request).await.unwrap();
        Page {
            status: response.status(),
            location: response
                .headers()
                .get(header::LOCATION)
                .map(|v| v.to_str().unwrap().to_owned()),
            html: body_text(response.into_body()).await,
        }
    }

    async fn get(&self, uri: &str) -> Page {
        self.send(
            Request::get(uri)
                .header(header::COOKIE, &self.cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await
    }

    /// Posts a form of `fields` to `uri`, with the session's cookie.
    async fn post_form(&self, uri: &str, fields: &[(&str, &str)]) -> Page {
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{k}={}", urlencode(v)))
            .collect();
        self.send(
            Request::post(uri)
                .header(header::COOKIE, &self.cookie)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(body.join("&")))
                .unwrap(),
        )
        .await
    }

    /// Posts the create form with `fields` over a blank form's defaults.
    async fn create(&self, fields: &[(&str, &str)]) -> Page {
        let defaults = [
            ("csrf", self.csrf.as_str()),
            ("when", "cron"),
            ("timeZone", "UTC"),
            ("method", "GET"),
            ("extra", "{}"),
            ("creator", "ops"),
            ("creatorName", "Operations"),
            ("jobName", "Report"),
            ("url", "http://127.0.0.1:9/run"),
        ];
        self.post_over("/ui/jobs/new", &defaults, fields).await
    }

    /// Posts `fields` over `defaults` (a field of both: the one of `fields`) to `uri`.
    async fn post_over(
        &self,
        uri: &str,
        defaults: &[(&str, &str)],
        fields: &[(&str, &str)],
    ) -> Page {
        let mut form = defaults.to_vec();
        for (key, value) in fields {
            form.retain(|(k, _)| k != key);
            form.push((key, value));
        }
        self.post_form(uri, &form).await
    }

    /// The jobs list's view model, read as the session's page reads it (its bulk form carries
    /// the session's CSRF token).
    async fn jobs(&self, filter: JobFilter, order: JobOrder, cursor: Option<String>) -> JobsPage {
        JobsPage::load(&self.app, filter, order, cursor, &self.csrf)
            .await
            .unwrap()
    }

    /// [`assert_renders`] with this session's CSRF token.
    fn assert_renders(&self, page: &Page, status: StatusCode, model: &impl Render) {
        assert_renders(page, status, model, &self.csrf);
    }
}

/// The ids of a jobs list's rows, in order.
fn ids(page: &JobsPage) -> Vec<&str> {
    (page.rows.iter())
        .map(|row| row.job.definition.job_id().as_str())
        .collect()
}

async fn body_text(body: Body) -> String {
    String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

/// What a page's view model rendered: the page's `<main>`, without the layout around it.
fn main_of(html: &str) -> &str {
    let open = r#"<main id="main" tabindex="-1">"#;
    let start = html
        .find(open)
        .unwrap_or_else(|| panic!("no <main> in\n{html}"))
        + open.len();
    &html[start..html.rfind("</main>").unwrap()]
}

/// Asserts that `page` answered `status` and shows exactly `model` rendered: the route renders
/// the view model a test loads with the same query. A model loaded in a test belongs to no
/// session, so the session's CSRF token `csrf` (if any) reads as none on both sides.
fn assert_renders(page: &Page, status: StatusCode, model: &impl Render, csrf: &str) {
    assert_eq!(page.status, status, "{}", page.html);
    let blank = |html: &str| match csrf {
        "" => html.to_owned(),
        csrf => html.replace(csrf, ""),
    };
    assert_eq!(
        blank(main_of(&page.html)),
        blank(&model.render().into_string())
    );
}

/// The target of a page's `rel="next"` link, as a browser follows it.
fn next_link(html: &str) -> Option<String> {
    let (link, _) = html.split_once(r#"rel="next""#)?;
    let href = link.rsplit(r#"href=""#).next()?;
    Some(href.split('"').next()?.replace("&amp;", "&"))
}

/// The query of `url` (after `?`, before `#`) as the pairs a handler reads, percent-decoded.
fn query_pairs(url: &str) -> Vec<(String, String)> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let query = query.split('#').next().unwrap_or_default();
    serde_urlencoded::from_str(query).unwrap()
}

/// The value of the first `name` in `pairs`.
fn pair<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The text of the element with `id` (up to its closing tag), to check what a control shows.
fn element<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!(r#"id="{id}""#))
        .unwrap_or_else(|| panic!("no #{id} in\n{html}"));
    let open = html[..start].rfind('<').unwrap();
    let end = html[start..].find('>').unwrap() + start;
    let close = html[end..].find("</").map_or(end, |i| i + end);
    &html[open..close]
}

#[tokio::test]
async fn a_job_is_created_from_the_form_and_its_fields_errors_are_shown_at_their_controls() {
    let console = Console::open().await;

    // A bad cron: 400, the use case's message at the cron control, which is marked invalid,
    // and in the summary; every value typed is kept.
    let page = console
        .create(&[("jobId", "report"), ("cron", "61 12 * * *")])
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    let error = element(&page.html, "c-cron-error");
    assert!(error.contains("schedule.cron[0]:"), "{error}");
    let cron = element(&page.html, "c-cron");
    assert!(cron.contains(r#"aria-invalid="true""#), "{cron}");
    assert!(
        cron.contains("c-cron-error") && cron.contains("61 12 * * *"),
        "{cron}"
    );
    assert!(page
        .html
        .contains(r##"<a href="#c-cron">Cron expressions: schedule.cron[0]:"##));
    assert!(element(&page.html, "c-jobId").contains(r#"value="report""#));

    // Each field's error at its own control: the URL, the time zone, the timeout, the headers.
    for (fields, control, says) in [
        (vec![("url", "ftp://x")], "c-url", "request[0].url:"),
        (
            vec![("timeZone", "Mars/Olympus")],
            "c-timeZone",
            "schedule.timeZone:",
        ),
        (
            vec![("timeoutSeconds", "soon")],
            "c-timeoutSeconds",
            "timeoutSeconds:",
        ),
        (
            vec![("headers", "no colon")],
            "c-headers",
            "line 1: expected Name: value",
        ),
        (vec![("jobId", "a b")], "c-jobId", "jobId:"),
        (vec![("jobName", "")], "c-jobName", "jobName:"),
        (
            vec![("extra", r#"{"maxRetries": "many"}"#)],
            "c-extra",
            "maxRetries:",
        ),
        (
            vec![("extra", r#"{"jobName": "Other"}"#)],
            "c-extra",
            "jobName: given both",
        ),
        (vec![("extra", "[1]")], "c-extra", "expected a JSON object"),
    ] {
        let mut fields = fields;
        if !fields.iter().any(|(k, _)| *k == "jobId") {
            fields.push(("jobId", "report"));
        }
        fields.push(("cron", "0 12 * * *"));
        let page = console.create(&fields).await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{fields:?}");
        let error = element(&page.html, &format!("{control}-error"));
        assert!(error.contains(says), "{fields:?}: {error}");
    }

    // The preview button: the next fires, in the schedule's zone, and nothing created.
    let page = console
        .create(&[
            ("jobId", "report"),
            ("cron", "0 12 * * MON-FRI"),
            ("timeZone", "Europe/London"),
            ("action", "preview"),
        ])
        .await;
    assert_eq!(page.status, StatusCode::OK);
    let preview = element(&page.html, "preview");
    assert!(preview.contains("2026-01-05 12:00:00+00:00"), "{preview}");
    assert_eq!(page.html.matches("<li><time").count(), 5, "{}", page.html);
    assert!(console
        .app
        .get_job(&"report".parse().unwrap())
        .await
        .is_err());

    // A good form: the job exists as written, with the JSON editor's fields, and the browser
    // goes to its page.
    let page = console
        .create(&[
            ("jobId", "report"),
            ("cron", "0 12 * * MON-FRI"),
            ("timeZone", "Europe/London"),
            ("method", "POST"),
            ("headers", "X-Team: data"),
            ("body", r#"{"n": "${executeNumber}"}"#),
            ("overlap", "BufferOne"),
            ("timeoutSeconds", "30"),
            (
                "extra",
                r#"{"maxRetries": 2, "schedule": {"jitter": "30s"}}"#,
            ),
        ])
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.html);
    assert_eq!(page.location.as_deref(), Some("/ui/jobs/report"));
    let job = console
        .app
        .get_job(&"report".parse().unwrap())
        .await
        .unwrap()
        .to_api_json();
    assert_eq!(job["schedule"]["cron"], json!(["0 12 * * MON-FRI"]));
    assert_eq!(job["schedule"]["timeZone"], "Europe/London");
    assert_eq!(job["schedule"]["jitter"], "30s");
    assert_eq!(job["request"][0]["method"], "POST");
    assert_eq!(job["request"][0]["headers"], json!({"X-Team": "data"}));
    assert_eq!(job["request"][0]["body"], json!({"n": "${executeNumber}"}));
    assert_eq!(job["overlap"], "BufferOne");
    assert_eq!(job["timeoutSeconds"], 30);
    assert_eq!(job["maxRetries"], 2);

    // The id taken: 409, said at the id.
    let page = console
        .create(&[("jobId", "report"), ("cron", "0 1 * * *")])
        .await;
    assert_eq!(page.status, StatusCode::CONFLICT);
    assert!(element(&page.html, "c-jobId-error").contains("already exists"));

    // The other kinds: a timer, triggered only, and calendars.
    for (id, fields) in [
        (
            "t",
            vec![("when", "timer"), ("dueTime", "10m"), ("period", "1h")],
        ),
        ("x", vec![("when", "triggered")]),
        (
            "c",
            vec![("when", "calendars"), ("calendars", r#"{"hour": "9"}"#)],
        ),
    ] {
        let mut fields = fields;
        fields.push(("jobId", id));
        let page = console.create(&fields).await;
        assert_eq!(page.status, StatusCode::SEE_OTHER, "{id}: {}", page.html);
    }
    let timer = console.app.get_job(&"t".parse().unwrap()).await.unwrap();
    assert_eq!(
        timer.to_api_json()["timer"],
        json!({"dueTime": "10m", "period": "1h"})
    );
    let page = JobPage::load(&console.app, &"x".parse().unwrap(), StatsWindow::Day)
        .await
        .unwrap();
    assert_eq!(page.definition.schedule, "Triggered only");
    assert!(page.fires.is_empty());
}

#[tokio::test]
async fn a_form_without_its_csrf_token_creates_nothing() {
    let console = Console::open().await;
    let page = console
        .send(
            Request::post("/ui/jobs/new")
                .header(header::COOKIE, &console.cookie)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from("jobId=a&jobName=A&creator=o&creatorName=O&cron=0+1+*+*+*&url=http%3A%2F%2F127.0.0.1%3A9%2F"))
                .unwrap(),
        )
        .await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    assert!(console.app.get_job(&"a".parse().unwrap()).await.is_err());
}

#[tokio::test]
async fn the_preview_route_is_the_apis_behind_the_session() {
    let console = Console::open().await;
    let preview = |body: Value, cookie: Option<&str>| {
        let mut request =
            Request::post("/ui/specs/preview").header(header::CONTENT_TYPE, "application/json");
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        console.send(request.body(Body::from(body.to_string())).unwrap())
    };
    let page = preview(
        json!({"schedule": {"cron": ["0 12 * * *"]}, "count": 2}),
        Some(&console.cookie),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    let answer: Value = serde_json::from_str(&page.html).unwrap();
    assert_eq!(
        answer["times"],
        json!(["2026-01-05T12:00:00+00:00", "2026-01-06T12:00:00+00:00"])
    );
    let page = preview(
        json!({"schedule": {"cron": ["61 * * * *"]}}),
        Some(&console.cookie),
    )
    .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    let answer: Value = serde_json::from_str(&page.html).unwrap();
    assert!(answer["resp_msg"]
        .as_str()
        .unwrap()
        .starts_with("schedule.cron[0]:"));
    // No session, no preview.
    let page = preview(json!({"schedule": {"cron": ["0 12 * * *"]}}), None).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn the_list_sorts_and_pages_in_every_order_keeping_its_filters() {
    let console = Console::open().await;
    let job = |cron: Option<&str>| {
        let mut job = json!({"jobName": "j", "creator": "ops", "creatorName": "Ops",
            "request": [{"url": "http://127.0.0.1:9/"}], "timer": {"period": "external"}});
        if let Some(cron) = cron {
            job.as_object_mut().unwrap().remove("timer");
            job["schedule"] = json!({"cron": [cron]});
        }
        job
    };
    // 60 jobs (more than a page of 50): every fifth triggered only, the others daily at a
    // minute of their own; some triggered, a second apart.
    for n in 0..60u32 {
        let cron = format!("{} 11 * * *", 59 - n);
        let cron = (n % 5 != 0).then_some(cron.as_str());
        let id = format!("job-{n:02}");
        console
            .app
            .create_job(&id.parse().unwrap(), &job(cron))
            .await
            .unwrap();
    }
    for n in [7u32, 3, 55] {
        let id = format!("job-{n:02}").parse().unwrap();
        console
            .app
            .trigger(&id, json!({}), None, Default::default())
            .await
            .unwrap();
        console.clock.advance(chrono::Duration::seconds(1));
    }
    let by_ops = JobFilter {
        creator: Some("ops".into()),
        ..JobFilter::default()
    };

    // By next fire: the soonest (job-59 at 11:00) first; the 12 triggered-only jobs last, by id
    // (the first two end the first page).
    let first = console.jobs(by_ops.clone(), JobOrder::NextFire, None).await;
    assert_eq!(first.rows.len(), 50);
    assert_eq!(&ids(&first)[..3], ["job-59", "job-58", "job-57"]);
    assert_eq!(
        first.rows[0].next_fire,
        Some(at("2026-01-05T11:00:00Z")),
        "{:?}",
        first.rows[0]
    );
    assert_eq!(&ids(&first)[46..], ["job-02", "job-01", "job-00", "job-05"]);
    assert!(first.rows[49].next_fire.is_none(), "triggered only");
    let cursor = first.next_cursor.clone().expect("a next page");
    let second = console
        .jobs(by_ops.clone(), JobOrder::NextFire, Some(cursor))
        .await;
    assert_eq!(
        ids(&second),
        [
            "job-10", "job-15", "job-20", "job-25", "job-30", "job-35", "job-40", "job-45",
            "job-50", "job-55"
        ]
    );
    assert_eq!(second.next_cursor, None);
    // The route renders them: its column marked sorted, its next link keeps the order and the
    // filter.
    let page = console.get("/?sort=nextFire&creator=ops").await;
    console.assert_renders(&page, StatusCode::OK, &first);
    assert!(page.html.contains(r#"aria-sort="ascending""#));
    let next = next_link(&page.html).expect("a next page");
    console.assert_renders(&console.get(&next).await, StatusCode::OK, &second);

    // By last run: the latest trigger first, then the jobs never run, by id.
    let by_run = console
        .jobs(JobFilter::default(), JobOrder::LastRun, None)
        .await;
    assert_eq!(
        &ids(&by_run)[..5],
        ["job-55", "job-03", "job-07", "job-00", "job-01"]
    );
    let ran: Vec<bool> = (by_run.rows[..5].iter())
        .map(|row| row.last.is_some())
        .collect();
    assert_eq!(ran, [true, true, true, false, false]);
    let cursor = by_run.next_cursor.clone().expect("a next page");
    let rest = console
        .jobs(JobFilter::default(), JobOrder::LastRun, Some(cursor))
        .await;
    assert_eq!(rest.rows.len(), 10);
    assert_eq!(ids(&rest).last().copied(), Some("job-59"));
    let page = console.get("/?sort=lastRun").await;
    console.assert_renders(&page, StatusCode::OK, &by_run);
    assert!(page.html.contains(r#"aria-sort="descending""#));
    let next = next_link(&page.html).expect("a next page");
    console.assert_renders(&console.get(&next).await, StatusCode::OK, &rest);

    // By id, the default; an unknown sort reads as it.
    let by_id = console.jobs(JobFilter::default(), JobOrder::Id, None).await;
    assert_eq!(&ids(&by_id)[..2], ["job-00", "job-01"]);
    let page = console.get("/?sort=bogus").await;
    console.assert_renders(&page, StatusCode::OK, &by_id);
}

#[tokio::test]
async fn a_job_named_new_keeps_a_page_of_its_own() {
    let console = Console::open().await;
    console
        .app
        .create_job(
            &"new".parse().unwrap(),
            &json!({"jobName": "Called new", "creator": "o", "creatorName": "O",
                    "request": [{"url": "http://127.0.0.1:9/"}], "timer": {"period": "external"}}),
        )
        .await
        .unwrap();
    let new: JobId = "new".parse().unwrap();
    let list = console.jobs(JobFilter::default(), JobOrder::Id, None).await;
    assert_eq!(ids(&list), ["new"]);
    let model = JobPage::load(&console.app, &new, StatsWindow::Day)
        .await
        .unwrap();
    assert_eq!(model.definition.name, "Called new");
    // Its links and forms go to `/ui/jobs/%6Eew`, which reaches its page, not the create page.
    let list = console.get("/").await;
    assert!(
        list.html.contains(r#"href="/ui/jobs/%6Eew""#),
        "{}",
        list.html
    );
    let page = console.get("/ui/jobs/%6Eew").await;
    console.assert_renders(&page, StatusCode::OK, &model);
    assert!(page.html.contains(r#"action="/ui/jobs/%6Eew/pause""#));
    let create = console.get("/ui/jobs/new").await;
    assert!(create.html.contains("<h1>New job</h1>"));
}

/// In token mode the page's script previews with its session cookie, never the API's token;
/// without a session the preview is not served.
#[tokio::test]
async fn with_a_token_the_preview_needs_a_session_and_only_that() {
    let app = Arc::new(App::new(
        MemoryStore::new(),
        Arc::new(ManualClock::new("2026-01-05T10:00:00Z".parse().unwrap())),
        AppConfig::new(b"console-test-signing-secret-0123456789".to_vec()),
    ));
    let token = "console-token-0123456789";
    let router = sundial_console::router(
        app,
        ConsoleConfig {
            auth: ConsoleAuth::token(token),
            session_lifetime: Duration::from_secs(3600),
            secure_cookie: false,
        },
    );
    let login = router
        .clone()
        .oneshot(
            Request::post("/ui/login")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(format!("token={token}")))
                .unwrap(),
        )
        .await
        .unwrap();
    let cookie = support::session_cookie(&login);
    let preview = |cookie: Option<&str>| {
        let mut request =
            Request::post("/ui/specs/preview").header(header::CONTENT_TYPE, "application/json");
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        let body = json!({"schedule": {"cron": ["0 12 * * *"]}, "count": 1}).to_string();
        router
            .clone()
            .oneshot(request.body(Body::from(body)).unwrap())
    };
    let answer = preview(Some(&cookie)).await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let times: Value = serde_json::from_str(&body_text(answer.into_body()).await).unwrap();
    assert_eq!(times["times"], json!(["2026-01-05T12:00:00+00:00"]));
    let refused = preview(None).await.unwrap();
    assert_eq!(refused.status(), StatusCode::SEE_OTHER);
    assert_eq!(refused.headers()[header::LOCATION], "/ui/login");
}

/// With named tokens, a session acts as the token it logged in with: the job's history records
/// its name, and a token of scope read sees every page while every form is refused.
#[tokio::test]
async fn a_session_acts_as_its_token_and_a_read_token_changes_nothing() {
    use sundial_api::{ApiAuth, ApiToken, Scope};
    let app = Arc::new(App::new(
        MemoryStore::new(),
        Arc::new(ManualClock::new("2026-01-05T10:00:00Z".parse().unwrap())),
        AppConfig::new(b"console-test-signing-secret-0123456789".to_vec()),
    ));
    let (writer, reader) = ("console-writer-0123456789", "console-reader-0123456789");
    let router = sundial_console::router(
        Arc::clone(&app),
        ConsoleConfig {
            auth: ConsoleAuth::Tokens(ApiAuth::tokens(vec![
                ApiToken::new("maria", Scope::Write, writer),
                ApiToken::new("wallboard", Scope::Read, reader),
            ])),
            session_lifetime: Duration::from_secs(3600),
            secure_cookie: false,
        },
    );
    let id = sundial_service::app::parse_job_id("nightly").unwrap();
    let job = json!({
        "jobName": "nightly", "creator": "001", "creatorName": "tests",
        "request": [{"url": "http://127.0.0.1:9/run", "method": "POST"}],
        "timer": {"period": "external"},
    });
    app.create_job(&id, &job).await.unwrap();
    let send = |request: Request<Body>| router.clone().oneshot(request);
    // Logs in with `token`: the session cookie and the CSRF token of the job's page.
    let login = |token: &'static str| async move {
        let answer = send(
            Request::post("/ui/login")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(format!("token={token}")))
                .unwrap(),
        )
        .await
        .unwrap();
        assert_eq!(answer.status(), StatusCode::SEE_OTHER);
        let cookie = support::session_cookie(&answer);
        let page = send(
            Request::get("/ui/jobs/nightly")
                .header(header::COOKIE, &cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
        assert_eq!(page.status(), StatusCode::OK);
        let html = body_text(page.into_body()).await;
        let csrf = support::csrf_of(&html);
        (cookie, csrf)
    };
    let pause = |(cookie, csrf): (String, String)| {
        send(
            Request::post("/ui/jobs/nightly/pause")
                .header(header::COOKIE, cookie)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(format!("csrf={csrf}&notes=night+shift")))
                .unwrap(),
        )
    };
    let refused = pause(login(reader).await).await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let html = body_text(refused.into_body()).await;
    assert!(html.contains("wallboard, of scope read"), "{html}");
    assert_eq!(app.get_job(&id).await.unwrap().status().name(), "active");
    // The bulk form too, its dry run included.
    let (cookie, csrf) = login(reader).await;
    let refused = send(
        Request::post("/ui/bulk/jobs")
            .header(header::COOKIE, cookie)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(format!(
                "csrf={csrf}&scope=selected&jobIds=nightly&action=pause&reason=freeze"
            )))
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.get_job(&id).await.unwrap().status().name(), "active");
    // Its dry run changes nothing: a read session may ask it, and is offered no confirm button.
    let (cookie, csrf) = login(reader).await;
    let dry_run = send(
        Request::post("/ui/bulk/jobs/preview")
            .header(header::COOKIE, cookie)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(format!(
                "csrf={csrf}&scope=selected&jobIds=nightly&action=pause&reason=freeze&confirm=1"
            )))
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(dry_run.status(), StatusCode::OK);
    let html = body_text(dry_run.into_body()).await;
    assert!(html.contains("<h1>Pause 1 job?</h1>"), "{html}");
    assert!(
        html.contains("scope read: it may see which jobs match"),
        "{html}"
    );
    assert!(!html.contains(r#"name="confirm""#), "{html}");
    assert_eq!(app.get_job(&id).await.unwrap().status().name(), "active");

    let done = pause(login(writer).await).await.unwrap();
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    let history = app
        .history(&id, &sundial_ports::store::PageRequest::first(10))
        .await
        .unwrap()
        .items;
    assert_eq!(
        (
            &history[0]["action"],
            &history[0]["actor"],
            &history[0]["reason"]
        ),
        (&json!("pause"), &json!("maria"), &json!("night shift"))
    );
}

#[tokio::test]
async fn upcoming_merges_the_fleets_fires_marks_a_clock_change_and_says_where_it_stops() {
    let console = Console::open().await;
    // Saturday 2027-03-13, 10:00 in New York: the clocks go forward at 02:00 on Sunday.
    console.clock.set("2027-03-13T15:00:00Z".parse().unwrap());
    let job = |schedule: Value, active: u8| {
        json!({"jobName": "j", "creator": "ops", "creatorName": "Ops", "active": active,
            "request": [{"url": "http://127.0.0.1:9/"}], "schedule": schedule})
    };
    let create = |id: &'static str, body: Value| {
        let app = Arc::clone(&console.app);
        async move { app.create_job(&id.parse().unwrap(), &body).await.unwrap() }
    };
    create(
        "ny-daily",
        job(
            json!({"cron": ["0 9 * * *"], "timeZone": "America/New_York"}),
            1,
        ),
    )
    .await;
    create("utc-hourly", job(json!({"cron": ["30 * * * *"]}), 1)).await;
    create("paused", job(json!({"cron": ["* * * * *"]}), 0)).await;

    // 15:30 … 14:30 next day hourly (24 fires), and New York's Sunday 09:00 EDT (13:00 UTC);
    // Saturday's 09:00 EST (14:00 UTC) has passed; the paused job has none. Soonest first, the
    // one after the clock change marked; nothing left out.
    let model = UpcomingPage::load(&console.app, UpcomingQuery::default().filter())
        .await
        .unwrap();
    let hourly = |hour: u32| ListedFire {
        due: at("2027-03-13T15:30:00Z") + chrono::Duration::hours(i64::from(hour)),
        job_id: "utc-hourly".into(),
        zone: chrono_tz::UTC,
        clock_change: None,
    };
    let mut expected: Vec<ListedFire> = (0..24).map(hourly).collect();
    expected.insert(
        22,
        ListedFire {
            due: at("2027-03-14T13:00:00Z"),
            job_id: "ny-daily".into(),
            zone: chrono_tz::America::New_York,
            clock_change: Some("clocks change before this: UTC-05:00 → UTC-04:00".into()),
        },
    );
    assert_eq!(model.listed, expected);
    assert_eq!(model.fire_count, 25);
    assert!(model.minutes.is_empty());
    assert_eq!(model.cut, None, "nothing left out");
    let page = console.get("/ui/upcoming").await;
    console.assert_renders(&page, StatusCode::OK, &model);
    assert!(!page.html.contains("data-cut="), "no cut is stated");

    // An every-second job: more fires than the timeline computes; the first 100 listed, the
    // rest counted per minute, and the page says where it stops.
    create("every-second", job(json!({"intervals": ["1s"]}), 1)).await;
    let model = UpcomingPage::load(&console.app, UpcomingQuery::default().filter())
        .await
        .unwrap();
    assert_eq!(model.cut, Some(UpcomingCut::Fires));
    assert_eq!((model.fire_count, model.listed.len()), (20_000, 100));
    assert!(model.listed.windows(2).all(|w| w[0].due <= w[1].due));
    assert!(model.minutes.windows(2).all(|w| w[0].minute < w[1].minute));
    let counted: usize = model.minutes.iter().map(|m| m.fires).sum();
    assert_eq!(
        counted,
        20_000 - 100,
        "every fire past the listed is counted"
    );
    let page = console.get("/ui/upcoming").await;
    console.assert_renders(&page, StatusCode::OK, &model);
    assert!(
        page.html.contains(r#"data-cut="fires""#),
        "the cut is stated"
    );
    assert!(page.html.contains(r#"<h2 id="per-minute">"#));

    let nobody = UpcomingQuery {
        creator: Some("nobody".into()),
        ..UpcomingQuery::default()
    };
    let model = UpcomingPage::load(&console.app, nobody.filter())
        .await
        .unwrap();
    assert_eq!((model.fire_count, model.listed.len()), (0, 0));
    let filtered = console.get("/ui/upcoming?creator=nobody").await;
    console.assert_renders(&filtered, StatusCode::OK, &model);
}

#[tokio::test]
async fn upcoming_of_a_fleet_reads_the_jobs_firing_soonest_and_stops_where_the_rest_begin() {
    let console = Console::open().await;
    // 300 jobs, job n at minute n after 11:00 and again at 20:00 + n % 60 minutes (from 10:00):
    // more jobs than the page reads.
    for n in 0..300u32 {
        let body = json!({"jobName": "j", "creator": "ops", "creatorName": "Ops",
            "request": [{"url": "http://127.0.0.1:9/"}],
            "schedule": {"cron": [format!("{} {},20 * * *", n % 60, 11 + n / 60)]}});
        let id = format!("fleet-{n:03}");
        console
            .app
            .create_job(&id.parse().unwrap(), &body)
            .await
            .unwrap();
    }
    // The 250 soonest are fleet-000 … fleet-249 (11:00 … 15:09); the first left out fires at
    // 15:10, so the timeline holds exactly their first fires (their 20:00s come after): the
    // first 100 listed, the other 150 counted in their minutes, 12:40 … 15:09.
    let model = UpcomingPage::load(&console.app, UpcomingQuery::default().filter())
        .await
        .unwrap();
    assert_eq!(model.cut, Some(UpcomingCut::Jobs));
    assert_eq!(model.fire_count, 250);
    assert_eq!(model.complete_until, at("2026-01-05T15:10:00Z"));
    let listed: Vec<(String, chrono::DateTime<chrono::Utc>)> = (model.listed.iter())
        .map(|fire| (fire.job_id.clone(), fire.due))
        .collect();
    let fleet = |n: i64| {
        (
            format!("fleet-{n:03}"),
            at("2026-01-05T11:00:00Z") + chrono::Duration::minutes(n),
        )
    };
    assert_eq!(listed, (0..100).map(fleet).collect::<Vec<_>>());
    let minutes: Vec<_> = (model.minutes.iter())
        .map(|m| (m.minute, m.fires, m.jobs, m.clock_changes.len()))
        .collect();
    let minute = |n: i64| (fleet(n).1, 1, 1, 0);
    assert_eq!(minutes, (100..250).map(minute).collect::<Vec<_>>());
    let page = console.get("/ui/upcoming").await;
    console.assert_renders(&page, StatusCode::OK, &model);
    assert!(
        page.html.contains(r#"data-cut="jobs""#),
        "the cut is stated"
    );
}

/// Ended runs of one state, all at `minute` of their hour, each lasting `duration_ms` and
/// starting `lag_ms` after its due time: what the engine adds to a rollup for them.
fn ended(state: &str, n: u64, minute: u32, duration_ms: u64, lag_ms: u64) -> Rollup {
    let mut rollup = Rollup::default();
    for _ in 0..n {
        rollup.duration.record(duration_ms);
        rollup.lag.record(lag_ms);
    }
    rollup.states.insert(state.to_owned(), n);
    rollup.minutes.insert(minute, n);
    if state == "Terminated" {
        rollup.failed_minutes.insert(minute, n);
    }
    rollup
}

/// Adds `rollup` to `job`'s bucket of the hour `hour` (what the stats use cases read).
async fn add_rollup(app: &App<MemoryStore>, job: &str, hour: &str, rollup: &Rollup) {
    let record = RollupRecord {
        job_id: job.to_owned(),
        hour: hour.parse().unwrap(),
        counters: rollup.to_counters(),
    };
    app.store()
        .write_all(&[Write::AddRollup(&record)])
        .await
        .unwrap();
}

/// Two jobs' runs at 10:05 and 10:20 (now is 10:30), and fires missed and skipped the hour
/// before.
async fn seed_stats(console: &Console) {
    console.clock.set("2026-01-05T10:30:00Z".parse().unwrap());
    for id in ["steady", "flaky"] {
        let body = json!({"jobName": id, "creator": "ops", "creatorName": "Ops",
            "request": [{"url": "http://127.0.0.1:9/"}], "schedule": {"cron": ["0 * * * *"]}});
        console
            .app
            .create_job(&id.parse().unwrap(), &body)
            .await
            .unwrap();
    }
    for (job, runs) in [
        ("steady", ended("Succeeded", 3, 5, 100, 20)),
        ("steady", ended("Terminated", 1, 20, 100, 20)),
        ("flaky", ended("Terminated", 2, 20, 9_000, 40)),
    ] {
        add_rollup(&console.app, job, "2026-01-05T10:00:00Z", &runs).await;
    }
    let mut not_run = Rollup::not_run(NotRun::Missed, 2);
    not_run.skipped = 1;
    add_rollup(&console.app, "flaky", "2026-01-05T09:00:00Z", &not_run).await;
}

/// A series' runs and failed runs in all, and its number of points.
fn totals(series: &[SeriesPoint]) -> (u64, u64, usize) {
    let runs = series.iter().map(|p| p.runs).sum();
    let failed = series.iter().map(|p| p.failed).sum();
    (runs, failed, series.len())
}

/// The runs and failed runs of the series' point at `time`.
fn point(series: &[SeriesPoint], time: &str) -> (u64, u64) {
    let p = (series.iter())
        .find(|p| p.at == at(time))
        .unwrap_or_else(|| panic!("no point at {time} in {series:?}"));
    (p.runs, p.failed)
}

/// Runs by final state, as the figures count them.
fn by_state(states: &[(&str, u64)]) -> std::collections::BTreeMap<String, u64> {
    (states.iter())
        .map(|(state, n)| (state.to_string(), *n))
        .collect()
}

#[tokio::test]
async fn the_dashboard_charts_the_seeded_runs_and_names_the_failing_and_slow_jobs() {
    let console = Console::open().await;
    seed_stats(&console).await;

    // The fleet's figures over the hour: the hour before is read too.
    let model = DashboardPage::load(&console.app, StatsWindow::Hour)
        .await
        .unwrap();
    assert_eq!(model.window, StatsWindow::Hour);
    let all = &model.fleet.all;
    assert_eq!(all.window, StatsWindow::Hour);
    assert_eq!(all.figures.runs, 6);
    assert_eq!(
        all.figures.by_state,
        by_state(&[("Succeeded", 3), ("Terminated", 3)])
    );
    assert_eq!(all.figures.success_rate, Some(0.5));
    assert_eq!((all.figures.missed, all.figures.skipped), (2, 1));
    // The series: a point per minute, 09:30 … 10:30, carrying the seeded runs.
    assert_eq!(totals(&all.series), (6, 3, 61));
    assert_eq!(all.series[0].at, at("2026-01-05T09:30:00Z"));
    assert_eq!(point(&all.series, "2026-01-05T10:05:00Z"), (3, 0));
    assert_eq!(point(&all.series, "2026-01-05T10:20:00Z"), (3, 3));
    // Top failing: flaky (2 failed) before steady (1); slowest: flaky's 9 s first.
    let failing: Vec<(&str, u64, u64)> = (model.fleet.top_failing.iter())
        .map(|(id, f)| (id.as_str(), f.failed(), f.runs))
        .collect();
    assert_eq!(failing, [("flaky", 2, 2), ("steady", 1, 4)]);
    let named = |jobs: &[(String, Figures)]| -> Vec<String> {
        jobs.iter().map(|(id, _)| id.clone()).collect()
    };
    assert_eq!(named(&model.fleet.slowest), ["flaky", "steady"]);

    // The route renders it, linked from the header, its chart described in words.
    let page = console.get("/ui/dashboard?window=1h").await;
    console.assert_renders(&page, StatusCode::OK, &model);
    let html = &page.html;
    assert!(
        html.contains(r#"<a href="/ui/dashboard">Dashboard</a>"#),
        "in the header nav"
    );
    assert!(!html.contains("Debug mode is on"), "debug mode is off");
    assert!(html.contains(
        r#"aria-label="Runs per minute: 6 runs in all, 3 failed; most in one bucket 3 at 10:05""#
    ), "{html}");

    // The window switch: the week reads the same runs in hourly points; the current one is
    // marked; 24 hours by default.
    let week = DashboardPage::load(&console.app, StatsWindow::Week)
        .await
        .unwrap();
    assert_eq!(totals(&week.fleet.all.series), (6, 3, 169));
    assert_eq!(
        point(&week.fleet.all.series, "2026-01-05T10:00:00Z"),
        (6, 3)
    );
    let page = console.get("/ui/dashboard?window=7d").await;
    console.assert_renders(&page, StatusCode::OK, &week);
    assert!(page
        .html
        .contains(r#"<a href="/ui/dashboard?window=7d" aria-current="page" data-window="7d">"#));
    let day = DashboardPage::load(&console.app, StatsWindow::Day)
        .await
        .unwrap();
    console.assert_renders(&console.get("/ui/dashboard").await, StatusCode::OK, &day);
    let bad = console.get("/ui/dashboard?window=2h").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.html.contains("window"), "{}", bad.html);
}

#[tokio::test]
async fn the_dashboard_says_loudly_when_debug_mode_is_on() {
    let clock = Arc::new(ManualClock::new("2026-01-05T10:00:00Z".parse().unwrap()));
    let mut config = AppConfig::new(b"console-test-signing-secret-0123456789".to_vec());
    config.debug_mode = sundial_core::debug_mode::DebugMode::Schedules;
    let app = Arc::new(App::new(MemoryStore::new(), clock, config));
    let app_of_test = app.clone();
    let router = support::open_router(app);
    let response = router
        .clone()
        .oneshot(Request::get("/ui/dashboard").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let html = body_text(response.into_body()).await;
    assert!(
        html.contains(r#"<p class="banner" role="alert" data-debug-mode="schedules">"#),
        "{html}"
    );
    assert!(html.contains("Debug mode is on"));
    // Issue 26 item 9: switched at run time, the banner says so on every page (here the jobs
    // list), and is gone when switched off.
    let by = sundial_service::app::ChangeBy::new(sundial_service::app::Actor::new("alice"));
    app_of_test
        .set_debug_mode_by(&by, sundial_core::debug_mode::DebugMode::Both)
        .await
        .unwrap();
    let page = |path: &'static str| {
        let router = router.clone();
        async move {
            let response = router
                .oneshot(Request::get(path).body(Body::empty()).unwrap())
                .await
                .unwrap();
            body_text(response.into_body()).await
        }
    };
    let jobs = page("/").await;
    assert!(
        jobs.contains(r#"data-debug-mode="both""#) && jobs.contains("console triggers still run"),
        "{jobs}"
    );
    app_of_test
        .set_debug_mode_by(&by, sundial_core::debug_mode::DebugMode::Off)
        .await
        .unwrap();
    assert!(!page("/ui/upcoming").await.contains("Debug mode is on"));
    // No runs: the charts say so rather than draw nothing silently.
    let model = DashboardPage::load(&app_of_test, StatsWindow::Day)
        .await
        .unwrap();
    assert_eq!(totals(&model.fleet.all.series), (0, 0, 25));
    assert!(model.fleet.top_failing.is_empty() && model.fleet.slowest.is_empty());
    let shown = Page {
        status: StatusCode::OK,
        location: None,
        html,
    };
    assert_renders(&shown, StatusCode::OK, &model, "");
    assert!(
        shown.html.contains("Runs per hour: no runs"),
        "{}",
        shown.html
    );
}

#[tokio::test]
async fn a_jobs_page_charts_its_own_runs_over_the_window_it_is_asked_for() {
    let console = Console::open().await;
    seed_stats(&console).await;

    // Only steady's runs over the hour: 3 at 10:05, 1 failed at 10:20.
    let steady = "steady".parse().unwrap();
    let model = JobPage::load(&console.app, &steady, StatsWindow::Hour)
        .await
        .unwrap();
    let stats = &model.stats;
    assert_eq!(stats.window, StatsWindow::Hour);
    assert_eq!(totals(&stats.series), (4, 1, 61));
    assert_eq!(point(&stats.series, "2026-01-05T10:05:00Z"), (3, 0));
    assert_eq!(point(&stats.series, "2026-01-05T10:20:00Z"), (1, 1));
    assert_eq!(
        stats.figures.by_state,
        by_state(&[("Succeeded", 3), ("Terminated", 1)])
    );
    assert_eq!(stats.figures.success_rate, Some(0.75));
    // Duration and fire-lag percentiles, 100 ms and 20 ms as the histograms keep them (within
    // 5 %): 102 ms and 20 ms to the millisecond.
    let ms = |q: Option<f64>| q.map(f64::round);
    let duration = &stats.figures.duration;
    assert_eq!(
        [ms(duration.p50), ms(duration.p95), ms(duration.p99)],
        [Some(102.0); 3]
    );
    assert_eq!(ms(stats.figures.lag.p50), Some(20.0));
    let page = console.get("/ui/jobs/steady?window=1h").await;
    console.assert_renders(&page, StatusCode::OK, &model);
    assert!(
        page.html
            .contains(r#"<a href="/ui/jobs/steady?window=24h#stats" data-window="24h">"#),
        "{}",
        page.html
    );

    let day = JobPage::load(&console.app, &steady, StatsWindow::Day)
        .await
        .unwrap();
    assert_eq!(day.stats.window, StatsWindow::Day);
    assert_eq!(day.stats.figures.runs, 4);
    assert_eq!(day.stats.series.len(), 25);
    console.assert_renders(&console.get("/ui/jobs/steady").await, StatusCode::OK, &day);
    let bad = console.get("/ui/jobs/steady?window=soon").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.html.contains("window"));
}

/// The job `minutely`, firing every minute in London (GMT in January: the times read as UTC),
/// with the runs of `ran` (minutes of 09:00) done, written as the engine writes a fire's run.
async fn minutely_that_ran(console: &Console, ran: &[u32]) -> sundial_core::job::JobId {
    use sundial_core::execution::{execution_id_for_fire, Execution, ExecutionState};
    minutely(console, "minutely", "Europe/London").await;
    let id: sundial_core::job::JobId = "minutely".parse().unwrap();
    for (n, minute) in ran.iter().enumerate() {
        let at = format!("2026-01-05T09:{minute:02}:00Z").parse().unwrap();
        let mut run = Execution::new(
            execution_id_for_fire(&id, 0, at),
            id.clone(),
            n as u64 + 1,
            ExecutionState::Scheduled,
            at,
            id.to_string(),
            at,
        )
        .unwrap();
        run.transition(ExecutionState::Enqueued, at, "due").unwrap();
        run.transition(ExecutionState::Processing, at, "attempt 1")
            .unwrap();
        run.transition(ExecutionState::Succeeded, at, "HTTP 200")
            .unwrap();
        let record = sundial_service::records::encode_execution(&run, 1).unwrap();
        console
            .app
            .store()
            .write_all(&[Write::CreateExecution(&record)])
            .await
            .unwrap();
    }
    id
}

/// The `datetime` of every time a backfill preview lists, in order.
fn previewed(html: &str) -> Vec<String> {
    let Some(list) = html.split(r#"<ol class="fires backfill-times">"#).nth(1) else {
        return Vec::new();
    };
    let list = list.split("</ol>").next().unwrap();
    list.split(r#"<time datetime=""#)
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_owned())
        .collect()
}

fn backfill_form<'a>(csrf: &'a str, mode: &'a str, order: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("csrf", csrf),
        ("start", "2026-01-05T09:50"),
        ("end", "2026-01-05T09:55"),
        ("mode", mode),
        ("order", order),
        ("overlap", ""),
    ]
}

#[tokio::test]
async fn a_backfill_preview_lists_the_times_missing_leaves_out_what_ran_and_run_records_it() {
    let console = Console::open().await;
    let id = minutely_that_ran(&console, &[51, 53]).await;

    // The page: a form over the last day, in the job's zone, linked from the job's page.
    let job_page = console.get("/ui/jobs/minutely").await;
    assert!(job_page
        .html
        .contains(r#"<a href="/ui/jobs/minutely/backfill">"#));
    let page = console.get("/ui/jobs/minutely/backfill").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Europe/London"), "{}", page.html);
    assert!(element(&page.html, "b-start").contains(r#"value="2026-01-04T10:00:00""#));
    assert!(element(&page.html, "b-end").contains(r#"value="2026-01-05T10:00:00""#));

    let minutes = |list: &[u32]| -> Vec<String> {
        list.iter()
            .map(|m| format!("2026-01-05T09:{m:02}:00+00:00"))
            .collect()
    };
    // All: every minute of the range, both ends included; the form keeps its values.
    let all = console
        .post_form(
            "/ui/jobs/minutely/backfill/preview",
            &backfill_form(&console.csrf, "all", "oldest"),
        )
        .await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.html);
    assert_eq!(previewed(&all.html), minutes(&[50, 51, 52, 53, 54, 55]));
    assert!(all.html.contains(r#"data-count="6""#));
    assert!(element(&all.html, "b-start").contains(r#"value="2026-01-05T09:50""#));
    // Missing: not the times that ran; newest first when asked.
    let missing = console
        .post_form(
            "/ui/jobs/minutely/backfill/preview",
            &backfill_form(&console.csrf, "missing", "oldest"),
        )
        .await;
    assert_eq!(previewed(&missing.html), minutes(&[50, 52, 54, 55]));
    let newest = console
        .post_form(
            "/ui/jobs/minutely/backfill/preview",
            &backfill_form(&console.csrf, "missing", "newest"),
        )
        .await;
    assert_eq!(previewed(&newest.html), minutes(&[55, 54, 52, 50]));
    // Previews record nothing.
    let job = console.app.get_job(&id).await.unwrap();
    assert!(job.state.pending_backfills.is_empty());
    let history = |console: &Console| {
        let (app, id) = (Arc::clone(&console.app), id.clone());
        async move {
            app.history(&id, &sundial_ports::store::PageRequest::first(10))
                .await
                .unwrap()
                .items
        }
    };
    assert_eq!(history(&console).await.len(), 1, "only the creation");

    // The Run button under the preview posts the previewed values: recorded, then the job's
    // page says how many runs start.
    assert!(missing
        .html
        .contains(r#"<form method="post" action="/ui/jobs/minutely/backfill">"#));
    let run = console
        .post_fields(
            "/ui/jobs/minutely/backfill",
            &hidden_fields(&missing.html, "Run backfill (4)"),
        )
        .await;
    assert_eq!(run.status, StatusCode::SEE_OTHER, "{}", run.html);
    let to = run.location.unwrap();
    assert_eq!(to, "/ui/jobs/minutely?backfilled=4");
    assert!(console
        .get(&to)
        .await
        .html
        .contains("Backfill recorded: 4 runs start now."));
    let job = console.app.get_job(&id).await.unwrap();
    assert_eq!(job.state.pending_backfills.len(), 1);
    let entries = history(&console).await;
    assert_eq!(
        (
            &entries[0]["action"],
            &entries[0]["count"],
            &entries[0]["actor"]
        ),
        (&json!("backfill"), &json!(4), &json!("anonymous"))
    );
    assert_eq!(entries[0]["request"]["mode"], "missing");
}

#[tokio::test]
async fn a_backfills_errors_are_shown_at_their_fields() {
    let console = Console::open().await;
    minutely_that_ran(&console, &[]).await;
    let defaults = [
        ("csrf", console.csrf.as_str()),
        ("start", "2026-01-05T09:50"),
        ("end", "2026-01-05T09:55"),
        ("mode", "all"),
        ("order", "oldest"),
    ];
    for (field, control, says) in [
        (
            ("end", "2026-01-05T09:40"),
            "b-end-error",
            "endTime: is before startTime",
        ),
        (
            // London's clocks go forward at 01:00 on 29 March 2026: 01:30 is not a time there.
            ("start", "2026-03-29T01:30"),
            "b-start-error",
            "startTime: 2026-03-29T01:30 does not exist in Europe/London",
        ),
        (
            // And back at 02:00 on 25 October: 01:30 comes twice.
            ("end", "2026-10-25T01:30"),
            "b-end-error",
            "endTime: 2026-10-25 01:30:00 happens twice in Europe/London",
        ),
        (
            ("start", "yesterday"),
            "b-start-error",
            "is not a date and time",
        ),
        (
            ("mode", "sometimes"),
            "b-mode-error",
            "mode: expected all, missing or failed",
        ),
        (
            ("overlap", "Never"),
            "b-overlap-error",
            "overlap: expected Skip",
        ),
    ] {
        let page = console
            .post_over("/ui/jobs/minutely/backfill/preview", &defaults, &[field])
            .await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{field:?}");
        let error = element(&page.html, control);
        assert!(error.contains(says), "{field:?}: {error}");
        assert!(page.html.contains("The backfill was not recorded"));
        assert!(previewed(&page.html).is_empty());
        // The value typed is kept.
        let (key, value) = field;
        if key == "start" || key == "end" {
            assert!(element(&page.html, &format!("b-{key}")).contains(value));
        }
    }
    // The same refusals from the Run button: nothing recorded.
    let page = console
        .post_form(
            "/ui/jobs/minutely/backfill",
            &[
                ("csrf", &console.csrf),
                ("start", "2026-03-29T01:30"),
                ("end", "2026-03-29T03:00"),
            ],
        )
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    let job = console
        .app
        .get_job(&"minutely".parse().unwrap())
        .await
        .unwrap();
    assert!(job.state.pending_backfills.is_empty());

    // A job with no schedule has nothing to backfill: the page says so and offers no form, and a
    // post gets the use case's refusal.
    let hook = json!({"jobName": "Hook", "creator": "ops", "creatorName": "Ops",
        "request": [{"url": "http://127.0.0.1:9/"}], "timer": {"period": "external"}});
    console
        .app
        .create_job(&"hook".parse().unwrap(), &hook)
        .await
        .unwrap();
    let page = console.get("/ui/jobs/hook/backfill").await;
    assert!(page.html.contains("it has no fire times to backfill"));
    assert!(!page.html.contains(r#"id="b-start""#));
    let refused = console
        .post_over("/ui/jobs/hook/backfill/preview", &defaults, &[])
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert!(refused.html.contains("has no schedule to backfill"));
}

/// The definition the edit page starts from, with its cron changed to `cron`.
async fn edited(console: &Console, id: &str, cron: &str) -> String {
    let page = console.get(&format!("/ui/jobs/{id}/edit")).await;
    assert_eq!(page.status, StatusCode::OK);
    let text = element(&page.html, "e-definition");
    let text = text[text.find('>').unwrap() + 1..]
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let mut definition: Value = serde_json::from_str(&text).unwrap();
    for state in ["state", "pausedNotes", "createdAt", "updatedAt"] {
        assert!(definition.get(state).is_none(), "{state} in {text}");
    }
    definition["schedule"]["cron"] = json!([cron]);
    definition.to_string()
}

#[tokio::test]
async fn an_edit_preview_shows_the_fire_times_before_and_after_and_saves_only_when_confirmed() {
    let console = Console::open().await;
    let id: sundial_core::job::JobId = "daily".parse().unwrap();
    let body = json!({"jobName": "Daily", "creator": "ops", "creatorName": "Ops",
        "request": [{"url": "http://127.0.0.1:9/", "headers": {"Authorization": "Bearer kept-secret"}}],
        "schedule": {"cron": ["0 6 * * *"]}});
    console.app.create_job(&id, &body).await.unwrap();
    // A run waiting to start (a trigger): a change of its timeout applies to it.
    let waiting = console
        .app
        .trigger(&id, json!({}), None, Default::default())
        .await
        .unwrap();
    let before = console.app.get_job(&id).await.unwrap();
    assert!(console
        .get("/ui/jobs/daily")
        .await
        .html
        .contains(r#"<a href="/ui/jobs/daily/edit">"#));

    let mut definition: Value =
        serde_json::from_str(&edited(&console, "daily", "30 7 * * *").await).unwrap();
    assert_eq!(
        definition["request"][0]["headers"]["Authorization"], "***",
        "secrets stay redacted"
    );
    definition["timeoutSeconds"] = json!(30);
    let text = definition.to_string();
    let page = console
        .post_form(
            "/ui/jobs/daily/edit/preview",
            &[("csrf", &console.csrf), ("definition", &text)],
        )
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    let html = &page.html;
    // Side by side: now 06:00, with the change 07:30, each row marked changed.
    let row = html.split(r#"<tr class="changed">"#).nth(1).unwrap();
    assert!(
        row.contains(r#"<td class="before"><time datetime="2026-01-06T06:00:00+00:00">2026-01-06 06:00:00 UTC+00:00</time>"#),
        "{row}"
    );
    assert!(
        row.contains(r#"<td class="after"><time datetime="2026-01-06T07:30:00+00:00">"#),
        "{row}"
    );
    assert_eq!(html.matches(r#"<tr class="changed">"#).count(), 10);
    // The waiting run, and what changes for it.
    let affected = html.split(r#"<table class="affected">"#).nth(1).unwrap();
    assert!(affected.contains(&waiting.execution_id), "{affected}");
    assert!(affected.contains("timeoutSeconds"), "{affected}");
    // Nothing saved.
    let after_preview = console.app.get_job(&id).await.unwrap();
    assert_eq!(after_preview.to_api_json(), before.to_api_json());
    assert_eq!(after_preview.updated_at, before.updated_at);
    // A post to the save route without the confirmation only previews too.
    let unconfirmed = console
        .post_form(
            "/ui/jobs/daily/edit",
            &[("csrf", &console.csrf), ("definition", &text)],
        )
        .await;
    assert_eq!(unconfirmed.status, StatusCode::OK);
    assert!(unconfirmed.html.contains(r#"id="edit-preview""#));
    assert_eq!(
        console.app.get_job(&id).await.unwrap().to_api_json(),
        before.to_api_json()
    );

    // Paused since the preview: its Save (carrying the previewed definition's tag) is refused,
    // and the pause stands.
    let tag = html
        .split(r#"name="previewed" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    console
        .app
        .set_active(&id, false, Some("hold".into()))
        .await
        .unwrap();
    let stale = console
        .post_form(
            "/ui/jobs/daily/edit",
            &[
                ("csrf", &console.csrf),
                ("definition", &text),
                ("confirm", "yes"),
                ("previewed", &tag),
            ],
        )
        .await;
    assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.html);
    assert!(
        stale.html.contains("preview the change again"),
        "{}",
        stale.html
    );
    assert_eq!(
        console.app.get_job(&id).await.unwrap().status().name(),
        "paused"
    );
    console.app.set_active(&id, true, None).await.unwrap();

    // Save, from the form under the preview: the previewed text, confirmed.
    assert!(html.contains(r#"<input type="hidden" name="confirm" value="yes">"#));
    let saved = console
        .post_form(
            "/ui/jobs/daily/edit",
            &[
                ("csrf", &console.csrf),
                ("definition", &text),
                ("confirm", "yes"),
            ],
        )
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
    let to = saved.location.unwrap();
    assert_eq!(to, "/ui/jobs/daily?updated=1");
    assert!(console.get(&to).await.html.contains("Saved: the job"));
    let job = console.app.get_job(&id).await.unwrap();
    let shown = job.to_api_json();
    assert_eq!(shown["schedule"]["cron"], json!(["30 7 * * *"]));
    assert_eq!(shown["timeoutSeconds"], 30);
    assert_eq!(
        job.definition.as_written()["request"][0]["headers"]["Authorization"],
        "Bearer kept-secret",
        "the redacted secret kept its value"
    );
    let history = console
        .app
        .history(&id, &sundial_ports::store::PageRequest::first(10))
        .await
        .unwrap()
        .items;
    assert_eq!(history[0]["action"], "update");
    assert_eq!(history[0]["actor"], "anonymous");
    let changes = history[0]["changes"].as_array().unwrap();
    assert!(
        changes.contains(
            &json!({"path": "/schedule/cron/0", "old": "0 6 * * *", "new": "30 7 * * *"})
        ),
        "{changes:?}"
    );
}

/// A hidden input's value on `html`, unescaped.
fn hidden_value(html: &str, name: &str) -> String {
    html.split(&format!(r#"name="{name}" value=""#))
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no hidden {name} in\n{html}"))
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Issue 26 item 10: the edit page has the guided fields of the new-job page (retries, timeouts,
/// the first notification, async polling), filled from the job. Only the ones changed apply to
/// the JSON: a field left as shown leaves an edit of it in the JSON as typed; an emptied field is
/// removed; the preview shows the definition with the changes, which Save saves.
#[tokio::test]
async fn the_edit_page_has_guided_fields_and_applies_only_the_changed_ones() {
    let console = Console::open().await;
    let id: sundial_core::job::JobId = "guided".parse().unwrap();
    let body = json!({"jobName": "Guided", "creator": "ops", "creatorName": "Ops",
        "request": [{"url": "http://127.0.0.1:9/"}], "schedule": {"cron": ["0 6 * * *"]},
        "maxRetries": 3, "retryPolicy": {"initialInterval": "5s", "backoffCoefficient": 3},
        "notification": [{"url": "http://127.0.0.1:9/n", "stateEquals": "500"}]});
    console.app.create_job(&id, &body).await.unwrap();
    let page = console.get("/ui/jobs/guided/edit").await;
    assert_eq!(page.status, StatusCode::OK);
    let html = &page.html;
    for (id, value) in [
        ("e-maxRetries", "3"),
        ("e-retryInitialInterval", "5s"),
        ("e-retryBackoffCoefficient", "3"),
        ("e-notifyUrl", "http://127.0.0.1:9/n"),
        ("e-notifyState", "500"),
        ("e-heartbeat", ""),
        ("e-cancelUrl", ""),
    ] {
        let input = element(html, id);
        assert!(
            input.contains(&format!(r#"value="{value}""#)),
            "{id}: {input}"
        );
    }
    assert!(!element(html, "e-async").contains("checked"));
    let shown = hidden_value(html, "guidedShown");
    let text = element(html, "e-definition");
    let text = text[text.find('>').unwrap() + 1..]
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let mut definition: Value = serde_json::from_str(&text).unwrap();
    // Changed in the JSON only; its guided field is posted as shown.
    definition["maxRetries"] = json!(5);
    let definition = definition.to_string();
    let preview = console
        .post_form(
            "/ui/jobs/guided/edit/preview",
            &[
                ("csrf", console.csrf.as_str()),
                ("definition", &definition),
                ("guidedShown", &shown),
                ("maxRetries", "3"),
                ("retryInitialInterval", ""),
                ("retryBackoffCoefficient", "3"),
                ("heartbeat", "45s"),
                ("notifyUrl", "http://127.0.0.1:9/n"),
                ("notifyState", "500"),
                ("async", "on"),
                ("checkUrl", "http://127.0.0.1:9/status"),
                ("cancelUrl", "http://127.0.0.1:9/cancel"),
            ],
        )
        .await;
    assert_eq!(preview.status, StatusCode::OK, "{}", preview.html);
    assert!(preview.html.contains(r#"id="edit-preview""#));
    // The preview shows the definition with the changes, the guided fields filled from it.
    assert!(element(&preview.html, "e-heartbeat").contains(r#"value="45s""#));
    assert!(element(&preview.html, "e-async").contains("checked"));
    let previewed = hidden_value(&preview.html, "definition");
    let saved = console
        .post_form(
            "/ui/jobs/guided/edit",
            &[
                ("csrf", console.csrf.as_str()),
                ("definition", &previewed),
                ("confirm", "yes"),
            ],
        )
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
    let job = console.app.get_job(&id).await.unwrap().to_api_json();
    assert_eq!(job["maxRetries"], 5, "the JSON's edit is kept");
    assert_eq!(
        job["retryPolicy"]["initialInterval"],
        Value::Null,
        "emptied: removed"
    );
    assert_eq!(job["retryPolicy"]["backoffCoefficient"], 3);
    assert_eq!(job["timeouts"]["heartbeat"], "45s");
    assert_eq!(job["notification"][0]["url"], "http://127.0.0.1:9/n");
    assert_eq!(job["async"], true);
    assert_eq!(job["checkUrl"], "http://127.0.0.1:9/status");
    assert_eq!(job["cancelUrl"], "http://127.0.0.1:9/cancel");
}

#[tokio::test]
async fn an_edits_errors_are_shown_at_the_editor_and_nothing_is_saved() {
    let console = Console::open().await;
    let id: sundial_core::job::JobId = "daily".parse().unwrap();
    let body = json!({"jobName": "Daily", "creator": "ops", "creatorName": "Ops",
        "request": [{"url": "http://127.0.0.1:9/"}], "schedule": {"cron": ["0 6 * * *"]}});
    console.app.create_job(&id, &body).await.unwrap();
    let bad_cron = edited(&console, "daily", "61 * * * *").await;
    for (text, says) in [
        (bad_cron.as_str(), "schedule.cron[0]:"),
        ("{\"jobName\": ", "invalid JSON:"),
    ] {
        for confirm in ["", "yes"] {
            let page = console
                .post_form(
                    "/ui/jobs/daily/edit/preview",
                    &[
                        ("csrf", &console.csrf),
                        ("definition", text),
                        ("confirm", confirm),
                    ],
                )
                .await;
            assert_eq!(page.status, StatusCode::BAD_REQUEST);
            let error = element(&page.html, "e-definition-error");
            assert!(error.contains(says), "{error}");
            assert!(element(&page.html, "e-definition").contains(r#"aria-invalid="true""#));
            assert!(!page.html.contains(r#"id="edit-preview""#));
        }
    }
    let job = console.app.get_job(&id).await.unwrap();
    assert_eq!(job.to_api_json()["schedule"]["cron"], json!(["0 6 * * *"]));
}

#[tokio::test]
async fn backfill_and_edit_forms_without_their_csrf_token_change_nothing() {
    let console = Console::open().await;
    let id = minutely_that_ran(&console, &[]).await;
    let before = console.app.get_job(&id).await.unwrap().to_api_json();
    let definition = edited(&console, "minutely", "0 * * * *").await;
    for (uri, fields) in [
        (
            "/ui/jobs/minutely/backfill",
            backfill_form("forged", "all", "oldest"),
        ),
        (
            "/ui/jobs/minutely/backfill/preview",
            backfill_form("", "all", "oldest"),
        ),
        (
            "/ui/jobs/minutely/edit",
            vec![
                ("csrf", "forged"),
                ("definition", definition.as_str()),
                ("confirm", "yes"),
            ],
        ),
        (
            "/ui/jobs/minutely/edit/preview",
            vec![("definition", definition.as_str())],
        ),
    ] {
        let page = console.post_form(uri, &fields).await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "{uri}");
        assert!(page.html.contains("CSRF"), "{uri}");
    }
    let job = console.app.get_job(&id).await.unwrap();
    assert_eq!(job.to_api_json(), before);
    assert!(job.state.pending_backfills.is_empty());
}

/// A read token's session may preview a backfill and an edit (dry runs, as the API lets it ask)
/// but is refused the Run and Save posts, and is not offered their buttons.
#[tokio::test]
async fn a_read_token_previews_backfills_and_edits_but_runs_and_saves_nothing() {
    use sundial_api::{ApiAuth, ApiToken, Scope};
    let app = Arc::new(App::new(
        MemoryStore::new(),
        Arc::new(ManualClock::new("2026-01-05T10:00:00Z".parse().unwrap())),
        AppConfig::new(b"console-test-signing-secret-0123456789".to_vec()),
    ));
    let reader = "console-reader-0123456789";
    let router = sundial_console::router(
        Arc::clone(&app),
        ConsoleConfig {
            auth: ConsoleAuth::Tokens(ApiAuth::tokens(vec![ApiToken::new(
                "wallboard",
                Scope::Read,
                reader,
            )])),
            session_lifetime: Duration::from_secs(3600),
            secure_cookie: false,
        },
    );
    let id: sundial_core::job::JobId = "hourly".parse().unwrap();
    let body = json!({"jobName": "Hourly", "creator": "ops", "creatorName": "Ops",
        "request": [{"url": "http://127.0.0.1:9/"}], "schedule": {"cron": ["0 * * * *"]}});
    app.create_job(&id, &body).await.unwrap();
    let login = router
        .clone()
        .oneshot(
            Request::post("/ui/login")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(format!("token={reader}")))
                .unwrap(),
        )
        .await
        .unwrap();
    let cookie = support::session_cookie(&login);
    let send = |request: Request<Body>| {
        let router = router.clone();
        async move {
            let response = router.oneshot(request).await.unwrap();
            (response.status(), body_text(response.into_body()).await)
        }
    };
    let get = |uri: &str| {
        send(
            Request::get(uri)
                .header(header::COOKIE, &cookie)
                .body(Body::empty())
                .unwrap(),
        )
    };
    let post = |uri: &str, form: String| {
        send(
            Request::post(uri)
                .header(header::COOKIE, &cookie)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(form))
                .unwrap(),
        )
    };
    let (status, html) = get("/ui/jobs/hourly/backfill").await;
    assert_eq!(status, StatusCode::OK);
    let csrf = support::csrf_of(&html);
    let range = format!("csrf={csrf}&start=2026-01-05T06%3A00&end=2026-01-05T08%3A00&mode=all");
    let (status, html) = post("/ui/jobs/hourly/backfill/preview", range.clone()).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert_eq!(previewed(&html).len(), 3);
    assert!(html.contains("it may preview a backfill, not run one"));
    assert!(!html.contains(r#"id="run-backfill""#));
    let (status, _) = post("/ui/jobs/hourly/backfill", range).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let mut definition = app.get_job(&id).await.unwrap().to_api_json();
    for state in ["state", "pausedNotes", "createdAt", "updatedAt"] {
        definition.as_object_mut().unwrap().remove(state);
    }
    definition["schedule"]["cron"] = json!(["30 * * * *"]);
    let form = format!(
        "csrf={csrf}&definition={}&confirm=yes",
        urlencode(&definition.to_string())
    );
    let (status, html) = post("/ui/jobs/hourly/edit/preview", form.clone()).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(html.contains(r#"datetime="2026-01-05T10:30:00+00:00""#));
    assert!(!html.contains(r#"id="save-edit""#));
    let (status, _) = post("/ui/jobs/hourly/edit", form).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let job = app.get_job(&id).await.unwrap();
    assert_eq!(job.to_api_json()["schedule"]["cron"], json!(["0 * * * *"]));
    assert!(job.state.pending_backfills.is_empty());
}

/// A minutely job `id` in `zone`, created through the use case.
async fn minutely(console: &Console, id: &str, zone: &str) {
    let job = json!({
        "jobName": id, "creator": "ops", "creatorName": "Ops",
        "request": [{"url": "http://127.0.0.1:9/run"}],
        "schedule": {"cron": ["* * * * *"], "timeZone": zone},
    });
    console
        .app
        .create_job(&id.parse().unwrap(), &job)
        .await
        .unwrap();
}

impl Console {
    /// Posts a form of `fields` (the session's CSRF token added) to `uri`.
    async fn post(&self, uri: &str, fields: &[(&str, &str)]) -> Page {
        let mut form = vec![("csrf", self.csrf.as_str())];
        form.extend_from_slice(fields);
        self.post_form(uri, &form).await
    }
}

#[tokio::test]
async fn the_ledger_names_a_pause_and_its_notes_and_links_the_history_entry_that_explains_it() {
    let console = Console::open().await;
    // Created at 10:00 (the clock's start), paused at 10:02:30 with notes, resumed at 10:05:30.
    minutely(&console, "billing", "UTC").await;
    let set = |t: &str| console.clock.set(t.parse().unwrap());
    set("2026-01-05T10:02:30Z");
    let paused = console
        .post("/ui/jobs/billing/pause", &[("notes", "deploy freeze")])
        .await;
    assert_eq!(paused.status, StatusCode::SEE_OTHER, "{}", paused.html);
    set("2026-01-05T10:05:30Z");
    console.post("/ui/jobs/billing/unpause", &[]).await;
    set("2026-01-05T10:07:10Z");

    let id: JobId = "billing".parse().unwrap();
    let range = RangeQuery {
        from: Some("2026-01-05T09:58".into()),
        to: Some("2026-01-05T10:09".into()),
    };
    let model = LedgerPage::load(&console.app, &id, &range).await.unwrap();
    let job = model.job.as_ref().unwrap();
    assert_eq!(job.created_at, at("2026-01-05T10:00:00Z"));
    // Nothing ran in this test (no engine): the times before the pause have no record, and
    // those after it were not planned yet; each paused one names the pause's notes and when it
    // began.
    let pause = Fate::Paused {
        notes: Some("deploy freeze".into()),
        since: at("2026-01-05T10:02:30Z"),
    };
    let minute = |m: u32| at(&format!("2026-01-05T{}:{:02}:00Z", 9 + m / 60, m % 60));
    let expected: Vec<_> = [
        (58, Fate::NotYetCreated),
        (59, Fate::NotYetCreated),
        (60, Fate::NoRecord),
        (61, Fate::NoRecord),
        (62, Fate::NoRecord),
        (63, pause.clone()),
        (64, pause.clone()),
        (65, pause),
        (66, Fate::Ahead),
        (67, Fate::Ahead),
        (68, Fate::Ahead),
    ]
    .into_iter()
    .map(|(m, fate)| (minute(m), fate))
    .collect();
    let shown = model.shown.as_ref().unwrap();
    assert_eq!(shown.ledger.entries, expected);
    // The route renders it, linking the pause's history entry and the job's creation.
    let page = console
        .get("/ui/jobs/billing/occurrences?from=2026-01-05T09:58&to=2026-01-05T10:09")
        .await;
    console.assert_renders(&page, StatusCode::OK, &model);
    let pause_link = "/ui/jobs/billing/history?at=2026-01-05T10%3A02%3A30.000Z";
    assert!(page.html.contains(&format!(r#"href="{pause_link}""#)));
    assert!(page
        .html
        .contains(r#"href="/ui/jobs/billing/history?at=2026-01-05T10%3A00%3A00.000Z""#));

    // The link opens the history at the pause: its entry first and marked, with its reason.
    let history = console.get(pause_link).await;
    assert_eq!(history.status, StatusCode::OK, "{}", history.html);
    let first = history.html.split("<li class=\"entry").nth(1).unwrap();
    assert!(first.contains(r#"aria-current="true""#), "{first}");
    assert!(first.contains(r#"data-action="pause""#), "{first}");
    assert!(
        first.contains("deploy freeze") && first.contains("anonymous"),
        "{first}"
    );
    assert_eq!(
        history.html.matches("<li class=\"entry").count(),
        2,
        "create, pause"
    );

    // The job's page links both and shows the recent changes, newest first.
    let model = JobPage::load(&console.app, &id, StatsWindow::Day)
        .await
        .unwrap();
    let actions: Vec<&str> = (model.changes.iter())
        .map(|change| change["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["unpause", "pause", "create"]);
    let job = console.get("/ui/jobs/billing").await;
    console.assert_renders(&job, StatusCode::OK, &model);
    assert!(job
        .html
        .contains(r#"action="/ui/jobs/billing/occurrences""#));
}

#[tokio::test]
async fn the_history_shows_an_updates_diff_and_the_ledger_folds_long_ranges() {
    let console = Console::open().await;
    let every_second = json!({
        "jobName": "tick", "creator": "ops", "creatorName": "Ops",
        "request": [{"url": "http://127.0.0.1:9/run"}],
        "schedule": {"intervals": ["1s"]},
    });
    let id = "tick".parse().unwrap();
    console.app.create_job(&id, &every_second).await.unwrap();
    let mut changed = every_second.clone();
    changed["schedule"] = json!({"intervals": ["2s"]});
    console.app.update_job(&id, &changed).await.unwrap();

    let history = console.get("/ui/jobs/tick/history").await;
    assert_eq!(history.status, StatusCode::OK);
    let diff = history.html.split("<table class=\"diff\"").nth(1).unwrap();
    assert!(diff.contains("/schedule/intervals/0"), "{diff}");

    // A day of an every-two-seconds job (43,200 times) is more than one ledger lists: the
    // default range falls back to the last hour, folded into rows of one fate each.
    console.clock.set("2026-01-05T11:00:30Z".parse().unwrap());
    let ledger = LedgerPage::load(&console.app, &id, &RangeQuery::default())
        .await
        .unwrap();
    let shown = ledger.shown.as_ref().unwrap();
    assert_eq!(
        (shown.from, shown.to),
        (at("2026-01-05T10:01:00Z"), at("2026-01-05T11:01:00Z"))
    );
    assert_eq!(shown.ledger.entries.len(), 1800);
    assert_eq!(
        ledger.inputs,
        ["2026-01-05T10:01:00", "2026-01-05T11:01:00"]
    );
    let page = console.get("/ui/jobs/tick/occurrences").await;
    console.assert_renders(&page, StatusCode::OK, &ledger);
    let rows = page.html.matches("<tr data-status=").count();
    assert!(rows <= 3, "{rows} rows");
    assert!(page.html.len() < 50_000, "{} bytes", page.html.len());

    // A range with too many times, or a wall time the clocks skip, is an error at its field.
    let range = |from: &str, to: &str| RangeQuery {
        from: Some(from.into()),
        to: Some(to.into()),
    };
    let too_many = range("2026-01-01T00:00", "2026-01-05T00:00");
    let too_many = LedgerPage::load(&console.app, &id, &too_many)
        .await
        .unwrap();
    assert_eq!(too_many.status(), StatusCode::BAD_REQUEST);
    let error = too_many.error.unwrap();
    assert_eq!(error.field, "to");
    assert!(error.message.contains("at most 10000"), "{}", error.message);
    assert!(too_many.shown.is_none());
    assert_eq!(too_many.inputs, ["2026-01-01T00:00", "2026-01-05T00:00"]);
    minutely(&console, "ny", "America/New_York").await;
    let ny = "ny".parse().unwrap();
    let gap = range("2026-03-08T02:30", "2026-03-08T04:00");
    let gap = LedgerPage::load(&console.app, &ny, &gap).await.unwrap();
    let error = gap.error.unwrap();
    assert_eq!(error.field, "from");
    assert!(
        error.message.contains("does not exist in America/New_York"),
        "{}",
        error.message
    );
    // A range without its end: the error at the field, in the HTML too.
    let half = RangeQuery {
        from: Some("2026-03-08T03:30".into()),
        to: None,
    };
    let half = LedgerPage::load(&console.app, &ny, &half).await.unwrap();
    assert_eq!(
        half.error,
        Some(RangeError {
            field: "to",
            message: "is required with from".into()
        })
    );
    assert_eq!(half.inputs, ["2026-03-08T03:30", ""]);
    let page = console
        .get("/ui/jobs/ny/occurrences?from=2026-03-08T03:30")
        .await;
    console.assert_renders(&page, StatusCode::BAD_REQUEST, &half);
    assert!(element(&page.html, "l-to").contains(r#"aria-describedby="l-to-error""#));
}

#[tokio::test]
async fn the_ledger_marks_a_dst_gap_with_its_policy() {
    let console = Console::open().await;
    let job = json!({
        "jobName": "ny", "creator": "ops", "creatorName": "Ops",
        "request": [{"url": "http://127.0.0.1:9/run"}],
        "schedule": {"cron": ["30 2 * * *"], "timeZone": "America/New_York", "dst": {"gap": "skip"}},
    });
    console
        .app
        .create_job(&"ny".parse().unwrap(), &job)
        .await
        .unwrap();
    let range = RangeQuery {
        from: Some("2026-03-07T00:00".into()),
        to: Some("2026-03-10T00:00".into()),
    };
    let model = LedgerPage::load(&console.app, &"ny".parse().unwrap(), &range)
        .await
        .unwrap();
    let gaps: Vec<_> = (model.shown.as_ref().unwrap().ledger.entries.iter())
        .filter_map(|(time, fate)| match fate {
            Fate::DstGap(gap) => Some((*time, gap.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    let (time, gap) = &gaps[0];
    assert_eq!(*time, at("2026-03-08T07:00:00Z"));
    assert_eq!(
        (
            gap.wall_time.to_string(),
            gap.count,
            gap.policy,
            gap.moved_to
        ),
        ("2026-03-08 02:30:00".to_string(), 1, "skip", None),
        "not run"
    );
    let page = console
        .get("/ui/jobs/ny/occurrences?from=2026-03-07T00:00&to=2026-03-10T00:00")
        .await;
    console.assert_renders(&page, StatusCode::OK, &model);
}

impl Console {
    /// Posts a form of `fields` (names may repeat) to `path`.
    async fn post_fields(&self, path: &str, fields: &[(impl AsRef<str>, impl AsRef<str>)]) -> Page {
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}={}", k.as_ref(), urlencode(v.as_ref())))
            .collect();
        self.send(
            Request::post(path)
                .header(header::COOKIE, &self.cookie)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(body.join("&")))
                .unwrap(),
        )
        .await
    }

    /// Creates jobs triggered only, each with the label `team`.
    async fn labelled(&self, jobs: &[(&str, &str)]) {
        for (id, team) in jobs {
            let body = json!({"jobName": id, "creator": "ops", "creatorName": "Ops",
                "request": [{"url": "http://127.0.0.1:9/"}], "timer": {"period": "external"},
                "labels": {"team": team}});
            self.app
                .create_job(&id.parse().unwrap(), &body)
                .await
                .unwrap();
        }
    }

    async fn active(&self, id: &str) -> bool {
        self.app
            .get_job(&id.parse().unwrap())
            .await
            .unwrap()
            .status()
            == sundial_core::job::JobStatus::Active
    }

    /// The newest entry of a job's audit trail: action, actor, reason.
    async fn last_change(&self, id: &str) -> (Value, Value, Value) {
        let history = self
            .app
            .history(
                &id.parse().unwrap(),
                &sundial_ports::store::PageRequest::first(10),
            )
            .await
            .unwrap()
            .items;
        let last = &history[0];
        (
            last["action"].clone(),
            last["actor"].clone(),
            last["reason"].clone(),
        )
    }
}

/// Two jobs of the payments team, one of search.
const TEAMS: [(&str, &str); 3] = [
    ("pay-1", "payments"),
    ("pay-2", "payments"),
    ("search-1", "search"),
];

/// The `data-job` ids of a page's rows (the list's, or a bulk page's outcomes).
fn job_rows(html: &str) -> Vec<String> {
    html.split(r#"data-job=""#)
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_list_filters_by_label_and_id_prefix_and_shows_each_jobs_success_over_a_day() {
    let console = Console::open().await;
    console.labelled(&TEAMS).await;
    let labels = |labels: &[&str]| JobFilter {
        labels: (labels.iter())
            .map(|l| LabelSelector::parse("label", l).unwrap())
            .collect(),
        ..JobFilter::default()
    };
    let payments = console
        .jobs(labels(&["team:payments"]), JobOrder::Id, None)
        .await;
    assert_eq!(ids(&payments), ["pay-1", "pay-2"]);
    assert_eq!(payments.next_cursor, None);
    let page = console.get("/?label=team:payments").await;
    console.assert_renders(&page, StatusCode::OK, &payments);
    // The form shows the label; the sort links and the bulk form keep it.
    assert!(element(&page.html, "f-label").contains(r#"value="team:payments""#));
    assert!(
        page.html
            .contains(r#"href="/?label=team%3Apayments&amp;sort=nextFire""#),
        "{}",
        page.html
    );
    assert!(page
        .html
        .contains(r#"<input type="hidden" name="label" value="team:payments">"#));
    // Each row's box, labelled, belongs to the bulk form.
    assert!(page.html.contains(
        r#"<input type="checkbox" name="jobIds" value="pay-1" form="bulk" aria-label="Select pay-1">"#
    ));

    let search = JobFilter {
        id_prefix: Some("search".into()),
        ..JobFilter::default()
    };
    let search = console.jobs(search, JobOrder::Id, None).await;
    assert_eq!(ids(&search), ["search-1"]);
    let page = console.get("/?idPrefix=search").await;
    console.assert_renders(&page, StatusCode::OK, &search);
    let both = labels(&["team:search", "team:payments"]);
    let both = console.jobs(both, JobOrder::Id, None).await;
    assert!(both.rows.is_empty());
    let page = console.get("/?label=team:search&label=team:payments").await;
    console.assert_renders(&page, StatusCode::OK, &both);
    let page = console.get("/?label=payments").await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(
        page.html.contains("label: expected key:value"),
        "{}",
        page.html
    );

    // Runs of the last 24 hours only: 3 succeeded and 1 terminated in the hour before now
    // (10:00), 5 terminated two days ago; pay-2 never ran. Each row has its newest run and its
    // day's success, read together.
    let mut runs = ended("Succeeded", 3, 5, 100, 20);
    runs.merge(&ended("Terminated", 1, 7, 100, 20));
    add_rollup(&console.app, "pay-1", "2026-01-05T09:00:00Z", &runs).await;
    let old = ended("Terminated", 5, 5, 100, 20);
    add_rollup(&console.app, "pay-1", "2026-01-03T09:00:00Z", &old).await;
    let triggered = console
        .app
        .trigger(
            &"pay-2".parse().unwrap(),
            json!({}),
            None,
            Default::default(),
        )
        .await
        .unwrap();
    let list = console
        .jobs(labels(&["team:payments"]), JobOrder::Id, None)
        .await;
    let rows: Vec<(&str, Option<&str>, DaySuccess)> = (list.rows.iter())
        .map(|row| {
            (
                row.job.definition.job_id().as_str(),
                row.last.as_ref().map(|e| e.execution_id.as_str()),
                row.success,
            )
        })
        .collect();
    let success = |succeeded, ended| DaySuccess { succeeded, ended };
    assert_eq!(
        rows,
        [
            ("pay-1", None, success(3, 4)),
            (
                "pay-2",
                Some(triggered.execution_id.as_str()),
                success(0, 0)
            )
        ]
    );
    let rates: Vec<Option<f64>> = list.rows.iter().map(|row| row.success.rate()).collect();
    assert_eq!(rates, [Some(0.75), None]);
    assert_eq!(list.next_cursor, None);
    let page = console.get("/?label=team:payments").await;
    console.assert_renders(&page, StatusCode::OK, &list);
}

#[tokio::test]
async fn a_bulk_pause_by_label_counts_first_then_pauses_exactly_those_with_the_reason() {
    let console = Console::open().await;
    console.labelled(&TEAMS).await;
    let form = |confirm: bool| {
        let mut fields = vec![
            ("csrf", console.csrf.as_str()),
            ("scope", "filter"),
            ("label", "team:payments"),
            ("action", "pause"),
            ("reason", "payments freeze for the migration"),
        ];
        if confirm {
            fields.push(("confirm", "1"));
        }
        fields
    };

    // The dry run: how many and which, nothing changed.
    assert!(console
        .get("/?label=team%3Apayments")
        .await
        .html
        .contains(r#"action="/ui/bulk/jobs/preview""#));
    let page = console
        .post_fields("/ui/bulk/jobs/preview", &form(false))
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    assert!(
        page.html.contains("<h1>Pause 2 jobs?</h1>"),
        "{}",
        page.html
    );
    assert!(page.html.contains(r#"data-matched="2""#));
    assert!(page.html.contains("match the filter label team:payments."));
    assert_eq!(job_rows(&page.html), ["pay-1", "pay-2"]);
    // Confirm names the jobs listed, not the filter: a job labelled after the dry run is left.
    let confirm = hidden_fields(&page.html, "Pause 2 jobs");
    let named: Vec<&str> = confirm
        .iter()
        .filter(|(k, _)| k == "jobIds")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(named, ["pay-1", "pay-2"]);
    for id in ["pay-1", "pay-2", "search-1"] {
        assert!(console.active(id).await, "{id} changed by a dry run");
    }
    console.labelled(&[("pay-3", "payments")]).await;

    // Confirmed: exactly those, each with the reason in its audit trail.
    let page = console.post_fields("/ui/bulk/jobs", &confirm).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    assert!(
        page.html.contains("<h1>Pause: 2 done, 0 failed</h1>"),
        "{}",
        page.html
    );
    assert_eq!(job_rows(&page.html), ["pay-1", "pay-2"]);
    assert_eq!(page.html.matches(r#"data-outcome="done""#).count(), 2);
    for id in ["pay-1", "pay-2"] {
        assert!(!console.active(id).await, "{id} not paused");
        assert_eq!(
            console.last_change(id).await,
            (
                json!("bulk:pause"),
                json!("anonymous"),
                json!("payments freeze for the migration")
            )
        );
    }
    assert!(console.active("search-1").await);
    assert_eq!(console.last_change("search-1").await.0, json!("create"));
    assert!(console.active("pay-3").await, "labelled after the dry run");

    // By filter, a label key given twice is refused: a bulk body holds one value per key.
    let mut twice = form(false);
    twice.push(("label", "team:search"));
    let page = console.post_fields("/ui/bulk/jobs", &twice).await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.html);
    assert!(page.html.contains("is given twice"), "{}", page.html);
}

#[tokio::test]
async fn bulk_outcomes_show_each_jobs_run_or_error() {
    let console = Console::open().await;
    console
        .labelled(&[("pay-1", "payments"), ("pay-2", "payments")])
        .await;
    let fields = |confirm: &'static str| {
        vec![
            ("csrf", console.csrf.as_str()),
            ("scope", "selected"),
            ("jobIds", "pay-1"),
            ("jobIds", "ghost"),
            ("action", "trigger"),
            ("reason", "rerun after the outage"),
            ("confirm", confirm),
        ]
    };
    // The dry run checks explicit ids: one matches, the missing one would fail.
    let page = console.post_fields("/ui/bulk/jobs", &fields("")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    assert!(
        page.html.contains("<h1>Trigger 1 job?</h1>"),
        "{}",
        page.html
    );
    assert!(page
        .html
        .contains(r#"data-job="ghost" data-outcome="failed""#));
    assert!(page.html.contains("not found"), "{}", page.html);

    let page = console.post_fields("/ui/bulk/jobs", &fields("1")).await;
    assert!(
        page.html.contains("<h1>Trigger: 1 done, 1 failed</h1>"),
        "{}",
        page.html
    );
    let runs = console
        .app
        .list_executions(
            &"pay-1".parse().unwrap(),
            &sundial_ports::store::PageRequest::first(5),
        )
        .await
        .unwrap()
        .items;
    assert_eq!(runs.len(), 1);
    let link = format!(r#"href="/ui/executions/{}""#, runs[0].execution_id);
    assert!(page.html.contains(&link), "{link} in {}", page.html);
    assert!(page
        .html
        .contains(r#"data-job="ghost" data-outcome="failed""#));
    assert_eq!(
        console.last_change("pay-1").await,
        (
            json!("bulk:trigger"),
            json!("anonymous"),
            json!("rerun after the outage")
        )
    );
    assert!(console
        .app
        .list_executions(
            &"pay-2".parse().unwrap(),
            &sundial_ports::store::PageRequest::first(5)
        )
        .await
        .unwrap()
        .items
        .is_empty());
}

#[tokio::test]
async fn a_bulk_form_without_its_csrf_token_or_a_reason_changes_nothing() {
    let console = Console::open().await;
    console.labelled(&[("pay-1", "payments")]).await;
    let mut fields = vec![
        ("scope", "filter"),
        ("label", "team:payments"),
        ("action", "delete"),
        ("confirm", "1"),
        ("reason", "cleanup"),
    ];
    let page = console.post_fields("/ui/bulk/jobs", &fields).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    assert!(page.html.contains("CSRF"), "{}", page.html);
    fields.push(("csrf", console.csrf.as_str()));
    fields.retain(|(k, _)| *k != "reason");
    let page = console.post_fields("/ui/bulk/jobs", &fields).await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(page.html.contains("reason: is required"), "{}", page.html);
    // A filter that selects nothing is not "every job".
    let page = console
        .post_fields(
            "/ui/bulk/jobs",
            &[
                ("csrf", console.csrf.as_str()),
                ("scope", "filter"),
                ("action", "delete"),
                ("reason", "cleanup"),
                ("confirm", "1"),
            ],
        )
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.html);
    assert!(console.active("pay-1").await);
}

/// The hidden fields of the page's form whose submit button says `button`, unescaped, as a
/// browser posts them.
fn hidden_fields(html: &str, button: &str) -> Vec<(String, String)> {
    let end = html
        .find(&format!(">{button}</button>"))
        .unwrap_or_else(|| panic!("no button {button:?} in\n{html}"));
    let start = html[..end].rfind("<form").unwrap();
    html[start..end]
        .split("<input type=\"hidden\" name=\"")
        .skip(1)
        .map(|rest| {
            let (name, rest) = rest.split_once("\" value=\"").unwrap();
            let value = rest.split('"').next().unwrap();
            let value = value
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&");
            (name.to_owned(), value)
        })
        .collect()
}

#[tokio::test]
async fn a_bulk_action_over_more_than_a_thousand_jobs_goes_on_with_the_next() {
    let console = Console::open().await;
    let jobs: Vec<(String, &str)> = (0..1_001).map(|n| (format!("j{n:04}"), "many")).collect();
    let jobs: Vec<(&str, &str)> = jobs.iter().map(|(id, t)| (id.as_str(), *t)).collect();
    console.labelled(&jobs).await;
    let form = [
        ("csrf", console.csrf.as_str()),
        ("scope", "filter"),
        ("label", "team:many"),
        ("action", "pause"),
        ("reason", "winter freeze"),
    ];
    let post = |fields| console.post_fields("/ui/bulk/jobs", fields);

    let page = post(&form).await;
    assert!(
        page.html.contains("<h1>Pause 1000 jobs?</h1>"),
        "{}",
        page.html
    );
    assert!(page.html.contains("More than 1,000 match"), "{}", page.html);
    let page = console
        .post_fields(
            "/ui/bulk/jobs",
            &hidden_fields(&page.html, "Pause 1000 jobs"),
        )
        .await;
    assert!(page.html.contains("<h1>Pause: 1000 done, 0 failed</h1>"));
    assert!(!console.active("j0999").await);
    assert!(console.active("j1000").await);

    // Going on: the next jobs' dry run, then the action on them.
    let page = console
        .post_fields(
            "/ui/bulk/jobs",
            &hidden_fields(&page.html, "Continue with the next jobs"),
        )
        .await;
    assert!(page.html.contains("<h1>Pause 1 job?</h1>"), "{}", page.html);
    assert_eq!(job_rows(&page.html), ["j1000"]);
    let page = console
        .post_fields("/ui/bulk/jobs", &hidden_fields(&page.html, "Pause 1 job"))
        .await;
    assert!(page.html.contains("<h1>Pause: 1 done, 0 failed</h1>"));
    assert!(!page.html.contains("Continue with the next jobs"));
    assert!(!console.active("j1000").await);
}

#[tokio::test]
async fn a_bulk_delete_of_the_rows_selected_confirms_first_and_links_no_deleted_job() {
    let console = Console::open().await;
    console.labelled(&TEAMS).await;
    let mut fields = vec![
        ("csrf", console.csrf.as_str()),
        ("scope", "selected"),
        ("jobIds", "pay-2"),
        ("jobIds", "search-1"),
        ("action", "delete"),
        ("reason", "decommissioned"),
    ];
    let page = console.post_fields("/ui/bulk/jobs", &fields).await;
    assert!(
        page.html.contains("<h1>Delete 2 jobs?</h1>"),
        "{}",
        page.html
    );
    assert!(page
        .html
        .contains(r#"<form class="card confirm danger" method="post""#));
    assert!(console.active("pay-2").await && console.active("search-1").await);
    fields.push(("confirm", "1"));
    let page = console.post_fields("/ui/bulk/jobs", &fields).await;
    assert!(
        page.html.contains("<h1>Delete: 2 done, 0 failed</h1>"),
        "{}",
        page.html
    );
    assert!(
        !page.html.contains(r#"href="/ui/jobs/pay-2""#),
        "{}",
        page.html
    );
    for id in ["pay-2", "search-1"] {
        assert!(console.app.get_job(&id.parse().unwrap()).await.is_err());
        assert_eq!(
            console.last_change(id).await,
            (
                json!("bulk:delete"),
                json!("anonymous"),
                json!("decommissioned")
            )
        );
    }
    assert!(console.active("pay-1").await);
}

/// A weekly job at noon in London with a secret header, and a child of it.
async fn weekly_with_a_child(console: &Console) -> JobId {
    let weekly = json!({
        "jobName": "Weekly", "creator": "ops", "creatorName": "Ops", "overlap": "BufferOne",
        "request": [{"method": "POST", "url": "http://127.0.0.1:9/run",
                     "headers": {"Authorization": "Bearer s3cret", "X-Team": "data"}}],
        "schedule": {"cron": ["0 12 * * MON"], "timeZone": "Europe/London"},
    });
    let child = json!({
        "jobName": "Child", "creator": "ops", "creatorName": "Ops", "parentJob": "weekly",
        "request": [{"url": "http://127.0.0.1:9/child"}],
    });
    let id: JobId = "weekly".parse().unwrap();
    console.app.create_job(&id, &weekly).await.unwrap();
    let child_id = "weekly-child".parse().unwrap();
    console.app.create_job(&child_id, &child).await.unwrap();
    id
}

#[tokio::test]
async fn a_jobs_page_holds_its_definition_with_secrets_hidden_its_fires_and_children() {
    let console = Console::open().await;
    let id = weekly_with_a_child(&console).await;

    let page = JobPage::load(&console.app, &id, StatsWindow::Day)
        .await
        .unwrap();
    let definition = &page.definition;
    assert_eq!(definition.name, "Weekly");
    assert_eq!(definition.creator.as_deref(), Some("ops"));
    assert_eq!(definition.creator_name.as_deref(), Some("Ops"));
    assert_eq!(definition.description, None);
    assert_eq!(definition.parent_job, None);
    assert_eq!(definition.overlap, OverlapPolicy::BufferOne);
    let header = |name: &str, value: &str| (name.to_string(), value.to_string());
    assert_eq!(
        definition.requests,
        [ShownRequest {
            method: HttpMethod::Post,
            url: "http://127.0.0.1:9/run".into(),
            headers: vec![header("Authorization", "***"), header("X-Team", "data")],
        }]
    );
    assert_eq!(
        definition.as_json["request"][0]["headers"]["Authorization"],
        "***"
    );
    assert_eq!(page.zone, chrono_tz::Europe::London);
    // Twenty Mondays at noon from today (Monday 5 January), GMT until the clocks go forward on
    // 29 March: the fire after it is at 11:00 UTC and says so.
    assert_eq!(page.fires.len(), 20);
    assert_eq!(page.fires[0].at, at("2026-01-05T12:00:00Z"));
    let changes: Vec<_> = (page.fires.iter())
        .filter_map(|f| Some((f.at, f.clock_change.clone()?)))
        .collect();
    assert_eq!(
        changes,
        [(
            at("2026-03-30T11:00:00Z"),
            "clocks change before this: UTC+00:00 → UTC+01:00".to_string()
        )]
    );
    assert_eq!(page.children, ["weekly-child".parse::<JobId>().unwrap()]);
    assert!(page.executions.is_empty());
    assert_eq!(page.job.state.action_count, 0);

    // The child's page names its parent and has no children.
    let child = "weekly-child".parse().unwrap();
    let page = JobPage::load(&console.app, &child, StatsWindow::Day)
        .await
        .unwrap();
    assert_eq!(page.definition.parent_job, Some(id));
    assert!(page.children.is_empty());
}

fn at(text: &str) -> chrono::DateTime<chrono::Utc> {
    text.parse().unwrap()
}

#[tokio::test]
async fn a_jobs_page_lists_its_executions_newest_first_and_a_missing_job_is_not_found() {
    let console = Console::open().await;
    let id = minutely_that_ran(&console, &[51, 53]).await;

    let page = JobPage::load(&console.app, &id, StatsWindow::Day)
        .await
        .unwrap();
    let numbers: Vec<u64> = page.executions.iter().map(|e| e.execute_number).collect();
    assert_eq!(numbers, [2, 1]);
    assert_eq!(
        page.executions[0].scheduled_time,
        at("2026-01-05T09:53:00Z")
    );
    assert_eq!(page.changes.len(), 1, "the creation");

    console.assert_renders(
        &console.get("/ui/jobs/minutely").await,
        StatusCode::OK,
        &page,
    );

    let missing = "nobody".parse().unwrap();
    let error = JobPage::load(&console.app, &missing, StatsWindow::Day).await;
    assert!(matches!(error, Err(AppError::NotFound(_))));
    let page = console.get("/ui/jobs/nobody").await;
    assert_eq!(page.status, StatusCode::NOT_FOUND, "{}", page.html);
}

#[tokio::test]
async fn a_jobs_page_has_its_sections_in_order_and_the_forms_of_its_state() {
    let console = Console::open().await;
    weekly_with_a_child(&console).await;

    let model = JobPage::load(&console.app, &"weekly".parse().unwrap(), StatsWindow::Day)
        .await
        .unwrap();
    assert!(model.job.definition.active());
    let page = console.get("/ui/jobs/weekly").await;
    console.assert_renders(&page, StatusCode::OK, &model);
    let sections: Vec<&str> = (page.html.split("<section").skip(1))
        .filter_map(|s| s.split("aria-labelledby=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(
        sections,
        ["def", "counters", "stats", "next", "runs", "children", "why", "changes", "act"]
    );
    assert_eq!(page.html.matches("<ol class=\"fires\">").count(), 1);
    assert!(!page.html.contains("s3cret"));
    assert!(element(&page.html, "pause-notes").contains("why it is paused"));
    assert!(!page.html.contains("unpause-notes"));
}

/// Writes run 1 of job `id`, due at `at`, up to `Processing` (attempt 1), as the engine does.
async fn processing(console: &Console, id: &JobId, at: chrono::DateTime<chrono::Utc>) -> String {
    use sundial_core::execution::{execution_id_for_fire, Execution, ExecutionState};
    let mut run = Execution::new(
        execution_id_for_fire(id, 0, at),
        id.clone(),
        1,
        ExecutionState::Scheduled,
        at,
        id.to_string(),
        at,
    )
    .unwrap();
    run.transition(ExecutionState::Enqueued, at, "due").unwrap();
    run.transition(ExecutionState::Processing, at, "attempt 1")
        .unwrap();
    let record = sundial_service::records::encode_execution(&run, 1).unwrap();
    let write = Write::CreateExecution(&record);
    console.app.store().write_all(&[write]).await.unwrap();
    run.execution_id
}

#[tokio::test]
async fn an_execution_page_holds_the_run_its_zone_and_its_jobs_requests_with_secrets_hidden() {
    let console = Console::open().await;
    let id = weekly_with_a_child(&console).await;
    let run = processing(&console, &id, at("2026-01-05T09:00:00Z")).await;

    let page = ExecutionPage::load(&console.app, &ExecutionId::parse(&run).unwrap())
        .await
        .unwrap();
    assert_eq!(page.execution.execute_number, 1);
    assert!(!page.execution.is_finished());
    assert_eq!(page.execution.events().len(), 3);
    assert_eq!(page.zone, chrono_tz::Europe::London);
    assert_eq!(page.requests.len(), 1);
    assert_eq!(page.requests[0].headers[0].1, "***");

    // Deleted since, the job leaves the run's page in UTC and without requests.
    console.app.delete_job(&id).await.unwrap();
    let page = ExecutionPage::load(&console.app, &ExecutionId::parse(&run).unwrap())
        .await
        .unwrap();
    assert_eq!(page.zone, chrono_tz::UTC);
    assert!(page.requests.is_empty());

    let missing =
        ExecutionPage::load(&console.app, &ExecutionId::parse("nothing~t~x").unwrap()).await;
    assert!(matches!(
        missing,
        Err(sundial_service::AppError::NotFound(_))
    ));
}

#[tokio::test]
async fn an_execution_page_refreshes_and_offers_cancel_only_while_the_run_is_not_finished() {
    let console = Console::open().await;
    let id = weekly_with_a_child(&console).await;
    let run = processing(&console, &id, at("2026-01-05T09:00:00Z")).await;

    // Not finished: its one attempt so far, the job's request (the secret hidden), and the
    // actions a run not finished offers.
    let model = ExecutionPage::load(&console.app, &ExecutionId::parse(&run).unwrap())
        .await
        .unwrap();
    assert!(!model.execution.is_finished());
    assert_eq!(model.execution.state().name(), "Processing");
    assert_eq!(model.execution.attempts(), 1);
    let header = |name: &str, value: &str| (name.to_string(), value.to_string());
    assert_eq!(
        model.requests,
        [ShownRequest {
            method: HttpMethod::Post,
            url: "http://127.0.0.1:9/run".into(),
            headers: vec![header("Authorization", "***"), header("X-Team", "data")],
        }]
    );
    let page = console.get(&format!("/ui/executions/{run}")).await;
    console.assert_renders(&page, StatusCode::OK, &model);
    assert!(page
        .html
        .contains(r#"<meta http-equiv="refresh" content="2">"#));
    assert!(page.html.contains(&format!("Idempotency-Key: {run}:1:0")));
    assert!(!page.html.contains("s3cret"));
    assert!(element(&page.html, "cancel-reason").contains("cancelled by a user"));

    // Finished: nothing to refresh, no actions.
    let done = minutely_that_ran(&console, &[51]).await;
    let runs = console
        .app
        .list_executions(&done, &sundial_ports::store::PageRequest::first(1))
        .await
        .unwrap()
        .items;
    let model = ExecutionPage::load(&console.app, &runs[0].id())
        .await
        .unwrap();
    assert!(model.execution.is_finished());
    assert_eq!(model.execution.state().name(), "Succeeded");
    let page = console
        .get(&format!("/ui/executions/{}", runs[0].execution_id))
        .await;
    console.assert_renders(&page, StatusCode::OK, &model);
    assert!(!page.html.contains("http-equiv"));
    assert!(!page.html.contains(r#"id="act""#));
}

#[tokio::test]
async fn a_ledger_page_holds_the_fates_of_a_pause_and_a_deleted_job_keeps_its_ledger_in_utc() {
    let console = Console::open().await;
    minutely(&console, "billing", "Europe/London").await;
    let id: JobId = "billing".parse().unwrap();
    console.clock.set(at("2026-01-05T10:02:30Z"));
    let notes = Some("deploy freeze".to_string());
    console.app.set_active(&id, false, notes).await.unwrap();
    console.clock.set(at("2026-01-05T10:04:10Z"));

    let range = RangeQuery {
        from: Some("2026-01-05T10:02".into()),
        to: Some("2026-01-05T10:04".into()),
    };
    let page = LedgerPage::load(&console.app, &id, &range).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.zone, chrono_tz::Europe::London);
    let shown = page.shown.unwrap();
    let fates: Vec<_> = (shown.ledger.entries.iter())
        .map(|(t, fate)| (*t, fate.status()))
        .collect();
    assert_eq!(
        fates,
        [
            (at("2026-01-05T10:02:00Z"), "noRecord"),
            (at("2026-01-05T10:03:00Z"), "paused")
        ]
    );
    assert_eq!(page.inputs, ["2026-01-05T10:02:00", "2026-01-05T10:04:00"]);

    console.app.delete_job(&id).await.unwrap();
    let page = LedgerPage::load(&console.app, &id, &range).await.unwrap();
    assert!(page.job.is_none());
    assert_eq!(page.zone, chrono_tz::UTC);
    assert!(page.shown.is_some());
}

/// The Executions page lists runs of every job with the API's filters, pages with a next link
/// that keeps them, and a job's page pages its runs and filters them by state.
#[tokio::test]
async fn executions_are_searched_and_paged_across_jobs_and_on_a_jobs_page() {
    use sundial_console::executions_page::{ExecutionsPage, PER_PAGE};
    use sundial_console::job_page::RECENT;
    let console = Console::open().await;
    let job = |creator: &str, team: &str| {
        json!({"jobName": "j", "creator": creator, "creatorName": "Ops",
            "request": [{"url": "http://127.0.0.1:9/"}], "timer": {"period": "external"},
            "labels": {"team": team}})
    };
    let (busy, quiet): (JobId, JobId) = ("busy".parse().unwrap(), "quiet".parse().unwrap());
    console
        .app
        .create_job(&busy, &job("ana", "pay"))
        .await
        .unwrap();
    console
        .app
        .create_job(&quiet, &job("bo", "ops"))
        .await
        .unwrap();
    for n in 0..(PER_PAGE + 5) {
        let id = if n == 3 { &quiet } else { &busy };
        console
            .app
            .trigger(id, json!({}), None, Default::default())
            .await
            .unwrap();
        console.clock.advance(chrono::Duration::seconds(1));
    }
    let search = |query: &'static str| {
        let app = Arc::clone(&console.app);
        async move {
            ExecutionsPage::load(&app, &query_pairs(&format!("?{query}")))
                .await
                .unwrap()
        }
    };
    let numbers = |runs: &[sundial_core::execution::Execution]| -> Vec<u64> {
        runs.iter().map(|e| e.execute_number).collect()
    };

    // Everything: a full page, newest first, then the rest through the next link.
    let all = search("").await;
    assert_eq!(all.executions.len(), PER_PAGE);
    assert_eq!(
        (all.executions.first().map(|e| e.job_id.as_str())),
        Some("busy")
    );
    assert!((all.executions.windows(2)).all(|w| w[0].scheduled_time > w[1].scheduled_time));
    let next = all.next.clone().expect("a next page");
    let rest = ExecutionsPage::load(&console.app, &query_pairs(&next))
        .await
        .unwrap();
    assert_eq!(rest.executions.len(), 5);
    assert!(rest.next.is_none());
    let page = console.get("/ui/executions").await;
    console.assert_renders(&page, StatusCode::OK, &all);
    assert!(page.html.contains(r#"href="/ui/executions""#), "in the nav");
    let link = next_link(&page.html).expect("a next page");
    console.assert_renders(&console.get(&link).await, StatusCode::OK, &rest);

    // Filters: by label, creator, job, state and time; the next link keeps them.
    let one = search("label=team:ops").await;
    assert_eq!(numbers(&one.executions), [1]);
    assert_eq!(one.executions[0].job_id, quiet);
    assert_eq!(
        one.filters.labels,
        ["team:ops"],
        "the form keeps the filter"
    );
    let page = console.get("/ui/executions?label=team:ops").await;
    console.assert_renders(&page, StatusCode::OK, &one);
    assert_eq!(search("creator=bo").await.executions.len(), 1);
    let busy_runs = search("jobId=busy&state=Enqueued&state=Failed&source=trigger").await;
    assert_eq!(busy_runs.executions.len(), PER_PAGE);
    assert_eq!(busy_runs.states, ["Enqueued", "Failed"]);
    let next = busy_runs.next.clone().unwrap();
    let kept = query_pairs(&next);
    let states: Vec<&str> = (kept.iter())
        .filter(|(k, _)| k == "state")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(
        (pair(&kept, "jobId"), states, pair(&kept, "source")),
        (Some("busy"), vec!["Enqueued", "Failed"], Some("trigger")),
        "{next}"
    );
    let busy_rest = ExecutionsPage::load(&console.app, &kept).await.unwrap();
    assert_eq!(busy_rest.executions.len(), 4);
    assert!(busy_rest.executions.iter().all(|e| e.job_id == busy));
    let page = console
        .get("/ui/executions?jobId=busy&state=Enqueued&state=Failed&source=trigger")
        .await;
    console.assert_renders(&page, StatusCode::OK, &busy_runs);
    assert!(search("state=Failed").await.executions.is_empty());
    assert_eq!(search("since=10s").await.executions.len(), 10);
    let bad = ExecutionsPage::load(&console.app, &query_pairs("?since=yesterday")).await;
    assert!(
        matches!(&bad, Err(AppError::Invalid(e)) if e.path == "since"),
        "{bad:?}"
    );
    let bad = console.get("/ui/executions?since=yesterday").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);

    // A job's page: its latest runs and a next page; a state filter.
    let page = JobPage::load(&console.app, &busy, StatsWindow::Day)
        .await
        .unwrap();
    assert_eq!(page.executions.len(), RECENT);
    assert_eq!(page.executions[0].execute_number, 54);
    let next = page.runs_next.clone().expect("older runs");
    assert!(next.starts_with("/ui/jobs/busy?runCursor="), "{next}");
    let older = RunsQuery {
        state: None,
        cursor: pair(&query_pairs(&next), "runCursor").map(str::to_owned),
    };
    let older = JobPage::load_runs(&console.app, &busy, StatsWindow::Day, older)
        .await
        .unwrap();
    assert_eq!(older.executions[0].execute_number, 34, "the second page");
    let html = console.get("/ui/jobs/busy").await;
    console.assert_renders(&html, StatusCode::OK, &page);
    let link = next_link(&html.html).expect("older runs");
    console.assert_renders(&console.get(&link).await, StatusCode::OK, &older);
    let failed = RunsQuery {
        state: Some("Failed".into()),
        cursor: None,
    };
    let page = JobPage::load_runs(&console.app, &busy, StatsWindow::Day, failed)
        .await
        .unwrap();
    assert!(page.executions.is_empty() && page.runs_next.is_none());
    let html = console.get("/ui/jobs/busy?runState=Failed").await;
    console.assert_renders(&html, StatusCode::OK, &page);
    let enqueued = RunsQuery {
        state: Some("Enqueued".into()),
        cursor: None,
    };
    let page = JobPage::load_runs(&console.app, &busy, StatsWindow::Day, enqueued)
        .await
        .unwrap();
    assert_eq!(page.executions.len(), RECENT);
    let next = page.runs_next.clone().expect("older enqueued runs");
    assert_eq!(
        pair(&query_pairs(&next), "runState"),
        Some("Enqueued"),
        "{next}"
    );
    let html = console.get("/ui/jobs/busy?runState=Enqueued").await;
    console.assert_renders(&html, StatusCode::OK, &page);
}

/// The trigger form takes the API's overrides: a delay (the run waits Scheduled), a scheduled
/// time, an overlap policy and an idempotency key (the same key again is the same run); a bad
/// override is a 400 naming it, and without the CSRF token nothing runs.
#[tokio::test]
async fn the_trigger_form_takes_delay_scheduled_time_overlap_and_an_idempotency_key() {
    let console = Console::open().await;
    let job = json!({"jobName": "j", "creator": "ops", "creatorName": "Ops",
        "request": [{"url": "http://127.0.0.1:9/"}], "timer": {"period": "external"}});
    let id: JobId = "on-demand".parse().unwrap();
    console.app.create_job(&id, &job).await.unwrap();
    let html = console.get("/ui/jobs/on-demand").await.html;
    for field in [
        r#"name="delay""#,
        r#"name="scheduledTime""#,
        r#"name="overlap""#,
        r#"name="idempotencyKey""#,
    ] {
        assert!(html.contains(field), "the form has {field}");
    }
    let fields = [
        ("csrf", console.csrf.as_str()),
        ("arguments", r#"{"region": "emea"}"#),
        ("delay", "10m"),
        ("scheduledTime", "2026-01-05T06:00:00Z"),
        ("overlap", "BufferAll"),
        ("idempotencyKey", "redo-2026-01-05"),
    ];
    let page = console
        .post_form("/ui/jobs/on-demand/trigger", &fields)
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.html);
    let location = page.location.unwrap();
    assert_eq!(location, "/ui/executions/on-demand~t~redo-2026-01-05");
    let run = console
        .app
        .get_execution(&ExecutionId::parse("on-demand~t~redo-2026-01-05").unwrap())
        .await
        .unwrap();
    assert_eq!(run.state().name(), "Scheduled", "the delay holds it");
    // A person's trigger: the debug mode's `triggers` setting lets it run.
    assert_eq!(run.scheduled_by_id, "console:redo-2026-01-05");
    assert_eq!(run.scheduled_time.to_rfc3339(), "2026-01-05T06:00:00+00:00");
    assert_eq!(run.run.overlap, Some(OverlapPolicy::BufferAll));
    assert_eq!(
        run.run.due.map(|d| d.to_rfc3339()),
        Some("2026-01-05T10:10:00+00:00".to_owned())
    );
    // The same key again: the same run, no second one.
    let again = console
        .post_form("/ui/jobs/on-demand/trigger", &fields)
        .await;
    assert_eq!(again.location.as_deref(), Some(location.as_str()));
    let runs = console
        .app
        .list_executions(&id, &sundial_ports::store::PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(runs.items.len(), 1);
    // Blank overrides are the job's own: a run now.
    let plain = console
        .post_form(
            "/ui/jobs/on-demand/trigger",
            &[
                ("csrf", console.csrf.as_str()),
                ("arguments", "{}"),
                ("delay", " "),
                ("overlap", ""),
            ],
        )
        .await;
    assert_eq!(plain.status, StatusCode::SEE_OTHER, "{}", plain.html);
    for (field, bad) in [
        ("delay", "soon"),
        ("scheduledTime", "tomorrow"),
        ("overlap", "Never"),
    ] {
        let page = console
            .post_form(
                "/ui/jobs/on-demand/trigger",
                &[("csrf", console.csrf.as_str()), (field, bad)],
            )
            .await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{field}");
        assert!(
            page.html.contains(&format!("{field}:")),
            "{field}: {}",
            page.html
        );
    }
    let forged = console
        .post_form("/ui/jobs/on-demand/trigger", &[("delay", "1m")])
        .await;
    assert_ne!(forged.status, StatusCode::SEE_OTHER);
    let runs = console
        .app
        .list_executions(&id, &sundial_ports::store::PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(runs.items.len(), 2);
}

/// A parent run's page lists the runs of its job's children that name it as their parent
/// execution, and only those.
#[tokio::test]
async fn a_parent_runs_page_lists_its_childrens_runs() {
    use sundial_console::execution_page::ExecutionPage;
    let console = Console::open().await;
    let job = |parent: Option<(&str, u64)>| {
        let mut job = json!({"jobName": "j", "creator": "ops", "creatorName": "Ops",
            "request": [{"url": "http://127.0.0.1:9/"}], "timer": {"period": "external"}});
        if let Some((parent, execution)) = parent {
            job["parentJob"] = json!(parent);
            job["parentJobExecution"] = json!(execution);
        }
        job
    };
    let id = |s: &str| -> JobId { s.parse().unwrap() };
    console
        .app
        .create_job(&id("parent"), &job(None))
        .await
        .unwrap();
    let first = console
        .app
        .trigger(&id("parent"), json!({}), None, Default::default())
        .await
        .unwrap();
    let second = console
        .app
        .trigger(&id("parent"), json!({}), None, Default::default())
        .await
        .unwrap();
    console
        .app
        .create_job(&id("child-a"), &job(Some(("parent", 1))))
        .await
        .unwrap();
    console
        .app
        .create_job(&id("child-b"), &job(Some(("parent", 2))))
        .await
        .unwrap();
    let mut of_first = Vec::new();
    for _ in 0..2 {
        let run = console
            .app
            .trigger(&id("child-a"), json!({}), None, Default::default())
            .await
            .unwrap();
        of_first.push(run.execution_id);
        console.clock.advance(chrono::Duration::seconds(1));
    }
    let of_second = console
        .app
        .trigger(&id("child-b"), json!({}), None, Default::default())
        .await
        .unwrap();

    let page = ExecutionPage::load(&console.app, &first.id())
        .await
        .unwrap();
    let ids: Vec<&str> = page
        .children
        .iter()
        .map(|e| e.execution_id.as_str())
        .collect();
    of_first.reverse();
    assert_eq!(ids, of_first, "newest first, only the first run's");
    assert!(page.children.iter().all(|e| e.job_id == id("child-a")));
    assert!(!page.more_children);
    let shown = console
        .get(&format!(
            "/ui/executions/{}",
            urlencode(&first.execution_id)
        ))
        .await;
    console.assert_renders(&shown, StatusCode::OK, &page);
    assert!(
        shown.html.contains(r#"<h2 id="children-runs">"#),
        "{}",
        shown.html
    );
    let page = ExecutionPage::load(&console.app, &second.id())
        .await
        .unwrap();
    assert_eq!(page.children.len(), 1);
    assert_eq!(page.children[0].execution_id, of_second.execution_id);
    // A run whose job has no children shows no such section.
    let child = ExecutionPage::load(&console.app, &of_second.id())
        .await
        .unwrap();
    assert!(child.children.is_empty());
    let shown = console
        .get(&format!(
            "/ui/executions/{}",
            urlencode(&of_second.execution_id)
        ))
        .await;
    console.assert_renders(&shown, StatusCode::OK, &child);
    assert!(!shown.html.contains(r#"id="children-runs""#));
}

/// The create form's guided fields for retries, `retryPolicy`, the timeouts, a notification and
/// async polling become the definition's fields (merged with the JSON editor's), and each error
/// is shown at its own control.
#[tokio::test]
async fn retries_timeouts_notifications_and_async_polling_have_fields_of_their_own() {
    let console = Console::open().await;
    let fields = [
        ("jobId", "guided"),
        ("when", "triggered"),
        ("maxRetries", "3"),
        ("retryInitialInterval", "2s"),
        ("retryBackoffCoefficient", "1.5"),
        ("retryMaximumInterval", "1m"),
        ("retryMaximumAttempts", "4"),
        ("scheduleToStart", "10m"),
        ("scheduleToClose", "1h"),
        ("heartbeat", "5m"),
        ("timeoutSeconds", "30"),
        ("notifyUrl", "http://127.0.0.1:9/notify"),
        ("notifyState", "500"),
        ("async", "on"),
        ("checkUrl", "http://127.0.0.1:9/check/${executionId}"),
        ("checkRateSeconds", "5"),
        (
            "extra",
            r#"{"retryPolicy": {"nonRetryableErrors": ["404"]}}"#,
        ),
    ];
    let page = console.create(&fields).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.html);
    let job = console
        .app
        .get_job(&"guided".parse().unwrap())
        .await
        .unwrap();
    let d = job.definition.as_written().clone();
    assert_eq!(d["maxRetries"], 3);
    assert_eq!(
        d["retryPolicy"],
        json!({"initialInterval": "2s", "backoffCoefficient": 1.5, "maximumInterval": "1m",
               "maximumAttempts": 4, "nonRetryableErrors": ["404"]}),
        "{d}"
    );
    assert_eq!(
        d["timeouts"],
        json!({"scheduleToStart": "10m", "scheduleToClose": "1h", "heartbeat": "5m"}),
        "{d}"
    );
    assert_eq!(d["timeoutSeconds"], 30);
    assert_eq!(
        d["notification"][0]["url"], "http://127.0.0.1:9/notify",
        "{d}"
    );
    assert_eq!(d["notification"][0]["stateEquals"], "500");
    assert_eq!(d["async"], true);
    assert_eq!(d["checkRateSeconds"], 5);
    assert!(d["checkUrl"].to_string().contains("/check/"), "{d}");

    // Each refusal at its own control, the value kept.
    for (field, value, control, says) in [
        ("maxRetries", "many", "c-maxRetries", "maxRetries:"),
        (
            "retryBackoffCoefficient",
            "0.5",
            "c-retryBackoffCoefficient",
            "retryPolicy.backoffCoefficient:",
        ),
        (
            "retryInitialInterval",
            "soon",
            "c-retryInitialInterval",
            "retryPolicy.initialInterval:",
        ),
        (
            "scheduleToClose",
            "forever",
            "c-scheduleToClose",
            "timeouts.scheduleToClose:",
        ),
        (
            "notifyUrl",
            "ftp://x",
            "c-notifyUrl",
            "notification[0].url:",
        ),
        (
            "checkRateSeconds",
            "0",
            "c-checkRateSeconds",
            "checkRateSeconds:",
        ),
    ] {
        let page = console
            .create(&[("jobId", "refused"), ("when", "triggered"), (field, value)])
            .await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{field}");
        let error = element(&page.html, &format!("{control}-error"));
        assert!(error.contains(says), "{field}: {error}");
        assert!(
            element(&page.html, control).contains(value),
            "{field} keeps its value"
        );
    }
}
