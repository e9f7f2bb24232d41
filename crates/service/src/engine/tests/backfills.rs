//! Issue 15 item 6: backfill modes (`all`, `missing`, `failed`), `reverse`, several `ranges` in
//! one request and `dryRun`, under simulated time.

use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

fn job(id: &str) -> JobId {
    JobId::parse(id).unwrap()
}

/// The hours of the calls to `/run`, in call order.
fn hours_called(w: &World) -> Vec<String> {
    w.calls()
        .iter()
        .filter_map(|call| {
            call.url
                .split("at=")
                .nth(1)
                .map(|at| at[11..13].to_string())
        })
        .collect()
}

/// An hourly job whose target fails the 21:00 and 23:00 runs until it is mended. A backfill of
/// 20:00 … 23:00 runs all four (two end `Terminated`); `failed`, in reverse under `BufferAll`,
/// runs 23:00 then 21:00 again as their second runs; `missing` over 18:00 … 23:00 runs 18:00 and
/// 19:00 only. A dry run says the same and creates nothing.
#[tokio::test]
async fn backfill_modes_run_what_failed_then_what_is_missing() {
    let mended = Arc::new(AtomicBool::new(false));
    let target = mended.clone();
    let w = World::new("2024-01-01T00:00:30Z", move |request, _| {
        let bad = request.url.contains("T21:") || request.url.contains("T23:");
        if bad && !target.load(Ordering::SeqCst) {
            status(500)
        } else {
            ok(json!({}))
        }
    });
    w.create(
        "hourly",
        json!({
            "schedule": {"cron": ["0 * * * *"]},
            "request": [{"method": "POST", "url": "service://main/run?at=${scheduledTime}"}],
        }),
    )
    .await;
    let first = json!({"startTime": "2023-12-31T20:00:00Z", "endTime": "2023-12-31T23:00:00Z"});
    assert_eq!(
        w.app()
            .backfill(&job("hourly"), &first)
            .await
            .unwrap()
            .count,
        4
    );
    w.run_until("2024-01-01T00:00:35Z").await;
    assert_eq!(hours_called(&w), ["20", "21", "22", "23"]);
    let runs = w.executions("hourly").await;
    assert_eq!(
        states(&runs),
        ["Succeeded", "Terminated", "Succeeded", "Terminated"]
    );
    assert_eq!(runs[0].execution_id, "hourly~20231231T200000Z~r1");

    // What a `failed` backfill would run, without running it.
    let failed = json!({"startTime": "2023-12-31T18:00:00Z", "endTime": "2023-12-31T23:00:00Z",
                        "mode": "failed", "reverse": true, "overlap": "BufferAll"});
    let mut dry = failed.clone();
    dry["dryRun"] = json!(true);
    let report = w.app().backfill(&job("hourly"), &dry).await.unwrap();
    assert_eq!(
        (report.count, report.dry_run, report.times),
        (
            2,
            true,
            vec![
                "2023-12-31T23:00:00+00:00".to_string(),
                "2023-12-31T21:00:00+00:00".to_string()
            ]
        )
    );
    assert!(
        w.job_state("hourly").await.pending_backfills.is_empty(),
        "a dry run records nothing"
    );
    w.run_until("2024-01-01T00:00:37Z").await;
    assert_eq!(w.calls().len(), 4, "and runs nothing");

    mended.store(true, Ordering::SeqCst);
    assert_eq!(
        w.app()
            .backfill(&job("hourly"), &failed)
            .await
            .unwrap()
            .count,
        2
    );
    w.run_until("2024-01-01T00:00:40Z").await;
    assert_eq!(
        hours_called(&w)[4..],
        ["23", "21"],
        "newest first, in order"
    );
    let reruns: Vec<(String, u64, &str)> = w
        .executions("hourly")
        .await
        .iter()
        .skip(4)
        .map(|e| (e.execution_id.clone(), e.execute_number, e.state().name()))
        .collect();
    assert_eq!(
        reruns,
        [
            ("hourly~20231231T230000Z~r2".to_string(), 5, "Succeeded"),
            ("hourly~20231231T210000Z~r2".to_string(), 6, "Succeeded"),
        ]
    );

    // Nothing failed any more; 18:00 and 19:00 never ran.
    let mut again = failed.clone();
    again["dryRun"] = json!(true);
    assert_eq!(
        w.app()
            .backfill(&job("hourly"), &again)
            .await
            .unwrap()
            .count,
        0
    );
    let missing = json!({"startTime": "2023-12-31T18:00:00Z", "endTime": "2023-12-31T23:00:00Z", "mode": "missing"});
    assert_eq!(
        w.app()
            .backfill(&job("hourly"), &missing)
            .await
            .unwrap()
            .count,
        2
    );
    w.run_until("2024-01-01T00:00:43Z").await;
    assert_eq!(hours_called(&w)[6..], ["18", "19"]);
    let last = w.executions("hourly").await;
    assert_eq!(last.len(), 8);
    assert_eq!(last[6].execution_id, "hourly~20231231T180000Z~r1");
}

