//! The rules of All Fives, pure: no I/O, no async, no protobuf, no crypto (a crate of
//! its own, whose only dependencies are a seeded generator and `thiserror`, so the
//! compiler holds it to that). Deterministic given a seed. The project's rulebook,
//! `docs/rules.md`, is the authority; each file names the sections it implements.
//!
//! A match is made only by [`Game::new`] and the moves of [`Game::apply`], or rebuilt by
//! [`Game::replay`] from its [`Scorecard`], which replays the current hand through the
//! same moves: every game in memory is one that legal moves produced.
//!
//! # Layout
//! - [`tile`]: the 28 tiles and bitmask tile sets.
//! - [`rules`]: rule options (players, partnership, hand size, target, settlement,
//!   turn clock, what an absent player's seat does).
//! - [`clock`]: turn clocks and absent players: deadlines, banks, timeouts.
//! - [`layout`]: the table: line, spinner, open ends, the count.
//! - [`scoring`]: rounding and settlement of a finished hand.
//! - [`hand`]: one hand: the deal, hands, boneyard, turn.
//! - [`game`]: the game and its actions (deal, play, draw), passes, hand and game end.
//! - [`event`]: what actions report.
//! - [`sheet`]: the score sheet, one row per hand.
//! - [`view`]: what a seat may see.
//! - [`knowledge`]: what a seat may know, and hidden deals consistent with it.
//! - [`suggest`]: fair bots (easy, medium, hard) that play on a seat's knowledge.
//! - [`bot`]: random and greedy players for simulation.
//! - [`replay`]: a match rebuilt from its scorecard by replaying its hand.
//! - [`check`]: what replay cannot establish: the scorecard's earlier hands.

pub mod bot;
pub mod check;
pub mod clock;
pub mod error;
pub mod event;
pub mod game;
pub mod hand;
#[cfg(test)]
mod invariants;
pub mod knowledge;
pub mod layout;
pub mod replay;
pub mod rules;
pub mod scoring;
pub mod sheet;
pub mod suggest;
pub mod tile;
pub mod view;

#[cfg(test)]
mod properties;

pub use clock::{Absence, Clocks, Outcome, TurnClock, Why};
pub use error::{Error, Phase};
pub use event::{Event, HandEnd, HandResult};
pub use game::{Action, Game, Move};
pub use knowledge::Knowledge;
pub use layout::{Arm, End, Layout, OpenEnd, Placement};
pub use replay::{HandAction, ReplayError, Scorecard};
pub use rules::{HandSizeRule, Rules, Seat, SettlementRule, Side};
pub use sheet::{ScoreSheet, SheetRow};
pub use tile::{Tile, TileSet};
pub use view::View;
