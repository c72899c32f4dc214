//! The statistics of an eval report: pass rates with their confidence intervals, pass@1 over
//! repetitions, and the paired tests that say whether one variant beats another.
//!
//! Errors are not outcomes. A run whose status is [`Status::Error`] could not be judged (its
//! repository, setup, sandbox or check failed), so every rate here is over *judged* runs — passes
//! and failures — and the report counts errors separately. A variant that errors on every case has
//! no pass rate at all (`None`), not a pass rate of zero.
//!
//! Pairing two variants: a pair is one `(case, repetition)` that *both* variants judged. Runs the
//! other variant lacks, or that either side errored on, are left out of the paired statistics. When
//! a `results.jsonl` holds the same `(variant, case, repetition)` twice, the first line counts.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::results::{CaseResult, Status};

/// The normal quantile for a two-sided 95% interval.
const Z_95: f64 = 1.959_963_984_540_054;

/// A closed interval of proportions (or of differences of proportions).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

/// The 95% Wilson score interval for `passed` successes out of `judged` trials; `None` when
/// nothing was judged. Unlike the normal approximation it stays inside `[0, 1]` and is sensible at
/// 0/n and n/n, which small suites hit all the time.
pub fn wilson(passed: u64, judged: u64) -> Option<Interval> {
    if judged == 0 {
        return None;
    }
    let n = judged as f64;
    let p = passed.min(judged) as f64 / n;
    let z2 = Z_95 * Z_95;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = Z_95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    // At 0/n and n/n the bound is exactly 0 or 1; rounding would leave it a hair inside.
    Some(Interval {
        low: if passed == 0 { 0.0 } else { (centre - half).max(0.0) },
        high: if passed >= judged {
            1.0
        } else {
            (centre + half).min(1.0)
        },
    })
}

/// How many runs passed, failed and errored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub pass: u64,
    pub fail: u64,
    pub error: u64,
}

impl Counts {
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a CaseResult>) -> Counts {
        let mut counts = Counts::default();
        for run in runs {
            counts.add(run.status);
        }
        counts
    }

    pub fn add(&mut self, status: Status) {
        match status {
            Status::Pass => self.pass += 1,
            Status::Fail => self.fail += 1,
            Status::Error => self.error += 1,
        }
    }

    /// Passes and failures: the runs a rate is over.
    pub fn judged(&self) -> u64 {
        self.pass + self.fail
    }

    pub fn runs(&self) -> u64 {
        self.judged() + self.error
    }

    /// Passes over judged runs; `None` when no run was judged.
    pub fn pass_rate(&self) -> Option<f64> {
        (self.judged() > 0).then(|| self.pass as f64 / self.judged() as f64)
    }

    pub fn wilson(&self) -> Option<Interval> {
        wilson(self.pass, self.judged())
    }
}

/// pass@1 estimated from K repetitions of each case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PassAtOne {
    /// For each case, the fraction of its judged runs that passed; averaged over the cases with at
    /// least one judged run.
    pub mean: f64,
    /// The sample standard deviation (divisor K − 1) of the per-repetition pass rates: how much the
    /// pass rate of one whole run of the suite moves from one repetition to the next. 0 when
    /// fewer than two repetitions were judged.
    pub spread: f64,
    /// The lowest and highest per-repetition pass rates.
    pub min: f64,
    pub max: f64,
    /// The cases averaged over.
    pub cases: usize,
    /// The repetitions with at least one judged run.
    pub repetitions: usize,
}

