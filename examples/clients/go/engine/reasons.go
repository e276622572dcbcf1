package engine

import allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"

// ReasonSentence is every ErrorReason's sentence for a person: what happened and what
// to do (docs/clients.md, "Errors"). "" for ERROR_REASON_UNSPECIFIED and for a reason
// this switch lacks, which TestEveryReasonHasASentence refuses: a reason added to the
// proto fails the tests until it is given its sentence here.
func ReasonSentence(reason allfivesv1.ErrorReason) string {
	switch reason {
	case allfivesv1.ErrorReason_INVALID_FIELD:
		return "A field of the request is malformed or out of range (the field is named): a bug in the request."
	case allfivesv1.ErrorReason_TOKEN_MALFORMED:
		return "The match's token is not a token at all: send it exactly as it was received."
	case allfivesv1.ErrorReason_TOKEN_UNKNOWN_KEY:
		return "The match's token was sealed under a key the service no longer holds: the match is lost, start another."
	case allfivesv1.ErrorReason_TOKEN_UNSUPPORTED_VERSION:
		return "The match's token is of another release's format: the match cannot go on, start another."
	case allfivesv1.ErrorReason_TOKEN_INVALID:
		return "The match's token was altered, corrupted or made elsewhere: restore the stored copy, or start anew."
	case allfivesv1.ErrorReason_RANDOM_UNAVAILABLE:
		return "The server could not get randomness: try again in a moment."
	case allfivesv1.ErrorReason_NOT_YOUR_TURN:
		return "It is another seat's turn: wait for that seat to play."
	case allfivesv1.ErrorReason_TILE_NOT_IN_HAND:
		return "That tile is not in the seat's hand: choose one of the legal moves."
	case allfivesv1.ErrorReason_TILE_DOES_NOT_MATCH:
		return "That tile does not fit there: choose one of the legal moves."
	case allfivesv1.ErrorReason_END_NOT_OPEN:
		return "That end of the layout is not open: name one of the open ends."
	case allfivesv1.ErrorReason_MUST_PLAY:
		return "The seat holds a playable tile, so it may not draw: play one of the legal moves."
	case allfivesv1.ErrorReason_AMBIGUOUS_END:
		return "That tile fits more than one end: name the end."
	case allfivesv1.ErrorReason_WRONG_PHASE:
		return "That move does not belong to this moment of the match: deal between hands, play and draw during one, claim seats before the first deal."
	case allfivesv1.ErrorReason_GAME_OVER:
		return "The match is over: show the score sheet, and offer a new match."
	case allfivesv1.ErrorReason_BONEYARD_EMPTY:
		return "Nothing is left to draw (a well-formed match never gets here): a bug to report."
	case allfivesv1.ErrorReason_CREDENTIAL_REQUIRED:
		return "The request names a seat without its credential: send the seat's credential with it."
	case allfivesv1.ErrorReason_CREDENTIAL_INVALID:
		return "That credential is not this seat's in this match: send the one the seat's claim answered (a lost one cannot be recovered)."
	case allfivesv1.ErrorReason_SEAT_IS_BOT:
		return "The server plays that seat: nobody acts or looks for it."
	case allfivesv1.ErrorReason_SEED_NOT_ALLOWED:
		return "This server picks every seed itself: leave the seed out."
	case allfivesv1.ErrorReason_SEATS_OPEN:
		return "A human seat is still unclaimed: wait for its player to claim it, then deal."
	case allfivesv1.ErrorReason_SEAT_TAKEN:
		return "Somebody has that seat already (or it is a bot's): pick an open seat."
	case allfivesv1.ErrorReason_MALFORMED_REQUEST:
		return "The server could not read the request at all: a bug in the client."
	case allfivesv1.ErrorReason_OVERLOADED:
		return "The server has as many calls in flight as it takes: try again in a moment."
	case allfivesv1.ErrorReason_SEARCH_QUEUE_FULL:
		return "Too many hard searches are waiting: try again in a moment, or ask a lower level."
	case allfivesv1.ErrorReason_REQUEST_BODY_TIMEOUT:
		return "The request did not arrive in time (a slow network): try again."
	case allfivesv1.ErrorReason_STATE_STALE:
		return "The match has moved on since that token: get the latest state and show it."
	case allfivesv1.ErrorReason_STORE_UNAVAILABLE:
		return "The server's match store did not answer in time: make the same call again in a moment."
	case allfivesv1.ErrorReason_MATCH_FORGOTTEN:
		return "The server no longer holds this match: it cannot go on, start another."
	case allfivesv1.ErrorReason_STORE_REQUIRED:
		return "This needs a server with a match store, and this one has none: a fault of the deployment."
	case allfivesv1.ErrorReason_TOO_MANY_WATCHES:
		return "As many match streams are open as the server takes: close one, or try again in a moment."
	case allfivesv1.ErrorReason_INVITE_NOT_FOUND:
		return "No match waits on that invite code (mistyped, expired, or the match is full): ask for a new one."
	case allfivesv1.ErrorReason_INVITE_RATE_LIMITED:
		return "Too many invite codes were tried in vain this minute: try again in a minute (an invite link still works)."
	case allfivesv1.ErrorReason_NO_OPEN_SEAT:
		return "Every seat of the match is taken: there is nobody left to invite."
	case allfivesv1.ErrorReason_REQUEST_TIMEOUT:
		return "The call ran past the server's time limit: make the same call again (it is answered the same)."
	case allfivesv1.ErrorReason_TIMEOUT_NOT_DUE:
		return "The seat on turn still has time: claim its timeout again once claimable_at_ms has passed."
	case allfivesv1.ErrorReason_NO_TURN_CLOCK:
		return "This match has no turn clock: nobody's time runs out, so there is no timeout to claim."
	case allfivesv1.ErrorReason_TURN_TIMED_OUT:
		return "The seat's time ran out before its move arrived, and the move was not made: claim the timeout, then play on from the answer."
	case allfivesv1.ErrorReason_SEAT_NOT_HELD:
		return "No bot holds that seat: its player plays it already."
	case allfivesv1.ErrorReason_CLOCK_SKEW:
		return "The servers' clocks disagree, so nothing was done: make the same call again in a moment."
	case allfivesv1.ErrorReason_PASS_MALFORMED:
		return "The pass is not a compact JWS: send the studio's pass exactly as its login issued it."
	case allfivesv1.ErrorReason_PASS_INVALID:
		return "The pass is not this deployment's (the message says which check failed): get one from the studio's login for this service."
	case allfivesv1.ErrorReason_PASS_EXPIRED:
		return "The pass has expired: get a fresh one from the studio's login and claim again."
	case allfivesv1.ErrorReason_PASS_NOT_YET_VALID:
		return "The pass is not valid yet (its issuer's clock is off): get a fresh one."
	case allfivesv1.ErrorReason_PASS_REQUIRED:
		return "This deployment seats only players with the studio's pass: sign in and claim with it."
	case allfivesv1.ErrorReason_PASSES_NOT_ACCEPTED:
		return "This server takes no passes: leave the pass out."
	case allfivesv1.ErrorReason_PLAYER_ALREADY_SEATED:
		return "The pass's player already holds another seat of this match."
	default:
		return ""
	}
}
