//! Seek curves: the time the arm takes to move the heads by a number of cylinders.
//!
//! Three forms, as DiskSim offers them (devices.md §1.1):
//!
//! * `hpl` — the two-piece equation of Ruemmler & Wilkes as DiskSim's "HPL" seek type:
//!   `V6` for one cylinder (unless `V6` is −1), `V2 + V3·√d` below `V1` cylinders (the
//!   acceleration-limited short seeks) and `V4 + V5·d` from `V1` on (the coast-limited long
//!   ones).
//! * `curve` — Lee & Katz's three-point curve `t(d) = a·√(d−1) + b·(d−1) + c`, with `c` the
//!   single-cylinder time and `a`, `b` chosen so that the curve passes through the full-stroke
//!   time and its average over random pairs of distinct cylinders (the Hitachi/IBM datasheet
//!   definition: distance `d` weighted by `N − d`) is the given average.
//! * `hpl` plus `seek_first_ten` — DiskSim's "hplplus10": the ten measured times for
//!   distances 1 to 10, the HPL equation's two pieces (without the `V6` override) beyond.
//! * `table` — DiskSim's "extracted" seek type: measured points with linear interpolation
//!   between them, a listed distance taking its listed time. The table is used as given: it
//!   need not be monotonic (the Atlas 10K's one-cylinder seek is slower than its
//!   two-cylinder one), and between a slower and a faster point the time falls linearly, as
//!   DiskSim's does. Past its last distance the last segment's slope continues, as DiskSim
//!   extrapolates. Below its first distance the first time holds (DiskSim's tables start at
//!   one cylinder, and DiskSim has no rule there).
//!
//! DiskSim computes in integer time ticks and truncates an interpolated time to a tick;
//! here the interpolation is in floating point and rounds to the nanosecond. DiskSim takes
//! the larger of the seek and the head switch when a seek also changes the surface; here a
//! seek between cylinders costs the seek alone (the existing presets' behaviour).
//!
//! Times are computed in floating-point milliseconds and rounded to whole nanoseconds when they
//! leave this module. A zero distance costs nothing.

use std::fmt;

/// A seek curve.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum SeekCurve {
    /// Ruemmler & Wilkes / DiskSim HPL: `[V1, V2, V3, V4, V5, V6]`, `V1` in cylinders and the
    /// rest in ms.
    Hpl([f64; 6]),
    /// Lee & Katz: `a·√(d−1) + b·(d−1) + c` ms.
    Curve {
        /// Coefficient of the square-root term, ms.
        a_ms: f64,
        /// Coefficient of the linear term, ms per cylinder.
        b_ms: f64,
        /// The single-cylinder time, ms.
        c_ms: f64,
    },
    /// `(distance in cylinders, ms)` points, strictly ascending in distance.
    Table(Vec<(u32, f64)>),
    /// DiskSim's hplplus10: the times for distances 1..=10 in ms, then the HPL pieces
    /// (`V6` unused).
    HplFirstTen([f64; 6], [f64; 10]),
}

impl SeekCurve {
    /// The seek time for a move of `distance_cylinders`, in nanoseconds.
    pub(super) fn seek_ns(&self, distance_cylinders: u32) -> u64 {
        if distance_cylinders == 0 {
            return 0;
        }
        let ms = self.seek_ms(distance_cylinders);
        // A curve may dip below zero only through a user's odd coefficients, which
        // `check` refuses; the clamp keeps the conversion total.
        // Rounded to the nearest nanosecond (`+ 0.5` then truncation: the value is not
        // negative, and `f64::round` is a library call on baseline x86-64).
        (ms.max(0.0) * 1e6 + 0.5) as u64
    }

