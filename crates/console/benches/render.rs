//! How long the console takes to render each page on the server, and how much it sends, with a
//! large embedded store behind it.
//!
//! A SQLite store (a file in a temp dir, as `sundial serve` keeps it) is seeded through the store
//! port in bulk: jobs of every schedule kind written with `JobStore::create_job`, many at once so
//! the store's writer commits them in groups, and their wake-ups and executions with
//! `Store::write_all`, a hundred to a write. Each execution is a real one (built with the core's
//! `Execution`, Scheduled → Enqueued → Processing → a final state, with its response and
//! result), encoded as every write of the engine encodes it, and what its final write adds to its
//! job's hourly rollup (`Rollup::of_run`). Then each page is asked for through the console's
//! router (`tower::ServiceExt::oneshot`, no socket), with a session cookie as a browser would
//! send: the jobs list in each order (its first page and a page halfway down, each row with its
//! day's success rate) and by a label, the bulk form's confirmation for one team's jobs (its dry
//! run, posted), a job with its
//! executions and statistics (over a day and a week), its non-run ledger (the last day, 200 days
//! each on its own row, 9,000 days mostly folded) and its history (70 changes made through the
//! use cases after seeding), an execution, the create page, the
//! upcoming timeline, the dashboard over an hour, a day and a week, and the two previews posted
//! as their buttons post them: a backfill of the last day of a job firing every minute (modes
//! `all` and `missing`, which reads every time's runs) and an edit changing a job's cron. Each is
//! rendered three times to warm up, then `samples` times, the pages taking turns; the time is
//! from the request to the last byte of the body.
//!
//! Scale: `SUNDIAL_RENDER_SCALE=full` (the default: 10,000 jobs, 1,000,000 executions, 50
//! samples) or `ci` (1,000 jobs, 20,000 executions, 20 samples); `SUNDIAL_RENDER_JOBS` and
//! `SUNDIAL_RENDER_EXECUTIONS` override the counts. The goals, checked at every scale (the
//! process exits 1 when one is missed): every page's p95 under 100 ms and its body under 200 kB.
//! The week's dashboard is also timed once before anything else: its first read summarizes the
//! week's sealed hours for every later read (printed apart, not held to the goal: a cost paid
//! once per hour of the fleet's history, not per read).
//!
//! Run: `cargo bench -p sundial-console --bench render` (full scale, optimized), or
//! `SUNDIAL_RENDER_SCALE=ci cargo test -p sundial-console --bench render` (what CI runs: the
//! test profile's unoptimized build, which only makes the goals harder to meet). Figures:
//! docs/performance.md.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use chrono::{DateTime, Utc};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use sundial_core::execution::{execution_id_for_fire, Execution, ExecutionState};
use sundial_core::job::{Job, JobDefinition, JobId, JobState, When};
use sundial_core::stats::Rollup;
use sundial_embedded::SqliteStore;
use sundial_ports::clock::SystemClock;
use sundial_ports::store::{
    JobFilter, JobOrder, JobStore, PageRequest, RollupRecord, Store, StoreError, Write, MAX_WRITES,
};
use sundial_service::records::{encode_execution, encode_job, job_wakeup_key};
use sundial_service::{App, AppConfig};
use sundial_testkit::TempDir;
use tokio::task::JoinSet;
use tower::ServiceExt;

/// The goals: every page's p95 under this, and its body under [`GOAL_BYTES`].
const GOAL: Duration = Duration::from_millis(100);
const GOAL_BYTES: usize = 200_000;

/// The dashboard window whose first read is timed on its own: it summarizes the week's sealed
/// hours (`sundial_core::fleet_hour`), once, before every later read reads the summaries.
const FIRST_READ_WINDOW: &str = "7d";

/// Writes in flight at once while seeding: enough for the writer to commit them in groups.
const IN_FLIGHT: usize = 64;

struct Scale {
    name: &'static str,
    jobs: usize,
    executions: usize,
    samples: usize,
}

