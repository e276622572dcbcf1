//! Every way an action can break the rules, as a typed error (never a panic).

use super::layout::End;
use super::rules::Seat;
use super::tile::Tile;

/// Where a game stands, for errors and views.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Waiting for the next hand to be dealt (also before the first).
    Dealing,
    /// A hand is being played.
    Playing,
    /// Someone reached the target; nothing more can happen.
    Over,
}

/// An action the rules refuse. The game is unchanged when one is returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("seat {seat} is not on turn; seat {turn} is")]
    NotYourTurn { seat: Seat, turn: Seat },
    #[error("not allowed while the game is {phase:?}")]
    WrongPhase { phase: Phase },
    #[error("the game is over")]
    GameOver,
    #[error("tile {0} is not in the hand")]
    TileNotInHand(Tile),
    #[error("tile {tile} does not match {}", match .end { Some(e) => format!("the {e:?} end"), None => "any open end".to_string() })]
    TileDoesNotMatch { tile: Tile, end: Option<End> },
    #[error("the {0:?} end is not open")]
    EndNotOpen(End),
    #[error("the seat holds a playable tile and must play it")]
    MustPlay,
    #[error("tile {0} fits more than one open end; name the end")]
    AmbiguousEnd(Tile),
    #[error("the boneyard is empty")]
    BoneyardEmpty,
    #[error("seat {seat} is out of range for {players} players")]
    InvalidSeat { seat: Seat, players: usize },
    #[error("[{0}|{1}] is not a tile of a double-six set")]
    InvalidTile(u8, u8),
    #[error("{field} {reason}")]
    InvalidOption {
        field: &'static str,
        reason: &'static str,
    },
}
