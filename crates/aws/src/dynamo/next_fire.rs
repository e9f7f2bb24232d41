//! The jobs list by next fire (`GET /jobs?sort=nextFire`, the console's "Next fire" order) on
//! DynamoDB, read from the wake-up index the tick reads, so it costs no write: since layout 5 a
//! job's wake-up is an entry of `timers` on the job's own item, sorted by `tdue` within each of
//! the index's shards.
//!
//! A page is a merge of the shards in due order (each read forward from the cursor's due, 100
//! entries at a time), keeping the `job:` entries; their jobs are read 100 at a time
//! (`BatchGetItem`) and filtered as the order by id filters. Then come the jobs with no wake-up
//! (paused, triggered only, finished), by id: the order by id's own read, less the jobs that have
//! one (their items and wake-up items read, 50 jobs at a time). The cost of a page grows with the
//! wake-ups before it that the filter rejects, never with the table: no `Scan`.
//!
//! A wake-up kept as an item of its own (`W#job:{id}`: set while its job did not exist, until the
//! tick moves it onto the job) places its job unless the job's item carries one, which is then the
//! newer and places it instead.

use std::collections::{BTreeSet, VecDeque};

use aws_sdk_dynamodb::types::AttributeValue;
use futures_util::FutureExt;
use sundial_ports::store::{
    cursor, JobFilter, JobOrder, JobRecord, Page, PageRequest, StoreError, MAX_PAGE,
};

use super::item::{job_record, millis, string};
use super::keys::{Item, WAKEUPS};
use super::own_wakeup::is_own_item;
use super::{looked_ahead, unavailable, DynamoStore, IndexQuery, BATCH_GET_KEYS};

/// The place of a job without a wake-up in the order: after every one with a wake-up, by id.
const NO_WAKEUP: i64 = i64::MAX;

/// How many entries one read of a shard takes.
const SHARD_PAGE: i32 = 100;

/// How many jobs without a wake-up are checked at once (two keys each in one `BatchGetItem`).
const CHECKED_AT_ONCE: usize = BATCH_GET_KEYS / 2;

/// A job's entry in the wake-up index.
struct Entry {
    due: i64,
    job_id: String,
    /// An item of its own (`W#job:{id}`), not the job's item.
    own: bool,
}

/// One shard of the index, read forward a page at a time.
struct Shard {
    query: IndexQuery,
    read: VecDeque<Entry>,
    next: Option<Item>,
    done: bool,
}

impl DynamoStore {
    /// [`list_jobs`](sundial_ports::store::JobStore::list_jobs) in [`JobOrder::NextFire`]: see the module documentation.
    pub(super) async fn list_jobs_by_next_fire(
        &self,
        filter: &JobFilter,
        request: &PageRequest,
    ) -> Result<Page<JobRecord>, StoreError> {
        let limit = request.limit.clamp(1, MAX_PAGE);
        let after = request
            .cursor
            .as_deref()
            .map(|c| cursor::parse_ordered_job(JobOrder::NextFire, c))
            .transpose()?;
        let want = limit + 1;
        let mut jobs = Vec::with_capacity(want);
        let without_wakeup_after = match &after {
            Some((NO_WAKEUP, job_id)) => Some(job_id.as_str()),
            _ => {
                self.jobs_by_wakeup(filter, after.as_ref(), want, &mut jobs)
                    .await?;
                None
            }
        };
        if jobs.len() < want {
            self.jobs_without_wakeup(filter, without_wakeup_after, want, &mut jobs)
                .await?;
        }
        let page = looked_ahead(jobs, limit, |(due, job): &(i64, JobRecord)| {
            cursor::ordered_job(JobOrder::NextFire, *due, &job.job_id)
        });
        Ok(Page {
            items: page.items.into_iter().map(|(_, job)| job).collect(),
            next_cursor: page.next_cursor,
        })
    }

