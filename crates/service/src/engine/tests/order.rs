//! Runs of one job pass the concurrency gate in order, whatever order their messages arrive in;
//! the catch-up window holds when a fire reaches dispatch late; a job id used again starts a new
//! history. Each scenario hands messages to dispatch newest first, as concurrent workers may.

use super::*;

fn job(id: &str) -> JobId {
    JobId::parse(id).unwrap()
}

/// Two quick triggers of a `Skip` job whose messages are handled newest first: the older runs,
/// the newer is skipped because the older holds the slot.
#[tokio::test]
async fn the_older_of_two_quick_triggers_runs_and_the_newer_is_skipped() {
    let mut w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.reverse = true;
    w.create(
        "quick",
        json!({"timer": {"period": "external"}, "async": true, "timeoutSeconds": 600}),
    )
    .await;
    let older = w
        .app()
        .trigger(&job("quick"), json!({}), None, Default::default())
        .await;
    let newer = w
        .app()
        .trigger(&job("quick"), json!({}), None, Default::default())
        .await;
    let (older, newer) = (older.unwrap(), newer.unwrap());
    w.drain().await;
    w.run_until("2024-01-01T00:00:03Z").await;
    let older = w.app().get_execution(&older.id()).await.unwrap();
    let newer = w.app().get_execution(&newer.id()).await.unwrap();
    assert_eq!(older.state(), ExecutionState::Processing);
    assert_eq!(newer.state(), ExecutionState::Skipped);
    let skipped = log_lines(&newer).join("\n");
    assert!(skipped.contains(&older.execution_id), "{skipped}");
    let state = w.job_state("quick").await;
    assert_eq!((state.overlap_skipped, state.action_count), (1, 1));
    assert!(state.waiting.is_empty(), "{:?}", state.waiting);
}

/// A job created in the second half of a second: its first fire is already due when the tick
/// plans it together with the next, whose message arrives early to be admitted ahead. Handled
/// newest first, the next fire must not take the slot: the first runs, the next is skipped.
#[tokio::test]
async fn a_fire_admitted_ahead_never_overtakes_an_earlier_fire() {
    let w = World::with_configs(
        "2024-01-01T00:00:58.600Z",
        AppConfig::new(TEST_SECRET.to_vec()),
        |config| config.admit_ahead = StdDuration::from_secs(1),
        |_, _| ok(json!({})),
    );
    w.create(
        "second-half",
        json!({"schedule": {"intervals": ["1s"]}, "async": true, "timeoutSeconds": 600}),
    )
    .await;
    w.engine.tick().await.unwrap();
    let worker = tokio::spawn(dispatch_visible_in(Arc::clone(&w.engine), true));
    wait_for_newest(&w, "second-half", ExecutionState::Scheduled).await;
    tokio::time::sleep(StdDuration::from_millis(50)).await;
    w.clock.set(t("2024-01-01T00:00:59Z"));
    worker.await.unwrap();
    w.drain().await;
    let executions = w.executions("second-half").await;
    let first = &executions[0];
    assert_eq!(first.scheduled_time, t("2024-01-01T00:00:58Z"));
    assert_eq!(
        first.state(),
        ExecutionState::Processing,
        "the first fire runs"
    );
    let second = &executions[1];
    assert_eq!(second.scheduled_time, t("2024-01-01T00:00:59Z"));
    assert_eq!(second.state(), ExecutionState::Skipped);
    assert_eq!(w.call_instants("/run"), ["2024-01-01T00:00:58Z"]);
}

/// A `BufferAll` backfill runs its times strictly in nominal order, even when its messages are
/// handled newest first.
#[tokio::test]
async fn a_buffer_all_backfill_runs_in_nominal_order() {
    let mut w = World::new("2024-01-01T12:00:30Z", |_, _| ok(json!({})));
    w.reverse = true;
    w.create(
        "ordered",
        json!({"schedule": {"cron": ["0 * * * *"]},
               "request": [{"method": "POST", "url": "service://main/run?at=${scheduledTime}"}]}),
    )
    .await;
    let body = json!({"startTime": "2024-01-01T00:00:00Z", "endTime": "2024-01-01T11:00:00Z",
                      "overlap": "BufferAll"});
    let count = w.app().backfill(&job("ordered"), &body).await.unwrap();
    assert_eq!(count.count, 12);
    w.run_until("2024-01-01T12:00:45Z").await;
    let hours: Vec<String> = w
        .calls()
        .iter()
        .map(|call| {
            let at = call.url.split("at=").nth(1).unwrap_or_default();
            at.get(11..13).unwrap_or_default().to_string()
        })
        .collect();
    let expected: Vec<String> = (0..12).map(|h| format!("{h:02}")).collect();
    assert_eq!(hours, expected);
    assert_eq!(states(&w.executions("ordered").await), ["Succeeded"; 12]);
}