    /// The seek time in ms for a non-zero distance.
    pub(super) fn seek_ms(&self, distance_cylinders: u32) -> f64 {
        let d = f64::from(distance_cylinders);
        match self {
            SeekCurve::Hpl([v1, v2, v3, v4, v5, v6]) => {
                if distance_cylinders == 1 && *v6 != -1.0 {
                    *v6
                } else if d < *v1 {
                    v2 + v3 * d.sqrt()
                } else {
                    v4 + v5 * d
                }
            }
            SeekCurve::Curve { a_ms, b_ms, c_ms } => {
                a_ms * (d - 1.0).sqrt() + b_ms * (d - 1.0) + c_ms
            }
            SeekCurve::Table(points) => table_ms(points, distance_cylinders),
            SeekCurve::HplFirstTen([v1, v2, v3, v4, v5, _], first_ten) => {
                if distance_cylinders <= 10 {
                    first_ten[distance_cylinders as usize - 1]
                } else if d < *v1 {
                    v2 + v3 * d.sqrt()
                } else {
                    v4 + v5 * d
                }
            }
        }
    }

    /// The average seek time in ms over random pairs of distinct cylinders on a disk of
    /// `cylinders`: distance `d` weighted by `cylinders − d` (devices.md §1.6).
    pub(super) fn average_ms(&self, cylinders: u32) -> f64 {
        let mut weighted = 0.0;
        let mut weights = 0.0;
        for d in 1..cylinders {
            let weight = f64::from(cylinders - d);
            weighted += weight * self.seek_ms(d);
            weights += weight;
        }
        if weights == 0.0 { 0.0 } else { weighted / weights }
    }

    /// Fits Lee & Katz's curve to single-cylinder, average and full-stroke times on a disk of
    /// `cylinders`. Fails with the range `average_ms` must lie in when the fit would need a
    /// negative coefficient (a curve that bends the wrong way).
    pub(super) fn fit_curve(
        single_ms: f64,
        average_ms: f64,
        full_ms: f64,
        cylinders: u32,
    ) -> Result<SeekCurve, String> {
        let c_ms = single_ms;
        let longest = cylinders.saturating_sub(1);
        if longest <= 1 {
            // One or two cylinders: every seek is a single-cylinder seek.
            return Ok(SeekCurve::Curve { a_ms: 0.0, b_ms: 0.0, c_ms });
        }
        // Weighted means of √(d−1) and (d−1) over random pairs of distinct cylinders.
        let (mut sqrt_mean, mut linear_mean, mut weights) = (0.0, 0.0, 0.0);
        for d in 1..cylinders {
            let weight = f64::from(cylinders - d);
            let x = f64::from(d - 1);
            sqrt_mean += weight * x.sqrt();
            linear_mean += weight * x;
            weights += weight;
        }
        sqrt_mean /= weights;
        linear_mean /= weights;
        let far = f64::from(longest - 1);
        // Solve  a·sqrt_mean + b·linear_mean = average − c  and  a·√far + b·far = full − c.
        let determinant = sqrt_mean * far - linear_mean * far.sqrt();
        let rise_average = average_ms - c_ms;
        let rise_full = full_ms - c_ms;
        if determinant.abs() < 1e-12 {
            return Ok(SeekCurve::Curve { a_ms: rise_full / far.sqrt(), b_ms: 0.0, c_ms });
        }
        let a_ms = (rise_average * far - linear_mean * rise_full) / determinant;
        let b_ms = (sqrt_mean * rise_full - far.sqrt() * rise_average) / determinant;
        if a_ms < 0.0 || b_ms < 0.0 {
            // The average a pure-linear (b only) and a pure-square-root (a only) curve through
            // the same end points would have: the accepted range.
            let low = c_ms + rise_full * linear_mean / far;
            let high = c_ms + rise_full * sqrt_mean / far.sqrt();
            return Err(format!(
                "{average_ms} ms cannot be the average of a seek curve from {single_ms} ms \
                 (1 cylinder) to {full_ms} ms ({longest} cylinders); with these it must lie \
                 between {low:.3} ms and {high:.3} ms"
            ));
        }
        Ok(SeekCurve::Curve { a_ms, b_ms, c_ms })
    }

