//! The four chart kinds the reports draw, each an inline SVG string made by plotters' SVG backend: a strip
//! plot against reference lines, stacked bars, a log-log roofline and a time series with shaded intervals.
//! A chart that cannot be drawn returns the reason, which the page prints in its place.

use plotters::coord::Shift;
use plotters::prelude::*;

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// The n-th series colour (plotters' 99-colour palette, which keeps neighbours apart).
pub fn color(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

const FONT: &str = "sans-serif";

fn svg<F>(w: u32, h: u32, draw: F) -> Res<String>
where
    F: FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Res<()>,
{
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
enum Key {
    Line(RGBColor),
    Box(RGBAColor),
    Dot(RGBColor),
    Cross,
}

/// A legend drawn beside the plot (not over it), one entry per line.
fn legend(area: &DrawingArea<SVGBackend<'_>, Shift>, entries: &[(String, Key)]) -> Res<()> {
    for (i, (label, key)) in entries.iter().enumerate() {
        let y = 40 + i as i32 * 17;
        let x = 6;
        match *key {
            Key::Line(c) => area.draw(&PathElement::new(
                vec![(x, y), (x + 18, y)],
                c.stroke_width(2),
            )),
            Key::Box(c) => area.draw(&Rectangle::new([(x, y - 5), (x + 18, y + 5)], c.filled())),
            Key::Dot(c) => area.draw(&Circle::new((x + 9, y), 4, c.filled())),
            Key::Cross => area.draw(&Cross::new((x + 9, y), 5, RED.stroke_width(2))),
        }
        .map_err(err)?;
        area.draw(&Text::new(label.clone(), (x + 26, y - 7), (FONT, 12)))
            .map_err(err)?;
    }
    Ok(())
}

/// Splits `root` into the plot (left) and a legend column of `legend_w` pixels (right).
fn with_legend<'b>(
    root: &DrawingArea<SVGBackend<'b>, Shift>,
    legend_w: u32,
) -> (
    DrawingArea<SVGBackend<'b>, Shift>,
    DrawingArea<SVGBackend<'b>, Shift>,
) {
    let (w, _) = root.dim_in_pixel();
    root.split_horizontally(w.saturating_sub(legend_w))
}

fn padded(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
    (lo - 0.05 * span, hi + 0.05 * span)
}

/// A horizontal reference: a line at `low` (and a shaded band up to `high` when it is larger).
#[derive(Debug, Clone)]
pub struct Reference {
    /// Legend text, e.g. "GB10 spec 273 GB/s (CLAIM)".
    pub label: String,
    /// The value, or the band's lower edge.
    pub low: f64,
    /// The band's upper edge (= low for a line).
    pub high: f64,
}

/// One group of points of a strip plot (one rank).
#[derive(Debug, Clone)]
pub struct Strip {
    /// Legend text.
    pub name: String,
    /// (category index, per-step value, is an outlier).
    pub steps: Vec<(usize, f64, bool)>,
    /// (category index, the tool's mean).
    pub means: Vec<(usize, f64)>,
}

/// Per-category per-step dots with each group's mean as a bar, groups side by side, against reference lines;
/// categories down the side (long family names stay readable), values across.
pub fn strip(
    title: &str,
    x_desc: &str,
    categories: &[String],
    strips: &[Strip],
    refs: &[Reference],
) -> Res<String> {
    let mut hi = f64::NEG_INFINITY;
    let mut lo = 0.0f64;
    for s in strips {
        for &(_, v, _) in &s.steps {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        for &(_, v) in &s.means {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    for r in refs {
        hi = hi.max(r.high);
    }
    let (_, hi) = padded(lo, hi);
    let n = categories.len().max(1);
    let height = (90 + 34 * n as u32).clamp(260, 1400);
    let groups = strips.len().max(1) as f64;
    let longest = categories
        .iter()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(4) as u32;
    let legend_w = 20
        + 7 * refs
            .iter()
            .map(|r| r.label.chars().count())
            .chain([12])
            .max()
            .unwrap_or(12) as u32;
    svg(640 + legend_w + 7 * longest, height, |root| {
        let (plot, side) = with_legend(root, legend_w);
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, (FONT, 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(20 + 7 * longest)
            .build_cartesian_2d(lo..hi, -0.5f64..(n as f64 - 0.5))
            .map_err(err)?;
        let cats = categories.to_vec();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&move |y| {
                let i = y.round();
                if (y - i).abs() > 1e-6 || i < 0.0 {
                    return String::new();
                }
                cats.get(i as usize).cloned().unwrap_or_default()
            })
            .y_label_style((FONT, 12))
            .x_desc(x_desc)
            .draw()
            .map_err(err)?;
        let mut keys = Vec::new();
        for (i, r) in refs.iter().enumerate() {
            let c = ref_color(i);
            if r.high > r.low {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(r.low, -0.5), (r.high, n as f64 - 0.5)],
                        c.mix(0.25).filled(),
                    )))
                    .map_err(err)?;
                keys.push((r.label.clone(), Key::Box(c.mix(0.45))));
            } else {
                chart
                    .draw_series(LineSeries::new(
                        [(r.low, -0.5), (r.low, n as f64 - 0.5)],
                        c.stroke_width(2),
                    ))
                    .map_err(err)?;
                keys.push((r.label.clone(), Key::Line(c)));
            }
        }
        for (g, s) in strips.iter().enumerate() {
            let c = color(g);
            let off = 0.35 - (g as f64 + 0.5) / groups * 0.7;
            let half = 0.3 / groups;
            chart
                .draw_series(s.means.iter().map(|&(i, v)| {
                    Rectangle::new(
                        [(0.0, i as f64 + off - half), (v, i as f64 + off + half)],
                        c.mix(0.35).filled(),
                    )
                }))
                .map_err(err)?;
            keys.push((format!("{}: mean (bar)", s.name), Key::Box(c.mix(0.5))));
            chart
                .draw_series(
                    s.steps
                        .iter()
                        .filter(|p| !p.2)
                        .map(|&(i, v, _)| Circle::new((v, i as f64 + off), 3, c.filled())),
                )
                .map_err(err)?;
            keys.push((format!("{}: one step", s.name), Key::Dot(c)));
            chart
                .draw_series(
                    s.steps
                        .iter()
                        .filter(|p| p.2)
                        .map(|&(i, v, _)| Cross::new((v, i as f64 + off), 6, RED.stroke_width(2))),
                )
                .map_err(err)?;
        }
        keys.push(("outlier step (> 3 MAD)".to_owned(), Key::Cross));
        legend(&side, &keys)
    })
}