/// A fire planned just before an outage reaches dispatch after it, later than the catch-up
/// window allows: it is counted as missed and not run. The next fire runs on time.
#[tokio::test]
async fn the_catch_up_window_is_applied_when_a_fire_reaches_dispatch() {
    let w = World::new("2024-01-01T00:00:50Z", |_, _| ok(json!({})));
    w.create(
        "late",
        json!({"schedule": {"cron": ["* * * * *"]}, "catchupWindow": "10s"}),
    )
    .await;
    w.clock.set(t("2024-01-01T00:00:59Z"));
    w.engine.tick().await.unwrap();
    // Down for 14 s: the 00:01:00 fire was planned and its message waits in the queue.
    w.clock.set(t("2024-01-01T00:01:13Z"));
    w.drain().await;
    w.run_until("2024-01-01T00:02:05Z").await;
    assert_eq!(w.call_instants("/run"), ["2024-01-01T00:02:00Z"]);
    let executions = w.executions("late").await;
    assert_eq!(states(&executions), ["Skipped", "Succeeded"]);
    let missed = log_lines(&executions[0]).join("\n");
    assert!(missed.contains("missed the catch-up window"), "{missed}");
    let state = w.job_state("late").await;
    assert_eq!(state.missed_catchup_window, 1);
    assert_eq!(state.overlap_skipped, 0);
}

/// Delete a job, create it again under the same id and trigger it with a key used before: a new
/// run is made and called, with the next execute number; the old run stays as it was.
#[tokio::test]
async fn a_job_created_again_under_a_deleted_id_starts_a_new_history() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    let body = json!({"timer": {"period": "external"}});
    w.create("again", body.clone()).await;
    let first = w
        .app()
        .trigger(&job("again"), json!({}), Some("key-1"), Default::default())
        .await
        .unwrap();
    w.drain().await;
    w.app().delete_job(&job("again")).await.unwrap();
    w.create("again", body).await;
    let second = w
        .app()
        .trigger(&job("again"), json!({}), Some("key-1"), Default::default())
        .await
        .unwrap();
    w.drain().await;
    assert_eq!(first.execution_id, "again~t~key-1");
    assert_eq!(second.execution_id, "again~i1~t~key-1");
    assert_eq!((first.execute_number, second.execute_number), (1, 2));
    assert_eq!(w.calls().len(), 2, "the new job's trigger ran");
    let executions = w.executions("again").await;
    assert_eq!(states(&executions), ["Succeeded", "Succeeded"]);
    assert_eq!(w.job_state("again").await.incarnation, 1);
}

/// A run of a deleted job still in flight is not taken over by a job created again under its
/// id: it ends `Cancelled`, and the new job's slot stays free.
#[tokio::test]
async fn a_run_of_a_deleted_job_is_not_adopted_by_its_successor() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    let body = json!({"timer": {"period": "external"}, "async": true, "timeoutSeconds": 30});
    w.create("successor", body.clone()).await;
    let old = w
        .app()
        .trigger(&job("successor"), json!({}), None, Default::default())
        .await
        .unwrap();
    w.drain().await;
    w.app().delete_job(&job("successor")).await.unwrap();
    w.create("successor", body).await;
    w.run_until("2024-01-01T00:00:40Z").await;
    let old = w.app().get_execution(&old.id()).await.unwrap();
    assert_eq!(old.state(), ExecutionState::Cancelled);
    let state = w.job_state("successor").await;
    assert!(state.running.is_empty(), "{:?}", state.running);
    assert_eq!(state.action_count, 0);
}

/// A job created at any moment of a second has its first fire planned in the request that
/// creates it: with no tick in between, the fire is sent on its second.
#[tokio::test]
async fn a_new_job_is_planned_at_once_and_its_first_fire_lands_on_its_second() {
    for offset in 0..20 {
        let start = t("2024-01-01T00:00:59Z") + Duration::milliseconds(offset * 50);
        let w = World::new(&start.to_rfc3339(), |_, _| ok(json!({})));
        w.create("fresh", json!({"schedule": {"cron": ["* * * * *"]}}))
            .await;
        w.clock.set(t("2024-01-01T00:01:00Z"));
        w.drain().await;
        let calls: Vec<DateTime<Utc>> = w.http.calls.lock().unwrap().iter().map(|c| c.0).collect();
        assert_eq!(
            calls,
            [t("2024-01-01T00:01:00Z")],
            "created at {start}: the first fire is called on its second, with no tick"
        );
    }
}

