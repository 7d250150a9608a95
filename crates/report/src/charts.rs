//! Drawing: bar charts, latency CDFs, per-process shares, throughput over time and the
//! dispatch scatter, each drawn with plotters' SVG backend into a string of SVG.
//!
//! Every function is deterministic: the same input gives the same bytes (plotters formats
//! coordinates the same way every time, the colours come from a fixed palette by index, and
//! [`sample_evenly`] keeps points by position, not by chance), so reports stay diffable.
//!
//! Text is drawn as SVG `<text>` in the generic `sans-serif` family: plotters is built without
//! its font features, so it estimates label widths instead of measuring a font, and the viewer
//! (a browser) chooses the face. Nothing refers to a file or a network resource.
//!
//! # Deviations
//!
//! * fio has no charts of its own; fio's `fio_generate_plots` and `fio2gnuplot` draw
//!   throughput and latency over time from the logs with gnuplot. These charts follow the
//!   report's figures instead (a bar per scheduler), so nothing here mirrors a fio picture.

use std::io;

use plotters::coord::Shift;
use plotters::prelude::*;

/// Width of one chart panel, in SVG pixels.
pub const PANEL_WIDTH_PX: u32 = 480;
/// Height of one chart panel, in SVG pixels.
pub const PANEL_HEIGHT_PX: u32 = 300;
/// At most this many points per panel of [`dispatch_scatter`]: enough to see the sweep of an
/// elevator, few enough that a browser draws a long run's panels at once.
pub const SCATTER_POINTS_MAX: usize = 4000;

/// The colours of schedulers (and processes), by index: Tableau's ten, distinct for the
/// colour-blind and on white. Index `i` gets `PALETTE[i % 10]`.
pub const PALETTE: [(u8, u8, u8); 10] = [
    (0x4e, 0x79, 0xa7),
    (0xf2, 0x8e, 0x2b),
    (0xe1, 0x57, 0x59),
    (0x76, 0xb7, 0xb2),
    (0x59, 0xa1, 0x4f),
    (0xed, 0xc9, 0x48),
    (0xb0, 0x7a, 0xa1),
    (0xff, 0x9d, 0xa7),
    (0x9c, 0x75, 0x5f),
    (0xba, 0xb0, 0xac),
];

/// The colour of index `index` (a scheduler in its group, a process in its run).
pub fn colour(index: usize) -> RGBColor {
    let (red, green, blue) = PALETTE[index % PALETTE.len()];
    RGBColor(red, green, blue)
}

/// The colour of index `index` as SVG writes it (`#4E79A7`), for tests and legends.
pub fn colour_hex(index: usize) -> String {
    let (red, green, blue) = PALETTE[index % PALETTE.len()];
    format!("#{red:02X}{green:02X}{blue:02X}")
}

/// A plotters failure as an I/O error (the SVG backend writes to a string, so in practice only
/// a bad coordinate range can fail).
fn drawing(error: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("drawing a chart: {error}"))
}

