//! UTC timestamps without a calendar dependency: the record needs only "now" in ISO 8601.

use std::time::{SystemTime, UNIX_EPOCH};

/// Calendar fields of a UTC instant.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u64,
    minute: u64,
    second: u64,
}

fn civil(t: SystemTime) -> Civil {
    // A clock before 1970 is a broken clock; the epoch is as good an answer as any and keeps this infallible.
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    Civil {
        year,
        month,
        day,
        hour: rem / 3600,
        minute: rem % 3600 / 60,
        second: rem % 60,
    }
}

/// `2026-05-01T12:00:00+00:00`: the seed's format (Python's `isoformat(timespec="seconds")` in UTC).
pub(crate) fn iso_utc(t: SystemTime) -> String {
    let c = civil(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}+00:00",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// `20260501T120000Z`: for file names.
pub(crate) fn compact_utc(t: SystemTime) -> String {
    let c = civil(t);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn known_instants() {
        assert_eq!(iso_utc(at(0)), "1970-01-01T00:00:00+00:00");
        // 2000-02-29 (a leap day in a century leap year) 12:34:56.
        assert_eq!(iso_utc(at(951_827_696)), "2000-02-29T12:34:56+00:00");
        // 2024-12-31T23:59:59, the last second of a leap year.
        assert_eq!(iso_utc(at(1_735_689_599)), "2024-12-31T23:59:59+00:00");
        assert_eq!(compact_utc(at(1_735_689_600)), "20250101T000000Z");
    }
}
