//! The operator console end to end: a real `sundial serve` with seeded jobs and executions, read
//! and driven in real headless Chromium through chromedriver (W3C WebDriver).
//!
//! The WebDriver client is `sundial_testkit::browser` (shared with the console test of the local
//! AWS run): without Chromium and chromedriver the tests print why and pass, unless `CI=true`,
//! where they fail. Screenshots of every page go to `target/tmp/console-screenshots/`.
//!
//! Every page is also checked with axe-core (`SUNDIAL_AXE_JS`, which `.ci/run` installs): any
//! serious or critical violation fails the test. Without the file the check is skipped with a
//! message, unless `CI=true`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::{start, wait_final, Server};
use sundial_testkit::browser::axe_source;
use sundial_testkit::{Target, TempDir};

/// The browser, its screenshots in `target/tmp/console-screenshots/`.
fn browser() -> Option<sundial_testkit::browser::Browser> {
    sundial_testkit::browser::browser(
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots"),
    )
}

fn create(server: &Server, headers: &[(&str, &str)], id: &str, mut job: Value) {
    for (key, value) in [("creator", "ops"), ("creatorName", "Operations")] {
        if job.get(key).is_none() {
            job[key] = json!(value);
        }
    }
    let body = serde_json::to_vec(&job).unwrap();
    let reply = server.send("POST", &format!("/jobs/{id}"), headers, Some(&body));
    assert_eq!(reply.status, 200, "create {id}: {:?}", reply.body);
}

/// Triggers `job` with the idempotency key `key` and waits for the run to end: the run.
fn run_to_end(server: &Server, job: &str, key: &str) -> Value {
    let reply = server.send(
        "POST",
        &format!("/jobs/{job}/trigger"),
        &[("Idempotency-Key", key)],
        Some(b"{}"),
    );
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let id = reply.body["executionId"].as_str().unwrap().to_string();
    wait_final(server, &id)
}

/// `2026-01-05T12:00:00+00:00` as the pages print it: `2026-01-05 12:00:00`.
fn as_shown(rfc3339: &str) -> String {
    rfc3339.get(..19).unwrap_or_default().replace('T', " ")
}

