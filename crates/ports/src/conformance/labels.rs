//! The label and id-prefix filters of [`JobStore::list_jobs`](crate::store::JobStore::list_jobs),
//! executable: every adapter runs [`run_all`] beside the store suite.
//!
//! What it pins: a label filter selects exactly the jobs whose `definition.labels` hold every
//! `key: value` asked for, combined with the other filters and an id prefix, page by page; the
//! selection follows creates, updates (a label added, changed or removed, by `update_job` and by
//! `write_all`) and deletes; a time order is served correctly or refused as a whole.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};

use super::report;
use super::store::{create_jobs, job, job_with, walk, walk_order, Must};
use crate::store::audit::entry_id;
use crate::store::{
    AuditRecord, JobFilter, JobOrder, JobRecord, LabelSelector, PageRequest, Store, Write,
};

/// Runs every label case against a fresh store from `make_store`; panics naming the failures.
pub async fn run_all<S: Store, F: Fn() -> S>(make_store: F) {
    let mut failures: Vec<String> = Vec::new();
    run_cases!(
        make_store,
        failures,
        labels_filter_exactly,
        labels_filter_pages,
        labels_follow_updates_and_deletes,
        labels_follow_write_all,
        labels_follow_create_and_delete_in_a_batch,
        id_prefix_filter,
        labels_in_time_orders,
    );
    report("label", &failures);
}

fn with_labels(mut record: JobRecord, labels: &[(&str, &str)]) -> JobRecord {
    let map: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    match &mut record.document["definition"] {
        Value::Object(definition) if map.is_empty() => {
            definition.remove("labels");
        }
        Value::Object(definition) => {
            definition.insert("labels".to_owned(), Value::Object(map));
        }
        _ => panic!("fixture job has no definition object"),
    }
    record
}

fn sel(key: &str, value: &str) -> LabelSelector {
    LabelSelector {
        key: key.to_owned(),
        value: value.to_owned(),
    }
}

fn labelled_jobs() -> Vec<JobRecord> {
    vec![
        with_labels(
            job_with("pay-1", "alice", None, Some("billing"), "active"),
            &[("team", "payments"), ("tier", "1")],
        ),
        with_labels(
            job_with("pay-2", "bob", Some("pay-1"), None, "paused"),
            &[("team", "payments"), ("tier", "2")],
        ),
        with_labels(
            job_with("pay-3", "alice", Some("pay-1"), Some("billing"), "active"),
            &[("team", "payments")],
        ),
        with_labels(
            job_with("rep-1", "alice", None, None, "active"),
            &[("team", "reports"), ("tier", "1")],
        ),
        // A value that is another job's key, and a key that is another's value.
        with_labels(
            job_with("odd", "carol", None, None, "active"),
            &[("payments", "team"), ("url", "https://x/y?a=b:c")],
        ),
        job_with("plain", "alice", None, None, "active"),
    ]
}

fn ids(jobs: &[JobRecord]) -> Vec<&str> {
    jobs.iter().map(|j| j.job_id.as_str()).collect()
}

/// What `filter` must select from `jobs`: computed here, from the fixtures' own labels.
fn expected<'a>(jobs: &'a [JobRecord], filter: &JobFilter) -> Vec<&'a JobRecord> {
    let mut selected: Vec<&JobRecord> = jobs
        .iter()
        .filter(|j| {
            let labels = &j.document["definition"]["labels"];
            filter
                .labels
                .iter()
                .all(|s| labels.get(&s.key).and_then(Value::as_str) == Some(s.value.as_str()))
                && filter.state.as_ref().is_none_or(|v| *v == j.state)
                && filter.creator.as_ref().is_none_or(|v| *v == j.creator)
                && filter
                    .parent_job
                    .as_ref()
                    .is_none_or(|v| j.parent_job.as_ref() == Some(v))
                && filter
                    .service
                    .as_ref()
                    .is_none_or(|v| j.service.as_ref() == Some(v))
                && filter
                    .id_prefix
                    .as_ref()
                    .is_none_or(|p| j.job_id.starts_with(p.as_str()))
        })
        .collect();
    selected.sort_by(|a, b| a.job_id.cmp(&b.job_id));
    selected
}