/// Colours for reference lines, apart from the series colours.
fn ref_color(i: usize) -> RGBColor {
    const REFS: [RGBColor; 6] = [
        RGBColor(0, 0, 0),
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(23, 190, 207),
    ];
    REFS[i % REFS.len()]
}

/// Stacked bars: one bar per step, one segment per bucket (`values[step][bucket]`, ≥ 0), legend beside.
pub fn stacked(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    steps: &[String],
    buckets: &[String],
    values: &[Vec<f64>],
    y_max: f64,
) -> Res<String> {
    let n = steps.len().max(1);
    let width = (300 + 26 * n as u32).clamp(480, 1300);
    let (_, hi) = padded(0.0, y_max);
    svg(width, 380, |root| {
        let (plot, side) = with_legend(root, 130);
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, (FONT, 14))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..hi)
            .map_err(err)?;
        let labels = steps.to_vec();
        // At most ~12 step labels; the rest of the steps are in the tables.
        let every = n.div_ceil(12).max(1);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n * 2 + 1)
            .x_label_formatter(&move |x| {
                let i = x.round();
                if (x - i).abs() > 1e-6 || i < 0.0 || !(i as usize).is_multiple_of(every) {
                    return String::new();
                }
                labels.get(i as usize).cloned().unwrap_or_default()
            })
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(err)?;
        let mut keys = Vec::new();
        for (b, name) in buckets.iter().enumerate() {
            let c = if name == "idle" {
                RGBColor(200, 200, 200)
            } else {
                color(b)
            };
            let bars = values.iter().enumerate().filter_map(|(s, row)| {
                let base: f64 = row.iter().take(b).sum();
                let v = *row.get(b)?;
                (v > 0.0).then(|| {
                    Rectangle::new(
                        [(s as f64 - 0.38, base), (s as f64 + 0.38, base + v)],
                        c.filled(),
                    )
                })
            });
            chart.draw_series(bars).map_err(err)?;
            keys.push((name.clone(), Key::Box(c.to_rgba())));
        }
        legend(&side, &keys)
    })
}