#[test]
fn console_shows_seeded_jobs_and_drives_them() {
    let Some(browser) = browser() else { return };
    let dir = TempDir::new("console-open");
    let target = Target::start();
    let server = start(&dir, &[], &[]);
    let base = format!("http://{}", server.addr);

    // Seed: a weekday report in London with a secret header, a paused job of another creator,
    // and a triggered-only hook that calls the local target.
    create(
        &server,
        &[],
        "report",
        json!({
            "jobName": "Noon report", "creator": "alice",
            "request": [{"method": "POST", "url": format!("{}/report", target.url()),
                         "headers": {"Authorization": "Bearer very-secret-value", "X-Trace": "visible"}}],
            "schedule": {"cron": ["0 12 * * MON-FRI"], "timeZone": "Europe/London"}
        }),
    );
    create(
        &server,
        &[],
        "sweep",
        json!({
            "jobName": "Sweep", "creator": "bob",
            "request": [{"method": "GET", "url": format!("{}/sweep", target.url())}],
            "schedule": {"intervals": ["6h/5h"]}
        }),
    );
    create(
        &server,
        &[],
        "hook",
        json!({
            "jobName": "Hook", "creator": "alice",
            "request": [{"method": "POST", "url": format!("{}/hook", target.url())}],
            "timer": {"period": "external"}
        }),
    );
    let triggered = server.call(
        "POST",
        "/jobs/report/trigger",
        Some(&json!({"why": "seed"})),
    );
    let report_run = triggered.ok_envelope()["executionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(wait_final(&server, &report_run)["state"], "Succeeded");
    let describe = server.call("GET", "/jobs/report/describe", None).body;
    let first_fire = describe["info"]["futureActionTimes"][0]
        .as_str()
        .unwrap()
        .to_string();

    // The list: every seeded job, its schedule in words, its next fire in its zone, last run.
    browser.go(&format!("{base}/"));
    let text = browser.text();
    for id in ["report", "sweep", "hook"] {
        assert!(text.contains(id), "{id} missing from the list:\n{text}");
    }
    assert!(
        text.contains("At 12:00 on weekdays, Europe/London"),
        "{text}"
    );
    assert!(
        text.contains("Every 6 hours (offset 5 hours), UTC"),
        "{text}"
    );
    assert!(text.contains("Triggered only"), "{text}");
    assert!(
        text.contains(&as_shown(&first_fire)),
        "{first_fire} missing:\n{text}"
    );
    assert!(text.contains("Succeeded"), "report's last run: {text}");
    browser.screenshot("jobs");
    let axe = axe_source();
    browser.check_accessibility(axe.as_deref(), "the jobs list");

    // Filters narrow it, from the form and from a shared URL.
    browser.type_into("#f-creator", "bob");
    browser.click_and_load("form.filters button[type=submit]");
    let text = browser.text();
    assert!(browser.url().contains("creator=bob"), "{}", browser.url());
    assert!(text.contains("sweep") && !text.contains("report"), "{text}");
    browser.go(&format!("{base}/?creator=alice&state=active"));
    assert_eq!(browser.count("tr[data-job]"), 2);

    // A job's page: the definition with the secret redacted, 20 coming fires, its executions.
    browser.go(&format!("{base}/ui/jobs/report"));
    let text = browser.text();
    assert_eq!(browser.count("ol.fires li"), 20, "{text}");
    assert!(text.contains(&as_shown(&first_fire)), "{text}");
    assert!(text.contains("Authorization: ***"), "{text}");
    assert!(!browser
        .script("return document.documentElement.outerHTML")
        .as_str()
        .unwrap_or_default()
        .contains("very-secret-value"));
    assert!(text.contains("Succeeded"), "{text}");
    browser.screenshot("job");
    browser.check_accessibility(axe.as_deref(), "a job");

    // The execution's page: its event log and the redacted header.
    browser.click_and_load("table.executions a");
    let text = browser.wait_for_text("Event log", Duration::from_secs(5));
    assert!(text.contains("Authorization: ***"), "{text}");
    assert!(
        text.contains(&format!("Idempotency-Key: {report_run}:1:0")),
        "{text}"
    );
    assert!(browser.count("ol.timeline li") >= 3, "{text}");
    assert!(text.contains("Processing → Succeeded"), "{text}");
    let sent = target.wait_for("/report", 1);
    assert_eq!(
        sent[0].header("idempotency-key"),
        Some(format!("{report_run}:1:0").as_str())
    );
    browser.screenshot("execution");
    browser.check_accessibility(axe.as_deref(), "an execution");

    // Trigger from the job's page with arguments, and watch the run reach Succeeded.
    browser.go(&format!("{base}/ui/jobs/hook"));
    browser.type_into("#trigger-args", r#"{"region": "emea"}"#);
    browser.click_and_load("form[action$='/trigger'] button");
    let text = browser.wait_for_text("Execution #1 Succeeded", Duration::from_secs(20));
    assert!(text.contains("emea"), "{text}");
    assert_eq!(target.wait_for("/hook", 1).len(), 1);

    // Trigger with a delay and an idempotency key: the run waits Scheduled, and is the one the
    // key names.
    browser.go(&format!("{base}/ui/jobs/hook"));
    browser.click("form[action$='/trigger'] summary");
    browser.type_into("#trigger-delay", "1h");
    browser.type_into("#trigger-key", "browser-later");
    browser.click_and_load("form[action$='/trigger'] button");
    let text = browser.wait_for_text("Execution #2 Scheduled", Duration::from_secs(10));
    assert!(text.contains("delay 1h"), "{text}");
    let run = server.call("GET", "/executions/hook~t~browser-later", None);
    assert_eq!(run.body["state"], "Scheduled", "{:?}", run.body);

    // Pause with notes, until a time: the job page and the list show when it resumes.
    browser.go(&format!("{base}/ui/jobs/sweep"));
    browser.type_into("#pause-notes", "maintenance window");
    browser.type_into("#pause-until", "2h");
    browser.screenshot_whole("job-pause-form");
    browser.click_and_load("form[action$='/pause'] button");
    browser.wait_for_text("Notes: maintenance window", Duration::from_secs(5));
    let text = browser.text();
    assert!(text.contains("Resumes by itself"), "{text}");
    browser.screenshot_whole("job-paused-until");
    browser.go(&format!("{base}/?state=paused"));
    browser.screenshot("jobs-paused-until");
    let text = browser.text();
    assert!(
        text.contains("sweep") && text.contains("maintenance window") && text.contains("resumes"),
        "{text}"
    );
    let paused = server.call("GET", "/jobs/sweep", None).body;
    assert_eq!(paused["active"], json!(0));
    assert!(paused["pausedUntil"].is_string(), "{paused}");

    // The session cookie: HttpOnly, SameSite=Strict, with an expiry.
    let cookies = browser.cookies();
    let session = cookies
        .iter()
        .find(|c| c["name"] == "sundial_session")
        .expect("a session cookie");
    assert_eq!(session["httpOnly"], json!(true));
    assert_eq!(session["sameSite"], "Strict");
    assert!(session["expiry"].as_u64().is_some(), "{session:?}");

    // A job created through the form: from the list's "New job" link.
    browser.go(&format!("{base}/"));
    browser.click_and_load("a[href='/ui/jobs/new']");
    assert!(browser.url().ends_with("/ui/jobs/new"), "{}", browser.url());
    browser.check_accessibility(axe.as_deref(), "the create page");
    browser.type_into("#c-jobId", "weekday");
    browser.type_into("#c-jobName", "Weekday call");
    browser.type_into("#c-creator", "carol");
    browser.type_into("#c-creatorName", "Carol");
    browser.type_into("#c-url", &format!("{}/weekday", target.url()));
    // Only the chosen kind's fields show.
    browser.click("input[name=when][value=interval]");
    assert_eq!(
        browser.script("return [document.getElementById('c-cron').closest('.when').hidden, document.getElementById('c-interval').closest('.when').hidden]"),
        json!([true, false])
    );
    browser.click("input[name=when][value=cron]");

    // The preview follows the schedule as it is typed, in its zone, a problem included.
    let spec = json!({"cron": ["0 12 * * MON-FRI"], "timeZone": "Europe/London"});
    let expected = server
        .call(
            "POST",
            "/specs/preview",
            Some(&json!({"schedule": spec, "count": 5, "jobId": "weekday"})),
        )
        .body;
    let first = expected["times"][0].as_str().unwrap().replacen('T', " ", 1);
    browser.type_into("#c-timeZone", "Europe/London");
    browser.type_into("#c-cron", "0 12 * * MON-FRI");
    browser.wait_for_text(&first, Duration::from_secs(5));
    assert_eq!(browser.count("#preview li"), 5);
    browser.screenshot_whole("create");
    browser.type_into("#c-cron", "0 25 * * *");
    browser.wait_for_text("schedule.cron[0]:", Duration::from_secs(5));

    // Sent with that cron: the page comes back with the use case's error at the cron field,
    // every value kept.
    browser.click_and_load("button[value=create]");
    assert_eq!(browser.url(), format!("{base}/ui/jobs/new"));
    let error = browser.script("return document.getElementById('c-cron-error').textContent");
    assert!(
        error
            .as_str()
            .unwrap_or_default()
            .starts_with("schedule.cron[0]:"),
        "{error}"
    );
    assert_eq!(
        browser.script("const c = document.getElementById('c-cron'); return [c.getAttribute('aria-invalid'), c.getAttribute('aria-describedby'), c.value]"),
        json!(["true", "c-cron-hint c-cron-error", "0 25 * * *"])
    );
    assert_eq!(
        browser.script("return document.getElementById('c-jobName').value"),
        json!("Weekday call")
    );
    assert!(browser.text().contains("The job was not created"));
    browser.script("document.getElementById('c-cron').scrollIntoView({block: 'center'})");
    browser.screenshot("create-error");
    browser.check_accessibility(axe.as_deref(), "the create page with an error");

    // Corrected, it is created, and the browser is on its page.
    browser.type_into("#c-cron", "0 12 * * MON-FRI");
    browser.click_and_load("button[value=create]");
    assert!(
        browser.url().ends_with("/ui/jobs/weekday"),
        "{}",
        browser.url()
    );
    browser.wait_for_text(
        "At 12:00 on weekdays, Europe/London",
        Duration::from_secs(5),
    );
    let created = server.call("GET", "/jobs/weekday", None).body;
    assert_eq!(created["creator"], "carol", "{created}");
    assert_eq!(created["schedule"]["cron"], json!(["0 12 * * MON-FRI"]));
}

#[test]
fn console_sorts_the_list_and_pages_through_each_order() {
    let Some(browser) = browser() else { return };
    let axe = axe_source();
    let dir = TempDir::new("console-sort");
    let server = start(&dir, &[], &[]);
    let base = format!("http://{}", server.addr);
    // 55 jobs (a page holds 50). Job n fires first on day n of 2031 (from January 1st), and its
    // id counts down, so that no two orders agree: j54 fires first, j00 last.
    for n in 0..55u32 {
        create(
            &server,
            &[],
            &format!("j{:02}", 54 - n),
            json!({
                "jobName": format!("Job {n}"),
                "request": [{"method": "GET", "url": "http://127.0.0.1:9/"}],
                "schedule": {"cron": [format!("0 0 {} {} *", n % 28 + 1, n / 28 + 1)],
                             "startTime": "2031-01-01T00:00:00Z"}
            }),
        );
    }
    // Three runs, a few milliseconds apart: the last trigger is the latest run.
    for id in ["j10", "j40", "j03"] {
        server.call("POST", &format!("/jobs/{id}/trigger"), Some(&json!({})));
        std::thread::sleep(Duration::from_millis(20));
    }

    browser.go(&format!("{base}/"));
    assert_eq!(browser.rows().len(), 50);
    assert_eq!(&browser.rows()[..2], ["j00", "j01"]);

    // A column header sorts: soonest next fire first, 50 to a page, and the next page goes on
    // in the same order with the same filters.
    browser.click_and_load("th a.sort[href*='sort=nextFire']");
    assert!(browser.url().contains("sort=nextFire"), "{}", browser.url());
    let first = browser.rows();
    assert_eq!(first.len(), 50);
    assert_eq!(&first[..3], ["j54", "j53", "j52"]);
    assert_eq!(
        browser.script("return document.querySelector('th[aria-sort]').textContent"),
        json!("Next fire ▲, sort by next fire, soonest first")
    );
    browser.screenshot("jobs-by-next-fire");
    browser.check_accessibility(axe.as_deref(), "the jobs list by next fire");
    browser.click_and_load("a[rel=next]");
    assert!(
        browser.url().contains("cursor=") && browser.url().contains("sort=nextFire"),
        "{}",
        browser.url()
    );
    assert_eq!(browser.rows(), ["j04", "j03", "j02", "j01", "j00"]);
    assert_eq!(browser.count("a[rel=next]"), 0);
    browser.click_and_load("nav.pager a:not([rel])");
    assert_eq!(browser.rows()[0], "j54");

    // The filter form's Sort by, with a filter: latest run first, then the jobs never run by id.
    browser.click("#f-sort option[value=lastRun]");
    browser.type_into("#f-creator", "ops");
    browser.click_and_load("form.filters button[type=submit]");
    let url = browser.url();
    assert!(
        url.contains("sort=lastRun") && url.contains("creator=ops"),
        "{url}"
    );
    let rows = browser.rows();
    assert_eq!(&rows[..5], ["j03", "j40", "j10", "j00", "j01"]);
    browser.click_and_load("a[rel=next]");
    assert_eq!(browser.rows(), ["j50", "j51", "j52", "j53", "j54"]);
    assert_eq!(
        browser.script("return document.querySelector('th[aria-sort]').getAttribute('aria-sort')"),
        json!("descending")
    );
}

#[test]
fn console_upcoming_shows_the_next_day_of_fires_across_jobs() {
    let Some(browser) = browser() else { return };
    let axe = axe_source();
    let dir = TempDir::new("console-upcoming");
    let server = start(&dir, &[], &[]);
    let base = format!("http://{}", server.addr);
    let job = |schedule: Value| {
        json!({"jobName": "j", "request": [{"method": "GET", "url": "http://127.0.0.1:9/"}],
               "schedule": schedule})
    };
    create(
        &server,
        &[],
        "hourly-ny",
        job(json!({"cron": ["17 * * * *"], "timeZone": "America/New_York"})),
    );
    create(
        &server,
        &[],
        "daily-utc",
        job(json!({"cron": ["0 3 * * *"]})),
    );
    create(
        &server,
        &[],
        "later",
        job(json!({"cron": ["0 0 1 1 *"], "startTime": "2031-01-01T00:00:00Z"})),
    );

    browser.go(&format!("{base}/"));
    browser.click_and_load("header nav a[href='/ui/upcoming']");
    assert!(browser.url().ends_with("/ui/upcoming"), "{}", browser.url());
    let jobs = browser.script(
        "return [...document.querySelectorAll('table.upcoming tbody tr td:nth-child(2) a')].map(a => a.textContent)",
    );
    let jobs: Vec<&str> = jobs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // 24 hourly fires and one daily in the next 24 hours; nothing of the job starting in 2031.
    assert_eq!(
        jobs.iter().filter(|j| **j == "hourly-ny").count(),
        24,
        "{jobs:?}"
    );
    assert_eq!(
        jobs.iter().filter(|j| **j == "daily-utc").count(),
        1,
        "{jobs:?}"
    );
    assert!(!jobs.contains(&"later"));
    let times = browser.script(
        "return [...document.querySelectorAll('table.upcoming tbody time')].map(t => t.getAttribute('datetime'))",
    );
    let times: Vec<String> = times
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str().map(str::to_owned))
        .collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted, "soonest first");
    browser.screenshot_whole("upcoming");
    browser.check_accessibility(axe.as_deref(), "the upcoming page");

    // The filter narrows to nothing, and says so.
    browser.type_into("#u-creator", "nobody");
    browser.click_and_load("form.filters button[type=submit]");
    assert!(browser
        .text()
        .contains("Nothing fires in the next 24 hours."));
}

