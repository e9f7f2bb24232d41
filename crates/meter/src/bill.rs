//! Capacity units as AWS documents them for on-demand tables ("Read/write capacity mode" and
//! "Managing capacity for global secondary indexes", Amazon DynamoDB Developer Guide; "Amazon SQS
//! pricing"; "Amazon EventBridge pricing").
//!
//! - A write is 1 WRU per 1 KB of the item, rounded up; `PutItem` and `UpdateItem` bill the larger
//!   of the item before and after, `DeleteItem` the item deleted; at least 1 WRU each, also when
//!   the item does not exist or a condition fails (a failed conditional write bills the existing
//!   item's size). A transactional write is twice that, `ConditionCheck` items included.
//! - Each global secondary index is written by the item's projection into it: a put when the
//!   item enters the index, a delete when it leaves, a delete *and* a put when its index key
//!   changes, an update (the larger projection) when a projected attribute changes, and nothing
//!   when the write touches no projected attribute or the item is in neither state of the index.
//!   Index writes are not doubled for transactions.
//! - A read is 1 RRU per 4 KB, rounded up, half of that when eventually consistent. `GetItem` and
//!   each key of `BatchGetItem` round per item; `Query` and `Scan` round the sum of the sizes of
//!   every item they evaluate (before any filter), from the index's projection on an index.
//! - SQS bills each request per 64 KB chunk of its payload (a batch: of the batch's total).
//! - EventBridge bills each event per 64 KB chunk.

use serde_json::Value;

use crate::size::{item_size, projected_size, Item};

/// 1 KB: the write unit's size.
pub const WRITE_UNIT_BYTES: u64 = 1024;
/// 4 KB: the read unit's size.
pub const READ_UNIT_BYTES: u64 = 4096;
/// 64 KB: the SQS request chunk and the EventBridge event chunk.
pub const CHUNK_BYTES: u64 = 64 * 1024;

/// What a global secondary index holds of an item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Projection {
    /// Every attribute.
    All,
    /// The table's and the index's keys.
    KeysOnly,
    /// The keys and these attributes.
    Include(Vec<String>),
}

/// A global secondary index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    /// Its name.
    pub name: String,
    /// Its partition key attribute.
    pub hash_key: String,
    /// Its sort key attribute.
    pub range_key: Option<String>,
    /// What it holds.
    pub projection: Projection,
}

/// A table's keys and indexes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSchema {
    /// Its name.
    pub name: String,
    /// Its partition key attribute.
    pub hash_key: String,
    /// Its sort key attribute.
    pub range_key: Option<String>,
    /// Its global secondary indexes.
    pub indexes: Vec<Index>,
}

impl TableSchema {
    /// The schema in a `DescribeTable` answer's `Table`.
    pub fn from_description(table: &Value) -> Option<TableSchema> {
        let keys = |schema: &Value| -> Option<(String, Option<String>)> {
            let mut hash = None;
            let mut range = None;
            for key in schema.as_array()? {
                let name = key["AttributeName"].as_str()?.to_owned();
                match key["KeyType"].as_str()? {
                    "HASH" => hash = Some(name),
                    _ => range = Some(name),
                }
            }
            Some((hash?, range))
        };
        let (hash_key, range_key) = keys(&table["KeySchema"])?;
        let indexes = table["GlobalSecondaryIndexes"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|index| {
                let (hash_key, range_key) = keys(&index["KeySchema"])?;
                let projection = match index["Projection"]["ProjectionType"].as_str() {
                    Some("KEYS_ONLY") => Projection::KeysOnly,
                    Some("INCLUDE") => Projection::Include(
                        index["Projection"]["NonKeyAttributes"]
                            .as_array()
                            .map(Vec::as_slice)
                            .unwrap_or_default()
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect(),
                    ),
                    _ => Projection::All,
                };
                Some(Index {
                    name: index["IndexName"].as_str()?.to_owned(),
                    hash_key,
                    range_key,
                    projection,
                })
            })
            .collect();
        Some(TableSchema {
            name: table["TableName"].as_str()?.to_owned(),
            hash_key,
            range_key,
            indexes,
        })
    }

    /// The item's primary key attributes (to read it by).
    pub fn key_of(&self, item: &Item) -> Item {
        let mut key = Item::new();
        for name in std::iter::once(&self.hash_key).chain(&self.range_key) {
            if let Some(value) = item.get(name) {
                key.insert(name.clone(), value.clone());
            }
        }
        key
    }

