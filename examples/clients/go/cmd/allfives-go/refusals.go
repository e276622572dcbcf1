package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"example.com/allfives/goclient/engine"
	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// refusals provokes refusals on purpose and checks each: its status code, its
// ErrorInfo (the generated constant, the domain, the metadata) and BadRequest, and
// that it was sent once (a refusal is never retried).
type refusals struct {
	seen map[allfivesv1.ErrorReason]int
	say  func(format string, args ...any)
}

// expect checks that err is the refusal wanted: code and reason, and when field is
// not empty a BadRequest naming it.
func (r *refusals) expect(what string, err error, code codes.Code, reason allfivesv1.ErrorReason, field string) (*engine.Error, error) {
	if err == nil {
		return nil, fmt.Errorf("%s: answered; want %s %s", what, code, reason)
	}
	e := engine.FromError("", err)
	switch {
	case e.Code != code || e.Reason != reason:
		return e, fmt.Errorf("%s: %v; want %s %s", what, err, code, reason)
	case e.Domain != engine.Domain:
		return e, fmt.Errorf("%s: ErrorInfo domain %q; want %q", what, e.Domain, engine.Domain)
	case e.Attempts != 1:
		return e, fmt.Errorf("%s: a refusal was sent %d times", what, e.Attempts)
	case field != "" && !slices.ContainsFunc(e.Violations, func(v engine.Violation) bool { return v.Field == field }):
		return e, fmt.Errorf("%s: %v; want a BadRequest naming %q", what, err, field)
	}
	r.seen[reason]++
	detail := ""
	if field != "" {
		detail = " on " + field
	}
	r.say("refused as it must be: %s: %s %s%s. %s", what, e.Code, e.ReasonName, detail, e.Sentence())
	return e, nil
}

// reasons lists the reasons seen, sorted.
func (r *refusals) reasons() []string {
	names := []string{}
	for reason := range r.seen {
		names = append(names, reason.String())
	}
	sort.Strings(names)
	return names
}

// beforeDeal: refusals of NewGame, of a match with an open seat, and of altered
// tokens, on a server with the production defaults.
func (r *refusals) beforeDeal(ctx context.Context, c *engine.Client) error {
	_, err := c.NewGame(ctx, &allfivesv1.NewGameRequest{Seed: proto.Uint64(27)})
	if _, err := r.expect("NewGame with a seed", err, codes.PermissionDenied, allfivesv1.ErrorReason_SEED_NOT_ALLOWED, ""); err != nil {
		return err
	}
	_, err = c.NewGame(ctx, &allfivesv1.NewGameRequest{Rules: &allfivesv1.Rules{Players: 5}})
	if _, err := r.expect("NewGame for 5 players", err, codes.InvalidArgument, allfivesv1.ErrorReason_INVALID_FIELD, "rules.players"); err != nil {
		return err
	}
	// Seat 0 claimed, seat 1 left open.
	game, err := c.NewGame(ctx, &allfivesv1.NewGameRequest{Seats: []*allfivesv1.SeatSetup{{Claim: true}, {}}})
	if err != nil {
		return err
	}
	token, me := game.GetState(), game.GetCredentials()[0].GetCredential()
	_, err = c.Deal(ctx, &allfivesv1.DealRequest{State: token, Viewer: proto.Uint32(0), Credential: me})
	if _, err := r.expect("Deal with seat 1 open", err, codes.FailedPrecondition, allfivesv1.ErrorReason_SEATS_OPEN, ""); err != nil {
		return err
	}
	_, err = c.ClaimSeat(ctx, &allfivesv1.ClaimSeatRequest{State: token, Seat: 0})
	if _, err := r.expect("ClaimSeat of the claimed seat 0", err, codes.FailedPrecondition, allfivesv1.ErrorReason_SEAT_TAKEN, ""); err != nil {
		return err
	}
	_, err = c.Play(ctx, &allfivesv1.PlayRequest{State: token, Seat: 0, Credential: me, Tile: &allfivesv1.Tile{A: 6, B: 6}})
	if _, err := r.expect("Play before the first deal", err, codes.FailedPrecondition, allfivesv1.ErrorReason_WRONG_PHASE, ""); err != nil {
		return err
	}
	_, err = c.Score(ctx, &allfivesv1.ScoreRequest{State: token[:len(token)/4]})
	if _, err := r.expect("Score with a token cut short", err, codes.InvalidArgument, allfivesv1.ErrorReason_TOKEN_MALFORMED, "state"); err != nil {
		return err
	}
	altered := slices.Clone(token)
	altered[len(altered)/2] ^= 0x01
	_, err = c.Score(ctx, &allfivesv1.ScoreRequest{State: altered})
	if _, err := r.expect("Score with one bit of the token flipped", err, codes.InvalidArgument, allfivesv1.ErrorReason_TOKEN_INVALID, "state"); err != nil {
		return err
	}
	// A stream's refusal arrives on its first Recv.
	stream, err := c.Watch(ctx, &allfivesv1.WatchRequest{State: token})
	if err == nil {
		_, err = stream.Recv()
		if err == io.EOF {
			err = nil
		}
	}
	_, err = r.expect("Watch on a server without a match store", err, codes.FailedPrecondition, allfivesv1.ErrorReason_STORE_REQUIRED, "")
	return err
}

