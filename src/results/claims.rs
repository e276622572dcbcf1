//! What a result certificate says: its claims, as the JWS payload carries them. The
//! proto's `GameView.result` names each one for client developers; the service fills
//! them from the finished match's public view (`crate::service::certify`), so nothing
//! here is hidden from anyone at the table.

use serde::{Deserialize, Serialize};

/// A finished match's result (RFC 7519 registered claims, then ours).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultClaims {
    /// Who signed: `--result-issuer`.
    pub iss: String,
    /// When the certificate was signed (seconds since the Unix epoch): at the match's
    /// end, or later when `Score` asked for the finished match.
    pub iat: u64,
    /// Until when a verifier takes it: `iat` + `--result-lifetime-secs`.
    pub exp: u64,
    /// The match id (`GameView.match_id`): a match has one result, so a verifier that
    /// keeps the ids it took refuses a second.
    pub jti: String,
    /// The final state's id in hex (`GameView.state_id`): pins the match's whole
    /// history, every claim and move.
    pub state: String,
    /// The match was made on a server with a match store, which recorded every move
    /// and refused every fork: this is the match's only ending. False: a stateless
    /// match, where a player holding an older token can play on from it and end
    /// another branch (docs/security.md).
    pub recorded: bool,
    /// The rules it was played under, every option at its effective value.
    pub rules: RulesClaim,
    /// Every seat, in seat order.
    pub seats: Vec<SeatClaim>,
    /// Each side's final score, in side order.
    pub scores: Vec<i32>,
    /// The score sheet's totals.
    pub sheet: SheetClaim,
    /// The winning side.
    pub winner: u32,
}

/// `Rules`, with its enums by their proto names (`SETTLEMENT_RULE_OWN_PIPS_OFF`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RulesClaim {
    pub players: u32,
    pub partnership: bool,
    pub hand_size: String,
    pub target: u32,
    pub settlement: String,
    /// The turn clock; absent for a match without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockClaim>,
    pub absence: AbsenceClaim,
}

/// `TurnClock`'s effective values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockClaim {
    pub move_seconds: u32,
    pub bank_seconds: u32,
    pub increment_seconds: u32,
}

/// `Absence`'s effective values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbsenceClaim {
    pub rule: String,
    pub bot: String,
    pub bot_takes_seat_after: u32,
}

/// One seat: a human's (its display name and how it ended) or a bot's (its level).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatClaim {
    pub seat: u32,
    /// The side it scored for.
    pub side: u32,
    /// A human seat's display name (maybe empty); absent for a bot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A human seat's player id: the subject of the studio's pass its player showed
    /// when claiming it (`crate::passes`); absent for a seat claimed without one, and
    /// for a bot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player: Option<String>,
    /// A bot's level (`BOT_LEVEL_HARD`); absent for a human seat, even one a bot held
    /// at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot: Option<String>,
    /// How a human seat ended: `PLAYED_OUT`, `TIMED_OUT` or `LEFT` (its player's time
    /// ran out or it left, and a bot held the seat at the end, or it forfeited, as
    /// `rules.absence.rule` says); absent for a bot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

/// The sheet's totals, each side's in side order: `play + settlement` is its score.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SheetClaim {
    /// Hands dealt.
    pub hands: u32,
    /// Points made by placements.
    pub play: Vec<i32>,
    /// Points from settlement.
    pub settlement: Vec<i32>,
}