fn scale() -> Scale {
    let mut scale = match std::env::var("SUNDIAL_RENDER_SCALE").as_deref() {
        Ok("ci") => Scale {
            name: "ci",
            jobs: 1_000,
            executions: 20_000,
            samples: 20,
        },
        Ok("full") | Err(_) => Scale {
            name: "full",
            jobs: 10_000,
            executions: 1_000_000,
            samples: 50,
        },
        Ok(other) => panic!("SUNDIAL_RENDER_SCALE={other}: expected full or ci"),
    };
    let count = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.parse::<usize>().unwrap())
    };
    if let Some(jobs) = count("SUNDIAL_RENDER_JOBS") {
        scale.jobs = jobs;
    }
    if let Some(executions) = count("SUNDIAL_RENDER_EXECUTIONS") {
        scale.executions = executions;
    }
    assert!(scale.jobs >= 100, "at least 100 jobs");
    scale
}

fn job_id(k: usize) -> JobId {
    format!("job-{k:05}").parse().unwrap()
}

/// Job `k`'s definition: a mix of what users write. One in ten triggered only, one in ten an
/// interval, one in ten a seed-002 timer, the rest cron strings in one of five zones; each with a
/// templated request carrying a secret header, and labelled with its team and region.
fn definition(k: usize) -> Value {
    let zones = [
        "UTC",
        "Europe/London",
        "America/New_York",
        "Asia/Tokyo",
        "Australia/Sydney",
    ];
    let mut body = json!({
        "jobName": format!("Nightly export {k} for region {}", k % 40),
        "jobDescription": "Exports the day's orders to the warehouse and tells the data team.",
        "creator": format!("team-{}", k % 20),
        "creatorName": format!("Team {}", k % 20),
        "labels": {"team": format!("team-{}", k % 20), "region": format!("r{}", k % 40)},
        "request": [{
            "method": "POST",
            "url": format!("https://svc-{}.example.com/export/${{jobId}}?n=${{executeNumber}}", k % 50),
            "headers": {"Authorization": "Bearer not-a-real-token-0123456789", "X-Team": "data"},
            "body": {"region": k % 40, "scheduledTime": "${scheduledTime}"}
        }],
        "overlap": "BufferOne",
        "timeoutSeconds": 30,
        "maxRetries": 3,
    });
    match k % 10 {
        0 => body["timer"] = json!({"period": "external"}),
        1 => body["schedule"] = json!({"intervals": [format!("{}h", 1 + k % 12)]}),
        2 => body["timer"] = json!({"dueTime": "10m", "period": "1h"}),
        _ => {
            let days = if k.is_multiple_of(2) { "MON-FRI" } else { "*" };
            body["schedule"] = json!({
                "cron": [format!("{} {} * * {days}", k % 60, k % 24)],
                "timeZone": zones[k % zones.len()],
            });
        }
    }
    body
}

/// Job `k` as created `created` ago, having run `runs` times; one in ten paused.
fn job(k: usize, created: DateTime<Utc>, runs: u64) -> Job {
    let id = job_id(k);
    let definition = JobDefinition::parse_submitted(&id, &definition(k), created, None).unwrap();
    let mut state = JobState::for_definition(&definition);
    state.next_execute_number = runs + 1;
    state.action_count = runs;
    let mut job = Job {
        definition,
        state,
        created_at: created,
        updated_at: created,
    };
    if k % 10 == 5 {
        job.pause(Some("maintenance window".to_string()), created);
    }
    job
}

/// Run `number` of job `k`, due at `due`: a real execution through its states.
fn execution(k: usize, number: u64, due: DateTime<Utc>) -> Execution {
    let id = job_id(k);
    let second = chrono::Duration::seconds(1);
    let mut run = Execution::new(
        execution_id_for_fire(&id, 0, due),
        id.clone(),
        number,
        ExecutionState::Scheduled,
        due,
        id.to_string(),
        due - second * 30,
    )
    .unwrap();
    run.run.due = Some(due);
    run.transition(ExecutionState::Enqueued, due, "due")
        .unwrap();
    run.transition(ExecutionState::Processing, due + second, "attempt 1")
        .unwrap();
    let failed = (k + number as usize).is_multiple_of(13);
    let status = if failed { 503 } else { 200 };
    run.run.responses = vec![json!({
        "status": status,
        "headers": {"content-type": "application/json"},
        "body": {"ok": !failed, "rows": 1_000 + number, "file": format!("s3://exports/{k}/{number}.csv")}
    })];
    if failed {
        run.error = Some("503".to_string());
        run.transition(ExecutionState::Failed, due + second * 3, "HTTP 503")
            .unwrap();
        run.transition(
            ExecutionState::Terminated,
            due + second * 4,
            "no retries left",
        )
        .unwrap();
    } else {
        run.result =
            Some(json!({"httpStatus": 200, "response": {"ok": true, "rows": 1_000 + number}}));
        run.transition(ExecutionState::Succeeded, due + second * 3, "HTTP 200")
            .unwrap();
    }
    run
}