    /// Parses `V1/V2/V3/V4/V5/V6`.
    pub(super) fn parse_hpl(text: &str) -> Result<SeekCurve, String> {
        let expected = "six numbers V1/V2/V3/V4/V5/V6: V1 in cylinders, V2..V6 in ms, \
                        V6 = -1 for no single-cylinder override, e.g. \
                        300/3.81/0.33/7.75/0.0059/-1";
        let fields: Vec<&str> = text.split('/').map(str::trim).collect();
        if fields.len() != 6 {
            return Err(format!("`{text}` has {} fields (expected {expected})", fields.len()));
        }
        let mut values = [0.0; 6];
        for (value, field) in values.iter_mut().zip(&fields) {
            *value = parse_number(field).ok_or_else(|| {
                format!("`{field}` in `{text}` is not a number (expected {expected})")
            })?;
        }
        if values[0] < 1.0 {
            return Err(format!("V1 = {} must be at least 1 cylinder", values[0]));
        }
        if values[1..5].iter().any(|v| *v < 0.0) || (values[5] < 0.0 && values[5] != -1.0) {
            return Err(format!(
                "`{text}`: V2..V5 must be >= 0 and V6 >= 0 or -1 (expected {expected})"
            ));
        }
        Ok(SeekCurve::Hpl(values))
    }

    /// This HPL curve with DiskSim's first ten seek times from `text` (`MS/MS/...`, exactly
    /// ten); fails unless `self` is an HPL curve.
    pub(super) fn with_first_ten(self, text: &str) -> Result<SeekCurve, String> {
        let SeekCurve::Hpl(hpl) = self else {
            return Err("needs seek=hpl (DiskSim's hplplus10)".to_owned());
        };
        let expected = "exactly ten times >= 0 in ms separated by `/`, for distances 1..10, \
                        e.g. 2.89/3.68/3.81/3.98/4.27/4.65/4.52/4.65/4.82/4.99";
        let fields: Vec<&str> = text.split('/').map(str::trim).collect();
        if fields.len() != 10 {
            return Err(format!("`{text}` has {} times (expected {expected})", fields.len()));
        }
        let mut first_ten = [0.0; 10];
        for (value, field) in first_ten.iter_mut().zip(&fields) {
            *value = parse_number(field).filter(|ms| *ms >= 0.0).ok_or_else(|| {
                format!("`{field}` in `{text}` is not a time >= 0 (expected {expected})")
            })?;
        }
        Ok(SeekCurve::HplFirstTen(hpl, first_ten))
    }

    /// Parses `d:ms/d:ms/...`, distances strictly ascending.
    pub(super) fn parse_table(text: &str) -> Result<SeekCurve, String> {
        let expected = "DISTANCE:MS points separated by `/`, distances in cylinders strictly \
                        ascending from 1, e.g. 1:0.831/2:1.003/100:2.145/6894:10.627";
        let mut points: Vec<(u32, f64)> = Vec::new();
        for point in text.split('/').map(str::trim) {
            let Some((distance, ms)) = point.split_once(':') else {
                return Err(format!("`{point}` is not DISTANCE:MS (expected {expected})"));
            };
            let distance: u32 = distance.trim().parse().map_err(|_| {
                format!("`{distance}` in `{point}` is not a distance (expected {expected})")
            })?;
            let ms = parse_number(ms.trim())
                .filter(|ms| *ms >= 0.0)
                .ok_or_else(|| format!("`{ms}` in `{point}` is not a time >= 0 in ms"))?;
            if distance == 0 {
                return Err(format!("`{point}`: distances start at 1 (expected {expected})"));
            }
            if let Some(&(previous, _)) = points.last()
                && distance <= previous
            {
                return Err(format!(
                    "`{point}` follows distance {previous}: the table is not ascending in \
                     distance (expected {expected})"
                ));
            }
            points.push((distance, ms));
        }
        Ok(SeekCurve::Table(points))
    }

