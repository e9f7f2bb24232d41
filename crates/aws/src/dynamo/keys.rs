//! The single-table layout: which key each record lives under, and how page cursors map to
//! DynamoDB start keys.
//!
//! | record    | `pk`            | `sk` | `gsi1pk` / `gsi1sk`         | `gsi2pk` / `gsi2sk`                 | `tshard` / `tdue` |
//! |-----------|-----------------|------|-----------------------------|-------------------------------------|-------------------|
//! | job       | `{ns}J#{jobId}` | `J`  | `{ns}JOBS` / jobId          | `{ns}JP#{parent}` / jobId           | —                 |
//! | execution | `{ns}E#{id}`    | `E`  | `{ns}JE#{jobId}` / `{n:020}#{id}` | `{ns}EP#{parent}` / `{ms:015}#{id}` | —           |
//! | wake-up   | `{ns}W#{key}`   | `W`  | —                           | —                                   | `{ns}T{shard}` / due ms |
//!
//! `ns` is an optional namespace prefix: production leaves it empty; tests give every store its own
//! so that one table holds many independent stores. The timer index is sparse (only wake-up items
//! carry `tshard`) and write-sharded: a wake-up's shard is a hash of its key, so a million jobs due
//! in the same minute spread their index writes over `shards` partitions instead of one.
//!
//! Cursors are the ones the other adapters hand out (`j1.{jobId}`, `e1.{n}.{id}`, `c1.{ms}.{id}`):
//! the last item returned, from which the exclusive start key is rebuilt, so a cursor carries no
//! table internals and stays valid across adapter restarts.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use sundial_service::store::StoreError;

/// An item or a key, as the SDK passes them.
pub type Item = HashMap<String, AttributeValue>;

/// Index names, as declared in template.yaml.
pub const GSI1: &str = "gsi1";
/// The children index.
pub const GSI2: &str = "gsi2";
/// The timer index.
pub const TIMERS: &str = "timers";

/// Sort keys of the three record kinds.
pub const JOB_SK: &str = "J";
/// Sort key of executions.
pub const EXECUTION_SK: &str = "E";
/// Sort key of wake-ups.
pub const WAKEUP_SK: &str = "W";

/// The key layout of one store (one namespace of a table).
#[derive(Clone, Debug)]
pub struct Keys {
    ns: String,
    shards: u32,
}

impl Keys {
    /// The layout for namespace `ns` with the timer index spread over `shards` partitions.
    pub fn new(ns: impl Into<String>, shards: u32) -> Self {
        Keys {
            ns: ns.into(),
            shards: shards.max(1),
        }
    }

    /// The namespace prefix.
    pub fn ns(&self) -> &str {
        &self.ns
    }

    /// How many timer shards there are.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// The primary key of a job.
    pub fn job(&self, job_id: &str) -> Item {
        primary(format!("{}J#{job_id}", self.ns), JOB_SK)
    }

    /// The primary key of an execution.
    pub fn execution(&self, execution_id: &str) -> Item {
        primary(format!("{}E#{execution_id}", self.ns), EXECUTION_SK)
    }

    /// The primary key of a wake-up.
    pub fn wakeup(&self, key: &str) -> Item {
        primary(format!("{}W#{key}", self.ns), WAKEUP_SK)
    }

    /// The `gsi1pk` under which every job is listed.
    pub fn all_jobs(&self) -> String {
        format!("{}JOBS", self.ns)
    }

    /// The `gsi2pk` of a parent's child jobs.
    pub fn child_jobs(&self, parent: &str) -> String {
        format!("{}JP#{parent}", self.ns)
    }

    /// The `gsi1pk` of a job's executions.
    pub fn job_executions(&self, job_id: &str) -> String {
        format!("{}JE#{job_id}", self.ns)
    }

    /// The `gsi2pk` of the executions of a parent's children.
    pub fn child_executions(&self, parent: &str) -> String {
        format!("{}EP#{parent}", self.ns)
    }

    /// The `tshard` of a wake-up key: a stable hash (FNV-1a), so a key always lands on one shard.
    pub fn timer_shard(&self, key: &str) -> String {
        let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        self.shard_name((hash % u64::from(self.shards)) as u32)
    }