#[test]
fn console_dashboard_and_job_statistics_chart_the_runs_that_ended() {
    let Some(browser) = browser() else { return };
    let axe = axe_source();
    let dir = TempDir::new("console-dashboard");
    let target = Target::start();
    let server = start(&dir, &[], &[]);
    let base = format!("http://{}", server.addr);
    // Three runs that succeed against the local target, two that fail (nothing listens on port
    // 9, and no retry is allowed).
    create(
        &server,
        &[],
        "steady",
        json!({"jobName": "Steady", "timer": {"period": "external"},
               "request": [{"method": "POST", "url": format!("{}/steady", target.url())}]}),
    );
    create(
        &server,
        &[],
        "broken",
        json!({"jobName": "Broken", "timer": {"period": "external"}, "maxRetries": 0,
               "request": [{"method": "GET", "url": "http://127.0.0.1:9/"}]}),
    );
    for (job, runs, state) in [("steady", 3, "Succeeded"), ("broken", 2, "Terminated")] {
        for n in 0..runs {
            let run = run_to_end(&server, job, &format!("{job}-{n}"));
            assert_eq!(run["state"], state, "{job} run {n}");
        }
    }
    let figures = |css: &str| {
        browser.script(&format!(
            "const e = document.querySelector({css:?}); return e ? Object.assign({{}}, e.dataset) : null"
        ))
    };
    let bars_total = |attribute: &str| {
        browser
            .script(&format!(
                "return [...document.querySelectorAll('section.stats svg.counts g.bar')]\
                   .reduce((n, g) => n + Number(g.dataset.{attribute}), 0)"
            ))
            .as_u64()
            .unwrap()
    };

    browser.go(&format!("{base}/"));
    browser.click_and_load("header nav a[href='/ui/dashboard']");
    assert!(
        browser.url().ends_with("/ui/dashboard"),
        "{}",
        browser.url()
    );
    let chart = figures("section.stats svg.counts");
    assert_eq!(
        (chart["runs"].as_str(), chart["failed"].as_str()),
        (Some("5"), Some("2")),
        "{chart}"
    );
    assert_eq!((bars_total("runs"), bars_total("failed")), (5, 2));
    assert_eq!(figures("section.stats")["window"], "24h");
    let failing = figures("table.top-failing tbody tr");
    assert_eq!(
        (failing["job"].as_str(), failing["failed"].as_str()),
        (Some("broken"), Some("2"))
    );
    let text = browser.text();
    assert!(text.contains("Success rate\n60.0 %"), "{text}");
    assert!(!text.contains("Debug mode is on"), "{text}");

    // The last hour: a bar per minute, the same runs.
    browser.click_and_load("nav.windows a[data-window='1h']");
    assert!(
        browser.url().ends_with("/ui/dashboard?window=1h"),
        "{}",
        browser.url()
    );
    let chart = figures("section.stats svg.counts");
    assert_eq!(chart["buckets"], "61");
    assert_eq!((bars_total("runs"), bars_total("failed")), (5, 2));
    browser.screenshot_whole("dashboard");
    browser.check_accessibility(axe.as_deref(), "the dashboard");

    // From the top failing job to its page: its own runs, by state, in the window asked for.
    browser.click_and_load("table.top-failing a[href='/ui/jobs/broken']");
    let chart = figures("section.stats svg.counts");
    assert_eq!(
        (chart["runs"].as_str(), chart["failed"].as_str()),
        (Some("2"), Some("2")),
        "{chart}"
    );
    let terminated = figures("section.stats svg.values g.bar[data-name='Terminated']");
    assert_eq!(terminated["value"], "2", "{terminated}");
    browser.click_and_load("section.stats nav.windows a[data-window='7d']");
    assert_eq!(figures("section.stats")["window"], "7d");
    assert_eq!(figures("section.stats svg.counts")["buckets"], "169");
    assert_eq!((bars_total("runs"), bars_total("failed")), (2, 2));
    browser.screenshot_whole("job-statistics");
    browser.check_accessibility(axe.as_deref(), "a job's statistics");
}