    /// Adds to `out`, soonest first, the jobs `filter` accepts that have a wake-up after
    /// `after` (due, job id), until `out` holds `want`.
    async fn jobs_by_wakeup(
        &self,
        filter: &JobFilter,
        after: Option<&(i64, String)>,
        want: usize,
        out: &mut Vec<(i64, JobRecord)>,
    ) -> Result<(), StoreError> {
        let from = after.map_or(0, |(due, _)| *due);
        let mut shards: Vec<Shard> = (0..self.keys.shards())
            .map(|n| Shard {
                query: IndexQuery {
                    index: WAKEUPS,
                    pk_name: "tshard",
                    pk_value: self.keys.shard_name(n),
                    sort_condition: Some((
                        "tdue >= :from",
                        ":from",
                        AttributeValue::N(from.to_string()),
                    )),
                    forward: true,
                    start: None,
                },
                read: VecDeque::new(),
                next: None,
                done: false,
            })
            .collect();
        let mut placed = BTreeSet::new();
        loop {
            for shard in &mut shards {
                while shard.read.is_empty() && !shard.done {
                    self.read_shard(shard).await?;
                }
            }
            // The next entries in due order, up to a batch read of their jobs; a shard emptied
            // on the way is read again first, so the merge stays exact.
            let mut batch = Vec::new();
            while batch.len() < BATCH_GET_KEYS {
                let soonest = shards
                    .iter()
                    .enumerate()
                    .filter_map(|(n, s)| s.read.front().map(|e| ((e.due, &e.job_id), n)))
                    .min()
                    .map(|(_, n)| n);
                let Some(n) = soonest else { break };
                let Some(entry) = shards[n].read.pop_front() else {
                    break;
                };
                let refill = shards[n].read.is_empty() && !shards[n].done;
                if after.is_none_or(|(due, id)| (entry.due, &entry.job_id) > (*due, id)) {
                    batch.push(entry);
                }
                if refill {
                    break;
                }
            }
            if batch.is_empty() {
                if shards.iter().all(|s| s.done && s.read.is_empty()) {
                    return Ok(());
                }
                continue;
            }
            let keys = batch.iter().map(|e| self.keys.job(&e.job_id)).collect();
            for (entry, item) in batch.iter().zip(self.batch_get(keys).await?) {
                // A wake-up of a job that no longer exists, or an item of its own beside a job
                // that carries its wake-up (which places the job).
                let Some(item) = item else { continue };
                if entry.own && item.contains_key("tdue") {
                    continue;
                }
                if !placed.insert(entry.job_id.clone()) {
                    continue;
                }
                let job = job_record(&item)?;
                if filter.matches(&job) {
                    out.push((entry.due, job));
                    if out.len() >= want {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Reads the next page of `shard`, keeping its jobs' entries.
    async fn read_shard(&self, shard: &mut Shard) -> Result<(), StoreError> {
        let output = self
            .index_page(&shard.query, SHARD_PAGE, shard.next.take())
            .send()
            .boxed()
            .await
            .map_err(|e| unavailable("Query", e))?;
        for item in output.items.unwrap_or_default() {
            let key = string(&item, "key")?;
            if let Some(job_id) = key.strip_prefix("job:") {
                shard.read.push_back(Entry {
                    due: millis(&item, "tdue")?.timestamp_millis(),
                    job_id: job_id.to_owned(),
                    own: is_own_item(&item),
                });
            }
        }
        match output.last_evaluated_key {
            Some(key) if !key.is_empty() => shard.next = Some(key),
            _ => shard.done = true,
        }
        Ok(())
    }

    /// Adds to `out`, by id after `after`, the jobs `filter` accepts that have no wake-up, until
    /// `out` holds `want`.
    async fn jobs_without_wakeup(
        &self,
        filter: &JobFilter,
        after: Option<&str>,
        want: usize,
        out: &mut Vec<(i64, JobRecord)>,
    ) -> Result<(), StoreError> {
        let mut request = PageRequest {
            limit: CHECKED_AT_ONCE,
            cursor: after.map(cursor::job),
        };
        loop {
            let page = self.list_jobs_by_id(filter, &request).await?;
            // Each job's item (its wake-up, since layout 5) and its wake-up item of its own.
            let keys = page
                .items
                .iter()
                .flat_map(|job| {
                    [
                        self.keys.job(&job.job_id),
                        self.keys.wakeup(&format!("job:{}", job.job_id)),
                    ]
                })
                .collect();
            let found = self.batch_get(keys).await?;
            for (job, read) in page.items.into_iter().zip(found.chunks(2)) {
                let on_item = read
                    .first()
                    .and_then(Option::as_ref)
                    .is_some_and(|item| item.contains_key("tdue"));
                let own = read.get(1).is_some_and(Option::is_some);
                if on_item || own {
                    continue;
                }
                out.push((NO_WAKEUP, job));
                if out.len() >= want {
                    return Ok(());
                }
            }
            match page.next_cursor {
                Some(next) => request.cursor = Some(next),
                None => return Ok(()),
            }
        }
    }
}
