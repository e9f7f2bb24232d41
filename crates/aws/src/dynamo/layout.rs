//! The table's layout version: one item (`{ns}META#layout` / `M`) that says which key layout and
//! index projections the table was made for, so binaries never run on a table they would misread.
//!
//! | record | `pk`               | `sk` | attributes              |
//! |--------|--------------------|------|-------------------------|
//! | layout | `{ns}META#layout`  | `M`  | `layout` (a number)     |
//!
//! Each function checks it once per cold start ([`DynamoStore::check_layout`], one `GetItem`):
//! - the item holds [`LAYOUT_VERSION`]: go on;
//! - it holds another version: refuse to start, with a message naming both versions and what to do;
//! - there is none and the table holds no job (no entry under the `JOBS` key of `gsi1`, one
//!   `Query` of one key): a fresh table. The version is written with a conditional put
//!   (`attribute_not_exists(pk)`), so two functions starting at once on a fresh table agree: the
//!   loser reads the winner's item and checks it like any other;
//! - there is none but the table holds jobs: a table of layout 1 (before the record existed),
//!   refused like any older layout.
//!
//! Layout history:
//! - 1: `gsi1`, `gsi2` and `timers` projected `ALL` (no record);
//! - 2: `gsi1` and `gsi2` keys only, `timers` keys and `key` (lists read the index, then the items
//!   with `BatchGetItem`), so a write that changes no index key writes no index.
//! - 3: documents of 256 bytes or more stored deflated (`docz`, see `item.rs`). Binaries of
//!   layout 3 read both forms, so they upgrade a table of layout 2 in place: the first function to
//!   start moves its record from 2 to 3 (a conditional update; the others then find 3), and from
//!   then on a layout-2 function refuses the table at its cold start. A layout-2 function still warm
//!   during the deployment fails its reads of deflated documents until it is replaced; the
//!   messages and requests it fails are retried.
//! - 4: an execution's wake-up written with the execution (every fire's and trigger's fallback)
//!   is three attributes of the execution's item, not an item of its own, and executions are
//!   updated with `UpdateItem` so that a write of the run keeps it (see `own_wakeup.rs`).
//!   Binaries of layout 4 still read and remove wake-ups kept as items of their own, so they
//!   upgrade a table of layout 2 or 3 in place, as above; a layout-3 function still warm during
//!   the deployment would replace an execution's item without its wake-up (a fallback lost, which
//!   only matters if that run's message is lost too).
//! - 5: a job's wake-up written with the job (the tick's, with every fire it plans) is three
//!   attributes of the job's item, not an item `W#job:{id}` of its own, and jobs are updated with
//!   `UpdateItem` so that every write of the job keeps it (see `own_wakeup.rs`). Binaries of
//!   layout 5 read and remove both places (a wake-up set while its job did not exist is still an
//!   item of its own, moved onto the job when the tick reads it due). **Not upgraded in place:** a
//!   layout-4 function still warm during the deployment would replace a job's item without its
//!   wake-up, and a recurring job whose wake-up is lost is never planned again. No deployment
//!   predates it (issue 31), so a table of layout 2, 3 or 4 is refused like layout 1.
//! - 6: a job's deletion leaves a tombstone (`J#{jobId}` / `G`, listed under `GONE` in `gsi1`), so
//!   that retention finds what deleted jobs left without a scan (see `retention.rs`). Binaries of
//!   layout 6 read layout-5 items as they are, so they upgrade a table of layout 5 in place; jobs
//!   deleted before leave no tombstone, so `clean` no longer sees their runs and history (finished
//!   runs and entries still expire by TTL with a retention), and a layout-5 function still warm
//!   during the deployment deletes a job without one, with the same effect.

use aws_sdk_dynamodb::types::AttributeValue;
use futures_util::FutureExt;
use sundial_ports::store::StoreError;

use super::item::number;
use super::keys::{Item, GSI1};
use super::{unavailable, DynamoStore};

/// The layout these binaries read and write.
pub const LAYOUT_VERSION: u32 = 6;

/// The oldest layout these binaries upgrade in place: one they read as it is, whose record they
/// move to [`LAYOUT_VERSION`].
pub const UPGRADES_FROM: u32 = 5;

/// The layout of a table that holds jobs but no layout record.
pub const UNRECORDED_LAYOUT: u32 = 1;

/// The sort key of the layout record.
const LAYOUT_SK: &str = "M";