fn label_filters() -> Vec<JobFilter> {
    let labels = |list: &[(&str, &str)]| JobFilter {
        labels: list.iter().map(|(k, v)| sel(k, v)).collect(),
        ..JobFilter::default()
    };
    vec![
        labels(&[("team", "payments")]),
        labels(&[("team", "reports")]),
        labels(&[("tier", "1")]),
        labels(&[("team", "payments"), ("tier", "1")]),
        labels(&[("tier", "1"), ("team", "payments")]),
        labels(&[("team", "payments"), ("team", "reports")]),
        labels(&[("team", "nobody")]),
        labels(&[("nokey", "payments")]),
        labels(&[("payments", "team")]),
        labels(&[("url", "https://x/y?a=b:c")]),
        labels(&[("url", "https://x/y?a=b")]),
        JobFilter {
            state: Some("active".to_owned()),
            ..labels(&[("team", "payments")])
        },
        JobFilter {
            creator: Some("alice".to_owned()),
            ..labels(&[("tier", "1")])
        },
        JobFilter {
            parent_job: Some("pay-1".to_owned()),
            ..labels(&[("team", "payments")])
        },
        JobFilter {
            service: Some("billing".to_owned()),
            ..labels(&[("team", "payments")])
        },
        JobFilter {
            id_prefix: Some("pay-".to_owned()),
            ..labels(&[("tier", "1")])
        },
        JobFilter {
            id_prefix: Some("rep".to_owned()),
            ..labels(&[("team", "payments")])
        },
    ]
}

async fn labels_filter_exactly<S: Store>(store: S) {
    let jobs = labelled_jobs();
    create_jobs(&store, &jobs).await;
    for filter in label_filters() {
        let want: Vec<JobRecord> = expected(&jobs, &filter).into_iter().cloned().collect();
        let page = store
            .list_jobs(&filter, JobOrder::Id, &PageRequest::first(100))
            .await
            .must(&format!("list_jobs({filter:?})"));
        assert_eq!(ids(&page.items), ids(&want), "list_jobs({filter:?})");
        assert_eq!(
            page.items, want,
            "list_jobs({filter:?}) returns the records as stored"
        );
        assert_eq!(
            page.next_cursor, None,
            "list_jobs({filter:?}) fits one page"
        );
    }
}

async fn labels_filter_pages<S: Store>(store: S) {
    let mut jobs = labelled_jobs();
    // Enough payments jobs, interleaved by id with others, that small pages cross many.
    for i in 0..7 {
        jobs.push(with_labels(
            job_with(&format!("pay-x{i}"), "dave", None, None, "active"),
            &[("team", if i % 2 == 0 { "payments" } else { "reports" })],
        ));
    }
    create_jobs(&store, &jobs).await;
    for filter in label_filters().into_iter().take(6) {
        let want: Vec<JobRecord> = expected(&jobs, &filter).into_iter().cloned().collect();
        for limit in 1..=want.len() + 1 {
            let (store, filter) = (&store, &filter);
            let got = walk("labelled list_jobs", limit, |page| async move {
                store.list_jobs(filter, JobOrder::Id, &page).await
            })
            .await;
            assert_eq!(
                ids(&got),
                ids(&want),
                "list_jobs({filter:?}) pages of {limit}"
            );
        }
    }
}

async fn list_ids<S: Store>(store: &S, filter: &JobFilter) -> Vec<String> {
    let page = store
        .list_jobs(filter, JobOrder::Id, &PageRequest::first(100))
        .await
        .must(&format!("list_jobs({filter:?})"));
    page.items.into_iter().map(|j| j.job_id).collect()
}

fn by(key: &str, value: &str) -> JobFilter {
    JobFilter {
        labels: vec![sel(key, value)],
        ..JobFilter::default()
    }
}