/// One achieved point of a roofline chart.
#[derive(Debug, Clone)]
pub struct RoofPoint {
    /// Step label.
    pub label: String,
    /// FLOP per byte.
    pub intensity: f64,
    /// Achieved TFLOP/s.
    pub tflops: f64,
    /// Whether this step is an outlier (drawn as a red cross).
    pub outlier: bool,
}

/// Log-log roofline: attainable TFLOP/s = min(peak TFLOP/s, peak GB/s × intensity / 1000), the ridge point
/// (intensity = peak TFLOP/s × 1000 / peak GB/s) marked, and the achieved points.
pub fn roofline(
    title: &str,
    points: &[RoofPoint],
    peak_gbps: f64,
    peak_tflops: f64,
) -> Res<String> {
    if !(peak_gbps > 0.0 && peak_tflops > 0.0) {
        return Err("peak GB/s and TFLOP/s must be positive".into());
    }
    let ridge = peak_tflops * 1000.0 / peak_gbps;
    let finite: Vec<&RoofPoint> = points
        .iter()
        .filter(|p| p.intensity > 0.0 && p.tflops > 0.0 && p.intensity.is_finite())
        .collect();
    let xs = finite.iter().map(|p| p.intensity).chain([ridge]);
    let x_lo = xs.clone().fold(f64::INFINITY, f64::min) / 10.0;
    let x_hi = xs.fold(0.0f64, f64::max) * 10.0;
    let y_lo = finite
        .iter()
        .map(|p| p.tflops)
        .fold(peak_tflops, f64::min)
        .min(peak_gbps * x_lo / 1000.0)
        / 2.0;
    let y_hi = peak_tflops * 2.0;
    svg(1000, 460, |root| {
        let (plot, side) = with_legend(root, 280);
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, (FONT, 16))
            .margin(10)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("arithmetic intensity, FLOP/byte (ESTIMATED FLOPs / ESTIMATED bytes)")
            .y_desc("TFLOP/s")
            .draw()
            .map_err(err)?;
        let roof: Vec<(f64, f64)> = [x_lo, ridge, x_hi]
            .iter()
            .map(|&x| (x, (peak_gbps * x / 1000.0).min(peak_tflops)))
            .collect();
        chart
            .draw_series(LineSeries::new(roof, BLACK.stroke_width(2)))
            .map_err(err)?;
        chart
            .draw_series([Circle::new((ridge, peak_tflops), 5, BLUE.filled())])
            .map_err(err)?;
        let c = color(1);
        chart
            .draw_series(
                finite
                    .iter()
                    .filter(|p| !p.outlier)
                    .map(|p| Circle::new((p.intensity, p.tflops), 4, c.filled())),
            )
            .map_err(err)?;
        chart
            .draw_series(
                finite
                    .iter()
                    .filter(|p| p.outlier)
                    .map(|p| Cross::new((p.intensity, p.tflops), 6, RED.stroke_width(2))),
            )
            .map_err(err)?;
        let fmt = crate::page::fmt_num;
        legend(
            &side,
            &[
                (
                    format!(
                        "roof: {} GB/s, {} TFLOP/s",
                        fmt(peak_gbps),
                        fmt(peak_tflops)
                    ),
                    Key::Line(BLACK),
                ),
                (
                    format!("ridge point: {} FLOP/byte", fmt(ridge)),
                    Key::Dot(BLUE),
                ),
                ("achieved, one dot per step".to_owned(), Key::Dot(c)),
                ("outlier step (> 3 MAD)".to_owned(), Key::Cross),
            ],
        )
    })
}

