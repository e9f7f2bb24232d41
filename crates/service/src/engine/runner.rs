//! The engine in one process: the loops `sundial serve` runs where AWS would run Lambdas.
//!
//! A tick every second (on AWS: once a minute, with a longer horizon), and pollers for the
//! dispatch and notify queues that run each message in its own task, up to a concurrency limit,
//! so a slow target never holds up other jobs. What becomes of a message whose step fails —
//! back after a backoff, or to the dead letters at once — is decided by
//! [`Engine::handle_message`], as on Lambda. Pollers sleep until the queue says its next message
//! becomes visible, or until the engine sends one, whichever is first: a delayed fire is picked up
//! on its millisecond instead of on the next poll.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

use super::{Engine, Handled, QueueKind, Run};
use sundial_ports::cause::chain;
use sundial_ports::events::EventPublisher;
use sundial_ports::http::HttpClient;
use sundial_ports::queue::{Delivery, Queue};
use sundial_ports::store::Store;

/// Settings of the local loops.
#[derive(Clone, Debug)]
pub struct RunnerOptions {
    /// How often the tick runs.
    pub tick_every: Duration,
    /// How many messages run at once, per queue. Runs admitted ahead of their fire time count
    /// while they wait for it, so this is sized for a second's burst of fires.
    pub concurrency: usize,
    /// How long a received message stays hidden before another poller may take it.
    pub visibility: Duration,
    /// The longest a poller sleeps without looking at its queue.
    pub max_idle: Duration,
}

impl Default for RunnerOptions {
    fn default() -> Self {
        RunnerOptions {
            tick_every: Duration::from_secs(1),
            concurrency: 1024,
            visibility: Duration::from_secs(30),
            max_idle: Duration::from_millis(500),
        }
    }
}

/// Runs tick, dispatch and notify until `shutdown` resolves, then waits for running messages to
/// finish (a message cut short would only be delivered again).
pub async fn run<S, Q, H, P>(
    engine: Arc<Engine<S, Q, H, P>>,
    options: RunnerOptions,
    shutdown: impl Future<Output = ()> + Send,
) where
    S: Store,
    Q: Queue,
    H: HttpClient,
    P: EventPublisher,
{
    let (stop_tx, stop_rx) = watch::channel(false);
    engine
        .app()
        .liveness()
        .engine_started(engine.app().now(), options.tick_every);
    let mut loops = JoinSet::new();
    loops.spawn(tick_loop(
        Arc::clone(&engine),
        options.clone(),
        stop_rx.clone(),
    ));
    for kind in QueueKind::ALL {
        loops.spawn(poll_loop(
            Arc::clone(&engine),
            kind,
            options.clone(),
            stop_rx.clone(),
        ));
    }
    shutdown.await;
    let _ = stop_tx.send(true);
    while loops.join_next().await.is_some() {}
}

async fn tick_loop<S, Q, H, P>(
    engine: Arc<Engine<S, Q, H, P>>,
    options: RunnerOptions,
    mut stop: watch::Receiver<bool>,
) where
    S: Store,
    Q: Queue,
    H: HttpClient,
    P: EventPublisher,
{
    let mut every = tokio::time::interval(options.tick_every);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.changed() => return,
        }
        match engine.tick().await {
            Ok(_) => engine.app().liveness().tick_ran(engine.app().now()),
            Err(e) => tracing::warn!(error = %chain(&e), "tick failed; the next tick retries"),
        }
    }
}

async fn poll_loop<S, Q, H, P>(
    engine: Arc<Engine<S, Q, H, P>>,
    kind: QueueKind,
    options: RunnerOptions,
    mut stop: watch::Receiver<bool>,
) where
    S: Store,
    Q: Queue,
    H: HttpClient,
    P: EventPublisher,
{
    let permits = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let sent = engine.sent_signal();
    let mut running = JoinSet::new();
    loop {
        if *stop.borrow() {
            break;
        }
        // Register interest before looking, so a message sent meanwhile still wakes us.
        let notified = sent.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if kind == QueueKind::Dispatch {
            engine.app().liveness().dispatch_ran(engine.app().now());
        }
        let free = permits.available_permits();
        let queue = engine.queue(kind);
        let deliveries = if free == 0 {
            Vec::new()
        } else {
            match queue.receive(free.min(128), options.visibility).await {
                Ok(deliveries) => deliveries,
                Err(e) => {
                    tracing::warn!(queue = kind.name(), error = %chain(&e), "receiving failed");
                    Vec::new()
                }
            }
        };
        while running.try_join_next().is_some() {}
        if deliveries.is_empty() {
            let idle = if free == 0 {
                Duration::from_millis(5)
            } else {
                match queue.next_visible_in().await {
                    Ok(Some(wait)) => wait.min(options.max_idle),
                    _ => options.max_idle,
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(idle) => {}
                _ = &mut notified => {}
                _ = stop.changed() => break,
            }
            continue;
        }
        // A batch of dispatch messages reads its executions and jobs in one store read.
        let mut prefetched = engine
            .prefetch_messages(kind, deliveries.iter().map(|d| d.body.as_str()))
            .await;
        for delivery in deliveries {
            let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
                break;
            };
            let engine = Arc::clone(&engine);
            let read = prefetched.take(&delivery.body);
            running.spawn(async move {
                handle(&engine, kind, delivery, read).await;
                drop(permit);
            });
        }
    }
    while running.join_next().await.is_some() {}
}

/// Runs one message ([`Engine::handle_message`]) and acknowledges it when done; a failed message
/// was already set to come back, a poison one moved to the dead letters.
async fn handle<S, Q, H, P>(
    engine: &Engine<S, Q, H, P>,
    kind: QueueKind,
    delivery: Delivery,
    read: Option<Option<Run>>,
) where
    S: Store,
    Q: Queue,
    H: HttpClient,
    P: EventPublisher,
{
    let handled = engine
        .handle_message(kind, &delivery.receipt, &delivery, read)
        .await;
    if handled == Handled::Done {
        if let Err(e) = engine.queue(kind).ack(&delivery.receipt).await {
            tracing::debug!(queue = kind.name(), error = %chain(&e), "ack failed; the message comes back and is a no-op");
        }
    }
}
