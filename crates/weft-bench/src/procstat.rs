//! What a process on this machine holds (resident memory, open files, threads), read from
//! `/proc`, and whether it levelled off under a steady load.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since the load started (0 outside it).
    pub t_s: f64,
    pub rss_kib: u64,
    pub fds: u64,
    pub threads: u64,
}

/// The process `pid` now; `None` when it is gone or `/proc` is not there.
pub fn sample_of(pid: u32) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some(Sample {
        t_s: 0.0,
        rss_kib: field("VmRSS:")?,
        fds,
        threads: field("Threads:")?,
    })
}

/// Room a steady process may still take in the last quarter of a load over the second
/// quarter (after its warm-up): allocator arenas and the blocking pool settle late, and the
/// files open at a moment follow the requests in flight (a socket and a file or two each),
/// which vary with timing; a leak of anything per request grows far beyond these over
/// thousands of requests. Open files after the load, its clients gone, are held to
/// [`FDS_SLACK`] over those before it: that is where a leak of descriptors shows plainly.
const GROWTH: f64 = 1.25;
const RSS_SLACK_KIB: u64 = 32 << 10;
const FDS_SLACK: u64 = 32;
const THREADS_SLACK: u64 = 16;

/// Why the samples do not show a process that levelled off: memory, open files and threads
/// of the last quarter of the load within bounds of the second quarter's, and open files
/// after the load (its clients gone) back near where they were before it.
pub fn levelled_off(before: &Sample, during: &[Sample], after: &Sample) -> Vec<String> {
    let mut problems = Vec::new();
    if during.len() < 8 {
        problems.push(format!(
            "{} samples of the zone during the load: too few to tell whether it levelled off \
             (run the load for longer)",
            during.len()
        ));
        return problems;
    }
    let quarter = during.len() / 4;
    let second = &during[quarter..2 * quarter];
    let last = &during[during.len() - quarter..];
    let peak = |s: &[Sample], f: fn(&Sample) -> u64| s.iter().map(f).max().unwrap_or(0);

    let (settled, end) = (peak(second, |s| s.rss_kib), peak(last, |s| s.rss_kib));
    let bound = (settled as f64 * GROWTH) as u64 + RSS_SLACK_KIB;
    if end > bound {
        problems.push(format!(
            "memory kept growing: RSS peaked at {} MiB in the last quarter of the load, {} MiB in \
             the second (bound {} MiB)",
            end >> 10,
            settled >> 10,
            bound >> 10
        ));
    }
    let (settled, end) = (peak(second, |s| s.fds), peak(last, |s| s.fds));
    if end > (settled as f64 * GROWTH) as u64 + FDS_SLACK {
        problems.push(format!(
            "open files kept growing: {end} in the last quarter of the load, {settled} in the second"
        ));
    }
    let (settled, end) = (peak(second, |s| s.threads), peak(last, |s| s.threads));
    if end > settled + THREADS_SLACK {
        problems.push(format!(
            "threads kept growing: {end} in the last quarter of the load, {settled} in the second"
        ));
    }
    if after.fds > before.fds + FDS_SLACK {
        problems.push(format!(
            "{} files open after the load and its clients are gone, {} before it",
            after.fds, before.fds
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(rss_mib: u64, fds: u64, threads: u64) -> Sample {
        Sample {
            t_s: 0.0,
            rss_kib: rss_mib << 10,
            fds,
            threads,
        }
    }

    fn steady(n: usize) -> Vec<Sample> {
        (0..n)
            .map(|i| s(100 + (i % 3) as u64, 230 + (i % 5) as u64, 20))
            .collect()
    }

    #[test]
    fn this_process_can_be_sampled() {
        let me = sample_of(std::process::id()).expect("/proc of this process");
        assert!(me.rss_kib > 0 && me.fds >= 3 && me.threads >= 1, "{me:?}");
        assert_eq!(sample_of(u32::MAX), None);
    }

    #[test]
    fn a_steady_process_passes() {
        assert_eq!(
            levelled_off(&s(50, 20, 10), &steady(60), &s(110, 30, 20)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn growth_of_anything_fails() {
        let leak_memory: Vec<_> = (0..60).map(|i| s(100 + i * 5, 230, 20)).collect();
        let leak_fds: Vec<_> = (0..60).map(|i| s(100, 230 + i * 10, 20)).collect();
        let leak_threads: Vec<_> = (0..60).map(|i| s(100, 230, 20 + i)).collect();
        for (what, during) in [
            ("memory", leak_memory),
            ("open files", leak_fds),
            ("threads", leak_threads),
        ] {
            let problems = levelled_off(&s(50, 20, 10), &during, &s(100, 20, 10));
            assert!(
                problems.len() == 1 && problems[0].starts_with(what),
                "{what}: {problems:?}"
            );
        }
        let kept_open = levelled_off(&s(50, 20, 10), &steady(60), &s(100, 120, 10));
        assert!(kept_open[0].contains("after the load"), "{kept_open:?}");
        assert!(levelled_off(&s(50, 20, 10), &steady(4), &s(100, 20, 10))[0].contains("too few"));
    }
}