/// pass@1 of one variant's runs; `None` when none was judged.
pub fn pass_at_1<'a>(runs: impl IntoIterator<Item = &'a CaseResult>) -> Option<PassAtOne> {
    let mut by_case: BTreeMap<&str, Counts> = BTreeMap::new();
    let mut by_repetition: BTreeMap<u32, Counts> = BTreeMap::new();
    for run in runs {
        if run.status == Status::Error {
            continue;
        }
        by_case.entry(&run.case).or_default().add(run.status);
        by_repetition.entry(run.repetition).or_default().add(run.status);
    }
    let case_rates: Vec<f64> = by_case.values().filter_map(Counts::pass_rate).collect();
    let repetition_rates: Vec<f64> = by_repetition.values().filter_map(Counts::pass_rate).collect();
    if case_rates.is_empty() {
        return None;
    }
    let mean = case_rates.iter().sum::<f64>() / case_rates.len() as f64;
    let k = repetition_rates.len();
    let rep_mean = repetition_rates.iter().sum::<f64>() / k as f64;
    let spread = if k > 1 {
        (repetition_rates.iter().map(|r| (r - rep_mean).powi(2)).sum::<f64>() / (k - 1) as f64).sqrt()
    } else {
        0.0
    };
    Some(PassAtOne {
        mean,
        spread,
        min: repetition_rates.iter().copied().fold(f64::INFINITY, f64::min),
        max: repetition_rates.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        cases: case_rates.len(),
        repetitions: k,
    })
}

/// One case's paired outcomes under a baseline and a variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CasePairs {
    pub case: String,
    /// `(baseline passed, variant passed)`, one per repetition both judged, in repetition order.
    pub pairs: Vec<(bool, bool)>,
}

impl CasePairs {
    /// How the case went for the variant against the baseline: it *wins* when it passed in more
    /// of the paired repetitions than the baseline did, *loses* when in fewer, and *ties*
    /// otherwise. With one repetition that is "passed under the variant and failed under the
    /// baseline".
    pub fn verdict(&self) -> Verdict {
        let baseline = self.pairs.iter().filter(|(b, _)| *b).count();
        let variant = self.pairs.iter().filter(|(_, v)| *v).count();
        match variant.cmp(&baseline) {
            Ordering::Greater => Verdict::Win,
            Ordering::Less => Verdict::Loss,
            Ordering::Equal => Verdict::Tie,
        }
    }
}

/// A case's result for a variant against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    Win,
    Loss,
    Tie,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Win => "win",
            Verdict::Loss => "loss",
            Verdict::Tie => "tie",
        }
    }
}

/// Pairs the judged runs of a baseline and a variant by `(case, repetition)`, cases in id order.
/// Cases with no pair are left out.
pub fn pair_runs<'a>(
    baseline: impl IntoIterator<Item = &'a CaseResult>,
    variant: impl IntoIterator<Item = &'a CaseResult>,
) -> Vec<CasePairs> {
    fn judged<'a>(runs: impl IntoIterator<Item = &'a CaseResult>) -> BTreeMap<(&'a str, u32), bool> {
        let mut map = BTreeMap::new();
        for run in runs {
            // The first line for a (case, repetition) counts, errors included: a later duplicate
            // must not turn an error into a judged run.
            map.entry((run.case.as_str(), run.repetition)).or_insert(run.status);
        }
        map.into_iter()
            .filter(|(_, status)| *status != Status::Error)
            .map(|(key, status)| (key, status == Status::Pass))
            .collect()
    }
    let baseline = judged(baseline);
    let variant = judged(variant);
    let mut cases: Vec<CasePairs> = Vec::new();
    for ((case, repetition), passed) in &baseline {
        let Some(other) = variant.get(&(*case, *repetition)) else {
            continue;
        };
        match cases.last_mut() {
            Some(last) if last.case == *case => last.pairs.push((*passed, *other)),
            _ => cases.push(CasePairs {
                case: (*case).to_owned(),
                pairs: vec![(*passed, *other)],
            }),
        }
    }
    cases
}

/// The exact two-sided McNemar test over paired outcomes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct McNemar {
    /// Pairs where the baseline passed and the variant failed.
    pub b: u64,
    /// Pairs where the variant passed and the baseline failed.
    pub c: u64,
    pub p_value: f64,
}

