//! What a run found, and how it is written: `report.json` (everything), `results.csv` (one
//! row per point), one SVG plot per scenario and unit, and `report.md` for people.

use crate::model::Fit;
use crate::plot;
use crate::stats::Summary;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub weft_version: String,
    /// Unix milliseconds at the start.
    pub started_ms: i64,
    pub profile: String,
    pub runs_per_point: u32,
    pub machine: Machine,
    /// The version line of each peer tool found on `PATH` (`cp`, `iperf3`, `rclone`,
    /// `minio`), whether or not the run compared against it.
    pub tools: Vec<ToolVersion>,
    pub zone: ZoneUnderTest,
    pub scenarios: Vec<ScenarioResult>,
    /// The per-file cost model of Liu et al., one object per fitted route.
    pub models: Vec<Fit>,
    /// Each comparison with another tool: what it measured and weft's ratio to it.
    pub peers: Vec<PeerComparison>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub cpus: usize,
    pub cpu_model: String,
    pub memory_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolVersion {
    pub tool: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ZoneUnderTest {
    pub url: String,
    pub name: String,
    /// The version the zone's health answer gives.
    pub version: String,
    /// Started by `weft bench` itself with embedded defaults.
    pub embedded: bool,
    pub catalog: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    pub name: String,
    pub title: String,
    /// The paper and section the scenario comes from.
    pub source: String,
    pub series: Vec<Series>,
    pub notes: Vec<String>,
    pub seconds: f64,
}

/// A curve: y against x, each point several runs.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub name: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub points: Vec<Point>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub x: f64,
    #[serde(flatten)]
    pub y: Summary,
}

#[derive(Debug, Clone, Serialize)]
pub struct PeerComparison {
    /// What was compared (`put 1 GiB`).
    pub measurement: String,
    /// The other tool and how it ran (`cp + sync`).
    pub peer: String,
    pub weft: Summary,
    pub other: Summary,
    pub unit: String,
    /// weft / other for rates, other / weft for times: above 1 means weft is faster.
    pub ratio: f64,
}

impl Series {
    pub fn new(name: &str, x_label: &str, y_label: &str, log_x: bool) -> Series {
        Series {
            name: name.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            log_x,
            points: Vec::new(),
        }
    }

    /// Adds the point at `x` unless no run measured it.
    pub fn push(&mut self, x: f64, runs: &[f64]) {
        if let Some(y) = Summary::of(runs) {
            self.points.push(Point { x, y });
        }
    }
}

impl Report {
    /// Writes every file into `dir` (created) and answers their paths.
    pub fn write(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut written = Vec::new();
        let mut put = |name: &str, bytes: &[u8]| -> std::io::Result<()> {
            let path = dir.join(name);
            std::fs::write(&path, bytes)?;
            written.push(path);
            Ok(())
        };
        put(
            "report.json",
            &serde_json::to_vec_pretty(self).expect("serialisable"),
        )?;
        put("results.csv", self.csv().as_bytes())?;
        let mut plots = Vec::new();
        for s in &self.scenarios {
            for (i, group) in plot_groups(s).into_iter().enumerate() {
                let name = format!("{}-{}.svg", s.name, i + 1);
                let title = format!("{} ({})", s.title, group[0].y_label);
                put(&name, plot::svg(&title, &group).as_bytes())?;
                plots.push((s.name.clone(), name));
            }
        }
        put("report.md", self.markdown(&plots).as_bytes())?;
        Ok(written)
    }

    pub fn csv(&self) -> String {
        let mut out = String::from("scenario,series,x_label,x,y_label,median,min,max,runs\n");
        for s in &self.scenarios {
            for series in &s.series {
                for p in &series.points {
                    let _ = writeln!(
                        out,
                        "{},{},{},{},{},{},{},{},{}",
                        csv_field(&s.name),
                        csv_field(&series.name),
                        csv_field(&series.x_label),
                        p.x,
                        csv_field(&series.y_label),
                        p.y.median,
                        p.y.min,
                        p.y.max,
                        p.y.runs.len()
                    );
                }
            }
        }
        out
    }

