package main

import (
	"bytes"
	"context"
	"fmt"

	"example.com/allfives/goclient/engine"
	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/protobuf/proto"
)

// table is one match this process plays for its human seats (their credentials
// claimed in NewGame), the server playing the bots. It keeps the latest token and
// checks every answer against the API's promises.
type table struct {
	c     *engine.Client
	name  string
	creds map[uint32][]byte // the human seats' credentials
	token []byte
	view  *allfivesv1.GameView
	turns int // human turns played
	// onTurn runs before each human move with the seat on turn and its view (the
	// refusals hook in here).
	onTurn func(ctx context.Context, t *table, seat uint32, seen *allfivesv1.GameView) error
}

// [START go_new_game]
// newTable makes a match: seats lists who plays each seat, a bot level or
// BOT_LEVEL_UNSPECIFIED for a human seat, which is claimed in this call (hot seat:
// this process holds every human seat's credential).
func newTable(ctx context.Context, c *engine.Client, name string, rules *allfivesv1.Rules, seats []allfivesv1.BotLevel) (*table, error) {
	setup := make([]*allfivesv1.SeatSetup, len(seats))
	for i, bot := range seats {
		setup[i] = &allfivesv1.SeatSetup{Bot: bot, Claim: bot == allfivesv1.BotLevel_BOT_LEVEL_UNSPECIFIED}
	}
	game, err := c.NewGame(ctx, &allfivesv1.NewGameRequest{Rules: rules, Seats: setup})
	if err != nil {
		return nil, err
	}
	t := &table{c: c, name: name, creds: map[uint32][]byte{}, token: game.GetState(), view: game.GetView()}
	for _, cred := range game.GetCredentials() {
		t.creds[cred.GetSeat()] = cred.GetCredential() // 16 bytes: keep them secret
	}
	// [END go_new_game]
	if len(t.creds) != countHumans(seats) {
		return nil, fmt.Errorf("%s: %d credentials for %d human seats", name, len(t.creds), countHumans(seats))
	}
	if t.view.GetPhase() != allfivesv1.Phase_PHASE_DEALING || len(t.view.GetPreviousStateId()) != 0 || len(t.view.GetStateId()) == 0 {
		return nil, fmt.Errorf("%s: NewGame's view is not a new match's: %v", name, t.view.GetPhase())
	}
	return t, nil
}

func countHumans(seats []allfivesv1.BotLevel) int {
	n := 0
	for _, b := range seats {
		if b == allfivesv1.BotLevel_BOT_LEVEL_UNSPECIFIED {
			n++
		}
	}
	return n
}

// firstHuman is the lowest human seat: it deals.
func (t *table) firstHuman() uint32 {
	first := uint32(len(t.view.GetHandSizes()) + 4)
	for seat := range t.creds {
		first = min(first, seat)
	}
	return first
}

// [START go_game_loop]
// play plays the match to its end: deal between hands, and for the seat on turn (a
// human's: the server has played its bots by the time a call returns) its own view
// from Score, then Draw if it must, else the first of its legal moves.
func (t *table) play(ctx context.Context) error {
	for t.view.GetPhase() != allfivesv1.Phase_PHASE_OVER {
		if t.view.GetPhase() == allfivesv1.Phase_PHASE_DEALING {
			dealer := t.firstHuman()
			r, err := t.c.Deal(ctx, &allfivesv1.DealRequest{State: t.token, Viewer: proto.Uint32(dealer), Credential: t.creds[dealer]})
			if err != nil {
				return err
			}
			if err := t.accept(r.GetState(), r.GetView(), r.GetEvents(), dealer); err != nil {
				return err
			}
			continue
		}
		seat := t.view.GetTurn()
		cred := t.creds[seat]
		seen, err := t.c.Score(ctx, &allfivesv1.ScoreRequest{State: t.token, Viewer: proto.Uint32(seat), Credential: cred})
		if err != nil {
			return err
		}
		if err := t.beforeMove(ctx, seat, seen.GetView()); err != nil {
			return err
		}
		var r interface {
			GetState() []byte
			GetView() *allfivesv1.GameView
			GetEvents() []*allfivesv1.Event
		}
		if seen.GetView().GetMustDraw() {
			r, err = t.c.Draw(ctx, &allfivesv1.DrawRequest{State: t.token, Seat: seat, Viewer: proto.Uint32(seat), Credential: cred})
		} else {
			move := seen.GetView().GetLegalMoves()[0]
			r, err = t.c.Play(ctx, &allfivesv1.PlayRequest{
				State: t.token, Seat: seat, Tile: move.GetTile(), End: move.GetEnd(),
				Viewer: proto.Uint32(seat), Credential: cred,
			})
		}
		if err != nil {
			return err
		}
		if err := t.accept(r.GetState(), r.GetView(), r.GetEvents(), seat); err != nil {
			return err
		}
	}
	return nil
}