    /// The `tshard` value of shard `n`.
    pub fn shard_name(&self, n: u32) -> String {
        format!("{}T{n}", self.ns)
    }
}

fn primary(pk: String, sk: &str) -> Item {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk)),
        ("sk".to_owned(), AttributeValue::S(sk.to_owned())),
    ])
}

/// `gsi1sk` of an execution: newest-first order is descending execute number, then id.
pub fn execution_sort(execute_number: u64, execution_id: &str) -> String {
    format!("{execute_number:020}#{execution_id}")
}

/// `gsi2sk` of a child execution: newest-first order is descending creation time, then id.
pub fn child_sort(created_ms: i64, execution_id: &str) -> String {
    // Offset so that (unlikely) times before 1970 still sort as numbers.
    format!(
        "{:016}#{execution_id}",
        created_ms.saturating_add(OFFSET_MS)
    )
}

const OFFSET_MS: i64 = 100_000_000_000_000;

/// The job id after which a `j1.` cursor continues.
pub fn parse_job_cursor(cursor: &str) -> Result<&str, StoreError> {
    cursor
        .strip_prefix("j1.")
        .filter(|id| !id.is_empty())
        .ok_or(StoreError::InvalidCursor)
}

/// The job cursor of the last job returned.
pub fn job_cursor(job_id: &str) -> String {
    format!("j1.{job_id}")
}

/// `(number, id)` of an `e1.` or `c1.` cursor.
pub fn parse_numbered_cursor<N: std::str::FromStr + ToString>(
    cursor: &str,
    prefix: &str,
) -> Result<(N, String), StoreError> {
    let (number, id) = cursor
        .strip_prefix(prefix)
        .and_then(|rest| rest.split_once('.'))
        .ok_or(StoreError::InvalidCursor)?;
    match number.parse::<N>() {
        Ok(n) if n.to_string() == number && !id.is_empty() => Ok((n, id.to_owned())),
        _ => Err(StoreError::InvalidCursor),
    }
}

/// The cursor of the last execution of a `list_executions` page.
pub fn execution_cursor(execute_number: u64, execution_id: &str) -> String {
    format!("e1.{execute_number}.{execution_id}")
}

/// The cursor of the last execution of a `list_child_executions` page.
pub fn child_cursor(created_ms: i64, execution_id: &str) -> String {
    format!("c1.{created_ms}.{execution_id}")
}

/// An exclusive start key on an index: the index key plus the table key of the item it names.
pub fn start_key(table_key: Item, index_pk: (&str, String), index_sk: (&str, String)) -> Item {
    let mut key = table_key;
    key.insert(index_pk.0.to_owned(), AttributeValue::S(index_pk.1));
    key.insert(index_sk.0.to_owned(), AttributeValue::S(index_sk.1));
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_stable_and_spread() {
        let keys = Keys::new("", 8);
        assert_eq!(keys.timer_shard("job:a"), keys.timer_shard("job:a"));
        let used: std::collections::BTreeSet<String> = (0..200)
            .map(|i| keys.timer_shard(&format!("job:{i}")))
            .collect();
        assert_eq!(used.len(), 8, "{used:?}");
    }

    #[test]
    fn sort_keys_order_as_numbers() {
        assert!(execution_sort(9, "z") < execution_sort(10, "a"));
        assert!(child_sort(-5, "a") < child_sort(0, "a"));
        assert!(child_sort(999, "a") < child_sort(1_000, "a"));
    }

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        assert_eq!(parse_job_cursor(&job_cursor("a.b")), Ok("a.b"));
        assert_eq!(
            parse_numbered_cursor::<u64>(&execution_cursor(7, "x.y"), "e1."),
            Ok((7, "x.y".to_owned()))
        );
        for bad in ["", "j1.", "e1.07.x", "e1.7.", "c1.x.y", "zz"] {
            assert!(parse_numbered_cursor::<u64>(bad, "e1.").is_err(), "{bad}");
        }
        assert_eq!(parse_job_cursor(""), Err(StoreError::InvalidCursor));
    }
}
