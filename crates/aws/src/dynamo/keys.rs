//! The single-table layout: which key each record lives under, and how page cursors map to
//! DynamoDB start keys.
//!
//! | record    | `pk`            | `sk` | `gsi1pk` / `gsi1sk`         | `gsi2pk` / `gsi2sk`                 | `tshard` / `tdue` |
//! |-----------|-----------------|------|-----------------------------|-------------------------------------|-------------------|
//! | job       | `{ns}J#{jobId}` | `J`  | `{ns}JOBS` / jobId          | `{ns}JP#{parent}` / jobId           | —                 |
//! | execution | `{ns}E#{id}`    | `E`  | `{ns}JE#{jobId}` / `{n:020}#{id}` | `{ns}EP#{parent}` / `{ms:015}#{id}` | —           |
//!
//! Executions also carry `rshard` / `rtime` (`{ns}R{shard}` / `{ms:016}#{id}`, the scheduled
//! time): the keys-only `runs` index that searches across jobs read (`dynamo/search.rs`), sharded by
//! a hash of the execution id over [`RUN_SHARDS`] partitions.
//! | wake-up   | `{ns}W#{key}`   | `W`  | —                           | —                                   | `{ns}T{shard}` / due ms |
//! | label     | `{ns}J#{jobId}` | `L#{key}` | `{ns}JL#{key}={value}` / jobId | —                             | —                 |
//! | setting   | `{ns}S#{name}`  | `S`  | —                           | —                                   | —                 |
//! | calendar  | `{ns}C#{name}`  | `C`  | `{ns}CALS` / name           | —                                   | —                 |
//! | tombstone | `{ns}J#{jobId}` | `G`  | `{ns}GONE` / jobId          | —                                   | —                 |
//! | calendar user | `{ns}C#{name}` | `U#{jobId}` | —                  | —                                   | —                 |
//!
//! A calendar item also counts its listings (`listings`, see `dynamo/calendars.rs`).
//!
//! Label items (one per label of a job, see [`super::labels`]) share `gsi1` with jobs and
//! executions: a label's jobs are one partition, in id order.
//!
//! `gsi1` and `gsi2` hold keys only, `timers` keys and `key` (layout 2, [`super::layout`]): no
//! record's index keys change after it is written, so its updates write nothing to them, and the
//! `JOBS` partition takes a write only when a job is created or deleted, never per run. A listing
//! reads the index's keys and then the items (`BatchGetItem`).
//!
//! `ns` is an optional namespace prefix: production leaves it empty; tests give every store its own
//! so that one table holds many independent stores. The wake-up index is sparse (only wake-up items
//! carry `tshard`) and write-sharded: a wake-up's shard is a hash of its key, so a million jobs due
//! in the same minute spread their index writes over `shards` partitions instead of one.
//!
//! Cursors are the memory store's ([`sundial_ports::store::cursor`]): the last item returned,
//! from which the exclusive start key is rebuilt, so a cursor carries no table internals and stays
//! valid across adapter restarts.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

/// An item or a key, as the SDK passes them.
pub type Item = HashMap<String, AttributeValue>;

/// Index names, as declared in template.yaml.
pub const GSI1: &str = "gsi1";
/// The children index.
pub const GSI2: &str = "gsi2";
/// The wake-up index.
pub const WAKEUPS: &str = "timers";
/// The runs index (keys only): executions by scheduled time, across jobs.
pub const RUNS: &str = "runs";
/// How many partitions the runs index spreads executions over. Fixed: a search reads them all,
/// and changing it would orphan the entries of shards no longer read.
pub const RUN_SHARDS: u32 = 8;

/// Sort keys of the three record kinds.
pub const JOB_SK: &str = "J";
/// Sort key of executions.
pub const EXECUTION_SK: &str = "E";
/// Sort key of wake-ups.
pub const WAKEUP_SK: &str = "W";
/// Sort key of settings.
pub const SETTING_SK: &str = "S";
/// Sort key of calendars.
pub const CALENDAR_SK: &str = "C";
/// Sort keys of a calendar's user items (one per job using it) start with this, then the job id.
pub const CALENDAR_USER_SK_PREFIX: &str = "U#";
/// Sort keys of label items start with this, then the label key.
pub const LABEL_SK_PREFIX: &str = "L#";
/// Sort key of a deleted job's tombstone, in its item collection (see `dynamo/retention.rs`).
pub const TOMBSTONE_SK: &str = "G";

/// The key layout of one store (one namespace of a table).
#[derive(Clone, Debug)]
pub struct Keys {
    ns: String,
    shards: u32,
}

impl Keys {
    /// The layout for namespace `ns` with the wake-up index spread over `shards` partitions.
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

    /// The primary key of the setting `name` ([`sundial_ports::store::SettingStore`]).
    pub fn setting(&self, name: &str) -> Item {
        primary(format!("{}S#{name}", self.ns), SETTING_SK)
    }