async fn labels_follow_updates_and_deletes<S: Store>(store: S) {
    let first = with_labels(job("j"), &[("team", "payments"), ("tier", "1")]);
    create_jobs(
        &store,
        &[
            first.clone(),
            with_labels(job("k"), &[("team", "payments")]),
        ],
    )
    .await;
    assert_eq!(list_ids(&store, &by("tier", "1")).await, ["j"]);

    // A value changed, a key removed, a key added.
    let second = JobRecord {
        updated_at: super::store::t(10),
        ..with_labels(first.clone(), &[("team", "reports"), ("env", "prod")])
    };
    assert_eq!(store.update_job(&second).await.must("update_job(j)"), 2);
    assert_eq!(
        list_ids(&store, &by("team", "payments")).await,
        ["k"],
        "old value"
    );
    assert_eq!(
        list_ids(&store, &by("team", "reports")).await,
        ["j"],
        "new value"
    );
    assert!(
        list_ids(&store, &by("tier", "1")).await.is_empty(),
        "removed key"
    );
    assert_eq!(
        list_ids(&store, &by("env", "prod")).await,
        ["j"],
        "added key"
    );

    // An update that changes no label keeps them; one that loses the race changes nothing.
    let third = JobRecord {
        version: 2,
        state: "paused".to_owned(),
        ..second.clone()
    };
    assert_eq!(store.update_job(&third).await.must("update_job(j, v2)"), 3);
    assert_eq!(
        list_ids(&store, &by("env", "prod")).await,
        ["j"],
        "labels kept"
    );
    let stale = with_labels(
        JobRecord {
            version: 2,
            ..third.clone()
        },
        &[("team", "x")],
    );
    assert!(
        store.update_job(&stale).await.is_err(),
        "stale update refused"
    );
    assert!(
        list_ids(&store, &by("team", "x")).await.is_empty(),
        "refused update indexed nothing"
    );
    assert_eq!(list_ids(&store, &by("team", "reports")).await, ["j"]);

    // All labels removed.
    let fourth = with_labels(
        JobRecord {
            version: 3,
            ..third.clone()
        },
        &[],
    );
    assert_eq!(store.update_job(&fourth).await.must("update_job(j, v3)"), 4);
    assert!(list_ids(&store, &by("team", "reports")).await.is_empty());
    assert!(list_ids(&store, &by("env", "prod")).await.is_empty());

    // Deleted, then created again with other labels: only the new ones select it.
    let fifth = with_labels(
        JobRecord {
            version: 4,
            ..fourth
        },
        &[("team", "payments")],
    );
    store.update_job(&fifth).await.must("update_job(j, v4)");
    assert_eq!(list_ids(&store, &by("team", "payments")).await, ["j", "k"]);
    assert!(store.delete_job("j").await.must("delete_job(j)"));
    assert_eq!(
        list_ids(&store, &by("team", "payments")).await,
        ["k"],
        "deleted job"
    );
    create_jobs(&store, &[with_labels(job("j"), &[("team", "ops")])]).await;
    assert_eq!(
        list_ids(&store, &by("team", "payments")).await,
        ["k"],
        "re-created job"
    );
    assert_eq!(list_ids(&store, &by("team", "ops")).await, ["j"]);
}

async fn labels_follow_write_all<S: Store>(store: S) {
    create_jobs(
        &store,
        &[with_labels(job("w"), &[("team", "payments")]), job("v")],
    )
    .await;
    let w = with_labels(job("w"), &[("team", "reports")]);
    let v = with_labels(job("v"), &[("team", "payments")]);
    store
        .write_all(&[
            Write::UpdateJob(&w),
            Write::UpdateJob(&v),
            Write::SetWakeup("job:w", None),
        ])
        .await
        .expect("write_all changing labels");
    assert_eq!(list_ids(&store, &by("team", "payments")).await, ["v"]);
    assert_eq!(list_ids(&store, &by("team", "reports")).await, ["w"]);
    // A batch that fails writes no label either.
    let stale = with_labels(job("w"), &[("team", "lost")]);
    let w2 = with_labels(
        JobRecord {
            version: 2,
            ..job("v")
        },
        &[("team", "lost")],
    );
    assert!(store
        .write_all(&[Write::UpdateJob(&w2), Write::UpdateJob(&stale)])
        .await
        .is_err());
    assert!(list_ids(&store, &by("team", "lost")).await.is_empty());
    assert_eq!(list_ids(&store, &by("team", "payments")).await, ["v"]);
}