#[test]
fn console_login_logout_expiry_and_csrf() {
    let Some(browser) = browser() else { return };
    let dir = TempDir::new("console-token");
    let token = "console-test-token-0123456789";
    let server = start(
        &dir,
        &[],
        &[
            ("SUNDIAL_API_TOKEN", token),
            // Long enough for the steps of one session on a loaded CI machine.
            ("SUNDIAL_CONSOLE_SESSION_SECONDS", "10"),
        ],
    );
    let bearer = format!("Bearer {token}");
    let auth = [("Authorization", bearer.as_str())];
    create(
        &server,
        &auth,
        "nightly",
        json!({"jobName": "Nightly", "request": [{"method": "GET", "url": "http://127.0.0.1:9/"}],
               "schedule": {"cron": ["0 2 * * *"]}}),
    );
    let base = format!("http://{}", server.addr);

    // No session: the login page. A wrong token is refused.
    browser.go(&format!("{base}/"));
    assert!(browser.url().ends_with("/ui/login"), "{}", browser.url());
    browser.screenshot("login");
    browser.check_accessibility(axe_source().as_deref(), "the login page");
    browser.type_into("#token", "wrong-token-wrong-token");
    browser.click_and_load("form button");
    assert!(browser.text().contains("Wrong token."));

    // The right token opens the console.
    browser.type_into("#token", token);
    browser.click_and_load("form button");
    let text = browser.wait_for_text("nightly", Duration::from_secs(5));
    assert!(text.contains("At 02:00, UTC"), "{text}");

    // A forged CSRF token is refused and changes nothing.
    browser.go(&format!("{base}/ui/jobs/nightly"));
    browser.script(
        "document.querySelector(\"form[action$='/pause'] input[name=csrf]\").value = 'forged'",
    );
    browser.click_and_load("form[action$='/pause'] button");
    let text = browser.text();
    assert!(text.contains("403") && text.contains("CSRF"), "{text}");
    let job = server.send("GET", "/jobs/nightly", &auth, None).body;
    assert_eq!(job["active"], json!(1), "{job:?}");

    // Logout ends the session: the console is closed again.
    browser.go(&format!("{base}/"));
    browser.click_and_load("form.logout button");
    assert!(browser.url().contains("/ui/login"), "{}", browser.url());
    browser.go(&format!("{base}/ui/jobs/nightly"));
    assert!(browser.url().contains("/ui/login"), "{}", browser.url());

    // A session past its expiry is refused.
    browser.type_into("#token", token);
    browser.click_and_load("form button");
    let logged_in = Instant::now();
    browser.wait_for_text("nightly", Duration::from_secs(5));
    std::thread::sleep(Duration::from_secs(11).saturating_sub(logged_in.elapsed()));
    browser.go(&format!("{base}/ui/jobs/nightly"));
    assert!(browser.url().contains("/ui/login"), "{}", browser.url());
}

