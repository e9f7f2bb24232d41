//! Searching executions across jobs on DynamoDB: the sparse, keys-only `runs` index.
//!
//! | record    | `rshard` / `rtime`                                  | projection |
//! |-----------|-----------------------------------------------------|------------|
//! | execution | `{ns}R{hash(id) % 8}` / `{scheduled ms:016}#{id}`   | keys only  |
//!
//! A page queries every shard newest first (one `Query` each, at most `limit + 1` keys), the
//! scheduled range and the cursor as its sort-key condition, merges what they return, keeps the
//! newest `limit` keys, reads those runs with `BatchGetItem` (strongly consistent: a run whose state
//! changed since the index saw it is judged as it is now), reads their jobs too when the query
//! filters by label or creator, and keeps what [`ExecutionQuery::matches`]. So a page costs
//! [`RUN_SHARDS`] small queries and one or two batch reads whatever the filters, never a `Scan`, and
//! a selective filter leaves pages short (even empty) with a cursor: only a page without a cursor
//! ends the listing.

use aws_sdk_dynamodb::types::AttributeValue;
use futures_util::FutureExt;
use sundial_ports::store::{
    cursor, ExecutionQuery, ExecutionRecord, Page, PageRequest, StoreError, MAX_PAGE,
};

use super::item::{execution_record, job_record, string};
use super::keys::{parse_run_sort, run_sort, run_sort_bound, RUNS, RUN_SHARDS};
use super::{unavailable, DynamoStore};

impl DynamoStore {
    /// One page of the runs `query` selects; see the module documentation.
    pub(super) async fn search(
        &self,
        query: &ExecutionQuery,
        request: &PageRequest,
    ) -> Result<Page<ExecutionRecord>, StoreError> {
        let after = request
            .cursor
            .as_deref()
            .map(cursor::parse_search)
            .transpose()?;
        let limit = request.limit.clamp(1, MAX_PAGE);
        // The sort-key range: `lo <= rtime <= hi`, then `rtime < hi` by dropping `hi` itself
        // (the cursor's own key, or a bound no key equals).
        let lo = query
            .scheduled
            .since
            .map(|at| run_sort_bound(at.timestamp_millis()));
        let mut hi = query
            .scheduled
            .until
            .map(|at| run_sort_bound(at.timestamp_millis()));
        if let Some((ms, id)) = &after {
            let key = run_sort(*ms, id);
            hi = Some(match hi {
                Some(bound) if bound < key => bound,
                _ => key,
            });
        }
        if let (Some(lo), Some(hi)) = (&lo, &hi) {
            if lo >= hi {
                return Ok(Page {
                    items: Vec::new(),
                    next_cursor: None,
                });
            }
        }
        let mut keys: Vec<String> = Vec::new();
        let mut more = false;
        for shard in 0..RUN_SHARDS {
            let (found, truncated) = self
                .query_runs(shard, lo.as_deref(), hi.as_deref(), limit + 1)
                .await?;
            more |= truncated;
            keys.extend(found.into_iter().filter(|k| Some(k) != hi.as_ref()));
        }
        keys.sort_unstable_by(|a, b| b.cmp(a));
        more |= keys.len() > limit;
        keys.truncate(limit);
        let runs: Vec<(i64, String)> = keys
            .iter()
            .map(|k| {
                parse_run_sort(k).ok_or_else(|| {
                    StoreError::corrupt(format!("runs index key {k:?} does not decode"), None)
                })
            })
            .collect::<Result<_, _>>()?;
        let next_cursor = more
            .then(|| runs.last().map(|(ms, id)| cursor::search(*ms, id)))
            .flatten();
        let items = self
            .batch_get(runs.iter().map(|(_, id)| self.keys.execution(id)).collect())
            .await?;
        let records: Vec<ExecutionRecord> = items
            .iter()
            .flatten()
            .map(execution_record)
            .collect::<Result<_, _>>()?;
        let jobs = if query.needs_job() {
            let ids: Vec<String> = records.iter().map(|e| e.job_id.clone()).collect();
            let found = self
                .batch_get(ids.iter().map(|id| self.keys.job(id)).collect())
                .await?;
            found
                .iter()
                .map(|item| item.as_ref().map(job_record).transpose())
                .collect::<Result<Vec<_>, _>>()?
        } else {
            vec![None; records.len()]
        };
        let items = records
            .into_iter()
            .zip(jobs)
            .filter(|(run, job)| query.matches(run, job.as_ref()))
            .map(|(run, _)| run)
            .collect();
        Ok(Page { items, next_cursor })
    }

    /// Up to `want` `rtime`s of shard `shard` in `[lo, hi]`, newest first, and whether the shard
    /// may hold more.
    async fn query_runs(
        &self,
        shard: u32,
        lo: Option<&str>,
        hi: Option<&str>,
        want: usize,
    ) -> Result<(Vec<String>, bool), StoreError> {
        let mut request = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(RUNS)
            .expression_attribute_values(":pk", AttributeValue::S(self.keys.run_shard_name(shard)))
            .scan_index_forward(false)
            .limit(i32::try_from(want).unwrap_or(i32::MAX));
        let condition = match (lo, hi) {
            (None, None) => "rshard = :pk",
            (Some(_), None) => "rshard = :pk AND rtime >= :lo",
            (None, Some(_)) => "rshard = :pk AND rtime <= :hi",
            (Some(_), Some(_)) => "rshard = :pk AND rtime BETWEEN :lo AND :hi",
        };
        request = request.key_condition_expression(condition);
        if let Some(lo) = lo {
            request = request.expression_attribute_values(":lo", AttributeValue::S(lo.to_owned()));
        }
        if let Some(hi) = hi {
            request = request.expression_attribute_values(":hi", AttributeValue::S(hi.to_owned()));
        }
        let output = request
            .send()
            .boxed()
            .await
            .map_err(|e| unavailable("Query", e))?;
        let truncated = output
            .last_evaluated_key
            .as_ref()
            .is_some_and(|key| !key.is_empty());
        let keys = output
            .items
            .unwrap_or_default()
            .iter()
            .map(|item| string(item, "rtime"))
            .collect::<Result<_, _>>()?;
        Ok((keys, truncated))
    }
}
