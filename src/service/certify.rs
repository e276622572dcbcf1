//! The result certificate of a finished match (issue 44): its public view and score
//! sheet written as [`ResultClaims`] and signed with the result key ring, for
//! `GameView.result`. Only what the end of a match shows everyone goes in.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;

use crate::proto::v1 as pb;
use crate::results::ResultKeys;
use crate::results::claims::{
    AbsenceClaim, ClockClaim, ResultClaims, RulesClaim, SeatClaim, SheetClaim,
};

/// The key set of a service that signs no results.
pub const NO_KEYS: &str = r#"{"keys":[]}"#;

/// How many finished matches' results a replica keeps signed ([`Certifier`]'s cache).
const SIGNED_KEPT: usize = 1024;

/// How long a kept result is answered again before it is signed anew, at most: an
/// hour, or a tenth of its lifetime if that is shorter, so a result handed on later is
/// still taken for most of its lifetime.
const SIGNED_REUSED_SECS: u64 = 3600;

/// A result kept: the JWS and its `iat`.
type Signed = (String, u64);

/// Signs finished matches' results: the key ring, and what every result says of who
/// signed it and for how long it is taken. A signature costs several calls' work
/// (docs/PERFORMANCE.md, "Signed results"), so the latest results are kept by final
/// state and answered again, for a while: the devices watching a match's end, and a
/// Score asked again and again, usually cost one signature (calls at the same moment
/// may each sign: Ed25519 is deterministic, so within a second they sign the same).
#[derive(Clone, Debug)]
pub struct Certifier {
    keys: Arc<ResultKeys>,
    /// `iss` (`--result-issuer`).
    issuer: String,
    /// `exp - iat` (`--result-lifetime-secs`).
    lifetime_secs: u64,
    /// The latest results signed, by final state id.
    signed: Arc<Mutex<LruCache<Vec<u8>, Signed>>>,
}

