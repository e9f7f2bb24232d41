//! A capacity meter for Sundial's AWS path.
//!
//! It sees every DynamoDB, SQS and EventBridge request the adapters really make — as a proxy in
//! front of moto ([`proxy`]), through which the in-process moto tests and the real Lambda
//! binaries of `sundial-lambda-local` both send their AWS calls — and bills each one the way AWS
//! documents it ([`bill`], [`size`]): write and read request units from the items' real sizes
//! before and after each write (read from moto around it), index writes by projection, SQS
//! requests and EventBridge events per 64 KB. It also keeps the units each partition key value
//! receives per second, for the table and for each index, to find hot keys.
//!
//! moto proves correctness, not capacity: moto's own `ConsumedCapacity` is not used. The billing
//! functions are pure, so a simulation can bill the requests it models with the same code.

pub mod bill;
pub mod proxy;
pub mod size;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, PoisonError};

use bill::WriteBill;

/// Totals of one kind of request, or of all.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bill {
    /// DynamoDB write request units (table and indexes).
    pub wru: f64,
    /// Of `wru`, those written to indexes.
    pub index_wru: f64,
    /// DynamoDB read request units.
    pub rru: f64,
    /// DynamoDB requests.
    pub dynamo_requests: u64,
    /// SQS requests as billed (per 64 KB chunk).
    pub sqs_requests: u64,
    /// EventBridge events as billed (per 64 KB chunk).
    pub events: u64,
}

impl Bill {
    fn add(&mut self, other: &Bill) {
        self.wru += other.wru;
        self.index_wru += other.index_wru;
        self.rru += other.rru;
        self.dynamo_requests += other.dynamo_requests;
        self.sqs_requests += other.sqs_requests;
        self.events += other.events;
    }
}

/// Where units landed: the table's or an index's partition key value.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeySpace {
    /// The table, or `table/index`.
    pub space: String,
    /// The partition key's value.
    pub key: String,
}

/// The busiest second of one partition key value.
#[derive(Clone, Debug, PartialEq)]
pub struct HotKey {
    /// Which key.
    pub at: KeySpace,
    /// Its most units in one second.
    pub peak: f64,
    /// The second (the meter's clock) of that peak.
    pub second: i64,
}

/// The meter: what the requests through it cost, in total, by operation, and by key and second.
#[derive(Debug, Default)]
pub struct Meter {
    state: Mutex<State>,
    /// The second units are booked in: set by a test on a simulated clock ([`Meter::set_second`]),
    /// else the wall clock's.
    second: AtomicI64,
}

#[derive(Debug, Default)]
struct State {
    total: Bill,
    by_operation: BTreeMap<String, Bill>,
    writes: BTreeMap<KeySpace, BTreeMap<i64, f64>>,
    reads: BTreeMap<KeySpace, BTreeMap<i64, f64>>,
}

impl Meter {
    /// A meter booking units at the wall clock's second.
    pub fn new() -> Meter {
        Meter::default()
    }

    /// Books later units at `second` (a simulated clock's), instead of the wall clock's.
    pub fn set_second(&self, second: i64) {
        self.second.store(second, Ordering::SeqCst);
    }

