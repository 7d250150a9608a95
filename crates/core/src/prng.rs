//! Deterministic pseudo-random numbers: one `u64` seed is the whole random input of a simulation.
//!
//! A run must be reproducible from its seed byte for byte, on every later build. Three rules
//! make that hold:
//!
//! - **One seed, forked sub-streams.** [`Prng::new`] turns the seed into a root generator, and
//!   each component takes its own sub-stream with [`Prng::fork`] (`rng.fork("arrivals")`) or
//!   [`Prng::fork_indexed`] (`rng.fork_indexed("job", 3)` for the fourth issuer). A fork is
//!   derived only from the parent's key and the label, never from how far the parent has been
//!   drawn, so adding a draw in one component does not shift the numbers of any other, and
//!   components may be created in any order.
//! - **We own the samplers.** Only the raw 64-bit generator comes from a dependency: `rand_pcg`'s
//!   PCG-XSL-RR 128/64 ([`rand_pcg::Pcg64`]), whose output its authors document as reproducible.
//!   Seeding (SplitMix64), label hashing (FNV-1a), bounded integers (Lemire's method), floats,
//!   the exponential and the Zipf distribution are all written in this file, because the
//!   samplers of `rand` and `rand_distr` are free to change their output between releases, and a
//!   dependency update must never change a simulation.
//! - **No other randomness.** Never use `thread_rng`, `StdRng`, `OsRng` or any hash map's
//!   random state in simulated code: `thread_rng` and `OsRng` are seeded by the OS, and `StdRng`
//!   may switch algorithm in any `rand` release. `Prng` deliberately implements no `rand_core`
//!   trait, so that `rand`'s own samplers cannot be applied to it by accident.
//!
//! Integer results ([`Prng::next_u64`], [`Prng::below`], [`Prng::range_inclusive`]) and
//! [`Prng::unit_f64`] are exact and so identical on every platform. [`Prng::exponential`] and
//! [`Zipf`] call `ln`/`exp`, whose last bit is up to the platform's math library: the same
//! platform reproduces them exactly, another one might differ in rare draws.

use std::fmt;

use rand_core::Rng;
use rand_pcg::Pcg64;

/// The SplitMix64 increment: 2^64 divided by the golden ratio, so successive states are spread
/// evenly over the whole 64-bit range.
const SPLITMIX_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// FNV-1a 64-bit offset basis.
const FNV_OFFSET_BASIS: u64 = 0xCBF2_9CE4_8422_2325;

/// FNV-1a 64-bit prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01B3;

/// Separates the label from the index in [`Prng::fork_indexed`]. It can never occur in UTF-8, so
/// no plain label passed to [`Prng::fork`] hashes the same byte string as an indexed one.
const INDEX_SEPARATOR: u8 = 0xFF;

/// 2^-53: the spacing of the doubles that [`Prng::unit_f64`] returns.
const UNIT_F64_STEP: f64 = 1.0 / (1u64 << 53) as f64;

/// The SplitMix64 output function (Steele, Lea & Flood 2014): a bijection on `u64` in which
/// every input bit affects every output bit, used to turn structured values (small seeds,
/// label hashes) into well-spread generator keys and states.
const fn splitmix64_mix(value: u64) -> u64 {
    let mut z = value;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a 64 over a byte string, kept as a running state so that `fork_indexed` can hash the
/// label, a separator and the index as one string without allocating.
#[derive(Clone, Copy, Debug)]
struct Fnv1a64(u64);

impl Fnv1a64 {
    const fn new() -> Self {
        Self(FNV_OFFSET_BASIS)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
        }
    }

    const fn finish(self) -> u64 {
        self.0
    }
}

/// A child key from a parent key and a label hash. The label hash is mixed before it meets the
/// key so that related seeds (1, 2, 3, ...) and related labels cannot cancel each other out.
const fn child_key(parent_key: u64, label_hash: u64) -> u64 {
    splitmix64_mix(parent_key ^ splitmix64_mix(label_hash))
}