/// Seeds `scale` through the store port: jobs one by one but many at once, wake-ups and
/// executions a hundred to a write. Returns the id of the job the job and execution pages show
/// and its newest execution.
async fn seed(store: &SqliteStore, scale: &Scale, now: DateTime<Utc>) -> (String, String) {
    let per_job = scale.executions / scale.jobs;
    let extra = scale.executions % scale.jobs;
    let runs_of = |k: usize| (per_job + usize::from(k < extra)) as u64;
    let hour = chrono::Duration::hours(1);
    let created = now - hour * (per_job as i32 + 2) * 6;

    let mut tasks = JoinSet::new();
    let mut wakeups = Vec::new();
    for k in 0..scale.jobs {
        let mut job = job(k, created, runs_of(k));
        // Planned up to now, as a running engine keeps it: its wake-up is its next fire.
        job.state.last_scheduled_time = Some(now);
        if let Some(due) = job.next_fire() {
            wakeups.push((job_wakeup_key(job.definition.job_id()), due));
        }
        let store = store.clone();
        tasks.spawn(async move { store.create_job(&encode_job(&job, 1, None)).await });
        if tasks.len() >= IN_FLIGHT {
            tasks.join_next().await.unwrap().unwrap().unwrap();
        }
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap().unwrap();
    }
    for chunk in wakeups.chunks(MAX_WRITES) {
        let writes: Vec<Write<'_>> = chunk
            .iter()
            .map(|(key, due)| Write::SetWakeup(key, Some(*due)))
            .collect();
        store.write_all(&writes).await.unwrap();
    }

    // Executions, job after job: run n of a job was due n × 6 hours after it was created.
    let mut batch = Vec::with_capacity(MAX_WRITES);
    let flush = |batch: Vec<_>, tasks: &mut JoinSet<_>| {
        let store = store.clone();
        tasks.spawn(async move {
            let writes: Vec<Write<'_>> = batch.iter().map(Write::CreateExecution).collect();
            store.write_all(&writes).await.map_err(StoreError::from)
        });
    };
    // What each run's final write adds to its job's hourly rollup, for the statistics.
    let mut rollups: Vec<RollupRecord> = Vec::with_capacity(MAX_WRITES);
    let flush_rollups = |rollups: Vec<RollupRecord>, tasks: &mut JoinSet<_>| {
        let store = store.clone();
        tasks.spawn(async move {
            let writes: Vec<Write<'_>> = rollups.iter().map(Write::AddRollup).collect();
            store.write_all(&writes).await.map_err(StoreError::from)
        });
    };
    for k in 0..scale.jobs {
        for number in 1..=runs_of(k) {
            let due = created + hour * 6 * number as i32;
            let run = execution(k, number, due);
            if let Some((hour, rollup)) = Rollup::of_run(&run, None) {
                rollups.push(RollupRecord {
                    job_id: run.job_id.to_string(),
                    hour,
                    counters: rollup.to_counters(),
                });
            }
            batch.push(encode_execution(&run, 1).unwrap());
            if batch.len() == MAX_WRITES {
                flush(std::mem::take(&mut batch), &mut tasks);
                flush_rollups(std::mem::take(&mut rollups), &mut tasks);
                while tasks.len() >= IN_FLIGHT {
                    tasks.join_next().await.unwrap().unwrap().unwrap();
                }
            }
        }
    }
    if !batch.is_empty() {
        flush(batch, &mut tasks);
    }
    if !rollups.is_empty() {
        flush_rollups(rollups, &mut tasks);
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap().unwrap();
    }

    // A scheduled job with the most runs.
    let shown = 3;
    let id = job_id(shown);
    let newest = execution_id_for_fire(&id, 0, created + hour * 6 * runs_of(shown) as i32);
    (id.to_string(), newest)
}

