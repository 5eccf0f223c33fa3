//! Time stamps as the toolchain writes them: RFC 3339, UTC.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` as RFC 3339 in UTC to the second (`2026-04-02T09:30:00Z`).
pub fn rfc3339(t: SystemTime) -> String {
    rfc3339_with(t, false)
}

/// `t` as RFC 3339 in UTC to the millisecond (`2026-04-02T09:30:00.125Z`).
pub fn rfc3339_millis(t: SystemTime) -> String {
    rfc3339_with(t, true)
}

fn rfc3339_with(t: SystemTime, millis: bool) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let fraction = if millis {
        format!(".{:03}", since.subsec_millis())
    } else {
        String::new()
    };
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{fraction}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_of_known_instants() {
        let at = |secs: u64| rfc3339(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_709_210_096), "2024-02-29T12:34:56Z");
        assert_eq!(at(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn millis_are_zero_padded() {
        let t = UNIX_EPOCH + Duration::from_millis(951_782_400_007);
        assert_eq!(rfc3339_millis(t), "2000-02-29T00:00:00.007Z");
    }
}