/// McNemar's test over every pair of `cases`. Repetitions of one case are counted as separate
/// pairs although they are not independent, so with `--repeat` above 1 the p-value is optimistic;
/// the case-level bootstrap ([`paired_bootstrap`]) does not have that weakness.
pub fn mcnemar(cases: &[CasePairs]) -> McNemar {
    let pairs = cases.iter().flat_map(|case| &case.pairs);
    let b = pairs.clone().filter(|(base, var)| *base && !*var).count() as u64;
    let c = pairs.filter(|(base, var)| !*base && *var).count() as u64;
    McNemar {
        b,
        c,
        p_value: mcnemar_exact(b, c),
    }
}

/// The exact two-sided McNemar p-value: `min(1, 2 · P[X ≤ min(b, c)])` for `X ~ Binomial(b + c,
/// ½)`. Summed in log space, so it neither overflows nor loses the small terms for `b + c` in the
/// thousands; it is 1 when there are no discordant pairs.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    let k = b.min(c);
    // ln(C(n, i) / 2^n) for i = 0..=k, built term by term: C(n, i) = C(n, i-1) · (n-i+1) / i.
    let mut terms = Vec::with_capacity(k as usize + 1);
    let mut log_term = -(n as f64) * std::f64::consts::LN_2;
    terms.push(log_term);
    for i in 1..=k {
        log_term += ((n - i + 1) as f64).ln() - (i as f64).ln();
        terms.push(log_term);
    }
    // k ≤ n/2, so the terms grow with i and the last is the largest.
    let largest = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = terms.iter().map(|t| (t - largest).exp()).sum();
    let tail = (largest + sum.ln()).exp();
    (2.0 * tail).min(1.0)
}

/// A difference in pass rate (variant − baseline) with its bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bootstrap {
    /// Over all the pairs: the variant's pass rate minus the baseline's.
    pub difference: f64,
    /// The 95% percentile interval.
    pub interval: Interval,
    pub resamples: u32,
}

/// Resamples a report makes.
pub const BOOTSTRAP_RESAMPLES: u32 = 10_000;
/// The seed a report uses, so that the same results give the same report.
pub const BOOTSTRAP_SEED: u64 = 20;

/// A paired bootstrap of the difference in pass rate, resampling *cases* with replacement (each
/// drawn case brings all of its paired repetitions), so repetitions of one case are never treated
/// as independent. Deterministic for a given `seed`. `None` when there is no pair.
pub fn paired_bootstrap(cases: &[CasePairs], resamples: u32, seed: u64) -> Option<Bootstrap> {
    // Per case: (variant passes − baseline passes, pairs).
    let summaries: Vec<(i64, u64)> = cases
        .iter()
        .filter(|case| !case.pairs.is_empty())
        .map(|case| {
            let delta: i64 = case.pairs.iter().map(|(b, v)| i64::from(*v) - i64::from(*b)).sum();
            (delta, case.pairs.len() as u64)
        })
        .collect();
    if summaries.is_empty() || resamples == 0 {
        return None;
    }
    let difference = {
        let delta: i64 = summaries.iter().map(|(d, _)| d).sum();
        let pairs: u64 = summaries.iter().map(|(_, n)| n).sum();
        delta as f64 / pairs as f64
    };
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut differences: Vec<f64> = (0..resamples)
        .map(|_| {
            let (mut delta, mut pairs) = (0i64, 0u64);
            for _ in 0..summaries.len() {
                let (d, n) = summaries[rng.usize(..summaries.len())];
                delta += d;
                pairs += n;
            }
            delta as f64 / pairs as f64
        })
        .collect();
    differences.sort_by(f64::total_cmp);
    let at = |q: f64| differences[((differences.len() - 1) as f64 * q).round() as usize];
    Some(Bootstrap {
        difference,
        interval: Interval {
            low: at(0.025),
            high: at(0.975),
        },
        resamples,
    })
}