// [END go_game_loop]

// beforeMove checks the view of the seat on turn (a human seat's; Score changed
// nothing, and shows that seat's hand and what it may do), then runs the onTurn hook.
func (t *table) beforeMove(ctx context.Context, seat uint32, v *allfivesv1.GameView) error {
	t.turns++
	if _, human := t.creds[seat]; !human {
		return fmt.Errorf("%s: a call returned with bot seat %d on turn", t.name, seat)
	}
	if err := t.checkOwnView(v, seat); err != nil {
		return err
	}
	if t.onTurn != nil {
		return t.onTurn(ctx, t, seat, v)
	}
	return nil
}

func (t *table) checkOwnView(v *allfivesv1.GameView, seat uint32) error {
	switch {
	case !bytes.Equal(v.GetStateId(), t.view.GetStateId()):
		return fmt.Errorf("%s: Score answered another state than the token's", t.name)
	case v.GetViewer() != seat || v.GetTurn() != seat:
		return fmt.Errorf("%s: Score for seat %d answered viewer %d, turn %d", t.name, seat, v.GetViewer(), v.GetTurn())
	case uint32(len(v.GetHand())) != v.GetHandSizes()[seat]:
		return fmt.Errorf("%s: seat %d sees %d tiles of its %d", t.name, seat, len(v.GetHand()), v.GetHandSizes()[seat])
	case v.GetMustDraw() == (len(v.GetLegalMoves()) > 0):
		return fmt.Errorf("%s: must_draw is %v with %d legal moves", t.name, v.GetMustDraw(), len(v.GetLegalMoves()))
	}
	return nil
}

// side is the side a seat scores for.
func side(rules *allfivesv1.Rules, seat uint32) uint32 {
	if rules.GetPartnership() {
		return seat % 2
	}
	return seat
}