#[test]
fn console_bulk_pauses_the_jobs_a_label_selects_and_triggers_the_rows_selected() {
    let Some(browser) = browser() else { return };
    let axe = axe_source();
    let dir = TempDir::new("console-bulk");
    let target = Target::start();
    let server = start(&dir, &[], &[]);
    let base = format!("http://{}", server.addr);
    let teams = [
        ("pay-api", "payments"),
        ("pay-ledger", "payments"),
        ("pay-refunds", "payments"),
        ("search-crawl", "search"),
        ("search-index", "search"),
    ];
    for (id, team) in teams {
        create(
            &server,
            &[],
            id,
            json!({"jobName": format!("{team} {id}"), "labels": {"team": team},
                   "request": [{"method": "POST", "url": format!("{}/{id}", target.url())}],
                   "schedule": {"cron": ["0 3 * * *"]}}),
        );
    }
    // Runs for the success column: two of pay-api's, one of search-index's.
    for (id, key) in [("pay-api", "a"), ("pay-api", "b"), ("search-index", "c")] {
        assert_eq!(run_to_end(&server, id, key)["state"], "Succeeded");
    }
    let reason = "payments freeze for the migration";

    // The list filtered by label from its form: the payments jobs, each with its day's success.
    browser.go(&format!("{base}/"));
    browser.type_into("#f-label", "team:payments");
    browser.click_and_load("form.filters button[type=submit]");
    assert!(
        browser.url().contains("label=team%3Apayments"),
        "{}",
        browser.url()
    );
    assert_eq!(browser.rows(), ["pay-api", "pay-ledger", "pay-refunds"]);
    let text = browser.text();
    assert!(text.contains("100 % of 2"), "{text}");
    browser.check_accessibility(axe.as_deref(), "the jobs list with the bulk form");

    // Every job matching the filter, paused with a reason: first the dry run's count.
    browser.click("#bulk input[name=scope][value=filter]");
    browser.click("#bulk-action option[value=pause]");
    browser.type_into("#bulk-reason", reason);
    browser.type_into("#bulk-until", "2030-01-01T00:00:00Z");
    browser.screenshot_whole("jobs-bulk");
    browser.click_and_load("#bulk button[type=submit]");
    let text = browser.text();
    assert!(text.contains("Pause 3 jobs?"), "{text}");
    assert!(
        text.contains("2030-01-01T00:00:00Z"),
        "the confirmation states the end: {text}"
    );
    assert!(
        text.contains("3 jobs match the filter label team:payments."),
        "{text}"
    );
    assert_eq!(browser.rows(), ["pay-api", "pay-ledger", "pay-refunds"]);
    for (id, _) in teams {
        let job = server.call("GET", &format!("/jobs/{id}"), None).body;
        assert_eq!(job["active"], json!(1), "{id} changed by the dry run");
    }
    browser.screenshot_whole("bulk-confirm");
    browser.check_accessibility(axe.as_deref(), "the bulk confirmation");

    // Confirmed: each job's outcome.
    browser.click_and_load("form.confirm button");
    let text = browser.text();
    assert!(text.contains("Pause: 3 done, 0 failed"), "{text}");
    assert_eq!(
        browser.count("table.outcomes tr[data-outcome=done]"),
        3,
        "{text}"
    );
    browser.screenshot_whole("bulk-results");
    browser.check_accessibility(axe.as_deref(), "the bulk results");

    // Through the API: exactly the payments jobs are paused, each history with the reason.
    for (id, team) in teams {
        let job = server.call("GET", &format!("/jobs/{id}"), None).body;
        let history = server
            .call("GET", &format!("/jobs/{id}/history"), None)
            .body;
        let bulk: Vec<&Value> = history["entries"]
            .as_array()
            .unwrap_or_else(|| panic!("{id} history: {history}"))
            .iter()
            .filter(|e| e["action"] == "bulk:pause")
            .collect();
        if team == "payments" {
            assert_eq!(job["active"], json!(0), "{id}: {job}");
            assert_eq!(job["pausedUntil"], "2030-01-01T00:00:00Z", "{id}: {job}");
            assert_eq!(bulk.len(), 1, "{id}: {history}");
            assert_eq!(bulk[0]["reason"], reason, "{id}: {history}");
            assert_eq!(bulk[0]["actor"], "anonymous", "{id}: {history}");
        } else {
            assert_eq!(job["active"], json!(1), "{id}: {job}");
            assert!(bulk.is_empty(), "{id}: {history}");
        }
    }

    // The rows selected (every row of the page, by its box): both search jobs triggered, each
    // with a link to its run.
    browser.go(&format!("{base}/?label=team:search"));
    assert_eq!(browser.rows(), ["search-crawl", "search-index"]);
    browser.click("#select-all");
    assert_eq!(browser.count("input[name=jobIds]:checked"), 2);
    browser.click("#bulk-action option[value=trigger]");
    browser.type_into("#bulk-reason", "rerun after the outage");
    browser.click_and_load("#bulk button[type=submit]");
    assert!(browser.text().contains("Trigger 2 jobs?"));
    browser.click_and_load("form.confirm button");
    let text = browser.text();
    assert!(text.contains("Trigger: 2 done, 0 failed"), "{text}");
    assert_eq!(
        browser.count("table.outcomes a[href^='/ui/executions/']"),
        2,
        "{text}"
    );
    target.wait_for("/search-crawl", 1);
    target.wait_for("/search-index", 2);
    for id in ["search-crawl", "search-index"] {
        let history = server
            .call("GET", &format!("/jobs/{id}/history"), None)
            .body;
        assert_eq!(history["entries"][0]["action"], "bulk:trigger", "{history}");
        assert_eq!(
            history["entries"][0]["reason"], "rerun after the outage",
            "{history}"
        );
    }
    browser.click_and_load("table.outcomes a[href^='/ui/executions/']");
    browser.wait_for_text("Execution #", Duration::from_secs(5));
}

/// "Why didn't it run?" in the browser: an every-second job runs, is paused from its page with
/// notes, and resumed; the ledger (opened from the job's page with its default range) names the
/// paused stretch with those notes, and its link opens the history at the pause, with who and why.
#[test]
fn console_ledger_names_a_paused_stretch_and_links_the_pause_in_the_history() {
    let Some(browser) = browser() else { return };
    let axe = axe_source();
    let dir = TempDir::new("console-ledger");
    let target = Target::start();
    let server = start(&dir, &[], &[]);
    let base = format!("http://{}", server.addr);
    create(
        &server,
        &[],
        "pulse",
        json!({"jobName": "Pulse", "schedule": {"intervals": ["1s"]},
               "request": [{"method": "POST", "url": format!("{}/pulse", target.url())}]}),
    );
    // Runs that ended: the executions the engine creates ahead of their second must not count,
    // or the pause below may come before any run (then the ledger has no `ran` before it).
    let ran = |server: &Server| {
        server
            .call("GET", "/jobs/pulse/executions?limit=100", None)
            .body["executions"]
            .as_array()
            .map_or(0, |runs| {
                runs.iter()
                    .filter(|run| run["state"] == "Succeeded")
                    .count()
            })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while ran(&server) < 2 {
        assert!(Instant::now() < deadline, "pulse did not run twice in 20 s");
        std::thread::sleep(Duration::from_millis(200));
    }

    // Renamed (an update, whose diff the history shows), then paused from its page with notes
    // for six seconds, then resumed. The runs of the next two
    // seconds exist when it pauses (the engine creates them that far ahead) and keep running,
    // and a resume takes up the second before it: about three fires fall in the pause.
    let renamed = server.call(
        "POST",
        "/jobs/pulse/update",
        Some(
            &json!({"jobName": "Pulse, every second", "creator": "ops", "creatorName": "Operations",
                     "schedule": {"intervals": ["1s"]},
                     "request": [{"method": "POST", "url": format!("{}/pulse", target.url())}]}),
        ),
    );
    renamed.ok_envelope();
    browser.go(&format!("{base}/ui/jobs/pulse"));
    browser.type_into("#pause-notes", "deploy freeze");
    browser.click_and_load("form[action$='/pause'] button");
    std::thread::sleep(Duration::from_secs(6));
    browser.click_and_load("form[action$='/unpause'] button");
    let resumed = ran(&server);
    let deadline = Instant::now() + Duration::from_secs(20);
    while ran(&server) < resumed + 2 {
        assert!(Instant::now() < deadline, "pulse did not run again in 20 s");
        std::thread::sleep(Duration::from_millis(200));
    }

    // The ledger from the job's page, its range left empty: a day of an every-second job holds
    // more than one ledger lists, so it shows the last hour, folded by fate.
    browser.go(&format!("{base}/ui/jobs/pulse"));
    browser.click_and_load("form[action$='/occurrences'] button");
    let statuses = browser.script(
        "return [...document.querySelectorAll('table.ledger tr[data-status]')].map((r) => r.dataset.status)",
    );
    let statuses: Vec<&str> = statuses
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let paused_at = statuses
        .iter()
        .position(|s| *s == "paused")
        .unwrap_or_else(|| panic!("no paused row: {statuses:?}\n{}", browser.text()));
    assert!(
        statuses[..paused_at].contains(&"ran") && statuses[paused_at..].contains(&"ran"),
        "runs before and after the pause: {statuses:?}"
    );
    let paused_row = browser
        .script("return document.querySelector('tr[data-status=paused]').innerText")
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(paused_row.contains("deploy freeze"), "{paused_row}");
    let text = browser.text();
    assert!(text.contains("3600 nominal times"), "{text}");
    browser.screenshot_whole("ledger");
    browser.check_accessibility(axe.as_deref(), "the ledger");

    // Its link opens the history at the pause: first, marked, with the actor and the notes.
    browser.click_and_load("tr[data-status=paused] a[href*='/history?at=']");
    let marked = browser
        .script("return document.querySelector('li.entry[aria-current=true]').innerText")
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        marked.contains("pause")
            && marked.contains("deploy freeze")
            && marked.contains("anonymous"),
        "{marked}"
    );
    let history = server.call("GET", "/jobs/pulse/history", None).body;
    let actions: Vec<&str> = history["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    assert_eq!(actions, ["unpause", "pause", "update", "create"]);
    // From the newest: every change, the update's diff among them.
    browser.click_and_load("a[href$='/history']");
    let diff = browser
        .script("return document.querySelector('table.diff').innerText")
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        diff.contains("/jobName") && diff.contains("Pulse, every second"),
        "{diff}"
    );
    browser.screenshot_whole("history");
    browser.check_accessibility(axe.as_deref(), "the history");
}

