//! Several fires of one job in one batch of dispatch messages, handled concurrently as the
//! Lambda dispatch handler and the local runner do, from one prefetched read of the job: the
//! overlap policy holds across them (issue 25).

use std::sync::atomic::{AtomicUsize, Ordering};

use sundial_ports::queue::QueueError;

use super::*;

/// A target that counts calls and the most in flight at once, holding each call for a while
/// (real time) so that concurrent admissions would overlap.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    most: AtomicUsize,
    calls: AtomicUsize,
}

/// A world whose target holds each call 50 ms and records the overlap.
fn world(flight: &Arc<InFlight>) -> World {
    let seen = Arc::clone(flight);
    World::with_configs(
        "2024-01-01T00:00:00Z",
        AppConfig::new(TEST_SECRET.to_vec()),
        aws_like,
        move |_, _| {
            let now = seen.now.fetch_add(1, Ordering::SeqCst) + 1;
            seen.most.fetch_max(now, Ordering::SeqCst);
            seen.calls.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(StdDuration::from_millis(50));
            seen.now.fetch_sub(1, Ordering::SeqCst);
            ok(json!({}))
        },
    )
}

/// Receives every visible dispatch message as one batch and handles them concurrently from one
/// prefetched read, as `sundial-aws`'s dispatch handler does. Answers how many there were.
async fn handle_one_batch(w: &World) -> usize {
    let queue = w.engine.dispatch_queue();
    let batch = queue.receive(10, StdDuration::from_secs(30)).await.unwrap();
    let mut prefetched = w
        .engine
        .prefetch_messages(QueueKind::Dispatch, batch.iter().map(|d| d.body.as_str()))
        .await;
    let mut tasks = tokio::task::JoinSet::new();
    for delivery in &batch {
        let engine = Arc::clone(&w.engine);
        let read = prefetched.take(&delivery.body);
        let delivery = delivery.clone();
        tasks.spawn(async move {
            let handled = engine
                .handle_message(QueueKind::Dispatch, &delivery.receipt, &delivery, read)
                .await;
            if handled == Handled::Done {
                engine
                    .dispatch_queue()
                    .ack(&delivery.receipt)
                    .await
                    .unwrap();
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.unwrap();
    }
    batch.len()
}

async fn fires_in_one_batch_keep_the_policy(overlap: &str) {
    let flight = Arc::new(InFlight::default());
    let w = world(&flight);
    w.create(
        "sec",
        json!({"schedule": {"cron": ["* * * * * *"]}, "overlap": overlap}),
    )
    .await;
    // A cold start: three fires become visible together and arrive in one batch.
    w.clock.advance(Duration::seconds(3));
    let handled = handle_one_batch(&w).await;
    assert!(handled >= 3, "{handled} fires in the batch");
    assert_eq!(
        flight.most.load(Ordering::SeqCst),
        1,
        "{overlap}: at most one run of the job in its call at once"
    );
    w.drain().await;
    let state = w.job_state("sec").await;
    assert!(
        state.running.is_empty(),
        "{overlap}: nothing is left running: {:?}",
        state.running
    );
    let before = flight.calls.load(Ordering::SeqCst);
    // Later fires still run, one a second.
    w.run_until("2024-01-01T00:00:13Z").await;
    let later = flight.calls.load(Ordering::SeqCst) - before;
    assert!(
        later >= 9,
        "{overlap}: {later} calls in the 10 s after the batch"
    );
    assert_eq!(flight.most.load(Ordering::SeqCst), 1);
    let executions = w.executions("sec").await;
    let processing = executions
        .iter()
        .filter(|e| e.state() == ExecutionState::Processing)
        .count();
    assert!(processing <= 1, "{overlap}: {processing} Processing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn skip_holds_for_fires_of_one_job_in_one_batch() {
    fires_in_one_batch_keep_the_policy("Skip").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn buffer_one_holds_for_fires_of_one_job_in_one_batch() {
    fires_in_one_batch_keep_the_policy("BufferOne").await;
}

type Hook =
    Box<dyn FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send>;

/// A memory queue that runs a hook once, right after the next batch of messages is sent: what
/// another process (a Lambda dispatch invocation) may do between a planner's send and its next
/// write.
struct HookQueue {
    inner: MemoryQueue,
    hook: Mutex<Option<Hook>>,
}

impl Queue for HookQueue {
    async fn send(&self, body: &str, delay: StdDuration) -> Result<(), QueueError> {
        self.inner.send(body, delay).await
    }

    async fn send_batch(&self, messages: &[(String, StdDuration)]) -> Result<(), QueueError> {
        self.inner.send_batch(messages).await?;
        let hook = self.hook.lock().unwrap().take();
        if let Some(hook) = hook {
            hook().await;
        }
        Ok(())
    }

    async fn receive(
        &self,
        max: usize,
        visibility: StdDuration,
    ) -> Result<Vec<sundial_ports::queue::Delivery>, QueueError> {
        self.inner.receive(max, visibility).await
    }

    async fn ack(&self, receipt: &str) -> Result<(), QueueError> {
        self.inner.ack(receipt).await
    }

    async fn postpone(&self, receipt: &str, delay: StdDuration) -> Result<(), QueueError> {
        self.inner.postpone(receipt, delay).await
    }

    async fn next_visible_in(&self) -> Result<Option<StdDuration>, QueueError> {
        self.inner.next_visible_in().await
    }

    async fn dead_letter(
        &self,
        delivery: &sundial_ports::queue::Delivery,
        reason: &str,
    ) -> Result<(), QueueError> {
        self.inner.dead_letter(delivery, reason).await
    }

    async fn dead_letters(&self, max: usize) -> Result<Vec<String>, QueueError> {
        self.inner.dead_letters(max).await
    }
}

type HookEngine = Engine<MemoryStore, HookQueue, Arc<ScriptedHttp>, RecordingPublisher>;

/// Handles every visible message of both queues.
async fn drain_hooked(engine: &HookEngine) {
    loop {
        let dispatch = engine.dispatch_queue();
        let batch = dispatch
            .receive(100, StdDuration::from_secs(30))
            .await
            .unwrap();
        let notify = engine.notify_queue();
        let notes = notify
            .receive(100, StdDuration::from_secs(30))
            .await
            .unwrap();
        if batch.is_empty() && notes.is_empty() {
            return;
        }
        for delivery in batch {
            let message: DispatchMessage = serde_json::from_str(&delivery.body).unwrap();
            if engine.dispatch(&message.execution_id).await.is_ok() {
                dispatch.ack(&delivery.receipt).await.unwrap();
            }
        }
        for delivery in notes {
            if engine.notify(&delivery.body).await.is_ok() {
                notify.ack(&delivery.receipt).await.unwrap();
            }
        }
    }
}

/// The planner of a job just created (the API's request on AWS) sends its fires' messages before
/// it takes the created fires out of the job's planned fires; dispatch, in another process, may
/// run the first fires to their end in between. Those fires must not be lined up and admitted
/// again by the planner's write: a finished run left holding the job's slot skips every later
/// fire (`Skip`) or strands the buffer (`BufferOne`).
async fn fires_run_before_the_planner_clears_them(overlap: &str) {
    let clock = Arc::new(ManualClock::new(t("2024-01-01T00:00:00Z")));
    let app = Arc::new(App::new(
        MemoryStore::new(),
        clock.clone(),
        AppConfig::new(TEST_SECRET.to_vec()),
    ));
    let http = Arc::new(ScriptedHttp {
        clock: clock.clone(),
        calls: Mutex::new(Vec::new()),
        respond: Box::new(|_, _| ok(json!({}))),
    });
    let mut config = EngineConfig {
        services: BTreeMap::from([("main".to_string(), "http://127.0.0.1:9".to_string())]),
        ..EngineConfig::default()
    };
    aws_like(&mut config);
    let engine: Arc<HookEngine> = Engine::new(
        app,
        HookQueue {
            inner: MemoryQueue::new(clock.clone()),
            hook: Mutex::new(None),
        },
        HookQueue {
            inner: MemoryQueue::new(clock.clone()),
            hook: Mutex::new(None),
        },
        http.clone(),
        RecordingPublisher::new(),
        config,
    );
    // Right after the create request's planner sends the fires, three seconds pass and dispatch
    // runs the fires then due, before the planner's next write.
    let hooked = Arc::clone(&engine);
    let moved = clock.clone();
    *engine.dispatch_queue().hook.lock().unwrap() = Some(Box::new(move || {
        Box::pin(async move {
            moved.advance(Duration::seconds(3));
            drain_hooked(&hooked).await;
        })
    }));
    let body = json!({
        "jobName": "sec", "creator": "c", "creatorName": "C",
        "schedule": {"cron": ["* * * * * *"]}, "overlap": overlap,
        "request": [{"method": "POST", "url": "service://main/run"}],
    });
    engine
        .app()
        .create_job(&JobId::parse("sec").unwrap(), &body)
        .await
        .unwrap();
    let early = http.calls.lock().unwrap().len();
    assert!(
        early >= 3,
        "{overlap}: {early} fires ran before the planner's write"
    );
    let state = engine
        .app()
        .get_job(&JobId::parse("sec").unwrap())
        .await
        .unwrap()
        .state;
    assert!(
        state.running.is_empty(),
        "{overlap}: no finished run holds the job's slot: {:?}",
        state.running
    );
    // Later fires still run, one a second.
    for _ in 0..10 {
        clock.advance(Duration::seconds(1));
        engine.tick().await.unwrap();
        drain_hooked(&engine).await;
    }
    let later = http.calls.lock().unwrap().len() - early;
    assert_eq!(later, 10, "{overlap}: calls in the 10 s after");
}

#[tokio::test]
async fn skip_fires_run_before_the_planner_clears_them_leave_the_slot_free() {
    fires_run_before_the_planner_clears_them("Skip").await;
}

#[tokio::test]
async fn buffer_one_fires_run_before_the_planner_clears_them_leave_the_slot_free() {
    fires_run_before_the_planner_clears_them("BufferOne").await;
}