/// A reproducible pseudo-random generator: PCG-XSL-RR 128/64 plus the samplers the simulator
/// needs. See the [module documentation](self) for the rules it exists to enforce.
#[derive(Clone, Debug)]
pub struct Prng {
    rng: Pcg64,
    /// What the generator was derived from: the seed for a root, a mixed hash for a fork.
    /// Forks are derived from this rather than from `rng` so that they do not depend on how
    /// many numbers the parent has produced.
    key: u64,
}

impl Prng {
    /// A root generator for a whole simulation run.
    #[must_use]
    pub fn new(seed: u64) -> Prng {
        Prng::from_key(seed)
    }

    /// Expands a 64-bit key into PCG's 128-bit state and 128-bit stream with the SplitMix64
    /// sequence, so that nearby keys give unrelated generators.
    fn from_key(key: u64) -> Prng {
        let mut splitmix_state = key;
        let mut next_word = || {
            splitmix_state = splitmix_state.wrapping_add(SPLITMIX_GAMMA);
            u128::from(splitmix64_mix(splitmix_state))
        };
        let state = (next_word() << 64) | next_word();
        // `Pcg64::new` computes the LCG increment as `(stream << 1) | 1`, which is odd as PCG
        // requires whatever `stream` is; only the stream's top bit is lost.
        let stream = (next_word() << 64) | next_word();
        Prng { rng: Pcg64::new(state, stream), key }
    }

    /// A child generator for the component named `label`.
    ///
    /// The child depends only on this generator's key and `label`: forking before or after
    /// drawing from `self` gives the same child, and distinct labels give unrelated children.
    #[must_use]
    pub fn fork(&self, label: &str) -> Prng {
        let mut hash = Fnv1a64::new();
        hash.write(label.as_bytes());
        Prng::from_key(child_key(self.key, hash.finish()))
    }

    /// A child generator for member `index` of a family of components, e.g. `("job", 3)` for
    /// the fourth job issuer. Like [`Prng::fork`] it ignores this generator's draws; it differs
    /// from `fork(label)` and from every other index.
    #[must_use]
    pub fn fork_indexed(&self, label: &str, index: u64) -> Prng {
        let mut hash = Fnv1a64::new();
        hash.write(label.as_bytes());
        hash.write(&[INDEX_SEPARATOR]);
        hash.write(&index.to_le_bytes());
        Prng::from_key(child_key(self.key, hash.finish()))
    }

    /// The next raw 64 bits of the stream.
    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// A uniform integer in `[0, bound)`, without modulo bias.
    ///
    /// Lemire's multiply-and-reject method ("Fast Random Integer Generation in an Interval",
    /// 2019): the high word of `x * bound` is the result, and the rare `x` whose low word falls
    /// in the short, over-represented zone are redrawn. Expected draws are below 2.
    ///
    /// # Panics
    ///
    /// If `bound` is 0, since the interval is empty.
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "Prng::below: bound must be greater than 0 (the range [0, 0) is empty)");
        let mut product = u128::from(self.next_u64()) * u128::from(bound);
        let mut low_word = product as u64;
        if low_word < bound {
            // 2^64 mod bound: how many low words would map one result too many times. Only
            // computed in this branch because the division is the slow part.
            let rejection_threshold = bound.wrapping_neg() % bound;
            while low_word < rejection_threshold {
                product = u128::from(self.next_u64()) * u128::from(bound);
                low_word = product as u64;
            }
        }
        (product >> 64) as u64
    }

    /// A uniform integer in `[low, high]`.
    ///
    /// # Panics
    ///
    /// If `low > high`.
    pub fn range_inclusive(&mut self, low: u64, high: u64) -> u64 {
        assert!(low <= high, "Prng::range_inclusive: low ({low}) must not exceed high ({high})");
        match (high - low).checked_add(1) {
            Some(width) => low + self.below(width),
            // The range is all of u64, whose width does not fit in a u64.
            None => self.next_u64(),
        }
    }

    /// A uniform double in `[0, 1)`: the top 53 bits of one draw scaled by 2^-53, so every
    /// result is an exact multiple of 2^-53 and 1.0 is never returned.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * UNIT_F64_STEP
    }

    /// `true` with probability `probability`. Always consumes exactly one draw, even for 0 and
    /// 1, so that changing a probability in a configuration does not shift later draws.
    ///
    /// # Panics
    ///
    /// If `probability` is NaN or outside `[0, 1]`, which is a configuration error.
    pub fn chance(&mut self, probability: f64) -> bool {
        assert!(
            (0.0..=1.0).contains(&probability),
            "Prng::chance: probability must be in [0, 1], got {probability}"
        );
        self.unit_f64() < probability
    }

    /// An exponentially distributed value with the given mean, by inversion:
    /// `-mean * ln(1 - u)` with `u` uniform in `[0, 1)`. The result has the unit of `mean`.
    ///
    /// # Panics
    ///
    /// If `mean` is negative, infinite or NaN.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        assert!(
            mean.is_finite() && mean >= 0.0,
            "Prng::exponential: mean must be finite and >= 0, got {mean}"
        );
        // ln_1p(-u) is ln(1 - u) without the cancellation of forming 1 - u for small u, and
        // 1 - u lies in (0, 1], so the logarithm is always finite.
        -mean * (-self.unit_f64()).ln_1p()
    }
}