impl Certifier {
    pub fn new(keys: Arc<ResultKeys>, issuer: String, lifetime_secs: u64) -> Certifier {
        let kept = NonZeroUsize::new(SIGNED_KEPT).unwrap_or(NonZeroUsize::MIN);
        Certifier {
            keys,
            issuer,
            lifetime_secs,
            signed: Arc::new(Mutex::new(LruCache::new(kept))),
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
        if view.phase() != pb::Phase::Over {
            return None;
        }
        if let Some(kept) = self.kept(&view.state_id, now_secs) {
            return Some(kept);
        }
        let claims = self.claims(view, sheet, recorded, now_secs)?;
        match self.keys.sign(&claims) {
            Ok(jws) => {
                if let Ok(mut signed) = self.signed.lock() {
                    signed.put(view.state_id.clone(), (jws.clone(), now_secs));
                }
                Some(jws)
            }
            Err(error) => {
                // A broken key, never a client's doing: the view goes without it.
                tracing::error!(%error, "cannot sign a result");
                None
            }
        }
    }

    /// The result kept for the final state `state_id`, if it was signed less than
    /// [`SIGNED_REUSED_SECS`] (or a tenth of its lifetime) before `now_secs`.
    pub fn kept(&self, state_id: &[u8], now_secs: u64) -> Option<String> {
        let mut signed = self.signed.lock().ok()?;
        let (jws, iat) = signed.get(state_id)?;
        let reused = SIGNED_REUSED_SECS.min(self.lifetime_secs / 10);
        (now_secs.saturating_sub(*iat) < reused).then(|| jws.clone())
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
                .map(|s| s.side)
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
            // Every seat scores for a side; a view where one does not is never signed.
            seats: view
                .seats
                .iter()
                .map(|s| Some(seat_claim(s, side_of(s.seat)?)))
                .collect::<Option<_>>()?,
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
        player: (!seat.player_id.is_empty()).then(|| seat.player_id.clone()),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished two-player match's view and sheet: seat 0 "Ana" won 50 to 20.
    fn finished() -> (pb::GameView, pb::ScoreSheet) {
        let view = pb::GameView {
            match_id: "ab".repeat(16),
            phase: pb::Phase::Over as i32,
            rules: Some(pb::Rules {
                players: 2,
                target: 50,
                ..Default::default()
            }),
            scores: vec![
                pb::SideScore {
                    side: 0,
                    seats: vec![0],
                    score: 50,
                },
                pb::SideScore {
                    side: 1,
                    seats: vec![1],
                    score: 20,
                },
            ],
            winner_side: Some(0),
            state_id: vec![7; 16],
            hand_number: 3,
            seats: vec![
                pb::SeatStatus {
                    seat: 0,
                    kind: pb::SeatKind::Claimed as i32,
                    display_name: "Ana".into(),
                    ..Default::default()
                },
                pb::SeatStatus {
                    seat: 1,
                    kind: pb::SeatKind::HeldByBot as i32,
                    bot: pb::BotLevel::Medium as i32,
                    absent: pb::AbsenceReason::Left as i32,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let line = |side, play, settlement, total| pb::SideLine {
            side,
            play,
            settlement,
            total,
        };
        let sheet = pb::ScoreSheet {
            carried: Some(pb::SheetRow {
                first_hand: 1,
                last_hand: 2,
                sides: vec![line(0, 40, -5, 35), line(1, 25, 0, 25)],
            }),
            rows: vec![pb::SheetRow {
                first_hand: 3,
                last_hand: 3,
                sides: vec![line(0, 15, 0, 50), line(1, 0, -5, 20)],
            }],
            ..Default::default()
        };
        (view, sheet)
    }

    fn certifier() -> Certifier {
        let keys = ResultKeys::new(vec![(1, [3; 32])], None).expect("a key");
        Certifier::new(Arc::new(keys), "https://games.example".into(), 604_800)
    }

    #[test]
    fn the_claims_are_the_public_end_of_the_match() {
        let (view, sheet) = finished();
        let claims = certifier().claims(&view, &sheet, true, 1000).expect("over");
        assert_eq!((claims.iat, claims.exp), (1000, 605_800));
        assert_eq!(claims.jti, "ab".repeat(16));
        assert_eq!(claims.state, "07".repeat(16));
        assert!(claims.recorded);
        assert_eq!(claims.scores, vec![50, 20]);
        assert_eq!(claims.winner, 0);
        // The carried row and the rows summed: play + settlement is each side's score.
        assert_eq!(claims.sheet.play, vec![55, 25]);
        assert_eq!(claims.sheet.settlement, vec![-5, -5]);
        assert_eq!(claims.sheet.hands, 3);
        // A human seat a bot held at the end is a human seat that left, not a bot.
        assert_eq!(claims.seats[1].bot, None);
        assert_eq!(claims.seats[1].ended.as_deref(), Some("LEFT"));
        assert_eq!(claims.seats[0].name.as_deref(), Some("Ana"));
        assert_eq!(claims.seats[0].ended.as_deref(), Some("PLAYED_OUT"));
        assert_eq!(claims.rules.hand_size, "HAND_SIZE_RULE_UNSPECIFIED");

        let playing = pb::GameView {
            phase: pb::Phase::Playing as i32,
            ..view
        };
        assert!(
            certifier().certify(&playing, &sheet, true, 1000).is_none(),
            "not over"
        );
    }

    #[test]
    fn a_result_is_answered_again_for_an_hour_then_signed_anew() {
        let (view, sheet) = finished();
        let certifier = certifier();
        let first = certifier
            .certify(&view, &sheet, false, 1000)
            .expect("signed");
        let again = certifier.certify(&view, &sheet, false, 1000 + SIGNED_REUSED_SECS - 1);
        assert_eq!(again.as_deref(), Some(first.as_str()), "kept");
        let later = certifier
            .certify(&view, &sheet, false, 1000 + SIGNED_REUSED_SECS)
            .expect("signed");
        assert_ne!(later, first, "signed anew, with a new iat");
        // Another ending (another final state) is never answered another's result.
        let other = pb::GameView {
            state_id: vec![8; 16],
            ..view.clone()
        };
        let theirs = certifier
            .certify(&other, &sheet, false, 1000)
            .expect("signed");
        assert_ne!(theirs, first);

        // A lifetime of a minute: kept for six seconds only, never handed out expired.
        let keys = ResultKeys::new(vec![(1, [3; 32])], None).expect("a key");
        let brief = Certifier::new(Arc::new(keys), "https://games.example".into(), 60);
        let first = brief.certify(&view, &sheet, false, 1000).expect("signed");
        let kept = brief.certify(&view, &sheet, false, 1005);
        assert_eq!(kept.as_deref(), Some(first.as_str()));
        let anew = brief.certify(&view, &sheet, false, 1006);
        assert_ne!(anew.as_deref(), Some(first.as_str()));
    }
}
