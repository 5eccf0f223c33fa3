//! Parsers of the numeric options: each accepts a documented range and refuses everything
//! else (out of range, not a number, not finite) with a usage error that states the range.

use std::ops::RangeInclusive;

/// `--planner-timeout`: seconds, a decimal number.
pub(crate) const TIMEOUT_SECONDS: RangeInclusive<f64> = 0.001..=86_400.0;

/// `--planner-max-output`: bytes.
pub(crate) const MAX_OUTPUT_BYTES: RangeInclusive<u64> = 1..=1024 * 1024 * 1024;

/// `--max-attempts`: repair requests.
pub(crate) const MAX_ATTEMPTS: RangeInclusive<u64> = 0..=1000;

/// `--max-planner-calls`: planner calls.
pub(crate) const MAX_PLANNER_CALLS: RangeInclusive<u64> = 0..=1000;

/// `lwirc eval --budget`: units of evaluation work.
pub(crate) const EVAL_BUDGET: RangeInclusive<u64> = 1..=1_000_000_000;

/// `lwirc run --max-parallel`: steps at once.
pub(crate) const MAX_PARALLEL: RangeInclusive<u64> = 1..=1024;

/// A number of steps at once in [`MAX_PARALLEL`].
pub(crate) fn max_parallel(text: &str) -> Result<usize, String> {
    whole(text, MAX_PARALLEL, "steps")
}

/// A number of seconds in [`TIMEOUT_SECONDS`].
pub(crate) fn timeout_seconds(text: &str) -> Result<f64, String> {
    let range = TIMEOUT_SECONDS;
    let refused = || {
        format!(
            "expected a number of seconds from {} to {}",
            range.start(),
            range.end()
        )
    };
    let seconds: f64 = text.trim().parse().map_err(|_| refused())?;
    if range.contains(&seconds) {
        Ok(seconds)
    } else {
        Err(refused())
    }
}

/// A whole number in `range`, as any integer type it fits.
fn whole<T: TryFrom<u64>>(text: &str, range: RangeInclusive<u64>, what: &str) -> Result<T, String> {
    let refused = || {
        format!(
            "expected a whole number of {what} from {} to {}",
            range.start(),
            range.end()
        )
    };
    let n: u64 = text.trim().parse().map_err(|_| refused())?;
    if !range.contains(&n) {
        return Err(refused());
    }
    T::try_from(n).map_err(|_| refused())
}

/// A number of bytes in [`MAX_OUTPUT_BYTES`].
pub(crate) fn max_output_bytes(text: &str) -> Result<usize, String> {
    whole(text, MAX_OUTPUT_BYTES, "bytes")
}

/// A number of repair attempts in [`MAX_ATTEMPTS`].
pub(crate) fn max_attempts(text: &str) -> Result<u32, String> {
    whole(text, MAX_ATTEMPTS, "attempts")
}

/// A number of planner calls in [`MAX_PLANNER_CALLS`].
pub(crate) fn max_planner_calls(text: &str) -> Result<u32, String> {
    whole(text, MAX_PLANNER_CALLS, "calls")
}

/// An evaluation budget in [`EVAL_BUDGET`].
pub(crate) fn eval_budget(text: &str) -> Result<u64, String> {
    whole(text, EVAL_BUDGET, "units")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ends_are_in_and_the_rest_is_out() {
        assert_eq!(timeout_seconds("0.001"), Ok(0.001));
        assert_eq!(timeout_seconds("86400"), Ok(86_400.0));
        for text in ["1e20", "0", "-0", "nan", "inf", "86400.5", "", " "] {
            assert!(timeout_seconds(text).is_err(), "{text:?}");
        }
        assert_eq!(max_output_bytes("1073741824"), Ok(1 << 30));
        assert!(max_output_bytes("1073741825").is_err());
        assert_eq!(max_attempts("0"), Ok(0));
        assert!(max_attempts("-1").is_err());
        assert_eq!(max_planner_calls("1000"), Ok(1000));
        assert_eq!(max_planner_calls("0"), Ok(0));
        assert!(max_planner_calls("1001").is_err());
    }
}