/// A `missing` backfill of times the schedule ran: it finds their scheduled runs by id and runs
/// only the time that was missed during an outage.
#[tokio::test]
async fn a_missing_backfill_fills_the_gap_an_outage_left() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create(
        "minutely",
        json!({
            "schedule": {"cron": ["* * * * *"]},
            "request": [{"method": "POST", "url": "service://main/run?at=${scheduledTime}"}],
        }),
    )
    .await;
    w.run_until("2024-01-01T00:02:05Z").await;
    // Down from 00:02:05 to 00:04:30: 00:03 and 00:04 are missed (the window is one minute).
    w.clock.set(t("2024-01-01T00:04:30Z"));
    w.run_until("2024-01-01T00:05:05Z").await;
    let ran: Vec<String> = w
        .executions("minutely")
        .await
        .iter()
        .map(|e| e.execution_id.clone())
        .collect();
    assert_eq!(
        ran,
        [
            "minutely~20240101T000100Z",
            "minutely~20240101T000200Z",
            "minutely~20240101T000400Z",
            "minutely~20240101T000500Z"
        ]
    );
    let body = json!({"startTime": "2024-01-01T00:01:00Z", "endTime": "2024-01-01T00:05:00Z", "mode": "missing"});
    let report = w.app().backfill(&job("minutely"), &body).await.unwrap();
    assert_eq!(report.count, 1);
    w.run_until("2024-01-01T00:05:10Z").await;
    let runs = w.executions("minutely").await;
    assert_eq!(
        runs.last().unwrap().execution_id,
        "minutely~20240101T000300Z~r1"
    );
    assert_eq!(states(&runs), ["Succeeded"; 5]);
}

/// Several ranges in one request, in reverse: the newest range first, each newest first.
#[tokio::test]
async fn one_request_backfills_several_ranges() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create(
        "ranged",
        json!({
            "schedule": {"cron": ["0 * * * *"]},
            "request": [{"method": "POST", "url": "service://main/run?at=${scheduledTime}"}],
        }),
    )
    .await;
    let body = json!({"ranges": [
        {"startTime": "2023-12-30T01:00:00Z", "endTime": "2023-12-30T02:00:00Z"},
        {"startTime": "2023-12-31T22:00:00Z", "endTime": "2023-12-31T23:00:00Z"},
    ], "reverse": true, "overlap": "BufferAll"});
    assert_eq!(
        w.app().backfill(&job("ranged"), &body).await.unwrap().count,
        4
    );
    assert_eq!(w.job_state("ranged").await.pending_backfills.len(), 2);
    w.run_until("2024-01-01T00:00:35Z").await;
    let calls: Vec<String> = w
        .calls()
        .iter()
        .filter_map(|c| c.url.split("at=").nth(1).map(|at| at[..13].to_string()))
        .collect();
    assert_eq!(
        calls,
        [
            "2023-12-31T23",
            "2023-12-31T22",
            "2023-12-30T02",
            "2023-12-30T01"
        ]
    );
}
