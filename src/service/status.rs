//! The one place where failures become gRPC statuses, with google.rpc error details a
//! client can act on (see the error model in `proto/allfives/v1/allfives.proto`).

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::call::CallContext;
use crate::engine;
use crate::passes::PassError;
use crate::proto::v1::ErrorReason;
use crate::state::{Denied, StateId, TokenError};

/// The `ErrorInfo` domain of every reason this service reports.
pub const DOMAIN: &str = "allfives.v1";

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// A request field is malformed or out of range.
    Field {
        field: &'static str,
        description: &'static str,
    },
    /// The state token was refused.
    Token(TokenError),
    /// The rules refuse the move.
    Rules(engine::Error),
    /// The request may not act or look for the seat it names.
    Denied(Denied),
    /// NewGame with a seed, which this server does not take.
    SeedNotAllowed,
    /// Deal while a human seat is open.
    SeatsOpen,
    /// ClaimSeat for a seat that is claimed already or a bot's.
    SeatTaken(engine::Seat),
    /// The request could not be read (protobuf, gRPC framing or gRPC-Web base64);
    /// the text says what was wrong, for people.
    Malformed(String),
    /// As many calls are in flight as the server takes.
    Overloaded,
    /// The HARD search queue has no place for the search (`service::searches`).
    SearchQueueFull,
    /// The request's body did not arrive within the body deadline.
    BodyTimeout,
    /// The match store holds another state of the match than the call came with: the
    /// latest one's id.
    StateStale(StateId),
    /// The match store did not answer (for operators: why); nothing was stored.
    StoreUnavailable(String),
    /// The match was made with a store, which no longer holds it.
    MatchForgotten,
    /// The match was made with a store, and this server has none (or Watch without
    /// one).
    StoreRequired,
    /// As many Watch streams are open as the server takes (on the connection, or in
    /// all).
    TooManyWatches,
    /// No live invite code is the one typed (or its match has no open seat left).
    InviteNotFound,
    /// The minute's misses of invite codes are spent: the client's own, or the whole
    /// deployment's.
    InviteRateLimited(crate::store::RateLimit),
    /// An invite code for a match with no open seat.
    NoOpenSeat,
    /// The call's deadline passed before it was answered ([`deadline_passed`]):
    /// `server_limit`, the server's own limit (`--request-timeout-ms`), else the
    /// client's earlier `grpc-timeout`.
    DeadlinePassed { server_limit: bool },
    /// ClaimTimeout before the seat on turn's deadline plus the lag grace: when it
    /// will be taken, and the time it was refused at (ms since the Unix epoch).
    TimeoutNotDue { claimable_at_ms: u64, now_ms: u64 },
    /// ClaimTimeout on a match without a turn clock.
    NoTurnClock,
    /// A move by the seat on turn past its deadline plus the lag grace (its deadline,
    /// ms since the Unix epoch), made from the state `from` of the match (told to no
    /// client: the service asks the store whether the same move was recorded in time,
    /// its answer lost, and this a retry of it).
    TurnTimedOut {
        deadline_ms: u64,
        from: (crate::state::MatchId, StateId),
    },
    /// ReturnToSeat for a seat no bot holds.
    SeatNotHeld(engine::Seat),
    /// The match's last move was written later than this server's clock reads, by
    /// more than the skew allowed.
    ClockSkew,
    /// The request's pass (`field`) was refused (`crate::passes`).
    Pass {
        field: &'static str,
        error: crate::passes::PassError,
    },
    /// A seat claimed without a pass on a server that requires one (`--pass-required`).
    PassRequired { field: &'static str },
    /// A pass sent to a server without the studio's pass keys.
    PassesNotAccepted { field: &'static str },
    /// The pass's player holds another seat of the match.
    PlayerAlreadySeated,
}

impl From<crate::store::StoreRefusal> for ApiError {
    fn from(refused: crate::store::StoreRefusal) -> ApiError {
        use crate::store::StoreRefusal;
        match refused {
            StoreRefusal::Stale(stale) => ApiError::StateStale(stale.latest),
            StoreRefusal::Unavailable(why) => ApiError::StoreUnavailable(why),
            StoreRefusal::Forgotten => ApiError::MatchForgotten,
            StoreRefusal::Crowded => ApiError::TooManyWatches,
            StoreRefusal::RateLimited(limit) => ApiError::InviteRateLimited(limit),
        }
    }
}

impl ApiError {
    pub fn field(field: &'static str, description: &'static str) -> ApiError {
        ApiError::Field { field, description }
    }

    /// The machine-readable reason, as in `ErrorInfo.reason`: the name of an
    /// `ErrorReason` value of the proto.
    pub fn reason(&self) -> &'static str {
        self.error_reason().as_str_name()
    }

    /// The proto's `ErrorReason` for this error.
    pub fn error_reason(&self) -> ErrorReason {
        use ErrorReason as R;
        use engine::Error as E;
        match self {
            ApiError::Field { .. } => R::InvalidField,
            ApiError::Token(TokenError::Malformed) => R::TokenMalformed,
            ApiError::Token(TokenError::UnknownKey(_)) => R::TokenUnknownKey,
            ApiError::Token(TokenError::UnsupportedVersion(_)) => R::TokenUnsupportedVersion,
            ApiError::Token(TokenError::Invalid | TokenError::Corrupt) => R::TokenInvalid,
            ApiError::Token(TokenError::Random) => R::RandomUnavailable,
            ApiError::Rules(e) => match e {
                E::NotYourTurn { .. } => R::NotYourTurn,
                E::WrongPhase { .. } => R::WrongPhase,
                E::GameOver => R::GameOver,
                E::TileNotInHand(_) => R::TileNotInHand,
                E::TileDoesNotMatch { .. } => R::TileDoesNotMatch,
                E::EndNotOpen(_) => R::EndNotOpen,
                E::MustPlay => R::MustPlay,
                E::AmbiguousEnd(_) => R::AmbiguousEnd,
                E::BoneyardEmpty => R::BoneyardEmpty,
                E::InvalidSeat { .. } | E::InvalidTile(..) | E::InvalidOption { .. } => {
                    R::InvalidField
                }
            },
            ApiError::Denied(Denied::CredentialRequired(_)) => R::CredentialRequired,
            ApiError::Denied(Denied::CredentialInvalid(_)) => R::CredentialInvalid,
            ApiError::Denied(Denied::SeatIsBot(_)) => R::SeatIsBot,
            ApiError::SeedNotAllowed => R::SeedNotAllowed,
            ApiError::SeatsOpen => R::SeatsOpen,
            ApiError::SeatTaken(_) => R::SeatTaken,
            ApiError::Malformed(_) => R::MalformedRequest,
            ApiError::Overloaded => R::Overloaded,
            ApiError::SearchQueueFull => R::SearchQueueFull,
            ApiError::BodyTimeout => R::RequestBodyTimeout,
            ApiError::StateStale(_) => R::StateStale,
            ApiError::StoreUnavailable(_) => R::StoreUnavailable,
            ApiError::MatchForgotten => R::MatchForgotten,
            ApiError::StoreRequired => R::StoreRequired,
            ApiError::TooManyWatches => R::TooManyWatches,
            ApiError::InviteNotFound => R::InviteNotFound,
            ApiError::InviteRateLimited(_) => R::InviteRateLimited,
            ApiError::NoOpenSeat => R::NoOpenSeat,
            ApiError::DeadlinePassed { .. } => R::RequestTimeout,
            ApiError::TimeoutNotDue { .. } => R::TimeoutNotDue,
            ApiError::NoTurnClock => R::NoTurnClock,
            ApiError::TurnTimedOut { .. } => R::TurnTimedOut,
            ApiError::SeatNotHeld(_) => R::SeatNotHeld,
            ApiError::ClockSkew => R::ClockSkew,
            ApiError::Pass { error, .. } => match error {
                PassError::Malformed(_) => R::PassMalformed,
                PassError::Invalid(_) => R::PassInvalid,
                PassError::Expired => R::PassExpired,
                PassError::NotYetValid => R::PassNotYetValid,
            },
            ApiError::PassRequired { .. } => R::PassRequired,
            ApiError::PassesNotAccepted { .. } => R::PassesNotAccepted,
            ApiError::PlayerAlreadySeated => R::PlayerAlreadySeated,
        }
    }
}