    fn markdown(&self, plots: &[(String, String)]) -> String {
        let mut md = String::new();
        let m = &self.machine;
        let _ = writeln!(md, "# weft bench report\n");
        let _ = writeln!(
            md,
            "weft {} against zone `{}` (weft {}) at {} ({}; catalog {}), profile `{}`, {} runs \
             per point after a warm-up; medians with min-max.\n",
            self.weft_version,
            self.zone.name,
            self.zone.version,
            self.zone.url,
            if self.zone.embedded {
                "embedded, started by the bench"
            } else {
                "an existing zone"
            },
            self.zone.catalog,
            self.profile,
            self.runs_per_point
        );
        let _ = writeln!(
            md,
            "Machine: {} — {} ({}), {} CPUs ({}), {:.1} GiB memory.\n",
            m.hostname,
            m.os,
            m.kernel,
            m.cpus,
            m.cpu_model,
            m.memory_bytes as f64 / (1u64 << 30) as f64
        );
        if !self.tools.is_empty() {
            let tools: Vec<String> = self.tools.iter().map(|t| format!("`{}`", t.version)).collect();
            let _ = writeln!(md, "Tools: {}.\n", tools.join(", "));
        }
        if !self.models.is_empty() {
            let _ = writeln!(md, "## Per-file cost model (Liu et al.: T = N·t0 + B/R + S0)\n");
            let _ = writeln!(
                md,
                "| route | t0 | R | S0 | Pearson r | held-out N: predicted / measured |"
            );
            let _ = writeln!(md, "|---|---|---|---|---|---|");
            for f in &self.models {
                let held = f
                    .held_out
                    .as_ref()
                    .map(|h| format!("N={}: {:.3} s / {:.3} s", h.files, h.predicted_s, h.measured_s))
                    .unwrap_or_else(|| "-".into());
                let _ = writeln!(
                    md,
                    "| {} | {:.2} ms | {} | {:.3} s | {:.4} | {held} |",
                    f.route,
                    f.t0_s * 1e3,
                    rate(f.rate_bytes_per_s),
                    f.s0_s,
                    f.pearson_r
                );
            }
            md.push('\n');
        }
        if !self.peers.is_empty() {
            let _ = writeln!(md, "## Against other tools, same run\n");
            let _ = writeln!(
                md,
                "| measurement | weft | peer | peer's figure | ratio (>1: weft faster) |"
            );
            let _ = writeln!(md, "|---|---|---|---|---|");
            for p in &self.peers {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | **{:.2}** |",
                    p.measurement,
                    figure(&p.weft, &p.unit),
                    p.peer,
                    figure(&p.other, &p.unit),
                    p.ratio
                );
            }
            md.push('\n');
        }
        for s in &self.scenarios {
            let _ = writeln!(md, "## {} — `{}` ({})\n", s.title, s.name, s.source);
            for (scenario, file) in plots {
                if scenario == &s.name {
                    let _ = writeln!(md, "![{}]({file})\n", s.title);
                }
            }
            for series in &s.series {
                let _ = writeln!(
                    md,
                    "**{}** ({} → {})\n",
                    series.name, series.x_label, series.y_label
                );
                let _ = writeln!(md, "| {} | median | min | max | runs |", series.x_label);
                let _ = writeln!(md, "|---|---|---|---|---|");
                for p in &series.points {
                    let _ = writeln!(
                        md,
                        "| {} | {:.4} | {:.4} | {:.4} | {} |",
                        p.x,
                        p.y.median,
                        p.y.min,
                        p.y.max,
                        p.y.runs.len()
                    );
                }
                md.push('\n');
            }
            for n in &s.notes {
                let _ = writeln!(md, "- {n}");
            }
            let _ = writeln!(md, "\n_{:.1} s_\n", s.seconds);
        }
        md
    }
}

/// Series of one scenario that share a y unit go into one plot.
fn plot_groups(s: &ScenarioResult) -> Vec<Vec<Series>> {
    let mut groups: Vec<Vec<Series>> = Vec::new();
    for series in s.series.iter().filter(|x| !x.points.is_empty()) {
        match groups
            .iter_mut()
            .find(|g| g[0].y_label == series.y_label && g[0].x_label == series.x_label)
        {
            Some(g) => g.push(series.clone()),
            None => groups.push(vec![series.clone()]),
        }
    }
    groups
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn figure(s: &Summary, unit: &str) -> String {
    format!("{:.3} {unit} ({:.3}-{:.3})", s.median, s.min, s.max)
}

/// Bytes per second for people.
pub fn rate(bytes_per_s: f64) -> String {
    if bytes_per_s >= 1e9 {
        format!("{:.2} GB/s", bytes_per_s / 1e9)
    } else {
        format!("{:.1} MB/s", bytes_per_s / 1e6)
    }
}