/// Why [`Zipf::new`] rejected its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ZipfError {
    /// The rank count `n` was 0; it must be at least 1.
    NoRanks,
    /// The exponent `s` was not a finite number greater than 0.
    BadExponent {
        /// The rejected exponent.
        exponent: f64,
    },
}

impl fmt::Display for ZipfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZipfError::NoRanks => write!(f, "Zipf rank count n is 0; it must be at least 1"),
            ZipfError::BadExponent { exponent } => write!(
                f,
                "Zipf exponent s is {exponent}; it must be a finite number greater than 0"
            ),
        }
    }
}

impl std::error::Error for ZipfError {}

/// The Zipf distribution over ranks `1..=n`: `P(k)` is proportional to `k^-s`, so rank 1 is
/// the most likely.
///
/// Sampling uses rejection-inversion (Hörmann & Derflinger, "Rejection-inversion to generate
/// variates from monotone discrete distributions", ACM TOMACS 6(3), 1996), which needs O(1)
/// memory and O(1) expected time for any `n`, including `n` = 2^40.
///
/// The method, for the hat `h(x) = x^-s` (convex and decreasing on x > 0) and its antiderivative
/// `H`: rank `k` >= 2 owns the interval `[H(k - 1/2), H(k + 1/2))` on the `H` axis, whose length
/// (the area under `h`) is at least `h(k) = k^-s` because `h` is convex. A point `t` drawn
/// uniformly from the union is mapped back to `x = H^-1(t)` and rounded to `k`; it is accepted
/// when it falls in the top part of length exactly `h(k)`, `t >= H(k + 1/2) - h(k)`, so every
/// rank is accepted with probability proportional to `k^-s`. Rank 1's interval is cut to exactly
/// `h(1)` long, so rank 1 is never rejected; the rejection rate is small for all `s`.
///
/// One draw is a 53-bit uniform, so ranks whose probability is below about 2^-53 (far in the
/// tail of a large `n` with `s > 1`) are not told apart one by one: the tail gets its right
/// total mass, in coarse steps.
#[derive(Clone, Copy, Debug)]
pub struct Zipf {
    rank_count: u64,
    exponent: f64,
    /// `H(3/2) - h(1)`: the low end of the sampling interval on the `H` axis.
    t_low: f64,
    /// `H(n + 1/2)`: the high end.
    t_high: f64,
    /// A draw with `k - x <= squeeze` is accepted without evaluating `H` and `h`: for this hat
    /// the acceptance bound `k - H^-1(H(k + 1/2) - h(k))` is smallest at `k = 2` (the paper's
    /// squeeze; the tests check it numerically), so its value there is safe for every rank.
    squeeze: f64,
}

