//! Exponential backoff, the one formula every retry in pitcrew waits by: a ceiling that doubles with
//! each retry up to a cap, and jitter, so that callers that failed together do not come back in
//! lockstep. Each caller keeps its own base, cap and kind of jitter.

use std::time::Duration;

/// How much of the ceiling is left to chance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// Anywhere from zero to the ceiling ("full jitter", AWS architecture blog, "Exponential Backoff
    /// and Jitter"): the widest spread, for many clients hit by the same outage or overload.
    Full,
    /// Half the ceiling fixed, the other half random: spread, but never much sooner than the ceiling.
    Half,
}

/// The wait before retry number `retry` (1-based; 0 waits like 1): `base`, doubled for each retry
/// after the first, at most `cap`, then jittered.
pub fn delay(base: Duration, cap: Duration, retry: u32, jitter: Jitter) -> Duration {
    let ceiling = base.saturating_mul(1_u32 << retry.saturating_sub(1).min(20)).min(cap);
    match jitter {
        Jitter::Full => ceiling.mul_f64(fastrand::f64()),
        Jitter::Half => ceiling / 2 + ceiling.mul_f64(fastrand::f64() / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: Duration = Duration::from_secs(1);
    const CAP: Duration = Duration::from_secs(30);

    #[test]
    fn the_ceiling_doubles_per_retry_up_to_the_cap() {
        for (retry, ceiling) in [
            (0, 1),
            (1, 1),
            (2, 2),
            (3, 4),
            (5, 16),
            (6, 30),
            (40, 30),
            (u32::MAX, 30),
        ] {
            let ceiling = Duration::from_secs(ceiling);
            let delays: Vec<_> = (0..200).map(|_| delay(BASE, CAP, retry, Jitter::Full)).collect();
            assert!(delays.iter().all(|d| *d <= ceiling), "retry {retry}");
            assert!(delays.iter().any(|d| *d < ceiling / 4) && delays.iter().any(|d| *d > ceiling / 2));
        }
    }

    #[test]
    fn half_jitter_keeps_at_least_half_the_ceiling() {
        for (retry, ceiling) in [(1, 1), (3, 4), (9, 30)] {
            let ceiling = Duration::from_secs(ceiling);
            let delays: Vec<_> = (0..200).map(|_| delay(BASE, CAP, retry, Jitter::Half)).collect();
            assert!(
                delays.iter().all(|d| *d >= ceiling / 2 && *d <= ceiling),
                "retry {retry}"
            );
            assert!(delays.iter().any(|d| *d < ceiling * 5 / 8) && delays.iter().any(|d| *d > ceiling * 7 / 8));
        }
    }
}