// accept takes an answer of Deal, Play or Draw made for viewer, after checking it:
// a new token of at most 512 bytes (no seat has a display name), one link further in
// the chain of state ids, the move counter up by the deals, plays and draws among the
// events, each side's score up by exactly the points the events announce, the view
// the viewer's, no drawn tile of another seat shown, 28 tiles in all during a hand.
func (t *table) accept(token []byte, v *allfivesv1.GameView, events []*allfivesv1.Event, viewer uint32) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s, move %d: %s", t.name, t.view.GetMoves(), fmt.Sprintf(format, args...))
	}
	if len(token) == 0 || len(token) > 512 || bytes.Equal(token, t.token) {
		return fail("a token of %d bytes, or the same one again", len(token))
	}
	if !bytes.Equal(v.GetPreviousStateId(), t.view.GetStateId()) || bytes.Equal(v.GetStateId(), t.view.GetStateId()) {
		return fail("previous_state_id is not the last state_id")
	}
	if v.Viewer == nil || v.GetViewer() != viewer {
		return fail("a view for %d, asked for %d", v.GetViewer(), viewer)
	}
	rules := t.view.GetRules()
	moves := t.view.GetMoves()
	gained := map[uint32]int32{}
	for _, e := range events {
		switch {
		case e.GetDealt() != nil, e.GetTileDrawn() != nil:
			moves++
		case e.GetTilePlayed() != nil:
			moves++
			gained[side(rules, e.GetTilePlayed().GetSeat())] += int32(e.GetTilePlayed().GetPoints())
		case e.GetHandEnded() != nil:
			for _, s := range e.GetHandEnded().GetSettlement() {
				gained[s.GetSide()] += s.GetPoints()
			}
		}
		if d := e.GetTileDrawn(); d != nil && (d.GetTile() != nil) != (d.GetSeat() == viewer) {
			return fail("seat %d's drawn tile shown to seat %d, or hidden from its drawer", d.GetSeat(), viewer)
		}
	}
	if v.GetMoves() != moves {
		return fail("moves went from %d to %d; the events say %d", t.view.GetMoves(), v.GetMoves(), moves)
	}
	for i, s := range v.GetScores() {
		before := t.view.GetScores()[i].GetScore()
		if s.GetScore() != before+gained[s.GetSide()] {
			return fail("side %d's score went from %d to %d; the events say %+d", s.GetSide(), before, s.GetScore(), gained[s.GetSide()])
		}
	}
	if uint32(len(v.GetHand())) != v.GetHandSizes()[viewer] {
		return fail("the viewer sees %d tiles of its %d", len(v.GetHand()), v.GetHandSizes()[viewer])
	}
	if v.GetPhase() == allfivesv1.Phase_PHASE_PLAYING {
		tiles := v.GetBoneyardSize() + uint32(len(v.GetLayout()))
		for _, n := range v.GetHandSizes() {
			tiles += n
		}
		if tiles != 28 {
			return fail("%d tiles in hands, boneyard and layout", tiles)
		}
	}
	t.token, t.view = token, v
	return nil
}

// finish checks the end of the match against Score's sheet: a winner at or past the
// target, the sheet's running totals adding up to the final scores.
func (t *table) finish(ctx context.Context) (string, error) {
	sheet, err := t.c.Score(ctx, &allfivesv1.ScoreRequest{State: t.token})
	if err != nil {
		return "", err
	}
	v, s := t.view, sheet.GetSheet()
	fail := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%s, the end: %s", t.name, fmt.Sprintf(format, args...))
	}
	if v.WinnerSide == nil || s.WinnerSide == nil || s.GetWinnerSide() != v.GetWinnerSide() {
		return fail("the view and the sheet do not name the same winner")
	}
	if sheet.GetView().Viewer != nil || len(sheet.GetView().GetHand()) != 0 {
		return fail("Score without a viewer showed a hand")
	}
	winner := v.GetScores()[v.GetWinnerSide()].GetScore()
	if winner < int32(v.GetRules().GetTarget()) {
		return fail("the winner has %d of the target %d", winner, v.GetRules().GetTarget())
	}
	for _, seat := range v.GetWinnerSeats() {
		if side(v.GetRules(), seat) != v.GetWinnerSide() {
			return fail("winner seat %d is not of side %d", seat, v.GetWinnerSide())
		}
	}
	totals := map[uint32]int32{}
	rows := s.GetRows()
	if s.GetCarried() != nil {
		rows = append([]*allfivesv1.SheetRow{s.GetCarried()}, rows...)
	}
	for _, row := range rows {
		for _, line := range row.GetSides() {
			totals[line.GetSide()] += line.GetPlay() + line.GetSettlement()
			if totals[line.GetSide()] != line.GetTotal() {
				return fail("hand %d: side %d's total %d does not add up (%d)", row.GetFirstHand(), line.GetSide(), line.GetTotal(), totals[line.GetSide()])
			}
		}
	}
	scores := ""
	for _, sc := range v.GetScores() {
		if totals[sc.GetSide()] != sc.GetScore() {
			return fail("side %d scores %d, its sheet %d", sc.GetSide(), sc.GetScore(), totals[sc.GetSide()])
		}
		scores += fmt.Sprintf(" %d", sc.GetScore())
	}
	return fmt.Sprintf("over after %d hands and %d moves, scores%s, side %d (seats %v) wins",
		v.GetHandNumber(), v.GetMoves(), scores, v.GetWinnerSide(), v.GetWinnerSeats()), nil
}