/// Resuming a paused job plans it at once too.
#[tokio::test]
async fn an_unpaused_job_is_planned_at_once() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create(
        "resumed",
        json!({"schedule": {"cron": ["* * * * *"]}, "active": 0}),
    )
    .await;
    w.clock.set(t("2024-01-01T00:00:59.400Z"));
    w.app()
        .set_active(&job("resumed"), true, Some("back".into()))
        .await
        .unwrap();
    w.clock.set(t("2024-01-01T00:01:00Z"));
    w.drain().await;
    assert_eq!(w.call_instants("/run"), ["2024-01-01T00:01:00Z"]);
}

/// A backfill larger than the window holds at most one window of runs in its job at a time, and
/// still runs every time once, in nominal order.
#[tokio::test]
async fn a_large_backfill_holds_one_window_at_a_time_and_runs_in_order() {
    let w = World::new("2024-01-02T00:00:30Z", |_, _| ok(json!({})));
    w.create(
        "big",
        json!({"schedule": {"cron": ["* * * * *"]}, "active": 0,
               "request": [{"method": "POST", "url": "service://main/run?at=${scheduledTime}"}]}),
    )
    .await;
    let body = json!({"startTime": "2024-01-01T00:00:00Z", "endTime": "2024-01-01T16:39:00Z",
                      "overlap": "BufferAll"});
    assert_eq!(
        w.app().backfill(&job("big"), &body).await.unwrap().count,
        1000
    );
    let mut most = 0;
    for _ in 0..30 {
        w.clock.advance(Duration::seconds(1));
        w.engine.tick().await.unwrap();
        let state = w.job_state("big").await;
        most = most.max(
            state.waiting.len()
                + state.pending_fires.len()
                + state.buffered.len()
                + state.running.len(),
        );
        w.drain().await;
        if w.calls().len() == 1000 {
            break;
        }
    }
    assert!(
        most > 0 && most <= sundial_core::plan::BACKFILL_WINDOW,
        "{most} runs outstanding at once"
    );
    let times: Vec<String> = w
        .calls()
        .iter()
        .map(|call| call.url.split("at=").nth(1).unwrap_or_default().to_string())
        .collect();
    let mut sorted = times.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(times.len(), 1000);
    assert_eq!(times, sorted, "in nominal order, each once");
    let state = w.job_state("big").await;
    assert!(state.pending_backfills.is_empty() && state.waiting.is_empty());
}

/// Where the platform bounds how long a worker holds an attempt (one Lambda invocation), the
/// lease ends with that bound, not with the attempt's `timeoutSeconds`: a run whose invocation
/// died is taken over within the bound + 30 s.
#[tokio::test]
async fn a_lease_ends_with_its_workers_hold_not_with_the_attempt() {
    type Seen = Arc<Mutex<Option<Option<DateTime<Utc>>>>>;
    let app: Arc<std::sync::OnceLock<Arc<App<MemoryStore>>>> = Arc::default();
    let during_call = Arc::clone(&app);
    let lease: Seen = Arc::default();
    let seen = Arc::clone(&lease);
    let w = World::with_configs(
        "2024-01-01T00:00:00Z",
        AppConfig::new(TEST_SECRET.to_vec()),
        |config| config.max_hold = Some(StdDuration::from_secs(100)),
        move |_, _| {
            use futures_util::FutureExt;
            let store = during_call.get().expect("app").store();
            let record = store
                .get_execution("held~t~k")
                .now_or_never()
                .unwrap()
                .unwrap()
                .unwrap();
            let execution = crate::records::decode_execution(&record).unwrap();
            *seen.lock().unwrap() = Some(execution.run.lease_until);
            ok(json!({}))
        },
    );
    assert!(app.set(Arc::clone(w.engine.app())).is_ok());
    w.create(
        "held",
        json!({"timer": {"period": "external"}, "async": true, "timeoutSeconds": 600}),
    )
    .await;
    w.app()
        .trigger(&job("held"), json!({}), Some("k"), Default::default())
        .await
        .unwrap();
    w.drain().await;
    let lease = *lease.lock().unwrap();
    assert_eq!(
        lease,
        Some(Some(t("2024-01-01T00:02:10Z"))),
        "100 s of hold + 30 s, not 600 s + 30 s"
    );
}