/// The answer to a call whose deadline passed before it was answered, whoever notices
/// first: the admission layer, which owns the deadline and ends the call there
/// (`server::admission`), or the service, stopping its work on the remaining time (a
/// search, the bots' floor, the store's answer). Past the server's own limit,
/// DEADLINE_EXCEEDED with reason `REQUEST_TIMEOUT`; past an earlier `grpc-timeout` of
/// the client's, DEADLINE_EXCEEDED alone, as gRPC libraries answer a deadline their
/// caller set (the client has stopped waiting anyway).
pub fn deadline_passed(call: &CallContext) -> ApiError {
    ApiError::DeadlinePassed {
        server_limit: call.server_limit,
    }
}

impl From<Denied> for ApiError {
    fn from(e: Denied) -> ApiError {
        ApiError::Denied(e)
    }
}

impl From<TokenError> for ApiError {
    fn from(e: TokenError) -> ApiError {
        ApiError::Token(e)
    }
}

impl From<engine::Error> for ApiError {
    fn from(e: engine::Error) -> ApiError {
        match e {
            engine::Error::InvalidOption { field, reason } => ApiError::Field {
                field: match field {
                    "players" => "rules.players",
                    "partnership" => "rules.partnership",
                    "target" => "rules.target",
                    _ => "rules",
                },
                description: reason,
            },
            engine::Error::InvalidSeat { .. } => {
                ApiError::field("seat", "no such seat at this table")
            }
            engine::Error::InvalidTile(..) => ApiError::field("tile", "each half must be 0 to 6"),
            other => ApiError::Rules(other),
        }
    }
}

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Status {
        let reason = error.reason();
        let info = |metadata: HashMap<String, String>| {
            ErrorDetails::with_error_info(reason, DOMAIN, metadata)
        };
        match error {
            ApiError::Field { field, description } => {
                let mut details = info(HashMap::new());
                details.add_bad_request_violation(field, description);
                Status::with_error_details(
                    Code::InvalidArgument,
                    format!("{field}: {description}"),
                    details,
                )
            }
            ApiError::Token(TokenError::Random) => Status::with_error_details(
                Code::Unavailable,
                "the server could not get randomness; retry",
                info(HashMap::new()),
            ),
            ApiError::Token(e) => {
                let mut details = info(HashMap::new());
                details.add_bad_request_violation("state", e.to_string());
                Status::with_error_details(Code::InvalidArgument, e.to_string(), details)
            }
            ApiError::Denied(e) => Status::with_error_details(
                Code::PermissionDenied,
                e.to_string(),
                info(HashMap::new()),
            ),
            ApiError::SeedNotAllowed => Status::with_error_details(
                Code::PermissionDenied,
                "this server picks every match's seed: leave `seed` out \
                 (servers started with --allow-client-seeds take one)",
                info(HashMap::new()),
            ),
            ApiError::SeatsOpen => Status::with_error_details(
                Code::FailedPrecondition,
                "every human seat must be claimed (ClaimSeat) before the first deal",
                info(HashMap::new()),
            ),
            ApiError::SeatTaken(seat) => Status::with_error_details(
                Code::FailedPrecondition,
                format!("seat {seat} is claimed already or a bot's"),
                info(HashMap::new()),
            ),
            ApiError::Malformed(what) => Status::with_error_details(
                Code::InvalidArgument,
                format!("the request could not be read: {what}"),
                info(HashMap::new()),
            ),
            ApiError::Overloaded => Status::with_error_details(
                Code::ResourceExhausted,
                "the server has as many calls in flight as it takes; retry with backoff",
                info(HashMap::new()),
            ),
            ApiError::SearchQueueFull => Status::with_error_details(
                Code::ResourceExhausted,
                "too many HARD searches are waiting; retry with backoff",
                info(HashMap::new()),
            ),
            ApiError::BodyTimeout => Status::with_error_details(
                Code::Cancelled,
                "the request's body did not arrive in time",
                info(HashMap::new()),
            ),
            ApiError::MatchForgotten => Status::with_error_details(
                Code::NotFound,
                "the match store no longer holds this match (its time to live passed, or \
                 the store lost it): it cannot go on; start another",
                info(HashMap::new()),
            ),
            ApiError::TooManyWatches => Status::with_error_details(
                Code::ResourceExhausted,
                "as many Watch streams are open as the server takes: close one, or retry \
                 with backoff",
                info(HashMap::new()),
            ),
            ApiError::InviteNotFound => Status::with_error_details(
                Code::NotFound,
                "no match waits with an open seat under this invite code: it may be \
                 mistyped, expired, or its seats are all taken",
                info(HashMap::new()),
            ),
            ApiError::InviteRateLimited(limit) => Status::with_error_details(
                Code::ResourceExhausted,
                match limit {
                    crate::store::RateLimit::Client => {
                        "too many invite codes were tried in vain from this address this \
                         minute: retry in a minute (an invite link still works)"
                    }
                    crate::store::RateLimit::Deployment => {
                        "too many invite codes were tried in vain this minute across the \
                         service: retry in a minute (an invite link still works)"
                    }
                },
                info(HashMap::from([(
                    "limit".to_string(),
                    limit.as_str().to_string(),
                )])),
            ),
            ApiError::DeadlinePassed {
                server_limit: false,
            } => Status::deadline_exceeded("the call's grpc-timeout passed before it was answered"),
            ApiError::DeadlinePassed { server_limit: true } => Status::with_error_details(
                Code::DeadlineExceeded,
                "the call ran past the server's time limit for a call: make the same call \
                 again (a move it recorded is answered the same)",
                info(HashMap::new()),
            ),
            ApiError::NoOpenSeat => Status::with_error_details(
                Code::FailedPrecondition,
                "every seat of this match is taken: nobody is left to invite",
                info(HashMap::new()),
            ),
            ApiError::StoreRequired => Status::with_error_details(
                Code::FailedPrecondition,
                "this server has no match store, which this call needs (a match made \
                 with one, Watch, invite codes): nothing was done",
                info(HashMap::new()),
            ),
            ApiError::StoreUnavailable(_) => Status::with_error_details(
                Code::Unavailable,
                "the match store did not answer (it may have taken the move all the same): \
                 make the same call again, with backoff",
                info(HashMap::new()),
            ),
            ApiError::StateStale(latest) => {
                let latest: String = latest.iter().map(|b| format!("{b:02x}")).collect();
                Status::with_error_details(
                    Code::Aborted,
                    "the match has moved on from this token's state: \
                     continue from the latest token (Watch or the device that holds it)",
                    info(HashMap::from([("latest_state_id".to_string(), latest)])),
                )
            }
            ApiError::TimeoutNotDue {
                claimable_at_ms,
                now_ms,
            } => Status::with_error_details(
                Code::FailedPrecondition,
                "the seat on turn still has time: its timeout is taken from claimable_at_ms \
                 (by the server's clock, which read now_ms)",
                info(HashMap::from([
                    ("claimable_at_ms".to_string(), claimable_at_ms.to_string()),
                    ("now_ms".to_string(), now_ms.to_string()),
                ])),
            ),
            ApiError::NoTurnClock => Status::with_error_details(
                Code::FailedPrecondition,
                "this match has no turn clock: nobody's time runs out",
                info(HashMap::new()),
            ),
            ApiError::TurnTimedOut { deadline_ms, .. } => Status::with_error_details(
                Code::FailedPrecondition,
                "the seat's time ran out before this move arrived: nothing was applied",
                info(HashMap::from([(
                    "turn_deadline_ms".to_string(),
                    deadline_ms.to_string(),
                )])),
            ),
            ApiError::SeatNotHeld(seat) => Status::with_error_details(
                Code::FailedPrecondition,
                format!("no bot holds seat {seat}: its player plays it already"),
                info(HashMap::new()),
            ),
            ApiError::ClockSkew => Status::with_error_details(
                Code::Unavailable,
                "the match's last move was written by a server whose clock is ahead of this \
                 one's by more than the deployment allows: nothing was done; retry",
                info(HashMap::new()),
            ),
            ApiError::Pass { field, error } => {
                let code = match error {
                    PassError::Malformed(_) => Code::InvalidArgument,
                    _ => Code::Unauthenticated,
                };
                let advice = match error {
                    PassError::Expired => ": get a fresh one from the studio's login and retry",
                    _ => "",
                };
                Status::with_error_details(
                    code,
                    format!("{field}: {error}{advice}"),
                    info(HashMap::from([("field".to_string(), field.to_string())])),
                )
            }
            ApiError::PassRequired { field } => Status::with_error_details(
                Code::Unauthenticated,
                format!(
                    "{field}: this server seats only players who show the studio's pass: \
                     send one with the claim"
                ),
                info(HashMap::from([("field".to_string(), field.to_string())])),
            ),
            ApiError::PassesNotAccepted { field } => Status::with_error_details(
                Code::FailedPrecondition,
                format!(
                    "{field}: this server takes no passes (it has no studio keys to check \
                     them with): leave it out; nothing was done"
                ),
                info(HashMap::from([("field".to_string(), field.to_string())])),
            ),
            ApiError::PlayerAlreadySeated => Status::with_error_details(
                Code::FailedPrecondition,
                "the pass's player holds another seat of this match: a player plays one seat",
                info(HashMap::new()),
            ),
            ApiError::Rules(e) => {
                let mut metadata = HashMap::new();
                if let engine::Error::NotYourTurn { turn, .. } = e {
                    metadata.insert("turn".to_string(), turn.to_string());
                }
                Status::with_error_details(Code::FailedPrecondition, e.to_string(), info(metadata))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Error as E, Phase, Tile};

    fn details(status: &Status) -> (Code, String, Vec<String>) {
        let d = status.get_error_details();
        let reason = d.error_info().map(|i| i.reason.clone()).unwrap_or_default();
        let domain = d.error_info().map(|i| i.domain.clone()).unwrap_or_default();
        assert_eq!(domain, DOMAIN);
        let fields = d
            .bad_request()
            .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
            .unwrap_or_default();
        (status.code(), reason, fields)
    }

    #[test]
    fn every_rules_error_is_a_failed_precondition_with_its_reason() {
        let tile = Tile::DOUBLE_BLANK;
        let cases = [
            (E::NotYourTurn { seat: 1, turn: 0 }, "NOT_YOUR_TURN"),
            (
                E::WrongPhase {
                    phase: Phase::Dealing,
                },
                "WRONG_PHASE",
            ),
            (E::GameOver, "GAME_OVER"),
            (E::TileNotInHand(tile), "TILE_NOT_IN_HAND"),
            (
                E::TileDoesNotMatch { tile, end: None },
                "TILE_DOES_NOT_MATCH",
            ),
            (E::EndNotOpen(crate::engine::End::Up), "END_NOT_OPEN"),
            (E::MustPlay, "MUST_PLAY"),
            (E::AmbiguousEnd(tile), "AMBIGUOUS_END"),
            (E::BoneyardEmpty, "BONEYARD_EMPTY"),
        ];
        for (error, reason) in cases {
            let status = Status::from(ApiError::from(error));
            assert_eq!(
                details(&status),
                (Code::FailedPrecondition, reason.to_string(), vec![])
            );
        }
        let status = Status::from(ApiError::from(E::NotYourTurn { seat: 1, turn: 0 }));
        let info = status.get_error_details().error_info().cloned().unwrap();
        assert_eq!(info.metadata.get("turn").map(String::as_str), Some("0"));
    }

    #[test]
    fn refusals_of_seats_and_seeds_have_their_codes_and_reasons() {
        let cases = [
            (
                ApiError::Denied(Denied::CredentialRequired(1)),
                Code::PermissionDenied,
                "CREDENTIAL_REQUIRED",
            ),
            (
                ApiError::Denied(Denied::CredentialInvalid(1)),
                Code::PermissionDenied,
                "CREDENTIAL_INVALID",
            ),
            (
                ApiError::Denied(Denied::SeatIsBot(1)),
                Code::PermissionDenied,
                "SEAT_IS_BOT",
            ),
            (
                ApiError::SeedNotAllowed,
                Code::PermissionDenied,
                "SEED_NOT_ALLOWED",
            ),
            (ApiError::SeatsOpen, Code::FailedPrecondition, "SEATS_OPEN"),
            (
                ApiError::SeatTaken(2),
                Code::FailedPrecondition,
                "SEAT_TAKEN",
            ),
        ];
        for (error, code, reason) in cases {
            assert_eq!(
                details(&Status::from(error)),
                (code, reason.to_string(), vec![])
            );
        }
    }

    #[test]
    fn an_invite_refusal_says_whose_misses_were_spent() {
        use crate::store::RateLimit;
        for (limit, said) in [
            (RateLimit::Client, "client"),
            (RateLimit::Deployment, "deployment"),
        ] {
            let status = Status::from(ApiError::from(crate::store::StoreRefusal::RateLimited(
                limit,
            )));
            let (code, reason, _) = details(&status);
            assert_eq!(
                (code, reason.as_str()),
                (Code::ResourceExhausted, "INVITE_RATE_LIMITED")
            );
            let info = status
                .get_error_details()
                .error_info()
                .cloned()
                .expect("info");
            assert_eq!(info.metadata.get("limit").map(String::as_str), Some(said));
        }
    }

    #[test]
    fn every_reason_is_an_error_reason_of_the_proto() {
        // The reason strings are the enum's value names, which clients compare with.
        for n in 1.. {
            let Ok(reason) = ErrorReason::try_from(n) else {
                break;
            };
            assert_eq!(
                ErrorReason::from_str_name(reason.as_str_name()),
                Some(reason)
            );
        }
        assert_eq!(ErrorReason::NotYourTurn.as_str_name(), "NOT_YOUR_TURN");
        assert_eq!(ErrorReason::TokenInvalid.as_str_name(), "TOKEN_INVALID");
    }

    /// One refusal of every kind the service makes, each reason at least once.
    fn one_of_each() -> Vec<ApiError> {
        let tile = Tile::DOUBLE_BLANK;
        let mut all: Vec<ApiError> = [
            E::NotYourTurn { seat: 1, turn: 0 },
            E::WrongPhase {
                phase: Phase::Dealing,
            },
            E::GameOver,
            E::TileNotInHand(tile),
            E::TileDoesNotMatch { tile, end: None },
            E::EndNotOpen(crate::engine::End::Up),
            E::MustPlay,
            E::AmbiguousEnd(tile),
            E::BoneyardEmpty,
            E::InvalidSeat {
                seat: 5,
                players: 2,
            },
        ]
        .into_iter()
        .map(ApiError::from)
        .collect();
        all.extend([
            ApiError::field("seat", "x"),
            ApiError::Token(TokenError::Malformed),
            ApiError::Token(TokenError::UnknownKey(3)),
            ApiError::Token(TokenError::UnsupportedVersion(9)),
            ApiError::Token(TokenError::Invalid),
            ApiError::Token(TokenError::Random),
            ApiError::Denied(Denied::CredentialRequired(1)),
            ApiError::Denied(Denied::CredentialInvalid(1)),
            ApiError::Denied(Denied::SeatIsBot(1)),
            ApiError::SeedNotAllowed,
            ApiError::SeatsOpen,
            ApiError::SeatTaken(1),
            ApiError::Malformed("x".into()),
            ApiError::Overloaded,
            ApiError::SearchQueueFull,
            ApiError::BodyTimeout,
            ApiError::StateStale([0; 16]),
            ApiError::StoreUnavailable("x".into()),
            ApiError::MatchForgotten,
            ApiError::StoreRequired,
            ApiError::TooManyWatches,
            ApiError::InviteNotFound,
            ApiError::InviteRateLimited(crate::store::RateLimit::Client),
            ApiError::InviteRateLimited(crate::store::RateLimit::Deployment),
            ApiError::NoOpenSeat,
            ApiError::DeadlinePassed { server_limit: true },
            ApiError::TimeoutNotDue {
                claimable_at_ms: 2,
                now_ms: 1,
            },
            ApiError::NoTurnClock,
            ApiError::TurnTimedOut {
                deadline_ms: 1,
                from: (crate::state::MatchId::default(), [0; 16]),
            },
            ApiError::SeatNotHeld(1),
            ApiError::ClockSkew,
            ApiError::PassRequired { field: "pass" },
            ApiError::PassesNotAccepted { field: "pass" },
            ApiError::PlayerAlreadySeated,
        ]);
        for error in [
            PassError::Malformed("x"),
            PassError::Invalid("x"),
            PassError::Expired,
            PassError::NotYetValid,
        ] {
            all.push(ApiError::Pass {
                field: "pass",
                error,
            });
        }
        all
    }

    /// The name of a gRPC status code, as the docs and the proto write it.
    fn code_name(code: Code) -> &'static str {
        match code {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// Every place the docs or the proto name a status code with a reason ("`CANCELLED`
    /// `REQUEST_BODY_TIMEOUT`", "DEADLINE_EXCEEDED (with REQUEST_TIMEOUT", a row of
    /// clients.md's Errors table) gives the code the service answers that reason with:
    /// the docs cannot drift from this file's own table (as clients.md once said
    /// CANCELLED for a search the server's limit cut, which answers DEADLINE_EXCEEDED).
    #[test]
    fn the_code_the_docs_give_each_reason_is_the_one_it_is_answered_with() {
        let mut answered = HashMap::new();
        for error in one_of_each() {
            let reason = error.reason();
            let status = Status::from(error);
            let code = code_name(status.code());
            let was = answered.insert(reason, code);
            assert!(
                was.is_none_or(|w| w == code),
                "{reason}: {was:?} and {code}"
            );
        }
        // Every reason of the proto is among them, so a new one must be added above.
        for n in 1.. {
            let Ok(reason) = ErrorReason::try_from(n) else {
                break;
            };
            assert!(
                answered.contains_key(reason.as_str_name()),
                "{} is not among one_of_each()",
                reason.as_str_name()
            );
        }
        let codes = "OK|CANCELLED|UNKNOWN|INVALID_ARGUMENT|DEADLINE_EXCEEDED|NOT_FOUND|\
                     ALREADY_EXISTS|PERMISSION_DENIED|RESOURCE_EXHAUSTED|FAILED_PRECONDITION|\
                     ABORTED|OUT_OF_RANGE|UNIMPLEMENTED|INTERNAL|UNAVAILABLE|DATA_LOSS|\
                     UNAUTHENTICATED";
        // A code, then (after backticks, a table's bar, an opening parenthesis, "with"
        // or "reason") a word in capitals.
        let pattern = format!(
            r"(?-u)\b({codes})\b`?(?:\s*\|)?(?:\s*\(?\s*(?:with|reason)?)?\s*`?([A-Z][A-Z0-9_]+)\b"
        );
        let said = regex::Regex::new(&pattern).expect("the pattern");
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = vec![root.join("proto/allfives/v1/allfives.proto")];
        for dir in ["docs", "docs/quickstart"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("docs") {
                let path = entry.expect("an entry").path();
                if path.extension().is_some_and(|e| e == "md") {
                    files.push(path);
                }
            }
        }
        let mut checked = 0;
        let mut wrong = Vec::new();
        for path in files {
            let text = std::fs::read_to_string(&path).expect("readable");
            let text = text.replace("//", " ");
            for c in said.captures_iter(&text) {
                let (code, reason) = (&c[1], &c[2]);
                let Some(&right) = answered.get(reason) else {
                    continue;
                };
                checked += 1;
                if code != right {
                    wrong.push(format!(
                        "{}: {code} {reason} (answered {right})",
                        path.display()
                    ));
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "the docs give the wrong code:\n{}",
            wrong.join("\n")
        );
        assert!(
            checked > 50,
            "only {checked} places checked: has the pattern broken?"
        );
    }

    #[test]
    fn malformed_input_names_the_field() {
        let status = Status::from(ApiError::from(E::InvalidOption {
            field: "target",
            reason: "x",
        }));
        assert_eq!(
            details(&status),
            (
                Code::InvalidArgument,
                "INVALID_FIELD".into(),
                vec!["rules.target".into()]
            )
        );
        let status = Status::from(ApiError::field("tile.a", "a half must be 0 to 6"));
        assert_eq!(details(&status).2, vec!["tile.a".to_string()]);
    }

    #[test]
    fn token_errors_are_invalid_arguments_on_the_state_field() {
        let cases = [
            (TokenError::Malformed, "TOKEN_MALFORMED"),
            (
                TokenError::UnsupportedVersion(3),
                "TOKEN_UNSUPPORTED_VERSION",
            ),
            (TokenError::UnknownKey(4), "TOKEN_UNKNOWN_KEY"),
            (TokenError::Invalid, "TOKEN_INVALID"),
            (TokenError::Corrupt, "TOKEN_INVALID"),
        ];
        for (error, reason) in cases {
            let status = Status::from(ApiError::from(error));
            assert_eq!(
                details(&status),
                (
                    Code::InvalidArgument,
                    reason.to_string(),
                    vec!["state".to_string()]
                )
            );
        }
        let status = Status::from(ApiError::from(TokenError::Random));
        assert_eq!(status.code(), Code::Unavailable);
    }
}