/// A drawing area for `rows` × `columns` panels, handed to `draw`, returned as SVG text.
pub(crate) fn svg_grid(
    rows: usize,
    columns: usize,
    draw: impl FnOnce(&[DrawingArea<SVGBackend<'_>, Shift>]) -> io::Result<()>,
) -> io::Result<String> {
    let rows = rows.max(1);
    let columns = columns.max(1);
    let mut svg = String::new();
    {
        let size = (PANEL_WIDTH_PX * columns as u32, PANEL_HEIGHT_PX * rows as u32);
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let panels = root.split_evenly((rows, columns));
        draw(&panels)?;
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// The edges of slot `index` of `count` on a segmented axis over `0..count - 1` (plotters'
/// integer ranges include their end, so that is `count` slots): the last slot ends at
/// `SegmentValue::Last`, not at a value past the range.
fn segment(index: usize, count: usize) -> (SegmentValue<u32>, SegmentValue<u32>) {
    let right =
        if index + 1 >= count { SegmentValue::Last } else { SegmentValue::Exact(index as u32 + 1) };
    (SegmentValue::Exact(index as u32), right)
}

/// One bar chart panel: a bar per name (`values[i]` for `names[i]`, in colour `i`), the y axis
/// from 0 to above the largest value. Non-finite values are drawn as 0.
pub(crate) fn draw_bars(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    y_label: &str,
    names: &[String],
    values: &[f64],
) -> io::Result<()> {
    let values: Vec<f64> =
        values.iter().map(|v| if v.is_finite() { v.max(0.0) } else { 0.0 }).collect();
    let top = values.iter().copied().fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    let count = names.len().max(1) as u32;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d((0u32..count - 1).into_segmented(), 0f64..top)
        .map_err(drawing)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(names.len().max(1))
        .x_label_formatter(&|segment| segment_name(names, segment))
        .y_desc(y_label)
        .draw()
        .map_err(drawing)?;
    chart
        .draw_series(values.iter().enumerate().map(|(index, &value)| {
            let (left, right) = segment(index, values.len());
            let mut bar = Rectangle::new([(left, 0.0), (right, value)], colour(index).filled());
            bar.set_margin(0, 0, 6, 6);
            bar
        }))
        .map_err(drawing)?;
    Ok(())
}

/// A standalone bar chart: one panel, a bar per scheduler.
pub fn bar_chart(
    title: &str,
    y_label: &str,
    names: &[String],
    values: &[f64],
) -> io::Result<String> {
    svg_grid(1, 1, |panels| draw_bars(&panels[0], title, y_label, names, values))
}

/// Latency CDFs, a line per scheduler (in its colour): `curves[i]` is scheduler `i`'s points
/// (latency in ms, fraction of operations at or below it, 0–1), sorted by latency. The x axis
/// is logarithmic (latencies span decades); points at or below 0 ms are left out.
pub fn latency_cdf(title: &str, curves: &[(String, Vec<(f64, f64)>)]) -> io::Result<String> {
    let positive = || {
        curves
            .iter()
            .flat_map(|(_, points)| points.iter().map(|p| p.0))
            .filter(|&ms| ms > 0.0 && ms.is_finite())
    };
    let low = positive().fold(f64::INFINITY, f64::min);
    let high = positive().fold(0.0, f64::max);
    let (low, high) = if low.is_finite() && high > 0.0 {
        (low / 1.5, if high > low { high * 1.5 } else { low * 10.0 })
    } else {
        (0.001, 1.0)
    };
    svg_grid(1, 1, |panels| {
        let mut chart = ChartBuilder::on(&panels[0])
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d((low..high).log_scale(), 0f64..1.0)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc("latency ms (log)")
            .y_desc("fraction of I/Os")
            .draw()
            .map_err(drawing)?;
        for (index, (name, points)) in curves.iter().enumerate() {
            let kept: Vec<(f64, f64)> =
                points.iter().copied().filter(|&(ms, _)| ms > 0.0 && ms.is_finite()).collect();
            chart
                .draw_series(LineSeries::new(kept, colour(index).stroke_width(2)))
                .map_err(drawing)?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], colour(index).stroke_width(2))
                });
        }
        legend(&mut chart)
    })
}

fn legend<'a, 'b: 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
) -> io::Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(drawing)
}

/// Per-process shares: a stacked bar per scheduler (`bars[i]` is scheduler `i`'s name and its
/// processes' amounts, in process order), each bar scaled to 100 %, process `j` in colour `j`.
/// Processes are named from the first bar's (`process_names`).
pub fn stacked_shares(
    title: &str,
    process_names: &[String],
    bars: &[(String, Vec<f64>)],
) -> io::Result<String> {
    let names: Vec<String> = bars.iter().map(|(name, _)| name.clone()).collect();
    let count = names.len().max(1) as u32;
    svg_grid(1, 1, |panels| {
        let mut chart = ChartBuilder::on(&panels[0])
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d((0u32..count - 1).into_segmented(), 0f64..100.0)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(names.len().max(1))
            .x_label_formatter(&|segment| segment_name(&names, segment))
            .y_desc("share %")
            .draw()
            .map_err(drawing)?;
        let processes = bars.iter().map(|(_, amounts)| amounts.len()).max().unwrap_or(0);
        for process in 0..processes {
            let mut rectangles = Vec::new();
            for (bar, (_, amounts)) in bars.iter().enumerate() {
                let total: f64 = amounts.iter().copied().filter(|a| a.is_finite()).sum();
                if total <= 0.0 || process >= amounts.len() {
                    continue;
                }
                let below: f64 = amounts[..process].iter().copied().filter(|a| a.is_finite()).sum();
                let own = if amounts[process].is_finite() { amounts[process] } else { 0.0 };
                let (bottom, top) = (below / total * 100.0, (below + own) / total * 100.0);
                let mut rectangle = Rectangle::new(
                    [
                        (SegmentValue::Exact(bar as u32), bottom),
                        (SegmentValue::Exact(bar as u32 + 1), top),
                    ],
                    colour(process).filled(),
                );
                rectangle.set_margin(0, 0, 6, 6);
                rectangles.push(rectangle);
            }
            let name = process_names.get(process).cloned().unwrap_or_else(|| format!("#{process}"));
            chart.draw_series(rectangles).map_err(drawing)?.label(name).legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour(process).filled())
            });
        }
        legend(&mut chart)
    })
}

