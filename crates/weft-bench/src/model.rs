//! The per-file cost model of Liu et al. ([`crate::scenarios::CONNECTOR_MODEL`], §5.2): moving B bytes as N files takes
//! T = N·t0 + B/R + S0. The paper fits T against N at a fixed B (slope t0, intercept
//! B/R + S0) and resolves S0 from single files of several sizes (T = B/R + S0). Here both
//! series go into one least-squares fit of the three unknowns, which is the same thing
//! done once; Pearson r is that of T against N in the fixed-size series, as in the paper.
//! Costs cannot be negative: when noise would make t0 or S0 so, the fit keeps it at zero
//! and fits the others (the least-squares answer among non-negative costs).

use serde::Serialize;

/// One measured transfer: `files` files of `bytes` in all took `seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    pub files: u64,
    pub bytes: u64,
    pub seconds: f64,
}

/// The fitted model of one route.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    pub route: String,
    /// Cost of each file, seconds.
    pub t0_s: f64,
    /// End-to-end rate, bytes per second.
    pub rate_bytes_per_s: f64,
    /// Cost of each transfer, seconds.
    pub s0_s: f64,
    /// Pearson correlation of time against file count at the fixed total size.
    pub pearson_r: f64,
    /// The held-out point: what the model predicts for it and what was measured.
    pub held_out: Option<Prediction>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub files: u64,
    pub bytes: u64,
    pub predicted_s: f64,
    pub measured_s: f64,
}

/// Why a fit cannot be made.
#[derive(Debug, Clone, PartialEq)]
pub enum FitError {
    /// Fewer than two file counts or fewer than two sizes: the unknowns are not determined.
    Underdetermined,
    /// The fit gave a value that is not a cost (negative rate or negative per-file cost):
    /// the measurements are dominated by noise.
    NotPhysical(String),
}

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FitError::Underdetermined => {
                f.write_str("need at least two file counts at one total size and two single-file sizes")
            }
            FitError::NotPhysical(why) => write!(
                f,
                "the fit is not physical ({why}); measure more or larger transfers"
            ),
        }
    }
}

impl Fit {
    /// Predicted seconds for `files` files of `bytes` in all.
    pub fn predict(&self, files: u64, bytes: u64) -> f64 {
        files as f64 * self.t0_s + bytes as f64 / self.rate_bytes_per_s + self.s0_s
    }
}

/// Fits `route` from the fixed-size series (`split`: the same total in N files, several N)
/// and the single-file series (`single`: one file, several sizes). `held_out` is a sample
/// kept out of the fit to check the prediction.
pub fn fit(
    route: &str,
    split: &[Sample],
    single: &[Sample],
    held_out: Option<Sample>,
) -> Result<Fit, FitError> {
    let distinct = |xs: Vec<u64>| {
        let mut xs = xs;
        xs.sort_unstable();
        xs.dedup();
        xs.len()
    };
    if distinct(split.iter().map(|s| s.files).collect()) < 2
        || distinct(single.iter().map(|s| s.bytes).collect()) < 2
    {
        return Err(FitError::Underdetermined);
    }
    let samples: Vec<Sample> = split.iter().chain(single).copied().collect();
    let [t0, u, s0] = non_negative_fit(&samples).ok_or(FitError::Underdetermined)?;
    // NaN fails this too.
    if u.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return Err(FitError::NotPhysical(format!(
            "time does not grow with size (1/R = {u:e} s/B)"
        )));
    }
    if !(t0.is_finite() && s0.is_finite()) {
        return Err(FitError::NotPhysical("not finite".into()));
    }
    let fit = Fit {
        route: route.to_string(),
        t0_s: t0,
        rate_bytes_per_s: 1.0 / u,
        s0_s: s0,
        pearson_r: pearson(
            &split.iter().map(|s| s.files as f64).collect::<Vec<_>>(),
            &split.iter().map(|s| s.seconds).collect::<Vec<_>>(),
        ),
        held_out: None,
    };
    let held_out = held_out.map(|h| Prediction {
        files: h.files,
        bytes: h.bytes,
        predicted_s: fit.predict(h.files, h.bytes),
        measured_s: h.seconds,
    });
    Ok(Fit { held_out, ..fit })
}