struct Measured {
    page: String,
    median: Duration,
    p95: Duration,
    bytes: usize,
}

/// What a page is asked with: a link, or a form posted (`application/x-www-form-urlencoded`).
enum Ask {
    Get(String),
    Post(String, String),
}

async fn fetch(router: &Router, ask: &Ask, cookie: &str) -> (StatusCode, usize) {
    let request = match ask {
        Ask::Get(uri) => Request::get(uri)
            .header(header::COOKIE, cookie)
            .body(Body::empty()),
        Ask::Post(uri, form) => Request::post(uri)
            .header(header::COOKIE, cookie)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(form.clone())),
    }
    .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, body.len())
}

/// Every page rendered `samples` times, in turns (page 1, page 2, …, page 1, …) after three
/// warm-up rounds, so that a pause of the machine (another process, a checkpoint of the store's
/// log) falls on all pages alike rather than on whichever page was being measured.
async fn measure(
    router: &Router,
    cookie: &str,
    pages: &[(String, Ask)],
    samples: usize,
) -> Vec<Measured> {
    for _ in 0..3 {
        for (page, ask) in pages {
            let (status, _) = fetch(router, ask, cookie).await;
            assert_eq!(status, StatusCode::OK, "{page}");
        }
    }
    let mut times = vec![Vec::with_capacity(samples); pages.len()];
    let mut bytes = vec![0; pages.len()];
    for _ in 0..samples {
        for (i, (_, ask)) in pages.iter().enumerate() {
            let started = Instant::now();
            let (_, size) = fetch(router, ask, cookie).await;
            times[i].push(started.elapsed());
            bytes[i] = size;
        }
    }
    pages
        .iter()
        .zip(times)
        .zip(bytes)
        .map(|(((page, _), mut times), bytes)| {
            times.sort();
            // Nearest rank.
            let rank = |p: f64| times[((p * samples as f64).ceil() as usize).clamp(1, samples) - 1];
            Measured {
                page: page.clone(),
                median: rank(0.5),
                p95: rank(0.95),
                bytes,
            }
        })
        .collect()
}

fn main() {
    let scale = scale();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let missed = runtime.block_on(run(&scale));
    if missed {
        std::process::exit(1);
    }
}

