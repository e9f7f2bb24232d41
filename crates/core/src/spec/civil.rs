//! Proleptic Gregorian calendar arithmetic on plain integers.
//!
//! The evaluator walks wall-clock time as "local seconds since 1970-01-01T00:00:00" (the instant the
//! wall clock would show if the zone were UTC). Doing the date maths on integers instead of chrono's
//! types keeps the hot loop free of validation and allocation; the algorithms are Howard Hinnant's.

/// Seconds in a civil day.
pub(crate) const DAY: i64 = 86_400;

/// Days since 1970-01-01 for a year, month (1–12) and day (1–31).
pub(crate) fn days_from_civil(year: i32, month: u32, day: u32) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Year, month (1–12) and day (1–31) of a day count since 1970-01-01.
pub(crate) fn civil_from_days(days: i64) -> (i32, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
    (year, month, day)
}

/// Day of the week, 0 = Sunday … 6 = Saturday.
pub(crate) fn weekday(days: i64) -> u32 {
    (days + 4).rem_euclid(7) as u32
}

pub(crate) fn is_leap(year: i32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

pub(crate) fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 31,
    }
}

/// A local wall-clock time broken into its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WallClock {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub second_of_day: u32,
}

impl WallClock {
    pub(super) fn from_local_seconds(local: i64) -> Self {
        let days = local.div_euclid(DAY);
        let (year, month, day) = civil_from_days(days);
        WallClock {
            year,
            month,
            day,
            second_of_day: local.rem_euclid(DAY) as u32,
        }
    }

    pub(super) fn hour(self) -> u32 {
        self.second_of_day / 3600
    }
    pub(super) fn minute(self) -> u32 {
        self.second_of_day / 60 % 60
    }
    pub(super) fn second(self) -> u32 {
        self.second_of_day % 60
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_day_of_the_supported_span() {
        let first = days_from_civil(1999, 1, 1);
        let last = days_from_civil(2101, 12, 31);
        for days in first..=last {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
            assert!(d >= 1 && d <= days_in_month(y, m));
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(weekday(0), 4, "1970-01-01 was a Thursday");
        assert_eq!(
            weekday(days_from_civil(2024, 3, 10)),
            0,
            "2024-03-10 was a Sunday"
        );
    }
}
