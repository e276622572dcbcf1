//! The result certificate of a finished match (issue 44): its public view and score
//! sheet written as [`ResultClaims`] and signed with the result key ring, for
//! `GameView.result`. Only what the end of a match shows everyone goes in.

use std::sync::Arc;

use crate::proto::v1 as pb;
use crate::results::ResultKeys;
use crate::results::claims::{
    AbsenceClaim, ClockClaim, ResultClaims, RulesClaim, SeatClaim, SheetClaim,
};

/// The key set of a service that signs no results.
pub const NO_KEYS: &str = r#"{"keys":[]}"#;

/// Signs finished matches' results: the key ring, and what every result says of who
/// signed it and for how long it is taken.
#[derive(Clone, Debug)]
pub struct Certifier {
    keys: Arc<ResultKeys>,
    /// `iss` (`--result-issuer`).
    issuer: String,
    /// `exp - iat` (`--result-lifetime-secs`).
    lifetime_secs: u64,
}

impl Certifier {
    pub fn new(keys: Arc<ResultKeys>, issuer: String, lifetime_secs: u64) -> Certifier {
        Certifier {
            keys,
            issuer,
            lifetime_secs,
        }
    }

    /// The published key set as JSON (RFC 7517).
    pub fn jwks_json(&self) -> &str {
        self.keys.jwks_json()
    }

    /// The result of the match `view` shows (any viewer's view: only public fields are
    /// read), once it is over; `None` before. `sheet` is its score sheet, `recorded`
    /// whether a match store recorded it, `now_secs` the signing time.
    pub fn certify(
        &self,
        view: &pb::GameView,
        sheet: &pb::ScoreSheet,
        recorded: bool,
        now_secs: u64,
    ) -> Option<String> {
        let claims = self.claims(view, sheet, recorded, now_secs)?;
        match self.keys.sign(&claims) {
            Ok(jws) => Some(jws),
            Err(error) => {
                // A broken key, never a client's doing: the view goes without it.
                tracing::error!(%error, "cannot sign a result");
                None
            }
        }
    }

    /// What the result says; `None` while the match is not over.
    pub fn claims(
        &self,
        view: &pb::GameView,
        sheet: &pb::ScoreSheet,
        recorded: bool,
        now_secs: u64,
    ) -> Option<ResultClaims> {
        if view.phase() != pb::Phase::Over {
            return None;
        }
        let winner = view.winner_side?;
        let rules = view.rules.as_ref()?;
        let side_of = |seat: u32| {
            view.scores
                .iter()
                .find(|s| s.seats.contains(&seat))
                .map_or(seat, |s| s.side)
        };
        let sides = view.scores.len();
        let mut play = vec![0; sides];
        let mut settlement = vec![0; sides];
        for row in sheet.carried.iter().chain(&sheet.rows) {
            for line in &row.sides {
                let side = line.side as usize;
                if side < sides {
                    play[side] += line.play;
                    settlement[side] += line.settlement;
                }
            }
        }
        Some(ResultClaims {
            iss: self.issuer.clone(),
            iat: now_secs,
            exp: now_secs.saturating_add(self.lifetime_secs),
            jti: view.match_id.clone(),
            state: hex(&view.state_id),
            recorded,
            rules: rules_claim(rules),
            seats: view
                .seats
                .iter()
                .map(|s| seat_claim(s, side_of(s.seat)))
                .collect(),
            scores: view.scores.iter().map(|s| s.score).collect(),
            sheet: SheetClaim {
                hands: view.hand_number,
                play,
                settlement,
            },
            winner,
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn rules_claim(rules: &pb::Rules) -> RulesClaim {
    let absence = rules.absence.unwrap_or_default();
    RulesClaim {
        players: rules.players,
        partnership: rules.partnership,
        hand_size: rules.hand_size().as_str_name().to_owned(),
        target: rules.target,
        settlement: rules.settlement().as_str_name().to_owned(),
        clock: rules.clock.as_ref().map(|c| ClockClaim {
            move_seconds: c.move_seconds,
            bank_seconds: c.bank_seconds.unwrap_or_default(),
            increment_seconds: c.increment_seconds,
        }),
        absence: AbsenceClaim {
            rule: absence.rule().as_str_name().to_owned(),
            bot: absence.bot().as_str_name().to_owned(),
            bot_takes_seat_after: absence.bot_takes_seat_after.unwrap_or_default(),
        },
    }
}

fn seat_claim(seat: &pb::SeatStatus, side: u32) -> SeatClaim {
    let bot = seat.kind() == pb::SeatKind::Bot;
    SeatClaim {
        seat: seat.seat,
        side,
        name: (!bot).then(|| seat.display_name.clone()),
        bot: bot.then(|| seat.bot().as_str_name().to_owned()),
        ended: (!bot).then(|| {
            match seat.absent() {
                pb::AbsenceReason::Unspecified => "PLAYED_OUT",
                pb::AbsenceReason::TimedOut => "TIMED_OUT",
                pb::AbsenceReason::Left => "LEFT",
            }
            .to_owned()
        }),
    }
}