    /// The names an index's entry of an item holds, or `None` when the item is not in it.
    fn index_entry<'a>(&'a self, index: &'a Index, item: &'a Item) -> Option<Vec<&'a str>> {
        let index_keys: Vec<&str> = std::iter::once(index.hash_key.as_str())
            .chain(index.range_key.as_deref())
            .collect();
        if !index_keys.iter().all(|k| item.contains_key(*k)) {
            return None;
        }
        let mut names: Vec<&str> = std::iter::once(self.hash_key.as_str())
            .chain(self.range_key.as_deref())
            .chain(index_keys)
            .collect();
        match &index.projection {
            Projection::All => return Some(item.keys().map(String::as_str).collect()),
            Projection::KeysOnly => {}
            Projection::Include(extra) => names.extend(extra.iter().map(String::as_str)),
        }
        names.sort_unstable();
        names.dedup();
        Some(names)
    }
}

/// Write request units for an item of `size` bytes (at least 1).
pub fn write_units(size: u64) -> f64 {
    size.div_ceil(WRITE_UNIT_BYTES).max(1) as f64
}

/// Read request units for `size` bytes read together (at least one unit).
pub fn read_units(size: u64, consistent: bool) -> f64 {
    let units = size.div_ceil(READ_UNIT_BYTES).max(1) as f64;
    if consistent {
        units
    } else {
        units / 2.0
    }
}

/// Chunks of 64 KB in `bytes` (at least 1): SQS requests, EventBridge events.
pub fn chunks(bytes: u64) -> u64 {
    bytes.div_ceil(CHUNK_BYTES).max(1)
}

/// What one item write costs: on the table (by its partition key value) and on each index it
/// touches.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteBill {
    /// WRU on the table.
    pub table: f64,
    /// The table partition key's value.
    pub table_key: String,
    /// WRU per index write: (index, its partition key's value, units). A moved index key is two
    /// entries.
    pub indexes: Vec<(String, String, f64)>,
}

impl WriteBill {
    /// The table's and the indexes' units together.
    pub fn total(&self) -> f64 {
        self.table + self.indexes.iter().map(|(_, _, units)| units).sum::<f64>()
    }
}

/// The outcome of an item write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Written.
    Written,
    /// Its condition failed (or its transaction was cancelled): billed, nothing written.
    Refused,
}

/// The bill of one item write from the item `before` and `after` it (`None`: absent).
pub fn bill_write(
    schema: &TableSchema,
    before: Option<&Item>,
    after: Option<&Item>,
    transactional: bool,
    outcome: Outcome,
) -> WriteBill {
    let factor = if transactional { 2.0 } else { 1.0 };
    let size_of = |item: Option<&Item>| item.map_or(0, item_size);
    let key_item = after.or(before);
    let table_key = key_item
        .and_then(|i| i.get(&schema.hash_key))
        .map(key_text)
        .unwrap_or_default();
    if outcome == Outcome::Refused {
        return WriteBill {
            table: factor * write_units(size_of(before)),
            table_key,
            indexes: Vec::new(),
        };
    }
    let table = factor * write_units(size_of(before).max(size_of(after)));
    let mut indexes = Vec::new();
    for index in &schema.indexes {
        let old = before.and_then(|i| schema.index_entry(index, i).map(|names| (i, names)));
        let new = after.and_then(|i| schema.index_entry(index, i).map(|names| (i, names)));
        let key = |item: &Item| item.get(&index.hash_key).map(key_text).unwrap_or_default();
        let entry_size = |item: &Item, names: &[&str]| projected_size(item, names.iter().copied());
        match (old, new) {
            (None, None) => {}
            (Some((item, names)), None) => {
                indexes.push((
                    index.name.clone(),
                    key(item),
                    write_units(entry_size(item, &names)),
                ));
            }
            (None, Some((item, names))) => {
                indexes.push((
                    index.name.clone(),
                    key(item),
                    write_units(entry_size(item, &names)),
                ));
            }
            (Some((was, old_names)), Some((now, new_names))) => {
                let index_key_moved = std::iter::once(&index.hash_key)
                    .chain(&index.range_key)
                    .any(|k| was.get(k) != now.get(k));
                if index_key_moved {
                    indexes.push((
                        index.name.clone(),
                        key(was),
                        write_units(entry_size(was, &old_names)),
                    ));
                    indexes.push((
                        index.name.clone(),
                        key(now),
                        write_units(entry_size(now, &new_names)),
                    ));
                } else {
                    let changed = old_names
                        .iter()
                        .chain(&new_names)
                        .any(|name| was.get(*name) != now.get(*name));
                    if changed {
                        let size = entry_size(was, &old_names).max(entry_size(now, &new_names));
                        indexes.push((index.name.clone(), key(now), write_units(size)));
                    }
                }
            }
        }
    }
    WriteBill {
        table,
        table_key,
        indexes,
    }
}