/// A shaded interval of a time series, e.g. a throttle reason being active.
#[derive(Debug, Clone)]
pub struct Shade {
    /// Start, s.
    pub t0: f64,
    /// End, s.
    pub t1: f64,
    /// Index into the legend of shaded kinds.
    pub kind: usize,
}

/// Light, distinct fills for throttle reasons.
fn shade_color(i: usize) -> RGBColor {
    const SHADES: [RGBColor; 6] = [
        RGBColor(255, 152, 150),
        RGBColor(152, 223, 138),
        RGBColor(174, 199, 232),
        RGBColor(255, 187, 120),
        RGBColor(197, 176, 213),
        RGBColor(219, 219, 141),
    ];
    SHADES[i % SHADES.len()]
}

/// Lines over time (one per GPU and field), shaded intervals (throttle reasons) and labelled vertical
/// markers (the command's start and end).
pub fn time_series(
    title: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
    shade_kinds: &[String],
    shades: &[Shade],
    markers: &[(f64, String)],
) -> Res<String> {
    let ts = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.0))
        .chain(markers.iter().map(|m| m.0));
    let t_lo = ts.clone().fold(f64::INFINITY, f64::min);
    let t_hi = ts.fold(f64::NEG_INFINITY, f64::max);
    let (t_lo, t_hi) = padded(t_lo, t_hi);
    let ys = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1));
    let y_lo = ys.clone().fold(f64::INFINITY, f64::min).min(0.0);
    let y_hi = ys.fold(f64::NEG_INFINITY, f64::max);
    let (_, y_hi) = padded(y_lo, y_hi * 1.08);
    svg(820, 300, |root| {
        let (plot, side) = with_legend(root, 230);
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, (FONT, 14))
            .margin(8)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(t_lo..t_hi, y_lo..y_hi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("t, s (monitor clock)")
            .y_desc(y_desc)
            .draw()
            .map_err(err)?;
        let mut keys = Vec::new();
        // Grouped by kind once: a kind per GPU and reason filtering every shade was quadratic in GPUs.
        let mut by_kind: Vec<Vec<&Shade>> = vec![Vec::new(); shade_kinds.len()];
        for s in shades {
            crate::visit();
            if let Some(v) = by_kind.get_mut(s.kind) {
                v.push(s);
            }
        }
        for (k, name) in shade_kinds.iter().enumerate() {
            let c = shade_color(k);
            // Several reasons at once overlap; each is translucent so both stay visible.
            chart
                .draw_series(
                    by_kind[k].iter().map(|s| {
                        Rectangle::new([(s.t0, y_lo), (s.t1, y_hi)], c.mix(0.45).filled())
                    }),
                )
                .map_err(err)?;
            keys.push((format!("throttle: {name}"), Key::Box(c.mix(0.7))));
        }
        for (t, label) in markers {
            chart
                .draw_series(LineSeries::new(
                    [(*t, y_lo), (*t, y_hi)],
                    BLACK.stroke_width(2),
                ))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!(" {label}"),
                    (*t, y_hi),
                    (FONT, 11),
                )))
                .map_err(err)?;
        }
        for (i, (name, pts)) in series.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(err)?;
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 2, c.filled())))
                .map_err(err)?;
            keys.push((name.clone(), Key::Line(c)));
        }
        legend(&side, &keys)
    })
}
