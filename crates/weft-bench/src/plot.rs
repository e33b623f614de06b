//! SVG line plots of the series (plotters' SVG backend: text is left to the viewer, so no
//! fonts are needed at build or run time).

use crate::report::Series;
use plotters::coord::combinators::IntoLogRange;
use plotters::prelude::*;

const SIZE: (u32, u32) = (800, 480);

/// One plot of `series`, which share their axes; log x when the first asks for it. Each
/// point is the median with a bar from min to max.
pub fn svg(title: &str, series: &[Series]) -> String {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        // Drawing into a string only fails on a bug in the ranges below.
        if let Err(e) = draw(&root, title, series) {
            drop(root);
            return format!("<svg xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"20\">cannot plot: {e}</text></svg>");
        }
        let _ = root.present();
    }
    out
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    title: &str,
    series: &[Series],
) -> DrawResult {
    root.fill(&WHITE)?;
    let points = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for p in points {
        x0 = x0.min(p.x);
        x1 = x1.max(p.x);
        y1 = y1.max(p.y.max);
    }
    if x0 > x1 {
        return Ok(());
    }
    let log_x = series[0].log_x && x0 > 0.0;
    if x0 == x1 {
        (x0, x1) = if log_x {
            (x0 / 2.0, x1 * 2.0)
        } else {
            (x0 - 1.0, x1 + 1.0)
        };
    }
    let y1 = if y1 > 0.0 { y1 * 1.1 } else { 1.0 };
    let mut chart = ChartBuilder::on(root);
    chart
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    if log_x {
        let mut c = chart.build_cartesian_2d((x0..x1).log_scale(), 0.0..y1)?;
        fill(&mut c, series)?;
    } else {
        let mut c = chart.build_cartesian_2d(x0..x1, 0.0..y1)?;
        fill(&mut c, series)?;
    }
    Ok(())
}

type Chart<'a, X> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>;

/// Axes with their labels, each series as a line of medians with min-max bars, the legend.
fn fill<'a, X: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>>(
    c: &mut Chart<'a, X>,
    series: &[Series],
) -> DrawResult {
    c.configure_mesh()
        .x_desc(&series[0].x_label)
        .y_desc(&series[0].y_label)
        .draw()?;
    for (i, s) in series.iter().enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        let line: Vec<(f64, f64)> = s.points.iter().map(|p| (p.x, p.y.median)).collect();
        c.draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
        c.draw_series(line.iter().map(|&(x, y)| Circle::new((x, y), 3, colour.filled())))?;
        c.draw_series(
            s.points
                .iter()
                .map(|p| PathElement::new(vec![(p.x, p.y.min), (p.x, p.y.max)], colour.stroke_width(1))),
        )?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_points_with_log_and_linear_axes() {
        let mut a = Series::new("put", "file size (bytes)", "seconds", true);
        a.push(1.0, &[0.01, 0.012]);
        a.push(1e6, &[0.02, 0.03, 0.025]);
        let out = svg("sizes", &[a.clone()]);
        assert!(out.starts_with("<svg") && out.contains("<polyline"), "{out}");
        assert!(out.contains("sizes"));
        let mut b = Series::new("n", "files", "seconds", false);
        b.push(5.0, &[1.0]);
        assert!(svg_is_plot(&svg("one point", &[b])));
        assert!(svg_is_plot(&svg("empty", &[Series::new("e", "x", "y", true)])));
    }

    fn svg_is_plot(s: &str) -> bool {
        s.starts_with("<svg") && !s.contains("cannot plot")
    }
}
