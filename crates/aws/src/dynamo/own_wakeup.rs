//! A wake-up kept on its owner's item: an execution's (layout 4) and a job's (layout 5).
//!
//! The wake-up index (`timers`) is sparse: any item with `tshard` and `tdue` is an entry, read
//! with its `key`. A wake-up `exec:{id}` or `job:{id}` written in the same batch as its
//! execution's or job's creation or update (the fallback wake-up of every fire and trigger and its
//! removal when the run is admitted; the job's next fire, written by the tick with every fire it
//! plans) is therefore stored as three attributes of the owner's item rather than as an item of its
//! own: the write that carries the owner carries its wake-up, and the index entry is put or
//! deleted with it. A run's fallback used to cost an item written twice in the tick's transaction
//! and deleted twice in admission's, and the job's wake-up an item written twice in the tick's
//! (issue 31); each now costs only its index entry.
//!
//! So that a write of the owner never drops a wake-up it does not mean to, executions and jobs are
//! updated with `UpdateItem` (every attribute of the new record set, those it lacks removed, the
//! wake-up's kept unless the batch clears it) rather than replaced with `PutItem`. A wake-up set
//! on its own (`set_wakeup`) goes on its owner's item when the owner exists, else on an item of its
//! own (`W#exec:{id}`, `W#job:{id}`), which is also how earlier layouts stored them (every one
//! before 4, a job's before 5): readers and removers look at both, and the tick's read of due
//! wake-ups moves a job's own item onto the job (`DynamoStore::due_wakeups`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use sundial_ports::store::Write;

use super::keys::{Item, Keys};

/// The attributes that make an item an entry of the wake-up index.
pub(super) const WAKEUP_ATTRIBUTES: [&str; 3] = ["key", "tshard", "tdue"];

/// Attributes an execution's item may hold besides its keys and those every one has: an update
/// removes those its new record lacks, as a `PutItem` of the record would.
pub(super) const EXECUTION_OPTIONAL: [&str; 9] = [
    "doc",
    "docz",
    "parentJob",
    "gsi2pk",
    "gsi2sk",
    "parentExecution",
    "rshard",
    "rtime",
    "expiresAt",
];

/// Attributes a job's item may hold besides its keys and those every one has (see
/// [`EXECUTION_OPTIONAL`]).
pub(super) const JOB_OPTIONAL: [&str; 7] = [
    "doc",
    "docz",
    "parentJob",
    "gsi2pk",
    "gsi2sk",
    "service",
    super::labels::LABELS,
];

/// The item a wake-up key may ride on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Owner<'a> {
    /// `exec:{id}`: execution `id`'s item.
    Execution(&'a str),
    /// `job:{id}`: job `id`'s item.
    Job(&'a str),
}

impl Owner<'_> {
    /// The owner's item key.
    pub(super) fn item_key(&self, keys: &Keys) -> Item {
        match self {
            Owner::Execution(id) => keys.execution(id),
            Owner::Job(id) => keys.job(id),
        }
    }
}

/// Whether an entry of the wake-up index is an item of its own (`W#{key}`), not an owner's item.
pub(super) fn is_own_item(entry: &Item) -> bool {
    entry
        .get("sk")
        .and_then(|sk| sk.as_s().ok())
        .is_some_and(|sk| sk == super::keys::WAKEUP_SK)
}

/// The owner of wake-up `key`: `exec:{id}` an execution's, `job:{id}` a job's.
pub(super) fn owner_of(key: &str) -> Option<Owner<'_>> {
    if let Some(id) = key.strip_prefix("exec:") {
        return Some(Owner::Execution(id));
    }
    key.strip_prefix("job:").map(Owner::Job)
}

/// The index attributes of wake-up `key` due at `due`.
pub(super) fn attributes(keys: &Keys, key: &str, due: DateTime<Utc>) -> Item {
    HashMap::from([
        ("key".to_owned(), AttributeValue::S(key.to_owned())),
        (
            "tshard".to_owned(),
            AttributeValue::S(keys.timer_shard(key)),
        ),
        (
            "tdue".to_owned(),
            AttributeValue::N(due.timestamp_millis().to_string()),
        ),
    ])
}

