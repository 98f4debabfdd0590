//! Timing whether the f32 GEMMs run faster touching the weights ahead or not, where the CPU
//! cannot be asked (WebAssembly): the touches gained 5–10 % at 15 tokens on a Zen 3 and cost
//! 12–25 % on a Zen 4 (docs/performance.md). A trial forward alternates the choice over its f32
//! linears (each the opposite of the one of its shape before it, the first flipping every
//! forward), so both run on the same tokens in the same forward; forwards are taken in pairs
//! so that a layer's place (the first after a pause runs slow) falls on both. Only short
//! forwards take part. The touches stay unless the forwards are clearly faster without them;
//! a round that finds little either way is timed again.

/// Forwards of at most this many token rows are the trial's: the choice matters most for short
/// calls (on a Zen 4, 12–25 % at 15 tokens against about 4 % at 128, the same way), and
/// deciding on long ones alone left the short ones with the slower choice.
pub const MAX_ROWS: usize = 64;
/// Forwards run before timing: the first ones run code the browser has not optimized yet.
const SKIP: usize = 6;
/// Pairs of timed forwards a round of the trial takes.
const PAIRS: usize = 6;
/// The touches go where the median pair of a round ran below this fraction of their time
/// without them.
const OFF_BELOW: f64 = 0.95;
/// They stay where it ran at least this fraction; in between, another round is timed (up to
/// ROUNDS): on a busy page the browser may still be optimizing the code the first round ran,
/// which times both ways alike (a Chromium bench page once chose 0.988 where later rounds
/// find 0.7–0.85).
const ON_FROM: f64 = 1.02;
const ROUNDS: usize = 3;

#[derive(Debug, Default, Clone)]
pub struct PrefetchTrial {
    forwards: usize,
    /// Milliseconds of the f32 linears `[without, with]` touches in the pair being timed.
    pair: [f64; 2],
    /// Per timed pair of this round: time without touches ÷ time with.
    ratios: Vec<f64>,
    /// Rounds timed so far.
    rounds: usize,
}

/// How a trial ended: the choice, and the median time without touches ÷ time with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrefetchChoice {
    pub prefetch: bool,
    pub ratio: f64,
}

impl PrefetchTrial {
    /// Whether the `nth` f32 linear of its shape in this forward touches ahead.
    pub fn touches(&self, nth: usize) -> bool {
        (nth + self.forwards).is_multiple_of(2)
    }

    /// Counts a forward whose f32 linears took `ms` = `[without, with]` touches; the choice
    /// once enough pairs are timed. Forwards without f32 linears count for nothing.
    pub fn record(&mut self, ms: [f64; 2]) -> Option<PrefetchChoice> {
        if ms[0] + ms[1] <= 0.0 {
            return None;
        }
        self.forwards += 1;
        if self.forwards <= SKIP {
            return None;
        }
        self.pair = [self.pair[0] + ms[0], self.pair[1] + ms[1]];
        if !(self.forwards - SKIP).is_multiple_of(2) {
            return None;
        }
        if self.pair[0] > 0.0 && self.pair[1] > 0.0 {
            self.ratios.push(self.pair[0] / self.pair[1]);
        }
        self.pair = [0.0; 2];
        if self.ratios.len() < PAIRS {
            return None;
        }
        self.ratios.sort_by(f64::total_cmp);
        let ratio = self.ratios[self.ratios.len() / 2];
        self.ratios.clear();
        self.rounds += 1;
        let last = self.rounds == ROUNDS;
        (!(OFF_BELOW..ON_FROM).contains(&ratio) || last).then_some(PrefetchChoice {
            prefetch: ratio >= OFF_BELOW,
            ratio,
        })
    }

    /// Timed pairs so far, over every round.
    pub fn pairs(&self) -> usize {
        self.rounds * PAIRS + self.ratios.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(trial: &mut PrefetchTrial, per_forward: impl Fn(usize) -> [f64; 2]) -> PrefetchChoice {
        for i in 0..100 {
            if let Some(choice) = trial.record(per_forward(i)) {
                return choice;
            }
        }
        panic!("no choice after 100 forwards");
    }

    #[test]
    fn touches_alternate_within_a_forward_and_flip_between_forwards() {
        let mut trial = PrefetchTrial::default();
        let first: Vec<bool> = (0..4).map(|n| trial.touches(n)).collect();
        assert_eq!(first, [true, false, true, false]);
        trial.record([1.0, 1.0]);
        let second: Vec<bool> = (0..4).map(|n| trial.touches(n)).collect();
        assert_eq!(second, [false, true, false, true]);
    }

    #[test]
    fn touches_go_only_when_clearly_slower() {
        let off = run(&mut PrefetchTrial::default(), |_| [8.0, 10.0]);
        assert_eq!((off.prefetch, off.ratio), (false, 0.8));
        let mut trial = PrefetchTrial::default();
        let even = run(&mut trial, |_| [9.7, 10.0]);
        assert!(even.prefetch, "within 5 %: the touches stay ({even:?})");
        assert_eq!(trial.pairs(), ROUNDS * PAIRS, "after every round");
        let on = run(&mut PrefetchTrial::default(), |_| [11.0, 10.0]);
        assert!(on.prefetch);
    }

    #[test]
    fn the_choice_waits_for_the_warm_up_and_whole_pairs() {
        let mut trial = PrefetchTrial::default();
        let forwards = (0..).position(|_| trial.record([1.0, 2.0]).is_some());
        assert_eq!(forwards, Some(SKIP + 2 * PAIRS - 1));
        assert_eq!(trial.pairs(), PAIRS);
    }

    #[test]
    fn a_round_that_finds_little_is_timed_again() {
        // The first round's code runs unoptimized: both ways alike; the second tells them apart.
        let mut trial = PrefetchTrial::default();
        let first_round = SKIP + 2 * PAIRS;
        let choice = run(&mut trial, |i| match i < first_round {
            true => [20.0, 20.0],
            false => [8.0, 10.0],
        });
        assert_eq!((choice.prefetch, choice.ratio), (false, 0.8));
        assert_eq!(trial.pairs(), 2 * PAIRS);
        // Touches clearly faster decide at once.
        let mut trial = PrefetchTrial::default();
        assert!(run(&mut trial, |_| [11.0, 10.0]).prefetch);
        assert_eq!(trial.pairs(), PAIRS);
    }

    #[test]
    fn forwards_without_f32_linears_do_not_count() {
        let mut trial = PrefetchTrial::default();
        for _ in 0..1000 {
            assert_eq!(trial.record([0.0, 0.0]), None);
        }
        assert_eq!(trial.pairs(), 0);
    }

    #[test]
    fn one_slow_pair_does_not_decide() {
        // A pair preempted in its touched half, and one in its untouched half: the median holds.
        let choice = run(&mut PrefetchTrial::default(), |i| match i {
            7 => [8.0, 100.0],
            9 => [100.0, 10.0],
            _ => [10.5, 10.0],
        });
        assert_eq!((choice.prefetch, choice.ratio), (true, 1.05));
    }

    #[test]
    fn a_layer_slow_by_its_place_falls_on_both_sides() {
        // The first linear of every forward takes 5 ms more; it is touched every other forward.
        let mut trial = PrefetchTrial::default();
        let choice = loop {
            let first_touches = trial.touches(0);
            let mut ms = [10.0, 10.0];
            ms[first_touches as usize] += 5.0;
            if let Some(c) = trial.record(ms) {
                break c;
            }
        };
        assert_eq!(choice.ratio, 1.0);
    }
}
