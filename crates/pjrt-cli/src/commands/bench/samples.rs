//! Per-call samples a benchmark measured: a named series of durations, which `--plot` draws and
//! from which the reported statistics come.

use super::Stats;

/// A named series of per-call durations, in nanoseconds (e.g. "safe" and "raw").
#[derive(Clone, Debug)]
pub struct Samples {
    /// What was measured ("safe", "raw", ...); the plot's legend.
    pub name: String,
    /// One duration per call, in nanoseconds, sorted ascending.
    ns: Vec<u64>,
}

impl Samples {
    /// A series from per-call durations in nanoseconds (in any order).
    pub fn new(name: impl Into<String>, mut ns: Vec<u64>) -> Samples {
        ns.sort_unstable();
        Samples { name: name.into(), ns }
    }

    /// The durations, sorted ascending.
    pub fn sorted_ns(&self) -> &[u64] {
        &self.ns
    }

    /// The `q` quantile (0..=1) in microseconds (nearest rank); 0 for an empty series.
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.ns.is_empty() {
            return 0.0;
        }
        self.ns[((self.ns.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize] as f64 / 1e3
    }

    /// The summary statistics the reports print.
    pub fn stats(&self) -> Stats {
        Stats {
            median_us: self.quantile_us(0.5),
            p10_us: self.quantile_us(0.1),
            p90_us: self.quantile_us(0.9),
            p99_us: self.quantile_us(0.99),
            min_us: self.quantile_us(0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_the_sorted_series() {
        let s = Samples::new("safe", (1..=100).rev().map(|i| i * 1000).collect());
        assert_eq!(s.sorted_ns()[0], 1000);
        assert_eq!((s.quantile_us(0.0), s.quantile_us(0.5), s.quantile_us(1.0)), (1.0, 51.0, 100.0));
        assert_eq!(s.stats().p90_us, 90.0);
        assert_eq!(Samples::new("empty", vec![]).quantile_us(0.5), 0.0);
    }
}