impl Zipf {
    /// A Zipf distribution over `n` ranks with exponent `s`.
    ///
    /// # Errors
    ///
    /// [`ZipfError::NoRanks`] if `n` is 0, [`ZipfError::BadExponent`] if `s` is not finite
    /// or not greater than 0 (`s` = 1 is allowed).
    pub fn new(n: u64, s: f64) -> Result<Zipf, ZipfError> {
        if n == 0 {
            return Err(ZipfError::NoRanks);
        }
        if !(s.is_finite() && s > 0.0) {
            return Err(ZipfError::BadExponent { exponent: s });
        }
        let t_low = hat_integral(1.5, s) - 1.0;
        let t_high = hat_integral(n as f64 + 0.5, s);
        let squeeze = 2.0 - hat_integral_inverse(hat_integral(2.5, s) - hat(2.0, s), s);
        Ok(Zipf { rank_count: n, exponent: s, t_low, t_high, squeeze })
    }

    /// One rank in `1..=n`.
    pub fn sample(&self, rng: &mut Prng) -> u64 {
        let s = self.exponent;
        loop {
            let t = self.t_low + rng.unit_f64() * (self.t_high - self.t_low);
            let x = hat_integral_inverse(t, s);
            // Rounding to nearest maps [k - 1/2, k + 1/2) to k. The float-to-int cast saturates
            // (and sends NaN to 0), and the clamp absorbs rounding just outside [1/2, n + 1/2].
            let rank = ((x + 0.5) as u64).clamp(1, self.rank_count);
            let rank_f = rank as f64;
            if rank_f - x <= self.squeeze || t >= hat_integral(rank_f + 0.5, s) - hat(rank_f, s) {
                return rank;
            }
        }
    }
}

/// The hat `h(x) = x^-s`.
fn hat(x: f64, s: f64) -> f64 {
    (-s * x.ln()).exp()
}

/// `H(x) = (x^(1-s) - 1) / (1 - s)`, which tends to `ln x` as `s -> 1`. Written as
/// `ln x * expm1(y) / y` with `y = (1 - s) ln x` so that it is accurate near and at `s = 1`
/// instead of dividing two vanishing quantities. `H(1) = 0` and `H` increases.
fn hat_integral(x: f64, s: f64) -> f64 {
    let ln_x = x.ln();
    ln_x * expm1_over_x((1.0 - s) * ln_x)
}

/// `H^-1(t) = (1 + (1 - s) t)^(1 / (1 - s))`, which tends to `exp(t)` as `s -> 1`. Written as
/// `exp(t * ln_1p(z) / z)` with `z = (1 - s) t` for the same reason as [`hat_integral`].
fn hat_integral_inverse(t: f64, s: f64) -> f64 {
    (t * ln_1p_over_x((1.0 - s) * t)).exp()
}

/// Below this magnitude the quotient helpers switch to their Taylor series, whose first omitted
/// term (~x^3/4) is then far below one ulp, while the library quotient would lose digits.
const SERIES_THRESHOLD: f64 = 1e-8;

/// `ln(1 + x) / x`, continuous at 0 where it is 1.
fn ln_1p_over_x(x: f64) -> f64 {
    if x.abs() > SERIES_THRESHOLD { x.ln_1p() / x } else { 1.0 - x * (0.5 - x / 3.0) }
}

