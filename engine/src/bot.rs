//! Simple players for simulations, benchmarks and tests: random and greedy.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::Rng;

use super::game::{Action, Game, Move};

/// How a simple player picks among its legal moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Any legal move, uniformly.
    Random,
    /// The move scoring most now; ties broken at random.
    Greedy,
}

/// The action `strategy` takes in `game` (a deal between hands, a draw when it must).
/// `None` once the game is over. `moves` is scratch space, reused between calls.
pub fn choose(
    game: &Game,
    strategy: Strategy,
    rng: &mut ChaCha8Rng,
    moves: &mut Vec<Move>,
) -> Option<Action> {
    let seat = match game.phase() {
        super::Phase::Over => return None,
        super::Phase::Dealing => return Some(Action::Deal),
        super::Phase::Playing => game.turn()?,
    };
    moves.clear();
    game.legal_moves_into(moves);
    if moves.is_empty() {
        return Some(Action::Draw { seat });
    }
    let pick = match strategy {
        Strategy::Random => pick_index(rng, moves.len()),
        Strategy::Greedy => {
            let best = moves.iter().map(|m| m.points).max().unwrap_or(0);
            let ties = moves.iter().filter(|m| m.points == best).count();
            let nth = pick_index(rng, ties);
            moves
                .iter()
                .enumerate()
                .filter(|(_, m)| m.points == best)
                .nth(nth)
                .map_or(0, |(i, _)| i)
        }
    };
    let m = moves[pick];
    Some(Action::Play {
        seat,
        tile: m.tile,
        end: m.end,
    })
}

fn pick_index(rng: &mut ChaCha8Rng, n: usize) -> usize {
    ((u64::from(rng.next_u32()) * n as u64) >> 32) as usize
}