    /// The `pk` of the calendar `name`'s item collection: the calendar and its user items.
    pub fn calendar_pk(&self, name: &str) -> String {
        format!("{}C#{name}", self.ns)
    }

    /// The primary key of the calendar `name` ([`sundial_ports::store::CalendarStore`]).
    pub fn calendar(&self, name: &str) -> Item {
        primary(self.calendar_pk(name), CALENDAR_SK)
    }

    /// The primary key of the item saying job `job_id` uses the calendar `name`.
    pub fn calendar_user(&self, name: &str, job_id: &str) -> Item {
        primary(
            self.calendar_pk(name),
            &format!("{CALENDAR_USER_SK_PREFIX}{job_id}"),
        )
    }

    /// The `gsi1pk` under which every calendar is listed.
    pub fn all_calendars(&self) -> String {
        format!("{}CALS", self.ns)
    }

    /// The primary key of job `job_id`'s index item for label `key`.
    pub fn label(&self, job_id: &str, key: &str) -> Item {
        primary(
            format!("{}J#{job_id}", self.ns),
            &format!("{LABEL_SK_PREFIX}{key}"),
        )
    }

    /// The `gsi1pk` of the jobs labelled `key: value` (no key holds `=`).
    pub fn label_partition(&self, key: &str, value: &str) -> String {
        format!("{}JL#{key}={value}", self.ns)
    }

    /// The `pk` of job `job_id`'s item collection: the job and its label items.
    pub fn job_pk(&self, job_id: &str) -> String {
        format!("{}J#{job_id}", self.ns)
    }

    /// The `gsi1pk` under which every job is listed.
    pub fn all_jobs(&self) -> String {
        format!("{}JOBS", self.ns)
    }

    /// The primary key of job `job_id`'s tombstone: written when the job is deleted, so that
    /// retention finds what the job left without a scan (see `dynamo/retention.rs`).
    pub fn tombstone(&self, job_id: &str) -> Item {
        primary(self.job_pk(job_id), TOMBSTONE_SK)
    }

    /// The `gsi1pk` under which every tombstone is listed.
    pub fn deleted_jobs(&self) -> String {
        format!("{}GONE", self.ns)
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
        self.shard_name((fnv(key) % u64::from(self.shards)) as u32)
    }

    /// The `rshard` of an execution: a stable hash (FNV-1a) of its id over [`RUN_SHARDS`].
    pub fn run_shard(&self, execution_id: &str) -> String {
        self.run_shard_name((fnv(execution_id) % u64::from(RUN_SHARDS)) as u32)
    }

    /// The `rshard` value of shard `n`.
    pub fn run_shard_name(&self, n: u32) -> String {
        format!("{}R{n}", self.ns)
    }

    /// The `gsi2pk` of a job's rollup items: a stable hash (FNV-1a) of its id over
    /// [`ROLLUP_SHARDS`](super::rollups::ROLLUP_SHARDS).
    pub fn rollup_shard(&self, job_id: &str) -> String {
        self.rollup_shard_name((fnv(job_id) % u64::from(super::rollups::ROLLUP_SHARDS)) as u32)
    }

    /// The `gsi2pk` value of rollup shard `n`.
    pub fn rollup_shard_name(&self, n: u32) -> String {
        format!("{}RH{n}", self.ns)
    }

    /// The `tshard` value of shard `n`.
    pub fn shard_name(&self, n: u32) -> String {
        format!("{}T{n}", self.ns)
    }
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
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

/// `rtime` of an execution scheduled at `scheduled_ms`: newest-first order is descending.
pub fn run_sort(scheduled_ms: i64, execution_id: &str) -> String {
    format!("{}{execution_id}", run_sort_bound(scheduled_ms))
}

/// The `rtime` before every execution scheduled at `scheduled_ms` and after every earlier one.
pub fn run_sort_bound(scheduled_ms: i64) -> String {
    format!("{:016}#", scheduled_ms.saturating_add(OFFSET_MS).max(0))
}

/// `(scheduled ms, execution id)` of an `rtime`.
pub fn parse_run_sort(rtime: &str) -> Option<(i64, String)> {
    let (ms, id) = rtime.split_once('#')?;
    let ms = ms.parse::<i64>().ok()?.checked_sub(OFFSET_MS)?;
    Some((ms, id.to_owned()))
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
        assert!(run_sort(-5, "z") < run_sort(0, "a"));
        assert!(run_sort(999, "z") < run_sort(1_000, "a"));
        assert!(run_sort_bound(7) < run_sort(7, "a") && run_sort(6, "~") < run_sort_bound(7));
        assert_eq!(
            parse_run_sort(&run_sort(-5, "a#b")),
            Some((-5, "a#b".to_owned()))
        );
    }
}