/// An instant from the API's or a page's RFC 3339 text, to compare times written with different
/// offsets or precision.
fn instant(text: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text:?}: {e}"))
        .with_timezone(&chrono::Utc)
}

/// The job's executions (at most 100, newest first).
fn executions_of(server: &Server, job: &str) -> Vec<Value> {
    server
        .call("GET", &format!("/jobs/{job}/executions?limit=100"), None)
        .body["executions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn console_backfill_previews_the_times_a_missing_backfill_then_runs() {
    use chrono::{Duration as Span, SecondsFormat, TimeZone};
    let Some(browser) = browser() else { return };
    let axe = axe_source();
    let dir = TempDir::new("console-backfill");
    let target = Target::start();
    let server = start(&dir, &[], &[]);
    let base = format!("http://{}", server.addr);
    // Every 5 seconds, in Tokyo (UTC+9, no clock changes): the form's times are Tokyo's.
    create(
        &server,
        &[],
        "pulse",
        json!({"jobName": "Pulse", "request": [{"method": "POST", "url": format!("{}/pulse", target.url())}],
               "schedule": {"cron": ["*/5 * * * * *"], "timeZone": "Asia/Tokyo"}}),
    );
    let created = instant(
        server.call("GET", "/jobs/pulse", None).body["createdAt"]
            .as_str()
            .unwrap(),
    );
    // Two scheduled runs done: the range ends at the later one and starts 40 s before it, so
    // its first times came before the job existed (never run) and its last ones ran.
    let deadline = Instant::now() + Duration::from_secs(30);
    let ran = loop {
        let done: Vec<Value> = executions_of(&server, "pulse")
            .into_iter()
            .filter(|e| e["scheduledById"] == "pulse" && e["state"] == "Succeeded")
            .collect();
        if done.len() >= 2 {
            break done;
        }
        assert!(Instant::now() < deadline, "no two runs of pulse in 30 s");
        std::thread::sleep(Duration::from_millis(250));
    };
    let end = ran
        .iter()
        .map(|e| instant(e["scheduledTime"].as_str().unwrap()))
        .max()
        .unwrap();
    let start_at = end - Span::seconds(40);
    assert!(start_at < created, "the range reaches before the job");
    let tokyo = chrono_tz::Asia::Tokyo;
    let local = |t: chrono::DateTime<chrono::Utc>| {
        tokyo
            .from_utc_datetime(&t.naive_utc())
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string()
    };

    // From the job's page to its backfill page.
    browser.go(&format!("{base}/ui/jobs/pulse"));
    browser.click_and_load("a[href='/ui/jobs/pulse/backfill']");
    let text = browser.text();
    assert!(text.contains("Asia/Tokyo"), "{text}");
    browser.check_accessibility(axe.as_deref(), "the backfill page");
    browser.script(&format!(
        "document.getElementById('b-start').value = {}; document.getElementById('b-end').value = {};",
        json!(local(start_at)),
        json!(local(end))
    ));
    browser.click("input[name=mode][value=missing]");
    browser.click_and_load("form.previewed button[type=submit]");
    let times = browser.script(
        "return [...document.querySelectorAll('ol.backfill-times time')].map((t) => t.getAttribute('datetime'))",
    );
    let previewed: Vec<chrono::DateTime<chrono::Utc>> = times
        .as_array()
        .unwrap()
        .iter()
        .map(|t| instant(t.as_str().unwrap()))
        .collect();
    // Exactly the range's times that have no run: all of them before the job, none that ran.
    let ran_times: Vec<_> = executions_of(&server, "pulse")
        .iter()
        .map(|e| instant(e["scheduledTime"].as_str().unwrap()))
        .collect();
    assert!(!previewed.is_empty(), "{}", browser.text());
    assert!(previewed.iter().all(|t| *t >= start_at && *t <= end));
    assert!(
        previewed.iter().all(|t| !ran_times.contains(t)),
        "{previewed:?} {ran_times:?}"
    );
    let mut t = start_at;
    while t < created - Span::seconds(1) {
        assert!(previewed.contains(&t), "{t} before the job is missing");
        t += Span::seconds(5);
    }
    let count = browser.script("return document.getElementById('backfill-preview').dataset.count");
    assert_eq!(count, json!(previewed.len().to_string()));
    // (A browser drops the seconds of a time when they are zero.)
    let kept = browser.script("return document.getElementById('b-start').value");
    assert!(
        kept.as_str()
            .is_some_and(|v| v.starts_with(&local(start_at)[..16])),
        "the form keeps its values: {kept}"
    );
    browser.screenshot_whole("backfill-preview");
    browser.check_accessibility(axe.as_deref(), "the backfill preview");

    // Run: back on the job's page, which says so; the runs the engine makes are exactly the
    // previewed times.
    browser.click_and_load("#run-backfill");
    assert!(
        browser
            .url()
            .ends_with(&format!("/ui/jobs/pulse?backfilled={}", previewed.len())),
        "{}",
        browser.url()
    );
    assert!(browser.text().contains("Backfill recorded"));
    browser.check_accessibility(axe.as_deref(), "a job after a backfill");
    let deadline = Instant::now() + Duration::from_secs(60);
    let backfilled = loop {
        let runs: Vec<Value> = executions_of(&server, "pulse")
            .into_iter()
            .filter(|e| {
                e["scheduledById"]
                    .as_str()
                    .is_some_and(|by| by.starts_with("backfill:"))
            })
            .collect();
        if runs.len() >= previewed.len() && runs.iter().all(common::is_final) {
            break runs;
        }
        assert!(
            Instant::now() < deadline,
            "the backfill's {} runs did not finish in 60 s: {runs:?}",
            previewed.len()
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    let mut ran: Vec<_> = backfilled
        .iter()
        .map(|e| instant(e["scheduledTime"].as_str().unwrap()))
        .collect();
    ran.sort();
    let mut expected = previewed.clone();
    expected.sort();
    assert_eq!(
        ran.iter()
            .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
            .collect::<Vec<_>>(),
        expected
            .iter()
            .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
            .collect::<Vec<_>>()
    );
    assert!(backfilled.iter().all(|e| e["state"] == "Succeeded"));
}

#[test]
fn console_edit_previews_old_and_new_times_and_saves_only_when_confirmed() {
    let Some(browser) = browser() else { return };
    let axe = axe_source();
    let dir = TempDir::new("console-edit");
    let server = start(&dir, &[], &[]);
    let base = format!("http://{}", server.addr);
    create(
        &server,
        &[],
        "morning",
        json!({"jobName": "Morning", "request": [{"method": "POST", "url": "http://127.0.0.1:9/",
                 "headers": {"Authorization": "Bearer kept-secret"}}],
               "schedule": {"cron": ["0 6 * * *"], "timeZone": "Europe/Paris"}}),
    );
    let before = server.call("GET", "/jobs/morning", None).body;
    let describe = server.call("GET", "/jobs/morning/describe", None).body;
    let old_times: Vec<String> = describe["info"]["futureActionTimes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    let new_times: Vec<String> = server
        .call(
            "POST",
            "/specs/preview",
            Some(
                &json!({"schedule": {"cron": ["30 7 * * MON-FRI"], "timeZone": "Europe/Paris"},
                         "count": old_times.len(), "jobId": "morning"}),
            ),
        )
        .body["times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();

    browser.go(&format!("{base}/ui/jobs/morning"));
    browser.click_and_load("a[href='/ui/jobs/morning/edit']");
    browser.check_accessibility(axe.as_deref(), "the edit page");
    let shown: Value = serde_json::from_str(
        browser
            .script("return document.getElementById('e-definition').value")
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(shown["request"][0]["headers"]["Authorization"], "***");
    assert!(shown.get("createdAt").is_none(), "{shown}");
    // The cron changed in the editor, as a person would.
    browser.script(
        "const e = document.getElementById('e-definition'); const d = JSON.parse(e.value); \
         d.schedule.cron = ['30 7 * * MON-FRI']; e.value = JSON.stringify(d, null, 2);",
    );
    browser.click_and_load("form.previewed button[type=submit]");
    let column = |class: &str| -> Vec<String> {
        browser
            .script(&format!(
                "return [...document.querySelectorAll('table.fire-changes td.{class} time')].map((t) => t.getAttribute('datetime'))"
            ))
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect()
    };
    let instants = |times: &[String]| -> Vec<_> { times.iter().map(|t| instant(t)).collect() };
    assert_eq!(instants(&column("before")), instants(&old_times));
    assert_eq!(instants(&column("after")), instants(&new_times));
    let text = browser.text();
    assert!(text.contains(&as_shown(&old_times[0])), "{text}");
    assert!(text.contains(&as_shown(&new_times[0])), "{text}");
    assert!(browser.count("table.fire-changes tr.changed") >= 1);
    // Nothing saved by the preview.
    let unchanged = server.call("GET", "/jobs/morning", None).body;
    assert_eq!(unchanged, before);
    let history = server.call("GET", "/jobs/morning/history", None).body;
    assert_eq!(history["entries"].as_array().unwrap().len(), 1, "{history}");
    browser.screenshot_whole("edit-preview");
    browser.check_accessibility(axe.as_deref(), "the edit preview");

    // Save: the job has the new cron, its secret kept, and its history the update.
    browser.click_and_load("#save-edit");
    assert!(
        browser.url().ends_with("/ui/jobs/morning?updated=1"),
        "{}",
        browser.url()
    );
    assert!(browser.text().contains("Saved"));
    let after = server.call("GET", "/jobs/morning", None).body;
    assert_eq!(after["schedule"]["cron"], json!(["30 7 * * MON-FRI"]));
    let describe = server.call("GET", "/jobs/morning/describe", None).body;
    assert_eq!(
        instants(
            &describe["info"]["futureActionTimes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        ),
        instants(&new_times)
    );
    let history = server.call("GET", "/jobs/morning/history", None).body;
    let entry = &history["entries"][0];
    assert_eq!(entry["action"], "update", "{history}");
    assert!(
        entry["changes"].as_array().unwrap().contains(
            &json!({"path": "/schedule/cron/0", "old": "0 6 * * *", "new": "30 7 * * MON-FRI"})
        ),
        "{entry}"
    );
}

/// The create and edit pages' "Simulate" panel: the job as the form defines it, simulated by the
/// server (`POST /jobs/simulate`'s use case) over the range typed, its totals and first rows
/// shown; nothing is created or saved.
#[test]
fn console_create_and_edit_pages_simulate_the_job() {
    let Some(browser) = browser() else { return };
    let axe = axe_source();
    let dir = TempDir::new("console-simulate");
    let server = start(&dir, &[], &[]);
    let base = format!("http://{}", server.addr);
    let text_of = |css: &str| -> String {
        browser
            .script(&format!(
                "const e = document.querySelector({css:?}); return e ? e.textContent : ''"
            ))
            .as_str()
            .unwrap_or_default()
            .to_string()
    };

    // The create page: every minute, Skip, 90 s calls: every other minute runs.
    browser.go(&format!("{base}/ui/jobs/new"));
    browser.type_into("#c-jobId", "sync");
    browser.type_into("#c-jobName", "Sync");
    browser.type_into("#c-creator", "carol");
    browser.type_into("#c-creatorName", "Carol");
    browser.type_into("#c-url", "http://127.0.0.1:9/never-called");
    browser.type_into("#c-cron", "* * * * *");
    browser.script("document.getElementById('c-overlap').value = 'Skip'");
    browser.type_into("#c-timeoutSeconds", "300");
    browser.type_into("#s-from", "2026-12-24T00:00");
    browser.type_into("#s-to", "2026-12-24T01:00");
    browser.type_into("#s-p50", "90s");
    browser.click_and_load("#simulate-button");
    assert!(browser.url().ends_with("/ui/jobs/new"), "{}", browser.url());
    let totals = text_of("#simulation p.totals");
    assert!(
        totals.contains("Fires 60, runs 30") && totals.contains("skipped 30"),
        "{totals}"
    );
    assert_eq!(browser.count("table.simulation tbody tr"), 20);
    let first = browser.script(
        "return [...document.querySelectorAll('table.simulation tbody tr')].slice(0, 2).map((r) => r.children[1].textContent)",
    );
    assert_eq!(first, json!(["attempt", "skipped"]));
    // The form keeps what was typed, and no job was created.
    assert_eq!(
        browser.script("return [document.getElementById('c-jobId').value, document.getElementById('s-p50').value]"),
        json!(["sync", "90s"])
    );
    assert_eq!(server.call("GET", "/jobs/sync", None).status, 404);
    browser.screenshot_whole("create-simulate");
    browser.check_accessibility(axe.as_deref(), "the create page's simulation");

    // A bad field is the use case's message, naming it.
    browser.type_into("#s-failure", "2");
    browser.click_and_load("#simulate-button");
    let problem = text_of("#simulation p.error");
    assert!(
        problem.starts_with("simulatedTarget.failureRate:"),
        "{problem}"
    );

    // The edit page: the stored job, its calls failing, retried by its policy.
    create(
        &server,
        &[],
        "nightly",
        json!({"jobName": "Nightly", "request": [{"method": "POST", "url": "http://127.0.0.1:9/"}],
               "schedule": {"cron": ["0 2 * * *"]},
               "retryPolicy": {"initialInterval": "1m", "backoffCoefficient": 2, "maximumAttempts": 3}}),
    );
    browser.go(&format!("{base}/ui/jobs/nightly/edit"));
    browser.type_into("#s-from", "2026-12-24T00:00");
    browser.type_into("#s-to", "2026-12-27T00:00");
    browser.type_into("#s-failure", "1");
    browser.click_and_load("#simulate-button");
    let totals = text_of("#simulation p.totals");
    assert!(
        totals.contains("Fires 3, runs 3, attempts 9") && totals.contains("failed 3"),
        "{totals}"
    );
    let retry_at = browser.script(
        "return document.querySelector('table.simulation tbody tr').children[6].textContent",
    );
    assert_eq!(retry_at, json!("2026-12-24 02:01:01"));
    // Nothing saved: the history holds the creation alone.
    let history = server.call("GET", "/jobs/nightly/history", None).body;
    assert_eq!(history["entries"].as_array().unwrap().len(), 1, "{history}");
    browser.check_accessibility(axe.as_deref(), "the edit page's simulation");
}

/// Issue 27 item 2: the Calendars page, linked from the navigation, lists the stored calendars;
/// a calendar's page shows its days off in the coming year and the jobs that use it, linked.
#[test]
fn console_calendars_show_days_off_and_the_jobs_using_them() {
    let Some(browser) = browser() else { return };
    let axe = axe_source();
    let dir = TempDir::new("console-calendars");
    let server = start(&dir, &[], &[]);
    let base = format!("http://{}", server.addr);
    let london = json!({
        "description": "England and Wales bank holidays", "timeZone": "Europe/London",
        "rules": [
            {"month": 1, "day": 1, "observed": "nextWeekday", "comment": "New Year's Day"},
            {"easter": -2, "comment": "Good Friday"},
            {"easter": 1, "comment": "Easter Monday"},
            {"month": 5, "weekday": "MON", "nth": 1},
            {"month": 5, "weekday": "MON", "nth": -1},
            {"month": 8, "weekday": "MON", "nth": -1},
            {"month": 12, "day": 25, "observed": "nextWeekday"},
            {"month": 12, "day": 26, "observed": "nextWeekday"}]
    });
    let put = server.call("PUT", "/calendars/london", Some(&london));
    assert_eq!(put.status, 201, "{:?}", put.body);
    create(
        &server,
        &[],
        "payroll",
        json!({"jobName": "payroll", "request": [{"method": "POST", "url": "http://127.0.0.1:9/pay"}],
               "schedule": {"calendars": [{"businessDay": -1, "calendar": "london", "hour": "18"}],
                            "timeZone": "Europe/London"}}),
    );

    browser.go(&format!("{base}/"));
    browser.click_and_load("header nav a[href='/ui/calendars']");
    assert!(
        browser.url().ends_with("/ui/calendars"),
        "{}",
        browser.url()
    );
    assert_eq!(browser.count("table.calendars tbody tr"), 1);
    browser.check_accessibility(axe.as_deref(), "the calendars page");
    browser.click_and_load("table.calendars tbody a[href='/ui/calendars/london']");
    // Eight yearly holidays fall in any coming year.
    let days = browser.count("ul.days-off li");
    assert!(
        (8..=9).contains(&days),
        "{days} days off: {}",
        browser.text()
    );
    let dates = browser.script(
        "return [...document.querySelectorAll('ul.days-off time')].map(t => t.getAttribute('datetime'))",
    );
    let dates: Vec<&str> = dates
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut sorted = dates.clone();
    sorted.sort_unstable();
    assert_eq!(dates, sorted, "in date order");
    assert!(
        dates
            .iter()
            .any(|d| d.ends_with("-12-25") || d.ends_with("-12-27") || d.ends_with("-12-28")),
        "Christmas or its substitute: {dates:?}"
    );
    assert_eq!(
        browser.count("ul.calendar-jobs a[href='/ui/jobs/payroll']"),
        1
    );
    // Its yearly rules in words (core's `YearlyRule::describe`), not as JSON.
    let rules = browser
        .script("return [...document.querySelectorAll('ul.rules li')].map(l => l.textContent)");
    assert_eq!(
        rules,
        json!([
            "1 January, or the next weekday when on a weekend — New Year's Day",
            "2 days before Easter Sunday — Good Friday",
            "the day after Easter Sunday — Easter Monday",
            "first Monday of May",
            "last Monday of May",
            "last Monday of August",
            "25 December, or the next weekday when on a weekend",
            "26 December, or the next weekday when on a weekend"
        ])
    );
    browser.screenshot_whole("calendar");
    browser.check_accessibility(axe.as_deref(), "a calendar's page");
    browser.click_and_load("ul.calendar-jobs a");
    assert!(
        browser.url().ends_with("/ui/jobs/payroll"),
        "{}",
        browser.url()
    );
}