/// The median; `None` for no values. The mean of the middle two for an even count.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
pub(crate) mod tests {
    use super::*;
    use crate::eval::results::{Timings, Tokens};

    /// A run with nothing but what the statistics read.
    pub(crate) fn run(variant: &str, case: &str, repetition: u32, status: Status) -> CaseResult {
        CaseResult {
            case: case.to_owned(),
            variant: variant.to_owned(),
            repetition,
            tags: Vec::new(),
            status,
            error: None,
            check: None,
            stop: None,
            steps: 0,
            tool_calls: BTreeMap::new(),
            tokens: Tokens::default(),
            cost_usd: None,
            wall_ms: 0,
            timings: Timings::default(),
            expectations_missed: Vec::new(),
            changed_files: Vec::new(),
            replay_notes: Vec::new(),
            trajectory: None,
        }
    }

    fn close(actual: f64, expected: f64, tolerance: f64) {
        assert!(
            (actual - expected).abs() <= tolerance,
            "{actual} is not within {tolerance} of {expected}"
        );
    }

    #[test]
    fn wilson_matches_the_textbook_values() {
        let i = wilson(8, 10).unwrap();
        close(i.low, 0.4902, 5e-4);
        close(i.high, 0.9433, 5e-4);
        let none = wilson(0, 10).unwrap();
        assert_eq!(none.low, 0.0);
        close(none.high, 0.2775, 5e-4);
        let all = wilson(10, 10).unwrap();
        close(all.low, 0.7225, 5e-4);
        assert_eq!(all.high, 1.0);
        // 1 of 1 is a wide interval, not a certainty.
        close(wilson(1, 1).unwrap().low, 0.2065, 5e-4);
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn counts_leave_errors_out_of_the_rate() {
        let runs = [
            run("a", "x", 0, Status::Pass),
            run("a", "y", 0, Status::Fail),
            run("a", "z", 0, Status::Error),
        ];
        let counts = Counts::of(&runs);
        assert_eq!((counts.pass, counts.fail, counts.error), (1, 1, 1));
        assert_eq!(counts.judged(), 2);
        assert_eq!(counts.runs(), 3);
        assert_eq!(counts.pass_rate(), Some(0.5));

        let errors = Counts::of(&[run("a", "x", 0, Status::Error)]);
        assert_eq!(errors.pass_rate(), None);
        assert_eq!(errors.wilson(), None);
    }

    #[test]
    fn pass_at_1_averages_cases_and_spreads_over_repetitions() {
        // Case x passes 2 of 2, case y 1 of 2: pass@1 = (1 + 0.5) / 2.
        // Repetition 0: both pass (1.0); repetition 1: x passes, y fails (0.5).
        let runs = [
            run("a", "x", 0, Status::Pass),
            run("a", "x", 1, Status::Pass),
            run("a", "y", 0, Status::Pass),
            run("a", "y", 1, Status::Fail),
            run("a", "z", 0, Status::Error),
        ];
        let p = pass_at_1(&runs).unwrap();
        close(p.mean, 0.75, 1e-12);
        // Sample sd of {1.0, 0.5}: sqrt(2 · 0.25² / 1).
        close(p.spread, 0.353_553, 1e-6);
        assert_eq!((p.min, p.max), (0.5, 1.0));
        assert_eq!((p.cases, p.repetitions), (2, 2));
    }

    #[test]
    fn pass_at_1_weighs_cases_equally_whatever_their_judged_runs() {
        // x: 1 of 1 judged (its other run errored); y: 0 of 2 → (1 + 0) / 2, not 1 / 3.
        let runs = [
            run("a", "x", 0, Status::Pass),
            run("a", "x", 1, Status::Error),
            run("a", "y", 0, Status::Fail),
            run("a", "y", 1, Status::Fail),
        ];
        let p = pass_at_1(&runs).unwrap();
        close(p.mean, 0.5, 1e-12);
        assert_eq!(p.cases, 2);
    }

    #[test]
    fn pass_at_1_of_one_repetition_has_no_spread_and_of_errors_is_none() {
        let p = pass_at_1(&[run("a", "x", 0, Status::Pass), run("a", "y", 0, Status::Fail)]).unwrap();
        assert_eq!((p.mean, p.spread, p.min, p.max), (0.5, 0.0, 0.5, 0.5));
        assert_eq!(pass_at_1(&[run("a", "x", 0, Status::Error)]), None);
        assert_eq!(pass_at_1(&[]), None);
    }

    #[test]
    fn mcnemar_matches_the_exact_binomial() {
        // 2 · (1 + 12 + 66) / 4096.
        close(mcnemar_exact(10, 2), 0.038_574, 1e-6);
        close(mcnemar_exact(2, 10), 0.038_574, 1e-6);
        // R: binom.test(40, 100)$p.value.
        close(mcnemar_exact(60, 40), 0.056_887, 1e-6);
        close(mcnemar_exact(0, 5), 0.0625, 1e-12);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert_eq!(mcnemar_exact(7, 7), 1.0);
        assert_eq!(mcnemar_exact(0, 1), 1.0);
    }

    #[test]
    fn mcnemar_stays_finite_for_thousands_of_pairs() {
        assert_eq!(mcnemar_exact(2000, 2000), 1.0);
        let p = mcnemar_exact(1550, 1450);
        assert!(p.is_finite() && p > 0.0 && p < 0.1, "{p}");
        // Normal approximation with continuity correction: z = 99 / sqrt(3000) → p ≈ 0.0707.
        close(p, 0.0707, 2e-3);
        let tiny = mcnemar_exact(3000, 0);
        assert!(tiny.is_finite() && tiny >= 0.0);
    }

    #[test]
    fn pairing_is_by_case_and_repetition_that_both_judged() {
        let baseline = [
            run("base", "x", 0, Status::Pass),
            run("base", "x", 1, Status::Fail),
            run("base", "y", 0, Status::Error),
            run("base", "y", 1, Status::Pass),
            run("base", "only-base", 0, Status::Pass),
        ];
        let variant = [
            run("new", "x", 1, Status::Pass),
            run("new", "x", 0, Status::Pass),
            run("new", "y", 0, Status::Pass),
            run("new", "y", 1, Status::Error),
            run("new", "only-new", 0, Status::Pass),
        ];
        let cases = pair_runs(&baseline, &variant);
        assert_eq!(
            cases,
            vec![CasePairs {
                case: "x".into(),
                pairs: vec![(true, true), (false, true)]
            }]
        );
        assert_eq!(cases[0].verdict(), Verdict::Win);
    }

    #[test]
    fn the_first_line_of_a_duplicated_run_counts() {
        let baseline = [run("base", "x", 0, Status::Error), run("base", "x", 0, Status::Pass)];
        let variant = [run("new", "x", 0, Status::Fail), run("new", "x", 0, Status::Pass)];
        assert!(pair_runs(&baseline, &variant).is_empty());
        let baseline = [run("base", "x", 0, Status::Fail), run("base", "x", 0, Status::Pass)];
        assert_eq!(pair_runs(&baseline, &variant)[0].pairs, vec![(false, false)]);
    }

    #[test]
    fn verdicts_compare_passes_over_the_paired_repetitions() {
        let case = |pairs: &[(bool, bool)]| CasePairs {
            case: "c".into(),
            pairs: pairs.to_vec(),
        };
        assert_eq!(case(&[(false, true)]).verdict(), Verdict::Win);
        assert_eq!(case(&[(true, false)]).verdict(), Verdict::Loss);
        assert_eq!(case(&[(true, true)]).verdict(), Verdict::Tie);
        assert_eq!(case(&[(false, false)]).verdict(), Verdict::Tie);
        // 2 of 3 against 1 of 3, whichever repetitions they were.
        assert_eq!(
            case(&[(true, false), (false, true), (false, true)]).verdict(),
            Verdict::Win
        );
        assert_eq!(case(&[(true, false), (false, true)]).verdict(), Verdict::Tie);
    }

    #[test]
    fn mcnemar_counts_discordant_pairs() {
        let cases = vec![
            CasePairs {
                case: "x".into(),
                pairs: vec![(true, false), (true, true)],
            },
            CasePairs {
                case: "y".into(),
                pairs: vec![(false, true), (false, true), (false, false)],
            },
        ];
        let m = mcnemar(&cases);
        assert_eq!((m.b, m.c), (1, 2));
        assert_eq!(m.p_value, 1.0);
    }

    fn cases_with(b: usize, c: usize, same: usize) -> Vec<CasePairs> {
        let mut cases = Vec::new();
        let mut push = |pair: (bool, bool), count: usize| {
            for _ in 0..count {
                cases.push(CasePairs {
                    case: format!("c{}", cases.len()),
                    pairs: vec![pair],
                });
            }
        };
        push((true, false), b);
        push((false, true), c);
        push((true, true), same);
        cases
    }

    #[test]
    fn bootstrap_is_deterministic_and_brackets_the_difference() {
        // 40 cases: the variant alone passes 10, the baseline alone 2, both 20 → +8/40.
        let mut cases = cases_with(2, 10, 20);
        for i in 0..8 {
            cases.push(CasePairs {
                case: format!("f{i}"),
                pairs: vec![(false, false)],
            });
        }
        let first = paired_bootstrap(&cases, 2000, 7).unwrap();
        let again = paired_bootstrap(&cases, 2000, 7).unwrap();
        assert_eq!(first, again);
        close(first.difference, 0.2, 1e-12);
        assert!(first.interval.low < 0.2 && 0.2 < first.interval.high, "{first:?}");
        // The normal approximation: 2 · 1.96 · sqrt((0.3 − 0.2²) / 40) ≈ 0.32 wide.
        close(first.interval.high - first.interval.low, 0.32, 0.05);
        assert!(first.interval.low > 0.0, "{first:?}");
    }

    #[test]
    fn bootstrap_of_identical_outcomes_is_a_point_and_of_nothing_is_none() {
        let same = paired_bootstrap(&cases_with(0, 0, 5), 100, 1).unwrap();
        assert_eq!(same.difference, 0.0);
        assert_eq!(same.interval, Interval { low: 0.0, high: 0.0 });
        assert_eq!(paired_bootstrap(&[], 100, 1), None);
    }

    #[test]
    fn bootstrap_resamples_whole_cases() {
        // One case that the variant always wins: every resample is that case, so the interval is
        // exactly its difference (a per-run bootstrap would be too, but two cases differ below).
        let one = vec![CasePairs {
            case: "x".into(),
            pairs: vec![(false, true), (false, true), (true, true)],
        }];
        let b = paired_bootstrap(&one, 100, 3).unwrap();
        close(b.difference, 2.0 / 3.0, 1e-12);
        close(b.interval.low, 2.0 / 3.0, 1e-12);
        close(b.interval.high, 2.0 / 3.0, 1e-12);
        // Two cases, one won on all 3 runs and one tied: a resample's difference is 0, ½ or 1.
        let two = vec![
            one[0].clone(),
            CasePairs {
                case: "y".into(),
                pairs: vec![(true, true), (true, true), (true, true)],
            },
        ];
        let b = paired_bootstrap(&two, 1000, 3).unwrap();
        close(b.difference, 2.0 / 6.0, 1e-12);
        assert_eq!(b.interval.low, 0.0);
        close(b.interval.high, 2.0 / 3.0, 1e-12);
    }

    #[test]
    fn median_of_odd_even_and_none() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
