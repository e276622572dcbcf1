//! Who plays each seat of a match, and the seats' credentials: a human seat is open
//! until claimed, then held by whoever holds its credential; a bot seat is played by
//! the server and has no credential. The token carries this (`State.seats` and
//! `State.credentials`), so it is as secret and as tamper-proof as the rest.
//!
//! A credential is 16 random bytes drawn when its seat is claimed. It is bound to the
//! match by living only in that match's tokens (and only in the branch where the claim
//! was made), and survives key rotation because the token is re-sealed, not re-keyed.
//! It is compared in constant time ([`subtle`]), so the time of a refusal says nothing
//! about how much of a guess was right.

use subtle::ConstantTimeEq;

use crate::engine::suggest::Level;
use crate::engine::{Seat, Why};

/// Bytes in a seat credential (128 bits).
pub const CREDENTIAL_LEN: usize = 16;

/// A seat's credential.
pub type Credential = [u8; CREDENTIAL_LEN];

/// Who plays a seat.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Player {
    /// A human seat nobody has claimed yet.
    Open,
    /// A human seat, held by whoever holds this credential.
    Human(Credential),
    /// A bot the server plays at this level.
    Bot(Level),
    /// A human seat a bot of `level` plays until its player, who keeps the credential,
    /// comes back: its player left or its time ran out (`why`).
    Held {
        credential: Credential,
        level: Level,
        why: Why,
    },
}

/// Credentials are never printed, not even in a debug line.
impl std::fmt::Debug for Player {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Player::Open => f.write_str("Open"),
            Player::Human(_) => f.write_str("Human(..)"),
            Player::Bot(level) => write!(f, "Bot({level:?})"),
            Player::Held { level, why, .. } => write!(f, "Held({level:?}, {why:?})"),
        }
    }
}

/// Why a request may not act or look for a seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    #[error("seat {0} is named without its credential")]
    CredentialRequired(Seat),
    #[error("the credential is not seat {0}'s in this match")]
    CredentialInvalid(Seat),
    #[error("seat {0} is a bot the server plays")]
    SeatIsBot(Seat),
}

/// Every seat's player, in seat order (the seats past the table's players unused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seats(pub [Player; 4]);

impl Seats {
    /// Every seat open.
    pub const OPEN: Seats = Seats([Player::Open; 4]);

    /// Whether the request holding `credential` may act and look for `seat`: a human
    /// seat whose credential it is (a bot holding it or not: its player still looks,
    /// and comes back). The check reads nothing but the seats, so its answer depends
    /// on nobody's tiles.
    pub fn authorize(&self, seat: Seat, credential: &[u8]) -> Result<(), Denied> {
        match self.0.get(seat) {
            Some(Player::Bot(_)) => Err(Denied::SeatIsBot(seat)),
            _ if credential.is_empty() => Err(Denied::CredentialRequired(seat)),
            Some(
                Player::Human(held)
                | Player::Held {
                    credential: held, ..
                },
            ) if bool::from(held.as_slice().ct_eq(credential)) => Ok(()),
            _ => Err(Denied::CredentialInvalid(seat)),
        }
    }

    /// The levels of the bots that play each seat (`None`: its human plays it), as the
    /// engine's bots take them: the bots' seats and the seats a bot holds.
    pub fn bots(&self) -> [Option<Level>; 4] {
        self.0.map(|p| match p {
            Player::Bot(level) | Player::Held { level, .. } => Some(level),
            _ => None,
        })
    }

    /// Whether a human plays `seat` now (claimed, and no bot holds it): the seats a
    /// turn clock times.
    pub fn human_plays(&self, seat: Seat) -> bool {
        matches!(self.0.get(seat), Some(Player::Human(_)))
    }

    /// Whether any of the first `players` seats is open.
    pub fn any_open(&self, players: usize) -> bool {
        self.0.iter().take(players).any(|p| *p == Player::Open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_seats_own_credential_opens_it() {
        let mine = [7u8; CREDENTIAL_LEN];
        let seats = Seats([
            Player::Human(mine),
            Player::Open,
            Player::Bot(Level::Hard),
            Player::Human([9; CREDENTIAL_LEN]),
        ]);
        assert_eq!(seats.authorize(0, &mine), Ok(()));
        assert_eq!(seats.authorize(0, &[]), Err(Denied::CredentialRequired(0)));
        assert_eq!(
            seats.authorize(0, &mine[..15]),
            Err(Denied::CredentialInvalid(0))
        );
        let mut near = mine;
        near[15] ^= 1;
        assert_eq!(seats.authorize(0, &near), Err(Denied::CredentialInvalid(0)));
        // Seat 3's credential is not seat 0's, nor mine seat 3's.
        assert_eq!(
            seats.authorize(0, &[9; CREDENTIAL_LEN]),
            Err(Denied::CredentialInvalid(0))
        );
        assert_eq!(seats.authorize(3, &mine), Err(Denied::CredentialInvalid(3)));
        // An open seat has no credential yet; a bot's never will.
        assert_eq!(seats.authorize(1, &mine), Err(Denied::CredentialInvalid(1)));
        assert_eq!(
            seats.authorize(1, &[0; 16]),
            Err(Denied::CredentialInvalid(1))
        );
        assert_eq!(seats.authorize(2, &mine), Err(Denied::SeatIsBot(2)));
        assert_eq!(seats.authorize(2, &[]), Err(Denied::SeatIsBot(2)));
        assert!(seats.any_open(2) && !Seats([Player::Human(mine); 4]).any_open(4));
        assert!(!format!("{seats:?}").contains('7'), "no credential printed");
    }
}