    fn now(&self) -> i64 {
        match self.second.load(Ordering::SeqCst) {
            0 => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
            set => set,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Books a DynamoDB request of `operation` with its item writes, each on its table. With
    /// `SUNDIAL_METER_TRACE` set, each item write's units are printed to stderr as they are booked:
    /// where a run's units go, write by write.
    pub fn book_writes(&self, operation: &str, writes: &[(String, WriteBill)]) {
        let second = self.now();
        let mut bill = Bill {
            dynamo_requests: 1,
            ..Bill::default()
        };
        let mut state = self.lock();
        for (table, write) in writes {
            if trace() {
                eprintln!(
                    "meter: {operation} {} table {} indexes {:?}",
                    write.table_key, write.table, write.indexes
                );
            }
            bill.wru += write.total();
            bill.index_wru += write.total() - write.table;
            let at = KeySpace {
                space: table.to_owned(),
                key: write.table_key.clone(),
            };
            *state
                .writes
                .entry(at)
                .or_default()
                .entry(second)
                .or_default() += write.table;
            for (index, key, units) in &write.indexes {
                let at = KeySpace {
                    space: format!("{table}/{index}"),
                    key: key.clone(),
                };
                *state
                    .writes
                    .entry(at)
                    .or_default()
                    .entry(second)
                    .or_default() += units;
            }
        }
        state.book(operation, &bill);
    }

    /// Books a DynamoDB read request of `operation`: `units` read from each key space.
    pub fn book_reads(&self, operation: &str, reads: &[(KeySpace, f64)]) {
        let second = self.now();
        let mut bill = Bill {
            dynamo_requests: 1,
            ..Bill::default()
        };
        let mut state = self.lock();
        for (at, units) in reads {
            bill.rru += units;
            *state
                .reads
                .entry(at.clone())
                .or_default()
                .entry(second)
                .or_default() += units;
        }
        state.book(operation, &bill);
    }

    /// Books any other request (`sqs_requests` and `events` as billed; a DynamoDB request that
    /// bills no unit has `dynamo_requests` 1).
    pub fn book(&self, operation: &str, bill: &Bill) {
        self.lock().book(operation, bill);
    }

    /// Everything booked so far.
    pub fn total(&self) -> Bill {
        self.lock().total.clone()
    }

    /// Everything booked so far, by operation (`dynamodb:TransactWriteItems`, `sqs:SendMessage`…).
    pub fn by_operation(&self) -> BTreeMap<String, Bill> {
        self.lock().by_operation.clone()
    }

    /// The `n` partition key values with the most write units in one second, busiest first.
    pub fn hottest_writes(&self, n: usize) -> Vec<HotKey> {
        hottest(&self.lock().writes, n)
    }

    /// The `n` partition key values with the most read units in one second, busiest first.
    pub fn hottest_reads(&self, n: usize) -> Vec<HotKey> {
        hottest(&self.lock().reads, n)
    }

    /// Forgets everything booked (between the phases of a test).
    pub fn reset(&self) {
        *self.lock() = State::default();
    }
}

impl State {
    fn book(&mut self, operation: &str, bill: &Bill) {
        self.total.add(bill);
        self.by_operation
            .entry(operation.to_owned())
            .or_default()
            .add(bill);
    }
}

fn hottest(by_key: &BTreeMap<KeySpace, BTreeMap<i64, f64>>, n: usize) -> Vec<HotKey> {
    let mut peaks: Vec<HotKey> = by_key
        .iter()
        .filter_map(|(at, seconds)| {
            let (second, peak) = seconds
                .iter()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(s, u)| (*s, *u))?;
            Some(HotKey {
                at: at.clone(),
                peak,
                second,
            })
        })
        .collect();
    peaks.sort_by(|a, b| b.peak.total_cmp(&a.peak).then_with(|| a.at.cmp(&b.at)));
    peaks.truncate(n);
    peaks
}

/// Whether `SUNDIAL_METER_TRACE` asks for every item write to be printed (read once).
fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("SUNDIAL_METER_TRACE").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(key: &str, table: f64, index: Option<(&str, f64)>) -> WriteBill {
        WriteBill {
            table,
            table_key: key.into(),
            indexes: index
                .map(|(k, u)| vec![("gsi1".to_owned(), k.to_owned(), u)])
                .unwrap_or_default(),
        }
    }

    #[test]
    fn units_are_kept_per_key_and_second_and_the_busiest_comes_first() {
        let meter = Meter::new();
        meter.set_second(100);
        let put = |key, units| [("t".to_owned(), write(key, units, Some(("JOBS", 1.0))))];
        meter.book_writes("dynamodb:PutItem", &put("job#1", 1.0));
        meter.book_writes("dynamodb:PutItem", &put("job#2", 1.5));
        meter.set_second(101);
        meter.book_writes("dynamodb:PutItem", &put("job#1", 1.0));
        let total = meter.total();
        assert_eq!(
            (total.wru, total.index_wru, total.dynamo_requests),
            (6.5, 3.0, 3)
        );
        let hot = meter.hottest_writes(2);
        assert_eq!(hot[0].at.space, "t/gsi1");
        assert_eq!(
            (hot[0].at.key.as_str(), hot[0].peak, hot[0].second),
            ("JOBS", 2.0, 100)
        );
        assert_eq!((hot[1].at.key.as_str(), hot[1].peak), ("job#2", 1.5));
        assert_eq!(meter.by_operation()["dynamodb:PutItem"].wru, 6.5);
        meter.reset();
        assert_eq!(meter.total(), Bill::default());
    }
}