// turnRefusals is the partnership match's onTurn hook: on the first human turns, the
// refusals of the seat on turn, of its partner (the other human seat) and of a bot's
// seat; those that need a moment of the hand (a tile that fits one end and not
// another) as soon as one comes. Every refused call leaves the token as it was.
type turnRefusals struct {
	r *refusals
	// left: the refusals still to provoke, by name; each is tried on every turn until
	// done (it returns false when this turn does not allow it).
	left map[string]func(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) (bool, error)
}

func (r *refusals) duringPlay() *turnRefusals {
	tr := &turnRefusals{r: r}
	tr.left = map[string]func(context.Context, *table, uint32, *allfivesv1.GameView) (bool, error){
		"no credential": func(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) (bool, error) {
			_, err := t.c.Score(ctx, &allfivesv1.ScoreRequest{State: t.token, Viewer: proto.Uint32(seat)})
			_, err = r.expect("Score for a seat without its credential", err, codes.PermissionDenied, allfivesv1.ErrorReason_CREDENTIAL_REQUIRED, "")
			return true, err
		},
		"partner's credential": func(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) (bool, error) {
			req := &allfivesv1.PlayRequest{State: t.token, Seat: seat, Tile: v.GetHand()[0], Credential: t.creds[partner(seat)]}
			_, err := t.c.Play(ctx, req)
			_, err = r.expect("Play for the seat on turn with its partner's credential", err, codes.PermissionDenied, allfivesv1.ErrorReason_CREDENTIAL_INVALID, "")
			return true, err
		},
		"bot's seat": func(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) (bool, error) {
			bot := (seat + 1) % 4
			_, err := t.c.Score(ctx, &allfivesv1.ScoreRequest{State: t.token, Viewer: proto.Uint32(bot), Credential: t.creds[seat]})
			_, err = r.expect(fmt.Sprintf("Score as the bot's seat %d", bot), err, codes.PermissionDenied, allfivesv1.ErrorReason_SEAT_IS_BOT, "")
			return true, err
		},
		"out of turn": func(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) (bool, error) {
			other := partner(seat)
			theirs, err := t.c.Score(ctx, &allfivesv1.ScoreRequest{State: t.token, Viewer: proto.Uint32(other), Credential: t.creds[other]})
			if err != nil {
				return true, err
			}
			req := &allfivesv1.PlayRequest{State: t.token, Seat: other, Tile: theirs.GetView().GetHand()[0], Credential: t.creds[other]}
			_, err = t.c.Play(ctx, req)
			e, err := r.expect(fmt.Sprintf("Play by seat %d while seat %d is on turn", other, seat), err, codes.FailedPrecondition, allfivesv1.ErrorReason_NOT_YOUR_TURN, "")
			if err == nil && e.Metadata["turn"] != fmt.Sprint(seat) {
				err = fmt.Errorf("NOT_YOUR_TURN's metadata turn is %q; want %d", e.Metadata["turn"], seat)
			}
			return true, err
		},
		"pip over 6": func(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) (bool, error) {
			req := &allfivesv1.PlayRequest{State: t.token, Seat: seat, Tile: &allfivesv1.Tile{A: 7, B: 0}, Credential: t.creds[seat]}
			_, err := t.c.Play(ctx, req)
			_, err = r.expect("Play of a tile [7:0]", err, codes.InvalidArgument, allfivesv1.ErrorReason_INVALID_FIELD, "tile.a")
			return true, err
		},
		"not in hand": func(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) (bool, error) {
			tile := tileNotIn(v.GetHand())
			req := &allfivesv1.PlayRequest{State: t.token, Seat: seat, Tile: tile, Credential: t.creds[seat]}
			_, err := t.c.Play(ctx, req)
			_, err = r.expect(fmt.Sprintf("Play of %s, not in the hand", tileText(tile)), err, codes.FailedPrecondition, allfivesv1.ErrorReason_TILE_NOT_IN_HAND, "")
			return true, err
		},
		"draw holding a playable tile": func(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) (bool, error) {
			if v.GetMustDraw() {
				return false, nil
			}
			_, err := t.c.Draw(ctx, &allfivesv1.DrawRequest{State: t.token, Seat: seat, Credential: t.creds[seat]})
			_, err = r.expect("Draw holding a playable tile", err, codes.FailedPrecondition, allfivesv1.ErrorReason_MUST_PLAY, "")
			return true, err
		},
		"end not open": func(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) (bool, error) {
			if v.GetMustDraw() || slices.ContainsFunc(v.GetOpenEnds(), func(o *allfivesv1.OpenEnd) bool { return o.GetEnd() == allfivesv1.End_END_UP }) {
				return false, nil
			}
			move := v.GetLegalMoves()[0]
			req := &allfivesv1.PlayRequest{State: t.token, Seat: seat, Tile: move.GetTile(), End: allfivesv1.End_END_UP, Credential: t.creds[seat]}
			_, err := t.c.Play(ctx, req)
			_, err = r.expect(fmt.Sprintf("Play of %s on the UP end, not open", tileText(move.GetTile())), err, codes.FailedPrecondition, allfivesv1.ErrorReason_END_NOT_OPEN, "")
			return true, err
		},
		"wrong end": func(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) (bool, error) {
			for _, move := range v.GetLegalMoves() {
				for _, end := range v.GetOpenEnds() {
					tile := move.GetTile()
					if move.GetEnd() == allfivesv1.End_END_UNSPECIFIED || tile.GetA() == end.GetPip() || tile.GetB() == end.GetPip() {
						continue
					}
					req := &allfivesv1.PlayRequest{State: t.token, Seat: seat, Tile: tile, End: end.GetEnd(), Credential: t.creds[seat]}
					_, err := t.c.Play(ctx, req)
					_, err = r.expect(fmt.Sprintf("Play of %s on the %v end, showing %d", tileText(tile), end.GetEnd(), end.GetPip()), err,
						codes.FailedPrecondition, allfivesv1.ErrorReason_TILE_DOES_NOT_MATCH, "")
					return true, err
				}
			}
			return false, nil
		},
		"ambiguous end": func(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) (bool, error) {
			ends := map[string]int{}
			for _, move := range v.GetLegalMoves() {
				if move.GetEnd() == allfivesv1.End_END_UNSPECIFIED {
					continue
				}
				key := tileText(move.GetTile())
				if ends[key]++; ends[key] < 2 {
					continue
				}
				req := &allfivesv1.PlayRequest{State: t.token, Seat: seat, Tile: move.GetTile(), Credential: t.creds[seat]}
				_, err := t.c.Play(ctx, req)
				_, err = r.expect(fmt.Sprintf("Play of %s, which fits two ends, naming none", key), err,
					codes.FailedPrecondition, allfivesv1.ErrorReason_AMBIGUOUS_END, "")
				return true, err
			}
			return false, nil
		},
	}
	return tr
}