/// A key attribute's value as text (the partition key value the per-key accounting groups by).
pub fn key_text(value: &Value) -> String {
    value
        .as_object()
        .and_then(|o| o.values().next())
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(value: Value) -> Item {
        value.as_object().cloned().unwrap()
    }

    fn schema(projection: Projection) -> TableSchema {
        TableSchema {
            name: "t".into(),
            hash_key: "pk".into(),
            range_key: Some("sk".into()),
            indexes: vec![Index {
                name: "gsi1".into(),
                hash_key: "gsi1pk".into(),
                range_key: Some("gsi1sk".into()),
                projection,
            }],
        }
    }

    /// A string of `n` bytes.
    fn bytes(n: usize) -> Value {
        json!({"S": "x".repeat(n)})
    }

    #[test]
    fn aws_examples_of_write_units() {
        // "A 500-byte item: 1 WRU; a 3.5 KB item: 4 WRU" (round up to 1 KB); a transactional
        // write of a 3.5 KB item: 8.
        assert_eq!(write_units(500), 1.0);
        assert_eq!(write_units(3584), 4.0);
        assert_eq!(write_units(0), 1.0, "at least one, even for an absent item");
        let s = schema(Projection::KeysOnly);
        let big = item(json!({"pk": {"S": "a"}, "sk": {"S": "b"}, "body": bytes(3578)}));
        assert_eq!(
            bill_write(&s, None, Some(&big), true, Outcome::Written).table,
            8.0
        );
    }

    #[test]
    fn aws_examples_of_read_units() {
        // "A 7 KB item read strongly consistent: 2 RRU; eventually consistent: 1" (4 KB units);
        // a Query returning 10 items of 100 bytes bills the 1,000 bytes together: 0.5.
        assert_eq!(read_units(7 * 1024, true), 2.0);
        assert_eq!(read_units(7 * 1024, false), 1.0);
        assert_eq!(read_units(1000, false), 0.5);
        assert_eq!(read_units(0, true), 1.0);
    }

    #[test]
    fn an_update_bills_the_larger_of_before_and_after() {
        let s = schema(Projection::KeysOnly);
        let before = item(json!({"pk": {"S": "a"}, "sk": {"S": "b"}, "body": bytes(2000)}));
        let after = item(json!({"pk": {"S": "a"}, "sk": {"S": "b"}, "body": bytes(10)}));
        assert_eq!(
            bill_write(&s, Some(&before), Some(&after), false, Outcome::Written).table,
            2.0
        );
    }

    #[test]
    fn a_refused_write_bills_the_existing_item_and_no_index() {
        let s = schema(Projection::All);
        let before = item(
            json!({"pk": {"S": "a"}, "sk": {"S": "b"}, "gsi1pk": {"S": "J"}, "gsi1sk": {"S": "1"}, "body": bytes(1500)}),
        );
        let refused = bill_write(&s, Some(&before), None, false, Outcome::Refused);
        assert_eq!((refused.table, refused.indexes.len()), (2.0, 0));
        let absent = bill_write(&s, None, None, true, Outcome::Refused);
        assert_eq!(absent.table, 2.0, "1 WRU, doubled in a transaction");
    }

    #[test]
    fn index_writes_follow_the_projection() {
        let keys_only = schema(Projection::KeysOnly);
        let all = schema(Projection::All);
        let outside = item(json!({"pk": {"S": "a"}, "sk": {"S": "b"}, "body": bytes(3000)}));
        let inside = item(
            json!({"pk": {"S": "a"}, "sk": {"S": "b"}, "gsi1pk": {"S": "JOBS"}, "gsi1sk": {"S": "1"}, "body": bytes(3000)}),
        );
        // Entering the index: a put of the projection (keys only: 1 WRU; all: the 3 KB item).
        let bill = bill_write(
            &keys_only,
            Some(&outside),
            Some(&inside),
            false,
            Outcome::Written,
        );
        assert_eq!(bill.indexes, [("gsi1".into(), "JOBS".into(), 1.0)]);
        let bill = bill_write(&all, Some(&outside), Some(&inside), false, Outcome::Written);
        assert_eq!(bill.indexes, [("gsi1".into(), "JOBS".into(), 3.0)]);
        // Leaving it: a delete.
        let bill = bill_write(&all, Some(&inside), Some(&outside), false, Outcome::Written);
        assert_eq!(bill.indexes.len(), 1);
        // In neither state: nothing.
        let bill = bill_write(
            &all,
            Some(&outside),
            Some(&outside),
            false,
            Outcome::Written,
        );
        assert!(bill.indexes.is_empty());
    }

    #[test]
    fn an_update_touching_no_projected_attribute_writes_no_index() {
        let keys_only = schema(Projection::KeysOnly);
        let include = schema(Projection::Include(vec!["state".into()]));
        let was = item(
            json!({"pk": {"S": "a"}, "sk": {"S": "b"}, "gsi1pk": {"S": "J"}, "gsi1sk": {"S": "1"}, "state": {"S": "Scheduled"}, "body": bytes(10)}),
        );
        let mut now = was.clone();
        now.insert("body".into(), bytes(20));
        assert!(
            bill_write(&keys_only, Some(&was), Some(&now), false, Outcome::Written)
                .indexes
                .is_empty()
        );
        assert!(
            bill_write(&include, Some(&was), Some(&now), false, Outcome::Written)
                .indexes
                .is_empty()
        );
        now.insert("state".into(), json!({"S": "Processing"}));
        assert_eq!(
            bill_write(&include, Some(&was), Some(&now), false, Outcome::Written)
                .indexes
                .len(),
            1
        );
        assert!(
            bill_write(&keys_only, Some(&was), Some(&now), false, Outcome::Written)
                .indexes
                .is_empty()
        );
    }

    #[test]
    fn a_keys_only_index_is_written_when_an_item_enters_it_not_when_its_key_is_set_again() {
        // A rollup `UpdateItem`: `SET gsi1pk = :g` (the same value every time) `ADD c_n :1`.
        // AWS writes a keys-only index only when an index key changes: the first write creates
        // the entry, every later one writes nothing to the index.
        let s = schema(Projection::KeysOnly);
        let first = item(
            json!({"pk": {"S": "R#j"}, "sk": {"S": "h"}, "gsi1pk": {"S": "RH3"}, "gsi1sk": {"S": "h#j"}, "c_n": {"N": "1"}}),
        );
        let created = bill_write(&s, None, Some(&first), true, Outcome::Written);
        assert_eq!(created.indexes, [("gsi1".into(), "RH3".into(), 1.0)]);
        let mut later = first.clone();
        later.insert("c_n".into(), json!({"N": "2"}));
        let added = bill_write(&s, Some(&first), Some(&later), true, Outcome::Written);
        assert!(added.indexes.is_empty(), "{added:?}");
        assert_eq!(
            added.table, 2.0,
            "the table write, doubled in a transaction"
        );
        // Projected ALL, the same `ADD` rewrites the index entry.
        let all = schema(Projection::All);
        let added = bill_write(&all, Some(&first), Some(&later), true, Outcome::Written);
        assert_eq!(added.indexes, [("gsi1".into(), "RH3".into(), 1.0)]);
    }

    #[test]
    fn a_moved_index_key_is_a_delete_and_a_put() {
        let s = schema(Projection::KeysOnly);
        let was = item(
            json!({"pk": {"S": "a"}, "sk": {"S": "b"}, "gsi1pk": {"S": "DUE#3"}, "gsi1sk": {"S": "100"}}),
        );
        let mut now = was.clone();
        now.insert("gsi1pk".into(), json!({"S": "DUE#7"}));
        let bill = bill_write(&s, Some(&was), Some(&now), true, Outcome::Written);
        assert_eq!(
            bill.indexes,
            [
                ("gsi1".into(), "DUE#3".into(), 1.0),
                ("gsi1".into(), "DUE#7".into(), 1.0)
            ]
        );
        assert_eq!(
            bill.table, 2.0,
            "transactional table write doubled, index writes not"
        );
        assert_eq!(bill.total(), 4.0);
    }

    #[test]
    fn sqs_and_events_bill_per_64_kb() {
        assert_eq!(chunks(0), 1);
        assert_eq!(chunks(200), 1);
        assert_eq!(chunks(64 * 1024), 1);
        assert_eq!(chunks(64 * 1024 + 1), 2);
        assert_eq!(
            chunks(256 * 1024),
            4,
            "AWS's example: a 256 KB message is 4 requests"
        );
    }

    #[test]
    fn the_schema_is_read_from_describe_table() {
        let described = json!({
            "TableName": "sundial",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "GlobalSecondaryIndexes": [
                {"IndexName": "gsi1", "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"}],
                 "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["state"]}}
            ]
        });
        let s = TableSchema::from_description(&described).unwrap();
        assert_eq!(s.hash_key, "pk");
        assert_eq!(s.range_key.as_deref(), Some("sk"));
        assert_eq!(
            s.indexes[0].projection,
            Projection::Include(vec!["state".into()])
        );
        assert_eq!(s.indexes[0].range_key, None);
    }
}