/// A job created and deleted through `write_all` (as the API does, each beside its audit entry)
/// is selected by its labels exactly while it exists; a batch that fails changes no selection.
async fn labels_follow_create_and_delete_in_a_batch<S: Store>(store: S) {
    let at = chrono::DateTime::from_timestamp_millis(1_700_000_000_000).unwrap();
    let entry = |job_id: &str, version: u64, action: &str| AuditRecord {
        job_id: job_id.to_owned(),
        entry_id: entry_id(at, version, 1),
        at,
        document: json!({"action": action, "version": version}),
    };
    let c = with_labels(job("c"), &[("team", "payments"), ("tier", "1")]);
    store
        .write_all(&[
            Write::CreateJob(&c),
            Write::AppendAudit(&entry("c", 1, "create")),
        ])
        .await
        .expect("CreateJob of a labelled job + its entry");
    assert_eq!(list_ids(&store, &by("team", "payments")).await, ["c"]);
    assert_eq!(list_ids(&store, &by("tier", "1")).await, ["c"]);

    // A taken id, and a creation whose batch fails elsewhere: no label of theirs is selectable.
    let taken = with_labels(job("c"), &[("team", "lost")]);
    assert!(store
        .write_all(&[
            Write::CreateJob(&taken),
            Write::AppendAudit(&entry("c", 7, "create")),
        ])
        .await
        .is_err());
    let d = with_labels(job("d"), &[("team", "lost")]);
    let stale = JobRecord {
        version: 9,
        ..c.clone()
    };
    assert!(store
        .write_all(&[Write::CreateJob(&d), Write::UpdateJob(&stale)])
        .await
        .is_err());
    assert!(list_ids(&store, &by("team", "lost")).await.is_empty());
    assert_eq!(store.get_job("d").await.expect("get_job(d)"), None);

    // A deletion at a stale version deletes nothing; at the version read, the job and its labels.
    assert!(store
        .write_all(&[
            Write::DeleteJob("c", 5),
            Write::AppendAudit(&entry("c", 6, "delete")),
        ])
        .await
        .is_err());
    assert_eq!(list_ids(&store, &by("team", "payments")).await, ["c"]);
    store
        .write_all(&[
            Write::DeleteJob("c", 1),
            Write::AppendAudit(&entry("c", 2, "delete")),
        ])
        .await
        .expect("DeleteJob of a labelled job + its entry");
    assert_eq!(store.get_job("c").await.expect("get_job(c)"), None);
    assert!(list_ids(&store, &by("team", "payments")).await.is_empty());
    assert!(list_ids(&store, &by("tier", "1")).await.is_empty());

    // The id is free again, its old labels gone with it.
    let again = with_labels(job("c"), &[("team", "reports")]);
    store
        .write_all(&[
            Write::CreateJob(&again),
            Write::AppendAudit(&entry("c", 3, "create")),
        ])
        .await
        .expect("CreateJob again");
    assert!(list_ids(&store, &by("team", "payments")).await.is_empty());
    assert_eq!(list_ids(&store, &by("team", "reports")).await, ["c"]);
}

async fn id_prefix_filter<S: Store>(store: S) {
    let jobs: Vec<JobRecord> = ["a", "a-1", "a10", "a9", "A", "ab", "b", "b-a"]
        .into_iter()
        .map(job)
        .chain([job_with("a-2", "bob", None, Some("svc"), "paused")])
        .collect();
    create_jobs(&store, &jobs).await;
    let prefix = |p: &str| JobFilter {
        id_prefix: Some(p.to_owned()),
        ..JobFilter::default()
    };
    for (filter, want) in [
        (prefix("a"), vec!["a", "a-1", "a-2", "a10", "a9", "ab"]),
        (prefix("a-"), vec!["a-1", "a-2"]),
        (prefix("A"), vec!["A"]),
        (prefix("b-a"), vec!["b-a"]),
        (prefix("c"), vec![]),
        (
            JobFilter {
                creator: Some("bob".to_owned()),
                ..prefix("a")
            },
            vec!["a-2"],
        ),
        (
            JobFilter {
                state: Some("active".to_owned()),
                ..prefix("a-")
            },
            vec!["a-1"],
        ),
    ] {
        for limit in 1..=want.len() + 1 {
            let (store, filter) = (&store, &filter);
            let got = walk("list_jobs by prefix", limit, |page| async move {
                store.list_jobs(filter, JobOrder::Id, &page).await
            })
            .await;
            assert_eq!(ids(&got), want, "list_jobs({filter:?}) pages of {limit}");
        }
    }
}

async fn labels_in_time_orders<S: Store>(store: S) {
    let jobs = labelled_jobs();
    create_jobs(&store, &jobs).await;
    for (i, id) in ["rep-1", "pay-3", "pay-1"].iter().enumerate() {
        let at = super::store::t(1_000 * (i as i64 + 1));
        store
            .set_wakeup(&format!("job:{id}"), Some(at))
            .await
            .must("set_wakeup");
    }
    let filter = by("team", "payments");
    for (order, want) in [
        (JobOrder::NextFire, vec!["pay-3", "pay-1", "pay-2"]),
        (JobOrder::LastRun, vec!["pay-1", "pay-2", "pay-3"]),
    ] {
        if let Some(got) = walk_order(&store, &filter, order, 1..=4).await {
            assert_eq!(got, want, "list_jobs({filter:?}, {order:?})");
        }
        let prefixed = JobFilter {
            id_prefix: Some("pay-".to_owned()),
            ..JobFilter::default()
        };
        if let Some(got) = walk_order(&store, &prefixed, order, 1..=4).await {
            assert_eq!(got, want, "list_jobs({prefixed:?}, {order:?})");
        }
    }
}