/// The runs of an `AllowAll` backfill, dispatched all at once as a busy worker pool does, do not
/// race each other for their job: those due take their slots in the write that creates them, and
/// those finishing together free them in a shared write. Before, each run wrote the job twice
/// (taking and freeing its slot) and most of those writes lost to the others and were retried,
/// then given up on (the message came back later): the backfill drained at a few dozen runs a
/// second. Every run still runs once, and no dispatch fails for contention.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_backfill_settles_its_runs_without_racing_for_its_job() {
    let w = World::new("2024-01-02T00:00:30Z", |_, _| ok(json!({})));
    w.create(
        "wide",
        json!({"schedule": {"cron": ["* * * * *"]}, "active": 0,
               "request": [{"method": "POST", "url": "service://main/run?at=${scheduledTime}"}]}),
    )
    .await;
    let body = json!({"startTime": "2024-01-01T00:00:00Z", "endTime": "2024-01-01T04:59:00Z"});
    assert_eq!(
        w.app().backfill(&job("wide"), &body).await.unwrap().count,
        300
    );
    let version_before = w.app().load(&job("wide")).await.unwrap().version;
    w.clock.advance(Duration::seconds(1));
    w.engine.tick().await.unwrap();
    let mut failures = 0;
    for _ in 0..50 {
        let batch = w
            .engine
            .dispatch_queue()
            .receive(1000, StdDuration::from_secs(30))
            .await
            .unwrap();
        if batch.is_empty() {
            break;
        }
        let results = futures_util::future::join_all(batch.iter().map(|delivery| {
            let message: DispatchMessage = serde_json::from_str(&delivery.body).unwrap();
            let engine = Arc::clone(&w.engine);
            async move { engine.dispatch(&message.execution_id).await }
        }))
        .await;
        for (delivery, result) in batch.iter().zip(results) {
            match result {
                Ok(()) => w
                    .engine
                    .dispatch_queue()
                    .ack(&delivery.receipt)
                    .await
                    .unwrap(),
                Err(_) => failures += 1,
            }
        }
    }
    let mut times: Vec<String> = w
        .calls()
        .iter()
        .map(|call| call.url.split("at=").nth(1).unwrap_or_default().to_string())
        .collect();
    times.sort();
    times.dedup();
    assert_eq!(times.len(), 300, "every time once");
    assert_eq!(failures, 0, "no dispatch gave up on contention");
    let stored = w.app().load(&job("wide")).await.unwrap();
    let job_writes = stored.version - version_before;
    // Planning: 300 / BACKFILL_FIRES_PER_PLAN writes at least; freeing slots: one write per
    // batch of runs finishing together (about 190 in all). Two writes per run (600) before, and
    // still one per run when each run freed its own slot.
    assert!(
        job_writes < 250,
        "{job_writes} writes of the job for 300 runs"
    );
    let state = stored.job.state;
    assert!(state.running.is_empty() && state.waiting.is_empty());
    assert!(state.pending_backfills.is_empty() && state.pending_fires.is_empty());
    assert_eq!(state.action_count, 300);
}

/// A run waiting in its job's line looks again by itself after a wait that grows with its place
/// in line (the decision on the run before it sends it sooner): a line that fell behind must not
/// load the store in proportion to its length. Here the chain of sends is broken (the runs' own
/// messages are dropped), so only the rechecks are left: the run next in line looks again in a
/// second, the one behind it in two.
#[tokio::test]
async fn a_run_further_back_in_line_looks_again_later() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.create(
        "line",
        json!({"timer": {"period": "external"}, "async": true, "timeoutSeconds": 600}),
    )
    .await;
    let mut ids = Vec::new();
    for _ in 0..4 {
        let created = w
            .app()
            .trigger(&job("line"), json!({}), None, Default::default())
            .await
            .unwrap();
        ids.push(created.execution_id);
    }
    w.engine.dispatch(&ids[0]).await.unwrap();
    let queue = w.engine.dispatch_queue();
    for delivery in queue.receive(100, StdDuration::from_secs(1)).await.unwrap() {
        queue.ack(&delivery.receipt).await.unwrap();
    }
    let state = w.job_state("line").await;
    assert_eq!(state.running, [ids[0].clone()], "the first took the slot");
    assert_eq!(state.waiting.len(), 3);
    w.engine.dispatch(&ids[3]).await.unwrap();
    w.engine.dispatch(&ids[2]).await.unwrap();
    assert_eq!(
        visible_at(&w, "2024-01-01T00:00:00.900Z").await,
        Vec::<String>::new()
    );
    assert_eq!(
        visible_at(&w, "2024-01-01T00:00:01Z").await,
        [ids[2].clone()]
    );
    assert_eq!(
        visible_at(&w, "2024-01-01T00:00:01.900Z").await,
        Vec::<String>::new()
    );
    assert_eq!(
        visible_at(&w, "2024-01-01T00:00:02Z").await,
        [ids[3].clone()]
    );
}

/// The runs whose dispatch messages are visible at `at` (the clock set there), received and
/// acknowledged.
async fn visible_at(w: &World, at: &str) -> Vec<String> {
    w.clock.set(t(at));
    let queue = w.engine.dispatch_queue();
    let batch = queue
        .receive(100, StdDuration::from_millis(100))
        .await
        .unwrap();
    let mut ids = Vec::new();
    for delivery in batch {
        queue.ack(&delivery.receipt).await.unwrap();
        let message: DispatchMessage = serde_json::from_str(&delivery.body).unwrap();
        ids.push(message.execution_id);
    }
    ids
}