/// Why the functions refuse a table.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// The table was made for an older layout.
    #[error(
        "DynamoDB table {table} has Sundial layout {found}{how}, but these functions use layout \
         {LAYOUT_VERSION}, to which a table of layout {found} cannot be upgraded in place. Deploy this version with a new table (a new stack, or delete the \
         retained table first), or deploy the functions of layout {found}; see docs/deploy.md, \
         \"Layout versions\""
    )]
    Older {
        /// The table's name.
        table: String,
        /// Its layout.
        found: u32,
        /// How it was learnt (" (no layout record, but it holds jobs)" or empty).
        how: &'static str,
    },
    /// The table was made by newer functions.
    #[error(
        "DynamoDB table {table} has Sundial layout {found}, newer than these functions' layout \
         {LAYOUT_VERSION}: deploy the functions of a release that uses layout {found}; see \
         docs/deploy.md, \"Layout versions\""
    )]
    Newer {
        /// The table's name.
        table: String,
        /// Its layout.
        found: u32,
    },
    /// The table could not be read or written.
    #[error("checking the table's layout: {0}")]
    Store(#[from] StoreError),
}

impl DynamoStore {
    fn layout_key(&self) -> Item {
        Item::from([
            (
                "pk".to_owned(),
                AttributeValue::S(format!("{}META#layout", self.keys.ns())),
            ),
            ("sk".to_owned(), AttributeValue::S(LAYOUT_SK.to_owned())),
        ])
    }

    /// Checks that the table has this layout, recording it on a fresh table; see the module
    /// documentation. Returns the layout (always [`LAYOUT_VERSION`] when it is `Ok`).
    pub async fn check_layout(&self) -> Result<u32, LayoutError> {
        if let Some(item) = self.get_item(self.layout_key()).await? {
            return self.judge(&item).await;
        }
        if self.holds_jobs().await? {
            return Err(LayoutError::Older {
                table: self.table.clone(),
                found: UNRECORDED_LAYOUT,
                how: " (no layout record, but it holds jobs)",
            });
        }
        let mut item = self.layout_key();
        item.insert("kind".into(), AttributeValue::S("layout".into()));
        item.insert(
            "layout".into(),
            AttributeValue::N(LAYOUT_VERSION.to_string()),
        );
        match self
            .put_if(item, "attribute_not_exists(pk)", vec![])
            .await?
        {
            None => Ok(LAYOUT_VERSION),
            // Another function recorded it first: judge what it wrote.
            Some(Some(old)) if !old.is_empty() => self.judge(&old).await,
            Some(_) => match self.get_item(self.layout_key()).await? {
                Some(item) => self.judge(&item).await,
                None => Err(StoreError::unavailable("the layout record vanished").into()),
            },
        }
    }

    /// Records layout `version` as this table's, whatever it held: for tests that make a table of
    /// another layout.
    pub async fn record_layout(&self, version: u32) -> Result<(), StoreError> {
        let mut item = self.layout_key();
        item.insert("kind".into(), AttributeValue::S("layout".into()));
        item.insert("layout".into(), AttributeValue::N(version.to_string()));
        self.put_item(item).await?;
        Ok(())
    }

    async fn judge(&self, item: &Item) -> Result<u32, LayoutError> {
        let found: u32 = number(item, "layout")?;
        match found.cmp(&LAYOUT_VERSION) {
            std::cmp::Ordering::Equal => Ok(found),
            std::cmp::Ordering::Less if found >= UPGRADES_FROM => self.upgrade(found).await,
            std::cmp::Ordering::Less => Err(LayoutError::Older {
                table: self.table.clone(),
                found,
                how: "",
            }),
            std::cmp::Ordering::Greater => Err(LayoutError::Newer {
                table: self.table.clone(),
                found,
            }),
        }
    }

    /// Moves the record of a table of layout `found` (one these binaries read as it is) to
    /// [`LAYOUT_VERSION`]; a function that moved it first is no error.
    async fn upgrade(&self, found: u32) -> Result<u32, LayoutError> {
        let mut item = self.layout_key();
        item.insert("kind".into(), AttributeValue::S("layout".into()));
        item.insert(
            "layout".into(),
            AttributeValue::N(LAYOUT_VERSION.to_string()),
        );
        let condition = vec![(":found", AttributeValue::N(found.to_string()))];
        match self.put_if(item, "layout = :found", condition).await? {
            None => {
                tracing::info!(
                    table = %self.table,
                    from = found,
                    to = LAYOUT_VERSION,
                    "table layout upgraded in place"
                );
                Ok(LAYOUT_VERSION)
            }
            // Moved meanwhile, by another function of this release or a newer one: judge that.
            Some(_) => match self.get_item(self.layout_key()).await? {
                Some(now) if number::<u32>(&now, "layout")? != found => {
                    Box::pin(self.judge(&now)).await
                }
                _ => Err(StoreError::unavailable("the layout record could not be upgraded").into()),
            },
        }
    }

    /// Whether any job is listed (one key of `gsi1`, at most one entry read).
    async fn holds_jobs(&self) -> Result<bool, StoreError> {
        let output = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(GSI1)
            .key_condition_expression("gsi1pk = :pk")
            .expression_attribute_values(":pk", AttributeValue::S(self.keys.all_jobs()))
            .limit(1)
            .send()
            .boxed()
            .await
            .map_err(|e| unavailable("Query", e))?;
        Ok(output.items.is_some_and(|items| !items.is_empty()))
    }
}
