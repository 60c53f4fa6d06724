//! When and how long to wait before trying a failed call again.

use std::time::{Duration, SystemTime};

/// Exponential backoff with full jitter, capped, honouring the provider's
/// `Retry-After` (which wins over the computed delay, up to `max_retry_after`).
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Delay before the first retry, doubled each time.
    pub base_delay: Duration,
    /// Cap of the computed delay.
    pub max_delay: Duration,
    /// Longest `Retry-After` we are willing to wait; longer ones fail at once.
    pub max_retry_after: Duration,
    /// Randomise delays (full jitter) so that clients do not retry in lockstep.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// A policy for tests: millisecond delays, no jitter.
    pub fn fast(max_retries: u32) -> Self {
        Self {
            max_retries,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(10),
            max_retry_after: Duration::from_secs(5),
            jitter: false,
        }
    }

    /// The wait before retry number `retry` (0-based), or `None` when the provider
    /// asked for a longer wait than we accept.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(after) = retry_after {
            return (after <= self.max_retry_after).then_some(after);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX));
        let capped = exp.min(self.max_delay);
        if !self.jitter {
            return Some(capped);
        }
        // Full jitter in [capped/2, capped]: spreads clients, still grows.
        let nanos = capped.as_nanos().min(u128::from(u64::MAX)) as u64;
        let half = nanos / 2;
        Some(Duration::from_nanos(half + fastrand::u64(0..=nanos - half)))
    }
}

/// Reads the provider's wait hint from response headers: `retry-after-ms` (OpenAI),
/// then `Retry-After` as seconds or as an HTTP date.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    parse_retry_after(get("retry-after")?, SystemTime::now())
}

/// Parses a `Retry-After` value (seconds, possibly fractional, or an HTTP date) as
/// seen at `now`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy {
            jitter: false,
            ..RetryPolicy::default()
        };
        let d: Vec<_> = (0..8)
            .map(|i| p.delay(i, None).unwrap().as_millis())
            .collect();
        assert_eq!(d, vec![500, 1000, 2000, 4000, 8000, 16000, 20000, 20000]);
        assert_eq!(p.delay(100, None), Some(Duration::from_secs(20)));
    }

    #[test]
    fn jitter_stays_in_upper_half() {
        let p = RetryPolicy::default();
        for retry in 0..6 {
            let full = RetryPolicy {
                jitter: false,
                ..p.clone()
            }
            .delay(retry, None)
            .unwrap();
            for _ in 0..50 {
                let d = p.delay(retry, None).unwrap();
                assert!(d >= full / 2 && d <= full, "{d:?} vs {full:?}");
            }
        }
    }

    #[test]
    fn retry_after_wins_unless_too_long() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(7))),
            Some(Duration::from_secs(7))
        );
        assert_eq!(p.delay(0, Some(Duration::from_secs(3600))), None);
    }

    #[test]
    fn retry_after_header_forms() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("0.25", now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:40 GMT", now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("soon", now), None);

        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "3".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
    }
}