/// Throughput over time, a line per scheduler (in its colour): `series[i]` is scheduler `i`'s
/// name and its (time s, MB/s) points in time order. Ready for the per-interval series of the
/// report (issue 19's time series); the caller converts them.
pub fn throughput_over_time(series: &[(String, Vec<(f64, f64)>)]) -> io::Result<String> {
    let finite = |&(t, v): &(f64, f64)| t.is_finite() && v.is_finite();
    let points = || series.iter().flat_map(|(_, points)| points.iter().filter(|p| finite(p)));
    let end_s = points().map(|p| p.0).fold(0.0, f64::max);
    let top = points().map(|p| p.1).fold(0.0, f64::max);
    let end_s = if end_s > 0.0 { end_s } else { 1.0 };
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    svg_grid(1, 1, |panels| {
        let mut chart = ChartBuilder::on(&panels[0])
            .caption("throughput over time", ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..end_s, 0f64..top)
            .map_err(drawing)?;
        chart.configure_mesh().x_desc("time s").y_desc("MB/s").draw().map_err(drawing)?;
        for (index, (name, points)) in series.iter().enumerate() {
            let kept: Vec<(f64, f64)> = points.iter().copied().filter(finite).collect();
            chart
                .draw_series(LineSeries::new(kept, colour(index).stroke_width(2)))
                .map_err(drawing)?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], colour(index).stroke_width(2))
                });
        }
        legend(&mut chart)
    })
}

/// At most `max` of `points`, evenly spaced through them in order, the first always kept: the
/// `k`-th kept is `points[k * len / max]`. Deterministic (no randomness: the same run gives the
/// same picture) and order-preserving, so a sweep across the disk stays a sweep.
pub fn sample_evenly<T: Copy>(points: &[T], max: usize) -> Vec<T> {
    if points.len() <= max {
        return points.to_vec();
    }
    (0..max).map(|k| points[k * points.len() / max]).collect()
}

/// One dispatched request for [`dispatch_scatter`]: time in seconds from the run's start, its
/// first sector, and the index of its process (its colour).
pub type Dispatch = (f64, u64, usize);

/// One panel of [`dispatch_scatter`]: a scheduler's name and its dispatches in order.
pub type DispatchPanel = (String, Vec<Dispatch>);

/// What an elevator does: the sector of each dispatched request over time, one panel per
/// scheduler (`panels[i]` is its name and its (time s, sector, process index) points in
/// dispatch order), each process in its colour, at most [`SCATTER_POINTS_MAX`] points per
/// panel ([`sample_evenly`]). Panels share the axes so they compare. Ready for dispatch
/// records the report does not hold yet; the caller converts them.
pub fn dispatch_scatter(panels: &[DispatchPanel]) -> io::Result<String> {
    let sampled: Vec<DispatchPanel> = panels
        .iter()
        .map(|(name, points)| {
            let finite: Vec<_> = points.iter().copied().filter(|p| p.0.is_finite()).collect();
            (name.clone(), sample_evenly(&finite, SCATTER_POINTS_MAX))
        })
        .collect();
    let all = || sampled.iter().flat_map(|(_, points)| points.iter());
    let end_s = all().map(|p| p.0).fold(0.0, f64::max);
    let end_s = if end_s > 0.0 { end_s } else { 1.0 };
    let top_sector = all().map(|p| p.1).max().unwrap_or(0).max(1) as f64 * 1.05;
    svg_grid(sampled.len(), 1, |areas| {
        for ((name, points), area) in sampled.iter().zip(areas) {
            let mut chart = ChartBuilder::on(area)
                .caption(format!("dispatches: {name}"), ("sans-serif", 15))
                .margin(8)
                .x_label_area_size(36)
                .y_label_area_size(72)
                .build_cartesian_2d(0f64..end_s, 0f64..top_sector)
                .map_err(drawing)?;
            chart.configure_mesh().x_desc("time s").y_desc("sector").draw().map_err(drawing)?;
            chart
                .draw_series(points.iter().map(|&(time_s, sector, process)| {
                    Circle::new((time_s, sector as f64), 2, colour(process).filled())
                }))
                .map_err(drawing)?;
        }
        Ok(())
    })
}