/// Least squares of T = t0·N + u·B + S0 (u = 1/R) with t0, S0 ≥ 0: of the fits with each
/// of t0 and S0 free or held at zero, the best one whose costs are all non-negative.
fn non_negative_fit(samples: &[Sample]) -> Option<[f64; 3]> {
    let mut best: Option<([f64; 3], f64)> = None;
    for (free_t0, free_s0) in [(true, true), (true, false), (false, true), (false, false)] {
        let cols: Vec<usize> = [(0, free_t0), (1, true), (2, free_s0)]
            .iter()
            .filter(|c| c.1)
            .map(|c| c.0)
            .collect();
        let Some(x) = least_squares(samples, &cols) else {
            continue;
        };
        if x[0] < 0.0 || x[2] < 0.0 {
            continue;
        }
        let sse: f64 = samples
            .iter()
            .map(|s| {
                let e = s.files as f64 * x[0] + s.bytes as f64 * x[1] + x[2] - s.seconds;
                e * e
            })
            .sum();
        if best.is_none_or(|(_, b)| sse < b) {
            best = Some((x, sse));
        }
    }
    best.map(|(x, _)| x)
}

/// Unconstrained least squares over the columns `cols` of [N, B, 1]; the others are zero.
fn least_squares(samples: &[Sample], cols: &[usize]) -> Option<[f64; 3]> {
    let k = cols.len();
    let mut ata = [[0.0f64; 3]; 3];
    let mut atb = [0.0f64; 3];
    for s in samples {
        let full = [s.files as f64, s.bytes as f64, 1.0];
        for i in 0..k {
            for j in 0..k {
                ata[i][j] += full[cols[i]] * full[cols[j]];
            }
            atb[i] += full[cols[i]] * s.seconds;
        }
    }
    let x = solve(ata, atb, k)?;
    let mut out = [0.0; 3];
    for (i, &c) in cols.iter().enumerate() {
        out[c] = x[i];
    }
    Some(out)
}

/// Pearson correlation coefficient; 0 when either side does not vary.
pub fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len().min(y.len()) as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return 0.0;
    }
    sxy / (sxx * syy).sqrt()
}

