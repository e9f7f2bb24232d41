//! Named business calendars (docs/spec.md §16): one versioned JSON document per name, and the
//! index of which jobs use which calendar, so that a calendar's change re-plans exactly its
//! jobs and a calendar in use is not deleted, without a scan of the jobs.
//!
//! The index is kept a superset of the truth: the use cases add a job under a calendar before
//! they write the job and remove it after, so a crash between the two leaves at most a job listed
//! that no longer uses the calendar (which a re-plan or a delete reads and drops), never a job
//! missing.
//!
//! A delete must not race a job write that starts to use the calendar. Three rules close it
//! (docs/engine.md, "Calendars"): listing a job counts a *listing* on the calendar, after the
//! entry is stored ([`CalendarStore::add_calendar_users`]; the count never goes down); a delete is
//! made only at the count its check of the jobs read ([`CalendarStore::delete_calendar`]); and
//! the job write that starts using a calendar requires its entry to be there
//! ([`Write::RequireCalendarUser`](super::Write::RequireCalendarUser)), so an entry the delete's
//! check dropped as stale fails the write, which lists the job again, and that fails on a deleted
//! calendar.
//!
//! A calendar's change and the entry of its own history that records it (`calendar:{name}` in the
//! audit trail) are written together, atomically: neither is ever stored without the other.

use std::future::Future;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{AuditRecord, StoreError};

/// The most calendars a store lists ([`CalendarStore::list_calendars`]); a put beyond is the use
/// case's to refuse.
pub const MAX_CALENDARS: usize = 1000;

/// A calendar as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct CalendarRecord {
    /// The calendar's name (`london`).
    pub name: String,
    /// Optimistic-concurrency version: 1 when first written, +1 on every write.
    pub version: u64,
    /// When it was last written.
    pub updated_at: DateTime<Utc>,
    /// The calendar's document (its JSON form, and who wrote it).
    pub document: Value,
    /// How many times jobs were listed under it ([`CalendarStore::add_calendar_users`]); never
    /// goes down. A put keeps the stored count (a new calendar starts at 0) whatever the record
    /// says; a delete is made only at the count read.
    pub listings: u64,
}

/// The store of calendars and of the jobs that use them.
///
/// Implementations must be safe to call concurrently and must make each method atomic.
pub trait CalendarStore: Send + Sync + 'static {
    /// The calendar `name`, if there is one.
    fn get_calendar(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<CalendarRecord>, StoreError>> + Send;

    /// Every calendar, in name order (at most [`MAX_CALENDARS`]).
    fn list_calendars(
        &self,
    ) -> impl Future<Output = Result<Vec<CalendarRecord>, StoreError>> + Send;

    /// Writes `calendar` at its version: version 1 only when there is none of that name (else
    /// `AlreadyExists`), a later version only over version − 1 (else `VersionConflict`, or
    /// `NotFound` when there is none), and appends `history` to the audit trail in the same
    /// atomic write (its entry id must be free, else `AlreadyExists` naming the entry, and the
    /// calendar is not written either).
    fn put_calendar(
        &self,
        calendar: &CalendarRecord,
        history: &AuditRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the calendar `name` at `version` and `listings` (`NotFound` when there is none,
    /// `VersionConflict` when it is at another version or a job was listed under it since the
    /// count was read), appending `history` in the same atomic write as
    /// [`CalendarStore::put_calendar`] does. Its index of jobs is left as it is.
    fn delete_calendar(
        &self,
        name: &str,
        version: u64,
        listings: u64,
        history: &AuditRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Lists `job_id` under each calendar of `names` (idempotent), then counts a listing on each
    /// ([`CalendarRecord::listings`]). `NotFound` naming the calendar when one of `names` does not
    /// exist: then `job_id` is not listed under that one.
    fn add_calendar_users(
        &self,
        job_id: &str,
        names: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Removes `job_id` from under each calendar of `names` (absent entries are no error).
    fn remove_calendar_users(
        &self,
        job_id: &str,
        names: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The jobs listed under the calendar `name`, in id order.
    fn calendar_users(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;
}