    /// Whether the seek time never decreases as the distance grows over `1..=longest`
    /// cylinders, decided from the curve's form rather than by trying every distance: each
    /// piece must rise (non-negative coefficients, ascending table times) and the time must
    /// not drop where one piece hands over to the next. `false` only costs a pruned scan.
    pub(super) fn is_monotone(&self, longest: u32) -> bool {
        match self {
            SeekCurve::Curve { a_ms, b_ms, .. } => *a_ms >= 0.0 && *b_ms >= 0.0,
            SeekCurve::Hpl([v1, _, v3, _, v5, _]) => {
                if *v3 < 0.0 || *v5 < 0.0 {
                    return false;
                }
                // The hand-overs: the single-cylinder value to distance 2, and the last
                // square-root distance to the first linear one.
                let first_linear = v1.ceil().clamp(1.0, f64::from(u32::MAX)) as u32;
                [2, first_linear]
                    .into_iter()
                    .filter(|&d| (2..=longest).contains(&d))
                    .all(|d| self.seek_ns(d - 1) <= self.seek_ns(d))
            }
            SeekCurve::Table(points) => points.windows(2).all(|pair| pair[0].1 <= pair[1].1),
            SeekCurve::HplFirstTen([v1, _, v3, _, v5, _], _) => {
                // Checked distance by distance over the ten given and their hand-over to the
                // equation, and at the equation's own hand-over; beyond, each piece rises
                // with non-negative coefficients.
                if *v3 < 0.0 || *v5 < 0.0 {
                    return false;
                }
                let first_linear = v1.ceil().clamp(1.0, f64::from(u32::MAX)) as u32;
                (2..=11)
                    .chain([first_linear])
                    .filter(|&d| (2..=longest).contains(&d))
                    .all(|d| self.seek_ns(d - 1) <= self.seek_ns(d))
            }
        }
    }

    /// Refuses a curve that gives a negative time at some distance up to `longest`.
    pub(super) fn check(&self, longest: u32) -> Result<(), String> {
        let probes: Vec<u32> = match self {
            SeekCurve::Hpl([v1, ..]) => {
                let v1 = (*v1).min(f64::from(u32::MAX)) as u32;
                vec![1, 2, v1.saturating_sub(1).max(1), v1.max(1), longest.max(1)]
            }
            SeekCurve::Curve { .. } => vec![1, longest.max(1)],
            SeekCurve::HplFirstTen([v1, ..], _) => {
                let v1 = (*v1).min(f64::from(u32::MAX)) as u32;
                vec![11, v1.saturating_sub(1).max(1), v1.max(1), longest.max(1)]
            }
            SeekCurve::Table(points) => {
                points.iter().map(|&(d, _)| d).chain([longest.max(1)]).collect()
            }
        };
        for d in probes {
            let ms = self.seek_ms(d);
            if !ms.is_finite() || ms < 0.0 {
                return Err(format!("gives {ms} ms for a {d}-cylinder seek"));
            }
        }
        Ok(())
    }
}

impl fmt::Display for SeekCurve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeekCurve::Hpl(v) => {
                write!(f, "hpl {}/{}/{}/{}/{}/{}", v[0], v[1], v[2], v[3], v[4], v[5])
            }
            SeekCurve::Curve { a_ms, b_ms, c_ms } => {
                write!(f, "curve {a_ms:.4}·√(d−1)+{b_ms:.6}·(d−1)+{c_ms} ms")
            }
            SeekCurve::Table(points) => write!(f, "table of {} points", points.len()),
            SeekCurve::HplFirstTen(v, _) => write!(
                f,
                "hpl {}/{}/{}/{}/{}/{} with the first ten seeks given",
                v[0], v[1], v[2], v[3], v[4], v[5]
            ),
        }
    }
}

fn parse_number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Linear interpolation in a table (see the module doc for the ends).
fn table_ms(points: &[(u32, f64)], distance: u32) -> f64 {
    let Some(&(first_distance, first_ms)) = points.first() else { return 0.0 };
    if distance <= first_distance {
        return first_ms;
    }
    let index = points.partition_point(|&(d, _)| d < distance);
    let (low, high) = if index < points.len() {
        (points[index - 1], points[index])
    } else if points.len() >= 2 {
        (points[points.len() - 2], points[points.len() - 1])
    } else {
        return first_ms;
    };
    let (d0, t0) = (f64::from(low.0), low.1);
    let (d1, t1) = (f64::from(high.0), high.1);
    t0 + (t1 - t0) * (f64::from(distance) - d0) / (d1 - d0)
}