/// Solves the first `k` rows and columns of `a`·x = `b` by Gaussian elimination with
/// partial pivoting; `None` when singular. Rows and columns are scaled first: file counts,
/// byte counts and 1 differ by many orders of magnitude.
fn solve(mut a: [[f64; 3]; 3], mut b: [f64; 3], k: usize) -> Option<[f64; 3]> {
    let scale: Vec<f64> = (0..k).map(|j| a[j][j].sqrt().max(f64::MIN_POSITIVE)).collect();
    for i in 0..k {
        for j in 0..k {
            a[i][j] /= scale[i] * scale[j];
        }
        b[i] /= scale[i];
    }
    for col in 0..k {
        let pivot = (col..k).max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        for row in col + 1..k {
            let f = a[row][col] / a[col][col];
            let pivot_row = a[col];
            for (cell, p) in a[row].iter_mut().zip(pivot_row).skip(col).take(k - col) {
                *cell -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0.0; 3];
    for i in (0..k).rev() {
        let s: f64 = (i + 1..k).map(|c| a[i][c] * x[c]).sum();
        x[i] = (b[i] - s) / a[i][i];
    }
    for i in 0..k {
        x[i] /= scale[i];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(files: u64, bytes: u64, t0: f64, rate: f64, s0: f64, noise: f64) -> Sample {
        Sample {
            files,
            bytes,
            seconds: files as f64 * t0 + bytes as f64 / rate + s0 + noise,
        }
    }

    #[test]
    fn recovers_the_parameters_of_exact_data() {
        let (t0, rate, s0) = (0.002, 500e6, 0.15);
        let total = 1 << 30;
        let split: Vec<_> = [50, 100, 200, 400, 800, 1000]
            .iter()
            .map(|&n| sample(n, total, t0, rate, s0, 0.0))
            .collect();
        let single: Vec<_> = [1 << 20, 1 << 26, 1 << 30]
            .iter()
            .map(|&b| sample(1, b, t0, rate, s0, 0.0))
            .collect();
        let f = fit(
            "local-put",
            &split,
            &single,
            Some(sample(600, total, t0, rate, s0, 0.0)),
        )
        .unwrap();
        assert!((f.t0_s - t0).abs() < 1e-9, "{f:?}");
        assert!((f.rate_bytes_per_s / rate - 1.0).abs() < 1e-6, "{f:?}");
        assert!((f.s0_s - s0).abs() < 1e-6, "{f:?}");
        assert!((f.pearson_r - 1.0).abs() < 1e-9);
        let h = f.held_out.unwrap();
        assert!((h.predicted_s - h.measured_s).abs() < 1e-6);
    }

    #[test]
    fn noisy_data_still_fits_closely() {
        let (t0, rate, s0) = (0.001, 1e9, 0.05);
        let noise = [0.01, -0.02, 0.015, -0.005, 0.0, 0.02, -0.01];
        let split: Vec<_> = [50, 100, 200, 400, 600, 800, 1000]
            .iter()
            .zip(noise)
            .map(|(&n, e)| sample(n, 1 << 29, t0, rate, s0, e))
            .collect();
        let single: Vec<_> = [1 << 24, 1 << 28, 1 << 30]
            .iter()
            .map(|&b| sample(1, b, t0, rate, s0, 0.0))
            .collect();
        let f = fit("r", &split, &single, None).unwrap();
        assert!((f.t0_s - t0).abs() < 5e-5, "{f:?}");
        assert!(f.pearson_r > 0.99, "{f:?}");
    }

    #[test]
    fn too_few_points_or_nonsense_are_refused() {
        let s = |n, b, t| Sample {
            files: n,
            bytes: b,
            seconds: t,
        };
        let one_n = [s(10, 100, 1.0), s(10, 100, 1.1)];
        let sizes = [s(1, 10, 0.1), s(1, 1000, 0.2)];
        assert_eq!(fit("r", &one_n, &sizes, None), Err(FitError::Underdetermined));
        // Time falling with size: no positive rate fits.
        let split = [s(10, 1000, 1.0), s(20, 1000, 2.0)];
        let shrinking = [s(1, 10, 2.0), s(1, 1000, 0.1)];
        assert!(matches!(
            fit("r", &split, &shrinking, None),
            Err(FitError::NotPhysical(_))
        ));
    }

    #[test]
    fn a_cost_noise_makes_negative_is_held_at_zero() {
        // No startup cost, and the measurements dip below the line at the small end.
        let (t0, rate) = (0.001, 1e9);
        let split: Vec<_> = [10, 20, 40, 80]
            .iter()
            .map(|&n| sample(n, 1 << 26, t0, rate, 0.0, 0.0))
            .collect();
        let mut single: Vec<_> = [1 << 20, 1 << 26]
            .iter()
            .map(|&b| sample(1, b, t0, rate, 0.0, 0.0))
            .collect();
        single[0].seconds -= 0.003;
        let f = fit("r", &split, &single, None).unwrap();
        assert_eq!(f.s0_s, 0.0, "{f:?}");
        assert!(f.t0_s > 0.0 && f.rate_bytes_per_s > 0.0, "{f:?}");
    }

    #[test]
    fn pearson_of_constant_is_zero() {
        assert_eq!(pearson(&[1.0, 2.0], &[3.0, 3.0]), 0.0);
        assert!((pearson(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]) - 1.0).abs() < 1e-12);
    }
}