async fn run(scale: &Scale) -> bool {
    let dir = TempDir::new("render-bench");
    let file = dir.join("sundial.db");
    let store = SqliteStore::open(&file).unwrap();
    let now = Utc::now();
    let started = Instant::now();
    let (job, execution) = seed(&store, scale, now).await;
    let seeded = started.elapsed();
    let size: u64 = ["sundial.db", "sundial.db-wal"]
        .iter()
        .filter_map(|name| std::fs::metadata(dir.join(name)).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "render bench ({} scale): {} jobs, {} executions, seeded in {:.1} s; database {:.0} MB",
        scale.name,
        scale.jobs,
        scale.executions,
        seeded.as_secs_f64(),
        size as f64 / 1e6
    );

    let app = Arc::new(App::new(
        store,
        Arc::new(SystemClock),
        AppConfig::new(b"render-bench-signing-secret-0123456789".to_vec()),
    ));
    let router = support::open_router(Arc::clone(&app));
    // A browser's session: the cookie the first page sets.
    let first = router
        .clone()
        .oneshot(Request::get("/").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let cookie = support::session_cookie(&first);
    let html = first.into_body().collect().await.unwrap().to_bytes();
    let csrf = String::from_utf8_lossy(&html)
        .split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();

    // The first read of the week's dashboard merges every job's buckets of each sealed hour and
    // stores the hour's summary: a cost paid once per hour, not per read, so it is reported
    // apart from the table (whose warm-up rounds come after it).
    let started = Instant::now();
    let (status, _) = fetch(
        &router,
        &Ask::Get(format!("/ui/dashboard?window={FIRST_READ_WINDOW}")),
        &cookie,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    println!(
        "dashboard, {FIRST_READ_WINDOW}, first read (summarizes its sealed hours): {:.2} ms",
        started.elapsed().as_secs_f64() * 1e3
    );

    // The shown job's history: 60 pauses and resumes with notes and 10 updates, through the use
    // cases (the seeding wrote no audit entries).
    let id = job.parse::<JobId>().unwrap();
    for n in 0..30 {
        let notes = format!("maintenance window {n}");
        app.set_active(&id, false, Some(notes)).await.unwrap();
        app.set_active(&id, true, None).await.unwrap();
    }
    let k: usize = job.trim_start_matches("job-").parse().unwrap();
    for n in 0..10 {
        let mut body = definition(k);
        body["jobName"] = json!(format!("Nightly export {k}, revision {n}"));
        body["timeoutSeconds"] = json!(30 + n);
        app.update_job(&id, &body).await.unwrap();
    }
    // The ledger's ranges in the job's zone: a day (the default), 200 days (each time on its own
    // row: the most the page lists unfolded) and 9,000 days (near the 10,000 times a ledger
    // lists at most; mostly before the job was created, folded).
    let zone = match app.get_job(&id).await.unwrap().definition.when() {
        When::Scheduled(schedule) => schedule.time_zone(),
        When::TriggeredOnly => chrono_tz::Tz::UTC,
    };
    let local = |t: DateTime<Utc>| t.with_timezone(&zone).format("%Y-%m-%dT%H:%M").to_string();
    let ledger = |days: i64| {
        format!(
            "/ui/jobs/{job}/occurrences?from={}&to={}",
            local(now - chrono::Duration::days(days)),
            local(now)
        )
    };

    let mut pages = Vec::new();
    for order in JobOrder::ALL {
        let sort = match order {
            JobOrder::Id => String::new(),
            other => format!("sort={}&", other.name()),
        };
        pages.push((
            format!("jobs by {}", order.name()),
            Ask::Get(format!("/?{sort}")),
        ));
        // Halfway down: the cursor after the first half of the jobs.
        let half = PageRequest::first((scale.jobs / 2).min(1_000));
        let cursor = app
            .list_jobs(&JobFilter::default(), order, &half)
            .await
            .unwrap()
            .next_cursor
            .unwrap();
        pages.push((
            format!("jobs by {}, page {}", order.name(), half.limit / 50 + 1),
            Ask::Get(format!("/?{sort}cursor={cursor}")),
        ));
    }
    pages.push((
        "jobs by label".into(),
        Ask::Get("/?label=team%3Ateam-3".into()),
    ));
    // The bulk form's first step for one team's jobs (a twentieth of the fleet): the dry run
    // over the label index and the confirmation page listing them.
    pages.push((
        format!("bulk confirm, {} jobs", scale.jobs.div_ceil(20).min(1_000)),
        Ask::Post(
            "/ui/bulk/jobs/preview".into(),
            format!("csrf={csrf}&scope=filter&label=team%3Ateam-3&action=pause&reason=freeze"),
        ),
    ));
    pages.push(("job".into(), Ask::Get(format!("/ui/jobs/{job}"))));
    pages.push((
        "job, stats of 7 days".into(),
        Ask::Get(format!("/ui/jobs/{job}?window=7d")),
    ));
    pages.push((
        "ledger, last day".into(),
        Ask::Get(format!("/ui/jobs/{job}/occurrences")),
    ));
    pages.push(("ledger, 200 days".into(), Ask::Get(ledger(200))));
    pages.push(("ledger, 9,000 days".into(), Ask::Get(ledger(9_000))));
    pages.push((
        "history".into(),
        Ask::Get(format!("/ui/jobs/{job}/history")),
    ));
    pages.push((
        "execution".into(),
        Ask::Get(format!("/ui/executions/{execution}")),
    ));
    pages.push(("create".into(), Ask::Get("/ui/jobs/new".into())));
    pages.push(("upcoming".into(), Ask::Get("/ui/upcoming".into())));
    for window in ["1h", "24h", "7d"] {
        pages.push((
            format!("dashboard, {window}"),
            Ask::Get(format!("/ui/dashboard?window={window}")),
        ));
    }
    pages.extend(previews(&app, &router, &cookie, &job).await);
    // What every page loads beside its HTML (cached for an hour).
    pages.push((
        "stylesheet".into(),
        Ask::Get("/ui/assets/console.css".into()),
    ));
    pages.push(("script".into(), Ask::Get("/ui/assets/console.js".into())));

    println!(
        "{:<28} {:>10} {:>10} {:>10}",
        "page", "median ms", "p95 ms", "bytes"
    );
    let mut missed = false;
    for m in measure(&router, &cookie, &pages, scale.samples).await {
        let over = m.p95 >= GOAL || m.bytes >= GOAL_BYTES;
        missed |= over;
        println!(
            "{:<28} {:>10.2} {:>10.2} {:>10}{}",
            m.page,
            m.median.as_secs_f64() * 1e3,
            m.p95.as_secs_f64() * 1e3,
            m.bytes,
            if over { "  OVER THE GOAL" } else { "" }
        );
    }
    println!(
        "goals (every page's p95 under {} ms, body under {} kB): {}",
        GOAL.as_millis(),
        GOAL_BYTES / 1000,
        if missed { "MISSED" } else { "met" }
    );
    missed
}

/// The preview pages, as their buttons post them: a backfill of the last day of a job firing
/// every minute (1,441 times) in mode `all` and in mode `missing` (which reads each time's runs
/// by id: 2,882 ids), and an edit of `job` that changes its cron.
async fn previews(
    app: &App<SqliteStore>,
    router: &Router,
    cookie: &str,
    job: &str,
) -> Vec<(String, Ask)> {
    let minutely: JobId = "every-minute".parse().unwrap();
    let body = json!({"jobName": "Every minute", "creator": "bench", "creatorName": "Bench",
        "request": [{"method": "POST", "url": "https://svc.example.com/tick"}],
        "schedule": {"cron": ["* * * * *"], "timeZone": "Europe/London"}});
    app.create_job(&minutely, &body).await.unwrap();
    // Paused, so that its 1,440 fires a day do not weigh on the upcoming page measured beside it.
    app.set_active(&minutely, false, Some("render bench".into()))
        .await
        .unwrap();
    let page = router
        .clone()
        .oneshot(
            Request::get("/ui/jobs/every-minute/backfill")
                .header(header::COOKIE, cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let html = String::from_utf8(
        page.into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap();
    let csrf = support::csrf_of(&html);
    let zone = chrono_tz::Europe::London;
    let now = Utc::now();
    let local = |t: DateTime<Utc>| t.with_timezone(&zone).format("%Y-%m-%dT%H:%M").to_string();
    let backfill = |mode: &str| {
        format!(
            "csrf={csrf}&start={}&end={}&mode={mode}&order=oldest&overlap=",
            support::urlencode(&local(now - chrono::Duration::days(1))),
            support::urlencode(&local(now))
        )
    };
    let mut definition = app
        .get_job(&job.parse().unwrap())
        .await
        .unwrap()
        .to_api_json();
    for state in ["state", "pausedNotes", "createdAt", "updatedAt"] {
        definition.as_object_mut().unwrap().remove(state);
    }
    definition["schedule"]["cron"] = json!(["15 7 * * MON-FRI"]);
    let edit = format!(
        "csrf={csrf}&definition={}",
        support::urlencode(&definition.to_string())
    );
    let preview = |uri: String, form: String| Ask::Post(uri, form);
    vec![
        (
            "backfill preview, day, all".into(),
            preview(
                "/ui/jobs/every-minute/backfill/preview".into(),
                backfill("all"),
            ),
        ),
        (
            "backfill preview, missing".into(),
            preview(
                "/ui/jobs/every-minute/backfill/preview".into(),
                backfill("missing"),
            ),
        ),
        (
            "edit preview".into(),
            preview(format!("/ui/jobs/{job}/edit/preview"), edit),
        ),
    ]
}