// onTurn tries every refusal still left.
func (tr *turnRefusals) onTurn(ctx context.Context, t *table, seat uint32, v *allfivesv1.GameView) error {
	for name, try := range tr.left {
		done, err := try(ctx, t, seat, v)
		if err != nil {
			return err
		}
		if done {
			delete(tr.left, name)
		}
	}
	return nil
}

// partner is the other human seat of the partnership match (seats 0 and 2).
func partner(seat uint32) uint32 { return (seat + 2) % 4 }

// tileNotIn is the first tile of the set that hand lacks.
func tileNotIn(hand []*allfivesv1.Tile) *allfivesv1.Tile {
	for a := uint32(0); a <= 6; a++ {
		for b := a; b <= 6; b++ {
			if !slices.ContainsFunc(hand, func(t *allfivesv1.Tile) bool { return t.GetA() == a && t.GetB() == b }) {
				return &allfivesv1.Tile{A: a, B: b}
			}
		}
	}
	panic("a hand of all 28 tiles")
}

func tileText(t *allfivesv1.Tile) string { return fmt.Sprintf("[%d:%d]", t.GetA(), t.GetB()) }

// afterMatch: a finished match refuses every move.
func (r *refusals) afterMatch(ctx context.Context, t *table) error {
	dealer := t.firstHuman()
	_, err := t.c.Deal(ctx, &allfivesv1.DealRequest{State: t.token, Viewer: proto.Uint32(dealer), Credential: t.creds[dealer]})
	_, err = r.expect("Deal after the match", err, codes.FailedPrecondition, allfivesv1.ErrorReason_GAME_OVER, "")
	return err
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
