//! Several runs of one measurement and what the report quotes of them: the median and the
//! spread (the machine is noisy; a mean would let one slow run move the figure).

use serde::Serialize;

/// The runs of one point, in seconds or whatever unit the series has.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Every run, in the order measured.
    pub runs: Vec<f64>,
}

impl Summary {
    /// `None` for no runs (a point that was not measured is not a zero).
    pub fn of(runs: &[f64]) -> Option<Summary> {
        if runs.is_empty() || runs.iter().any(|r| !r.is_finite()) {
            return None;
        }
        let mut sorted = runs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Summary {
            median,
            min: sorted[0],
            max: sorted[n - 1],
            runs: runs.to_vec(),
        })
    }

    /// Spread as a fraction of the median, (max - min) / median.
    pub fn spread(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            (self.max - self.min) / self.median
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(s.spread(), 1.0);
        assert_eq!(Summary::of(&[1.0, 2.0, 3.0, 10.0]).unwrap().median, 2.5);
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[f64::NAN]), None);
    }
}