/// `(e^x - 1) / x`, continuous at 0 where it is 1.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > SERIES_THRESHOLD { x.exp_m1() / x } else { 1.0 + x * (0.5 + x / 6.0) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn first_draws(rng: &mut Prng, count: usize) -> Vec<u64> {
        (0..count).map(|_| rng.next_u64()).collect()
    }

    /// Exact Zipf probabilities for small `n`, by direct summation.
    fn zipf_pmf(n: u64, s: f64) -> Vec<f64> {
        let weights: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-s)).collect();
        let total: f64 = weights.iter().sum();
        weights.iter().map(|w| w / total).collect()
    }

    // Proves a run is a pure function of its seed.
    #[test]
    fn same_seed_gives_identical_sequence() {
        assert_eq!(first_draws(&mut Prng::new(42), 100), first_draws(&mut Prng::new(42), 100));
    }

    // Proves distinct seeds, including adjacent ones, give distinct streams.
    #[test]
    fn different_seeds_give_different_sequences() {
        let streams: Vec<Vec<u64>> =
            (0..4).map(|seed| first_draws(&mut Prng::new(seed), 4)).collect();
        for (i, a) in streams.iter().enumerate() {
            for b in &streams[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    // Proves a fork depends on the parent's key only, not on how far the parent was drawn.
    #[test]
    fn fork_is_independent_of_parent_draws() {
        let mut parent = Prng::new(7);
        let before = first_draws(&mut parent.fork("x"), 16);
        let indexed_before = first_draws(&mut parent.fork_indexed("job", 3), 16);
        first_draws(&mut parent, 1000);
        assert_eq!(before, first_draws(&mut parent.fork("x"), 16));
        assert_eq!(indexed_before, first_draws(&mut parent.fork_indexed("job", 3), 16));
    }

    // Proves different labels give different children, and a child differs from its parent.
    #[test]
    fn forks_with_different_labels_differ() {
        let parent = Prng::new(7);
        let x = first_draws(&mut parent.fork("x"), 8);
        assert_ne!(x, first_draws(&mut parent.fork("y"), 8));
        assert_ne!(x, first_draws(&mut parent.fork(""), 8));
        assert_ne!(x, first_draws(&mut parent.clone(), 8));
        assert_ne!(x, first_draws(&mut Prng::new(8).fork("x"), 8));
    }

    // Proves each index gets its own stream, distinct from the plain fork of the same label.
    #[test]
    fn fork_indexed_differs_by_index() {
        let parent = Prng::new(7);
        let streams: Vec<Vec<u64>> =
            (0..8).map(|i| first_draws(&mut parent.fork_indexed("job", i), 8)).collect();
        for (i, a) in streams.iter().enumerate() {
            assert_ne!(a, &first_draws(&mut parent.fork("job"), 8));
            for b in &streams[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    // Pins the raw stream of seed 1, so a rand_pcg update or a change to the seeding that would
    // alter every simulation fails here instead of silently.
    #[test]
    fn known_answer_raw_stream() {
        let mut rng = Prng::new(1);
        assert_eq!(first_draws(&mut rng, 3), [KAT_NEXT_U64_0, KAT_NEXT_U64_1, KAT_NEXT_U64_2]);
    }

    // Pins forking and the integer and Zipf samplers, so an edit to this file that would change
    // existing simulations fails here.
    #[test]
    fn known_answer_forks_and_samplers() {
        let root = Prng::new(1);
        assert_eq!(root.fork("x").next_u64(), KAT_FORK_X);
        assert_eq!(root.fork_indexed("job", 3).next_u64(), KAT_FORK_JOB_3);
        let mut rng = root.fork("samplers");
        let below: Vec<u64> = (0..5).map(|_| rng.below(1000)).collect();
        assert_eq!(below, KAT_BELOW_1000);
        let zipf = Zipf::new(1 << 20, 1.1).expect("valid parameters");
        let ranks: Vec<u64> = (0..5).map(|_| zipf.sample(&mut rng)).collect();
        assert_eq!(ranks, KAT_ZIPF);
    }

    const KAT_NEXT_U64_0: u64 = 0x53A7_B5F9_D766_12D6;
    const KAT_NEXT_U64_1: u64 = 0x637F_433E_6F89_8642;
    const KAT_NEXT_U64_2: u64 = 0x2765_C86D_1BF9_9840;
    const KAT_FORK_X: u64 = 0x47B3_D090_94D9_9A1D;
    const KAT_FORK_JOB_3: u64 = 0x8926_ADB3_E009_9F2D;
    const KAT_BELOW_1000: [u64; 5] = [460, 531, 427, 119, 712];
    const KAT_ZIPF: [u64; 5] = [1100, 7920, 3, 13183, 25];

    // Proves `below` stays in bounds and is uniform enough to pass a chi-square test.
    #[test]
    fn below_is_in_bounds_and_uniform() {
        const BUCKETS: u64 = 10;
        const DRAWS: u64 = 100_000;
        let mut rng = Prng::new(3);
        let mut counts = [0u64; BUCKETS as usize];
        for _ in 0..DRAWS {
            let value = rng.below(BUCKETS);
            assert!(value < BUCKETS);
            counts[value as usize] += 1;
        }
        let expected = (DRAWS / BUCKETS) as f64;
        let chi_square: f64 =
            counts.iter().map(|&c| (c as f64 - expected).powi(2) / expected).sum();
        // 9 degrees of freedom: P(chi^2 > 35) is about 6e-5.
        assert!(chi_square < 35.0, "chi-square {chi_square} for counts {counts:?}");
    }

    // Proves the rejection step removes modulo bias where it would be largest: for a bound of
    // 3 * 2^62, multiply-shift without rejection gives residue 0 mod 3 half the time, not 1/3.
    #[test]
    fn below_is_unbiased_for_awkward_bound() {
        const DRAWS: u32 = 60_000;
        let bound = 3u64 << 62;
        let mut rng = Prng::new(4);
        let zero_residues = (0..DRAWS).filter(|_| rng.below(bound) % 3 == 0).count();
        let fraction = zero_residues as f64 / f64::from(DRAWS);
        assert!((fraction - 1.0 / 3.0).abs() < 0.01, "fraction {fraction}");
    }

    // Proves the degenerate one-value range always yields 0.
    #[test]
    fn below_one_is_zero() {
        let mut rng = Prng::new(5);
        assert!((0..1000).all(|_| rng.below(1) == 0));
    }

    // Proves an empty range is reported rather than returning garbage.
    #[test]
    #[should_panic(expected = "bound must be greater than 0")]
    fn below_zero_panics() {
        Prng::new(5).below(0);
    }

    // Proves `range_inclusive` reaches both ends, and handles a one-value and the full range.
    #[test]
    fn range_inclusive_covers_its_bounds() {
        let mut rng = Prng::new(6);
        let mut seen = [false; 3];
        for _ in 0..1000 {
            let value = rng.range_inclusive(10, 12);
            assert!((10..=12).contains(&value));
            seen[(value - 10) as usize] = true;
        }
        assert_eq!(seen, [true; 3]);
        assert_eq!(rng.range_inclusive(9, 9), 9);
        let mut full = Prng::new(6);
        let mut raw = Prng::new(6);
        assert_eq!(full.range_inclusive(0, u64::MAX), raw.next_u64());
        assert!(rng.range_inclusive(u64::MAX - 1, u64::MAX) >= u64::MAX - 1);
    }

    // Proves an inverted range is reported.
    #[test]
    #[should_panic(expected = "must not exceed high")]
    fn range_inclusive_inverted_panics() {
        Prng::new(6).range_inclusive(2, 1);
    }

    // Proves `unit_f64` is in [0, 1) with mean 1/2.
    #[test]
    fn unit_f64_is_in_unit_interval() {
        const DRAWS: u32 = 100_000;
        let mut rng = Prng::new(8);
        let mut sum = 0.0;
        for _ in 0..DRAWS {
            let u = rng.unit_f64();
            assert!((0.0..1.0).contains(&u));
            sum += u;
        }
        assert!((sum / f64::from(DRAWS) - 0.5).abs() < 0.005);
    }

    // Proves `chance` honours its extremes and its frequency, and always uses one draw.
    #[test]
    fn chance_matches_probability() {
        let mut rng = Prng::new(9);
        assert!((0..1000).all(|_| !rng.chance(0.0)));
        assert!((0..1000).all(|_| rng.chance(1.0)));
        let hits = (0..100_000).filter(|_| rng.chance(0.3)).count();
        assert!((hits as f64 / 100_000.0 - 0.3).abs() < 0.01, "hits {hits}");
        let mut a = Prng::new(10);
        let mut b = Prng::new(10);
        a.chance(0.0);
        b.chance(0.5);
        assert_eq!(a.next_u64(), b.next_u64());
    }

    // Proves a probability outside [0, 1] is reported.
    #[test]
    #[should_panic(expected = "probability must be in [0, 1]")]
    fn chance_nan_panics() {
        Prng::new(9).chance(f64::NAN);
    }

    // Proves the exponential sampler has the requested mean and a zero mean gives zero.
    #[test]
    fn exponential_has_requested_mean() {
        const DRAWS: u32 = 200_000;
        let mean_ns = 3_500.0;
        let mut rng = Prng::new(11);
        let mut sum = 0.0;
        for _ in 0..DRAWS {
            let value = rng.exponential(mean_ns);
            assert!(value >= 0.0 && value.is_finite());
            sum += value;
        }
        let sample_mean = sum / f64::from(DRAWS);
        assert!((sample_mean / mean_ns - 1.0).abs() < 0.02, "sample mean {sample_mean}");
        assert_eq!(rng.exponential(0.0), 0.0);
    }

    // Proves a negative mean is reported.
    #[test]
    #[should_panic(expected = "mean must be finite and >= 0")]
    fn exponential_negative_mean_panics() {
        Prng::new(11).exponential(-1.0);
    }

    // Proves the empirical Zipf frequencies match the exact pmf, for s above, at and below 1.
    #[test]
    fn zipf_matches_exact_pmf() {
        const DRAWS: u32 = 400_000;
        let n = 10;
        for s in [1.2, 1.0, 0.5, 3.0] {
            let zipf = Zipf::new(n, s).expect("valid parameters");
            let mut rng = Prng::new(12).fork(&format!("zipf {s}"));
            let mut counts = vec![0u32; n as usize];
            for _ in 0..DRAWS {
                let rank = zipf.sample(&mut rng);
                assert!((1..=n).contains(&rank));
                counts[(rank - 1) as usize] += 1;
            }
            for (k, (&count, p)) in counts.iter().zip(zipf_pmf(n, s)).enumerate() {
                let frequency = f64::from(count) / f64::from(DRAWS);
                let error = (frequency - p).abs();
                assert!(
                    error < 0.005 && (error < 0.03 * p || error < 0.0005),
                    "s {s} rank {}: frequency {frequency}, pmf {p}",
                    k + 1
                );
            }
        }
    }

    // Proves a single rank is always returned as 1.
    #[test]
    fn zipf_single_rank_is_always_one() {
        for s in [0.1, 1.0, 2.0, 50.0] {
            let zipf = Zipf::new(1, s).expect("valid parameters");
            let mut rng = Prng::new(13);
            assert!((0..1000).all(|_| zipf.sample(&mut rng) == 1));
        }
    }

    // Proves a 2^40-rank Zipf is O(1) in memory (it is Copy, so it owns no heap) and samples
    // correctly: rank 1's frequency matches 1 / sum(k^-s) computed with an integral tail.
    #[test]
    fn zipf_huge_n_is_constant_size_and_correct() {
        fn assert_copy<T: Copy>() {}
        assert_copy::<Zipf>();
        assert!(size_of::<Zipf>() <= 48);

        const DRAWS: u32 = 200_000;
        let n: u64 = 1 << 40;
        let s = 1.2;
        let zipf = Zipf::new(n, s).expect("valid parameters");
        let mut rng = Prng::new(14);
        let mut ones = 0u32;
        let mut beyond_million = 0u32;
        for _ in 0..DRAWS {
            let rank = zipf.sample(&mut rng);
            assert!((1..=n).contains(&rank));
            ones += u32::from(rank == 1);
            beyond_million += u32::from(rank > 1_000_000);
        }
        let head: f64 = (1..=1_000_000u32).map(|k| f64::from(k).powf(-s)).sum();
        // The midpoint rule is very accurate for the smooth, slowly varying tail.
        let tail = ((1e6 + 0.5f64).powf(1.0 - s) - (n as f64 + 0.5).powf(1.0 - s)) / (s - 1.0);
        let p_one = 1.0 / (head + tail);
        let frequency = f64::from(ones) / f64::from(DRAWS);
        assert!((frequency / p_one - 1.0).abs() < 0.02, "frequency {frequency}, p {p_one}");
        let p_beyond = tail / (head + tail);
        let beyond = f64::from(beyond_million) / f64::from(DRAWS);
        assert!((beyond / p_beyond - 1.0).abs() < 0.1, "beyond {beyond}, p {p_beyond}");
    }

    // Proves invalid parameters are rejected and the message names the parameter and range.
    #[test]
    fn zipf_rejects_bad_parameters() {
        assert_eq!(Zipf::new(0, 1.0).unwrap_err(), ZipfError::NoRanks);
        for s in [0.0, -1.0, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(Zipf::new(10, s).unwrap_err(), ZipfError::BadExponent { exponent: s });
        }
        assert!(matches!(Zipf::new(10, f64::NAN), Err(ZipfError::BadExponent { .. })));
        assert!(ZipfError::NoRanks.to_string().contains("n is 0"));
        assert!(ZipfError::NoRanks.to_string().contains("at least 1"));
        let message = Zipf::new(10, f64::NAN).unwrap_err().to_string();
        assert!(message.contains("exponent s is NaN") && message.contains("greater than 0"));
    }

    // Proves the squeeze never accepts a draw that the exact test would reject: for every
    // tested s and k >= 2, the exact acceptance bound k - H^-1(H(k + 1/2) - h(k)) is at least
    // the squeeze, which is that bound at k = 2. It stops where doubles can no longer resolve
    // h(k) against H(k), since the bound is then rounding noise in both tests alike.
    #[test]
    fn zipf_squeeze_is_a_lower_bound() {
        for s in [1e-6, 0.1, 0.5, 0.9, 1.0, 1.1, 1.5, 2.0, 5.0, 20.0] {
            let zipf = Zipf::new(u64::MAX, s).expect("valid parameters");
            let mut k = 2.0f64;
            while k < 1e12 {
                let (h_k, big_h) = (hat(k, s), hat_integral(k + 0.5, s));
                // A few ulps of H in the argument of H^-1 move x_k by that much over the slope
                // h; the ln/exp inside H^-1 add a few ulps of ln(x) relative to x.
                let tolerance =
                    16.0 * f64::EPSILON * ((big_h.abs() + h_k) / h_k + k * (1.0 + k.ln()));
                if tolerance > 1e-3 {
                    break;
                }
                let x_k = hat_integral_inverse(big_h - h_k, s);
                assert!(k - x_k >= zipf.squeeze - tolerance, "s {s} k {k}: {}", k - x_k);
                k = (k * 1.5).ceil();
            }
        }
    }

    // Proves the quotient helpers are continuous across their series threshold.
    #[test]
    fn helpers_are_continuous_at_threshold() {
        for x in [SERIES_THRESHOLD, -SERIES_THRESHOLD] {
            let just_over = x * (1.0 + 1e-6);
            assert!((ln_1p_over_x(x) - ln_1p_over_x(just_over)).abs() < 1e-14);
            assert!((expm1_over_x(x) - expm1_over_x(just_over)).abs() < 1e-14);
        }
        assert_eq!(ln_1p_over_x(0.0), 1.0);
        assert_eq!(expm1_over_x(0.0), 1.0);
    }

    proptest! {
        // Proves `range_inclusive` never leaves its bounds, whatever they are.
        #[test]
        fn range_inclusive_stays_in_bounds(seed: u64, a: u64, b: u64) {
            let (low, high) = if a <= b { (a, b) } else { (b, a) };
            let mut rng = Prng::new(seed);
            for _ in 0..8 {
                let value = rng.range_inclusive(low, high);
                prop_assert!(low <= value && value <= high);
            }
        }

        // Proves Zipf samples stay in 1..=n for any valid n and s, without panicking.
        #[test]
        fn zipf_stays_in_range(seed: u64, n in 1u64.., s in 1e-9f64..100.0) {
            let zipf = Zipf::new(n, s).expect("valid parameters");
            let mut rng = Prng::new(seed);
            for _ in 0..8 {
                let rank = zipf.sample(&mut rng);
                prop_assert!((1..=n).contains(&rank));
            }
        }

        // Proves forking is a pure function of (seed, label, index).
        #[test]
        fn fork_is_deterministic(seed: u64, label in ".{0,12}", index: u64) {
            let mut a = Prng::new(seed);
            let b = Prng::new(seed);
            a.next_u64();
            prop_assert_eq!(a.fork(&label).next_u64(), b.fork(&label).next_u64());
            prop_assert_eq!(
                a.fork_indexed(&label, index).next_u64(),
                b.fork_indexed(&label, index).next_u64()
            );
        }
    }
}
