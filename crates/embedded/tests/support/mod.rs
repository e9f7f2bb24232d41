//! What the migration tests share.

/// Undoes schema step 3 (the jobs list's orders: the `job_orders` table and the triggers that keep
/// it), so a test can turn a file back into what an older build wrote.
pub(crate) const UNDO_JOB_ORDERS: &str = "
    -- Step 4 (labels) first: it came after.
    DROP TABLE job_labels;
    ALTER TABLE jobs DROP COLUMN labels;
    DROP TRIGGER job_orders_on_job_insert;
    DROP TRIGGER job_orders_on_job_delete;
    DROP TRIGGER job_orders_next_fire_on_wakeup_insert;
    DROP TRIGGER job_orders_next_fire_on_wakeup_update;
    DROP TRIGGER job_orders_next_fire_on_wakeup_delete;
    DROP TRIGGER job_orders_last_run_on_execution;
    DROP TABLE job_orders;
";

/// Undoes schema step 5 (statistics rollups), for the same purpose; apply it before
/// [`UNDO_JOB_ORDERS`] when going back further.
pub(crate) const UNDO_ROLLUPS: &str = "DROP TABLE rollups;";

/// Undoes schema step 6 (the audit trail's table); apply it before [`UNDO_ROLLUPS`] when going
/// back further.
pub(crate) const UNDO_AUDIT: &str = "DROP TABLE audit;";

/// Undoes schema step 7 (the sealed hours' fleet summaries); apply it before [`UNDO_AUDIT`] when
/// going back further.
pub(crate) const UNDO_FLEET_HOURS: &str = "DROP TABLE fleet_hours;";

/// Undoes schema step 8 (searching runs: the columns and indexes beside each execution); apply it
/// before [`UNDO_FLEET_HOURS`] when going back further.
pub(crate) const UNDO_RUN_SEARCH: &str = "
    DROP INDEX executions_by_scheduled;
    DROP INDEX executions_by_state_scheduled;
    ALTER TABLE executions DROP COLUMN scheduled_at;
    ALTER TABLE executions DROP COLUMN ended_at;
    ALTER TABLE executions DROP COLUMN source;
";