/// The label of a bar's segment on a segmented x axis: the name of the bar it centres.
fn segment_name(names: &[String], segment: &SegmentValue<u32>) -> String {
    match segment {
        SegmentValue::Exact(index) | SegmentValue::CenterOf(index) => {
            names.get(*index as usize).cloned().unwrap_or_default()
        }
        SegmentValue::Last => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fills(svg: &str, colour: &str) -> usize {
        let document = roxmltree::Document::parse(svg).expect("the SVG is XML");
        document
            .descendants()
            .filter(|node| node.has_tag_name("rect") && node.attribute("fill") == Some(colour))
            .count()
    }

    // Proves a bar chart is well-formed SVG with exactly one bar per name, each in its own
    // colour, and that the same input draws the same bytes.
    #[test]
    fn a_bar_chart_has_one_bar_per_scheduler() {
        let names: Vec<String> = ["none", "mq-deadline", "bfq"].map(String::from).to_vec();
        let svg = bar_chart("read", "MB/s", &names, &[100.0, 250.0, 80.0]).unwrap();
        for index in 0..3 {
            assert_eq!(fills(&svg, &colour_hex(index)), 1, "scheduler {index}");
        }
        assert_eq!(fills(&svg, &colour_hex(3)), 0);
        assert_eq!(svg, bar_chart("read", "MB/s", &names, &[100.0, 250.0, 80.0]).unwrap());
        let document = roxmltree::Document::parse(&svg).unwrap();
        let texts: Vec<&str> = document
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for name in &names {
            assert!(texts.contains(&name.as_str()), "label {name} in {texts:?}");
        }
    }

    // Proves the tallest bar is the largest value: bar heights follow the values, not their
    // order.
    #[test]
    fn bar_heights_follow_the_values() {
        let names: Vec<String> = ["a", "b"].map(String::from).to_vec();
        let svg = bar_chart("t", "MB/s", &names, &[10.0, 40.0]).unwrap();
        let document = roxmltree::Document::parse(&svg).unwrap();
        let height = |index: usize| -> f64 {
            let hex = colour_hex(index);
            let rect = document
                .descendants()
                .find(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(hex.as_str()))
                .unwrap();
            rect.attribute("height").unwrap().parse().unwrap()
        };
        let ratio = height(1) / height(0);
        assert!((ratio - 4.0).abs() < 0.2, "ratio {ratio}");
    }

    // Proves the sampler keeps at most N points, keeps the first, keeps order, and gives the
    // same points every time.
    #[test]
    fn the_sampler_is_bounded_ordered_and_deterministic() {
        let points: Vec<u32> = (0..10_000).collect();
        let kept = sample_evenly(&points, 300);
        assert_eq!(kept.len(), 300);
        assert_eq!(kept[0], 0);
        assert!(kept.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(*kept.last().unwrap() >= 9_900, "reaches the end");
        assert_eq!(kept, sample_evenly(&points, 300));
        assert_eq!(sample_evenly(&points[..5], 300), points[..5].to_vec());
    }

    // Proves the scatter draws one panel per scheduler, samples each panel down to the bound,
    // and colours each process its own.
    #[test]
    fn the_dispatch_scatter_has_a_panel_per_scheduler_and_a_colour_per_process() {
        let many: Vec<(f64, u64, usize)> = (0..10_000u64)
            .map(|i| (i as f64 / 1000.0, (i * 7919) % 100_000, (i % 3) as usize))
            .collect();
        let few: Vec<(f64, u64, usize)> = vec![(0.5, 10, 0), (1.0, 2_000, 1)];
        let svg = dispatch_scatter(&[("bfq".into(), many), ("none".into(), few)]).unwrap();
        let document = roxmltree::Document::parse(&svg).unwrap();
        let circles: Vec<_> = document.descendants().filter(|n| n.has_tag_name("circle")).collect();
        assert_eq!(circles.len(), SCATTER_POINTS_MAX + 2);
        for process in 0..3 {
            let hex = colour_hex(process);
            let count =
                circles.iter().filter(|n| n.attribute("fill") == Some(hex.as_str())).count();
            assert!(count > 0, "process {process} drawn");
        }
        assert!(svg.contains("dispatches: bfq") && svg.contains("dispatches: none"));
    }

    // Proves throughput over time draws a line per scheduler, with one vertex per point.
    #[test]
    fn throughput_over_time_draws_a_line_per_scheduler() {
        let series = vec![
            ("none".to_owned(), vec![(0.0, 10.0), (1.0, 20.0), (2.0, 15.0)]),
            ("bfq".to_owned(), vec![(0.0, 5.0), (1.0, 25.0)]),
        ];
        let svg = throughput_over_time(&series).unwrap();
        let document = roxmltree::Document::parse(&svg).unwrap();
        let lines: Vec<usize> = (0..2)
            .map(|index| {
                let hex = colour_hex(index);
                document
                    .descendants()
                    .filter(|n| {
                        n.has_tag_name("polyline") && n.attribute("stroke") == Some(hex.as_str())
                    })
                    .map(|n| n.attribute("points").unwrap().split_whitespace().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        assert_eq!(lines, vec![3, 2]);
    }
}