/// What a write of an execution does to the wake-up its item carries.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) enum OwnWakeup {
    /// Leaves it as it is (none, or the one set before).
    #[default]
    Keep,
    /// Sets it: the index attributes ([`attributes`]).
    Set(Item),
    /// Removes it.
    Clear,
}

/// Which wake-ups of a batch ride on their owners' writes: the index of each such `SetWakeup`
/// (written by no item of its own), and what each owner's write does to its item's wake-up.
#[derive(Debug, Default)]
pub(super) struct Folded {
    /// The `SetWakeup` writes carried by an owner's write.
    pub(super) carried: BTreeSet<usize>,
    /// By write index: the owners' writes that carry one.
    pub(super) own: BTreeMap<usize, OwnWakeup>,
}

impl Folded {
    /// What write `index` does to its owner's own wake-up.
    pub(super) fn own(&self, index: usize) -> OwnWakeup {
        self.own.get(&index).cloned().unwrap_or_default()
    }
}

/// Finds the wake-ups of `writes` that ride on their owner's write of the same batch: setting
/// `exec:{id}` (`job:{id}`) with the creation or an update of execution (job) `id`, or removing it
/// with an update. (A removal with a creation is left as it is: there is nothing on a new item to
/// remove.)
pub(super) fn fold(keys: &Keys, writes: &[Write<'_>]) -> Folded {
    let mut owner_writes: HashMap<Owner<'_>, (usize, bool)> = HashMap::new();
    for (index, write) in writes.iter().enumerate() {
        let (owner, created) = match write {
            Write::CreateExecution(e) => (Owner::Execution(e.execution_id.as_str()), true),
            Write::UpdateExecution(e) => (Owner::Execution(e.execution_id.as_str()), false),
            Write::CreateJob(j) => (Owner::Job(j.job_id.as_str()), true),
            Write::UpdateJob(j) => (Owner::Job(j.job_id.as_str()), false),
            _ => continue,
        };
        owner_writes.insert(owner, (index, created));
    }
    let mut folded = Folded::default();
    for (index, write) in writes.iter().enumerate() {
        let Write::SetWakeup(key, due) = write else {
            continue;
        };
        let Some(&(owner, created)) = owner_of(key).and_then(|o| owner_writes.get(&o)) else {
            continue;
        };
        let own = match due {
            Some(due) => OwnWakeup::Set(attributes(keys, key, *due)),
            None if created => continue,
            None => OwnWakeup::Clear,
        };
        folded.carried.insert(index);
        folded.own.insert(owner, own);
    }
    folded
}

/// An `UpdateItem` of an item: its key, and the expression that makes the stored item equal to it.
#[derive(Debug)]
pub(super) struct ItemUpdate {
    /// The item's key.
    pub(super) key: Item,
    /// `SET …` every attribute, `REMOVE …` those it lacks.
    pub(super) expression: String,
    /// The condition on the stored item (the writer's: empty as made here).
    pub(super) condition: String,
    /// The expression's attribute names.
    pub(super) names: HashMap<String, String>,
    /// The expression's values.
    pub(super) values: HashMap<String, AttributeValue>,
}

/// An execution's or a job's `item` as an update of the stored one: every attribute set, the
/// `optional` ones it lacks removed, and its wake-up kept, set or removed as `own` says.
pub(super) fn item_update(mut item: Item, own: OwnWakeup, optional: &[&str]) -> ItemUpdate {
    let mut key = Item::new();
    for name in ["pk", "sk"] {
        if let Some(value) = item.remove(name) {
            key.insert(name.to_owned(), value);
        }
    }
    let clear = own == OwnWakeup::Clear;
    if let OwnWakeup::Set(attributes) = own {
        item.extend(attributes);
    }
    let mut names = HashMap::new();
    let mut values = HashMap::new();
    // Sorted, so the same record makes the same request.
    let mut present: Vec<(String, AttributeValue)> = item.into_iter().collect();
    present.sort_by(|a, b| a.0.cmp(&b.0));
    let mut sets = Vec::with_capacity(present.len());
    for (index, (name, value)) in present.iter().enumerate() {
        names.insert(format!("#s{index}"), name.clone());
        values.insert(format!(":s{index}"), value.clone());
        sets.push(format!("#s{index} = :s{index}"));
    }
    let has = |name: &str| present.iter().any(|(n, _)| n == name);
    let cleared = if clear { &WAKEUP_ATTRIBUTES[..] } else { &[] };
    let mut removes = Vec::new();
    for (index, name) in optional
        .iter()
        .chain(cleared)
        .filter(|name| !has(name))
        .enumerate()
    {
        names.insert(format!("#r{index}"), (*name).to_owned());
        removes.push(format!("#r{index}"));
    }
    let mut expression = format!("SET {}", sets.join(", "));
    if !removes.is_empty() {
        expression.push_str(" REMOVE ");
        expression.push_str(&removes.join(", "));
    }
    ItemUpdate {
        key,
        expression,
        condition: String::new(),
        names,
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;
    use sundial_ports::store::{ExecutionRecord, JobRecord};

    fn record(id: &str, parent: Option<&str>) -> ExecutionRecord {
        let at = Utc.timestamp_millis_opt(1_700_000_000_000).unwrap();
        ExecutionRecord {
            execution_id: id.into(),
            job_id: "j".into(),
            execute_number: 1,
            state: "Scheduled".into(),
            parent_job: parent.map(str::to_owned),
            parent_execution: None,
            created_at: at,
            version: 1,
            document: json!({"scheduledTime": "2023-11-14T22:13:20Z"}),
        }
    }

    fn due() -> DateTime<Utc> {
        Utc.timestamp_millis_opt(1_700_000_060_000).unwrap()
    }

    #[test]
    fn a_wake_up_rides_on_its_executions_write_of_the_same_batch() {
        let keys = Keys::new("", 8);
        let (a, b) = (record("j~1", None), record("j~2", None));
        let writes = [
            Write::CreateExecution(&a),
            Write::SetWakeup("exec:j~1", Some(due())),
            Write::UpdateExecution(&b),
            Write::SetWakeup("exec:j~2", None),
            // Another execution's wake-up, and a job's without its job, keep items of their own.
            Write::SetWakeup("exec:j~3", Some(due())),
            Write::SetWakeup("job:j", Some(due())),
        ];
        let folded = fold(&keys, &writes);
        assert_eq!(folded.carried, BTreeSet::from([1, 3]));
        assert_eq!(
            folded.own(0),
            OwnWakeup::Set(attributes(&keys, "exec:j~1", due()))
        );
        assert_eq!(folded.own(2), OwnWakeup::Clear);
        assert_eq!(folded.own(4), OwnWakeup::Keep);
        // Removing a wake-up with the creation of its execution: nothing to remove on the item.
        let created = [
            Write::CreateExecution(&a),
            Write::SetWakeup("exec:j~1", None),
        ];
        assert!(fold(&keys, &created).carried.is_empty());
    }

    fn job(id: &str) -> JobRecord {
        let at = Utc.timestamp_millis_opt(1_700_000_000_000).unwrap();
        JobRecord {
            job_id: id.into(),
            version: 1,
            creator: "me".into(),
            parent_job: None,
            service: None,
            state: "active".into(),
            created_at: at,
            updated_at: at,
            document: json!({"definition": {"jobId": id}}),
        }
    }

    #[test]
    fn a_jobs_wake_up_rides_on_its_jobs_write_of_the_same_batch() {
        let keys = Keys::new("", 8);
        let j = job("j");
        let writes = [
            Write::UpdateJob(&j),
            Write::SetWakeup("job:j", Some(due())),
            // Another job's: an item of its own.
            Write::SetWakeup("job:other", Some(due())),
        ];
        let folded = fold(&keys, &writes);
        assert_eq!(folded.carried, BTreeSet::from([1]));
        assert_eq!(
            folded.own(0),
            OwnWakeup::Set(attributes(&keys, "job:j", due()))
        );
        let cleared = [Write::UpdateJob(&j), Write::SetWakeup("job:j", None)];
        assert_eq!(fold(&keys, &cleared).own(0), OwnWakeup::Clear);
        let created = [Write::CreateJob(&j), Write::SetWakeup("job:j", Some(due()))];
        assert_eq!(fold(&keys, &created).carried, BTreeSet::from([1]));
        assert_eq!(owner_of("job:j"), Some(Owner::Job("j")));
        assert_eq!(owner_of("exec:j~1"), Some(Owner::Execution("j~1")));
        assert_eq!(owner_of("other"), None);
    }

    /// As for executions: every optional attribute of a job's item is one its update removes.
    #[test]
    fn the_optional_attributes_are_all_those_a_job_may_lack() {
        let keys = Keys::new("", 8);
        let bare = super::super::item::job_item(&keys, &job("j"), 1).expect("item");
        let mut full = job("j");
        full.parent_job = Some("parent".into());
        full.service = Some("svc".into());
        full.document = json!({
            "definition": {"jobId": "j", "labels": {"team": "a"}},
            "pad": "x".repeat(400),
        });
        let full = super::super::item::job_item(&keys, &full, 1).expect("item");
        let always: BTreeSet<&String> = bare.keys().collect();
        for name in full.keys().chain(bare.keys()) {
            assert!(
                always.contains(name) && name != "doc" || JOB_OPTIONAL.contains(&name.as_str()),
                "{name} is optional but not listed"
            );
        }
        assert!(full.contains_key(super::super::labels::LABELS), "{full:?}");
    }

    #[test]
    fn an_update_sets_every_attribute_and_removes_what_the_record_lacks() {
        let keys = Keys::new("", 8);
        let item =
            super::super::item::execution_item(&keys, &record("j~1", None), 2, None).expect("item");
        let update = item_update(item.clone(), OwnWakeup::Keep, &EXECUTION_OPTIONAL);
        assert_eq!(
            update.key.keys().collect::<BTreeSet<_>>(),
            BTreeSet::from([&"pk".to_owned(), &"sk".to_owned()])
        );
        let set: BTreeSet<&String> = update
            .names
            .iter()
            .filter(|(p, _)| p.starts_with("#s"))
            .map(|(_, n)| n)
            .collect();
        let stored: BTreeSet<&String> = item.keys().filter(|n| *n != "pk" && *n != "sk").collect();
        assert_eq!(set, stored, "every attribute but the key is set");
        let removed: BTreeSet<&str> = update
            .names
            .iter()
            .filter(|(p, _)| p.starts_with("#r"))
            .map(|(_, n)| n.as_str())
            .collect();
        // No parent, no expiry, a small document as text: those attributes go.
        for name in [
            "docz",
            "parentJob",
            "gsi2pk",
            "gsi2sk",
            "parentExecution",
            "expiresAt",
        ] {
            assert!(removed.contains(name), "{name} removed: {removed:?}");
        }
        assert!(
            !removed.contains("doc") && !removed.contains("tdue"),
            "{removed:?}"
        );
        assert!(update.expression.starts_with("SET ") && update.expression.contains(" REMOVE "));

        let cleared = item_update(item.clone(), OwnWakeup::Clear, &EXECUTION_OPTIONAL);
        let removed: Vec<&String> = cleared
            .names
            .iter()
            .filter(|(p, _)| p.starts_with("#r"))
            .map(|(_, n)| n)
            .collect();
        for name in WAKEUP_ATTRIBUTES {
            assert!(removed.iter().any(|n| *n == name), "{name} removed");
        }
        let set = item_update(
            item,
            OwnWakeup::Set(attributes(&keys, "exec:j~1", due())),
            &EXECUTION_OPTIONAL,
        );
        assert!(set
            .values
            .values()
            .any(|v| v.as_n().is_ok_and(|n| n == "1700000060000")));
        assert!(set.names.values().any(|n| n == "tshard"));
    }

    /// Every optional attribute an execution's item can hold is one an update removes when the
    /// record lacks it: a new one missing from the list would outlive the record that dropped it.
    #[test]
    fn the_optional_attributes_are_all_those_an_execution_may_lack() {
        let keys = Keys::new("", 8);
        let bare =
            super::super::item::execution_item(&keys, &record("j~1", None), 1, None).expect("item");
        let mut big = record("j~1", Some("parent"));
        big.parent_execution = Some(3);
        big.document = json!({"scheduledTime": "2023-11-14T22:13:20Z", "pad": "x".repeat(400)});
        let full = super::super::item::execution_item(&keys, &big, 1, Some(1)).expect("item");
        let always: BTreeSet<&String> = bare.keys().collect();
        for name in full.keys().chain(bare.keys()) {
            assert!(
                always.contains(name) && name != "doc" && name != "rshard" && name != "rtime"
                    || EXECUTION_OPTIONAL.contains(&name.as_str()),
                "{name} is optional but not listed"
            );
        }
    }
}
