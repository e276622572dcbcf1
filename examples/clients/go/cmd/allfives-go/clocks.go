package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"example.com/allfives/goclient/engine"
	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Turn clocks (docs/rules.md section 11) against a server on its defaults (its lag
// grace 2 s): judged by the server's clock when a call arrives, so what is checked
// here is each decision against the times the server itself stated (a claim refused
// with the moment it will be taken; taken by a server whose clock then read past that
// moment; the late seat's own move refused), never how long anything took on this
// machine.

// clocked is a hot-seat match (this process holds both seats' credentials) on a
// turn clock: the latest token, the view and when that view arrived.
type clocked struct {
	c        *engine.Client
	creds    map[uint32][]byte
	token    []byte
	view     *allfivesv1.GameView
	received time.Time
	// The seats' own moves refused TURN_TIMED_OUT (this machine too slow for the
	// clock), each then claimed by the seat itself: counted, never expected.
	late int
}

func newClocked(ctx context.Context, c *engine.Client, rules *allfivesv1.Rules) (*clocked, error) {
	game, err := c.NewGame(ctx, &allfivesv1.NewGameRequest{
		Rules: rules, Seats: []*allfivesv1.SeatSetup{{Claim: true}, {Claim: true}}, Viewer: proto.Uint32(0),
	})
	if err != nil {
		return nil, err
	}
	m := &clocked{c: c, creds: map[uint32][]byte{}, token: game.GetState(), view: game.GetView(), received: time.Now()}
	for _, cred := range game.GetCredentials() {
		m.creds[cred.GetSeat()] = cred.GetCredential()
	}
	return m, nil
}

// take keeps an answer, and when it arrived.
func (m *clocked) take(token []byte, view *allfivesv1.GameView) {
	m.token, m.view, m.received = token, view, time.Now()
}

func (m *clocked) deal(ctx context.Context) error {
	r, err := m.c.Deal(ctx, &allfivesv1.DealRequest{State: m.token, Viewer: proto.Uint32(0), Credential: m.creds[0]})
	if err != nil {
		return err
	}
	m.take(r.GetState(), r.GetView())
	return nil
}

// step moves the match on by one call: a deal between hands, else the seat on turn's
// move (its first legal move, or a draw), made from its own view. A move refused
// TURN_TIMED_OUT changed nothing; the seat claims its own timeout, and the answer is
// the match after the bot played its turn. The events are the call's.
func (m *clocked) step(ctx context.Context) ([]*allfivesv1.Event, error) {
	if m.view.GetPhase() == allfivesv1.Phase_PHASE_DEALING {
		return nil, m.deal(ctx)
	}
	seat := m.view.GetTurn()
	cred := m.creds[seat]
	seen, err := m.c.Score(ctx, &allfivesv1.ScoreRequest{State: m.token, Viewer: proto.Uint32(seat), Credential: cred})
	if err != nil {
		return nil, err
	}
	v := seen.GetView()
	var r interface {
		GetState() []byte
		GetView() *allfivesv1.GameView
		GetEvents() []*allfivesv1.Event
	}
	if v.GetMustDraw() {
		r, err = m.c.Draw(ctx, &allfivesv1.DrawRequest{State: m.token, Seat: seat, Viewer: proto.Uint32(seat), Credential: cred})
	} else {
		move := v.GetLegalMoves()[0]
		r, err = m.c.Play(ctx, &allfivesv1.PlayRequest{
			State: m.token, Seat: seat, Tile: move.GetTile(), End: move.GetEnd(), Viewer: proto.Uint32(seat), Credential: cred,
		})
	}
	if engine.IsReason(err, allfivesv1.ErrorReason_TURN_TIMED_OUT) {
		m.late++
		r, err = m.c.ClaimTimeout(ctx, &allfivesv1.ClaimTimeoutRequest{State: m.token, Seat: seat, Credential: cred})
	}
	if err != nil {
		return nil, err
	}
	m.take(r.GetState(), r.GetView())
	return r.GetEvents(), nil
}

// movedBy says whether the events hold a play, draw or pass of seat.
func movedBy(events []*allfivesv1.Event, seat uint32) bool {
	for _, e := range events {
		switch {
		case e.GetTilePlayed() != nil && e.GetTilePlayed().GetSeat() == seat,
			e.GetTileDrawn() != nil && e.GetTileDrawn().GetSeat() == seat,
			e.GetPassed() != nil && e.GetPassed().GetSeat() == seat:
			return true
		}
	}
	return false
}

// absentAt is the index of the SeatAbsent of seat for why among events, or -1.
func absentAt(events []*allfivesv1.Event, seat uint32, why allfivesv1.AbsenceReason) int {
	for i, e := range events {
		if a := e.GetSeatAbsent(); a != nil && a.GetSeat() == seat && a.GetReason() == why {
			return i
		}
	}
	return -1
}

// turnClocks: the refusals a clock brings (NO_TURN_CLOCK, TIMEOUT_NOT_DUE,
// SEAT_NOT_HELD, TURN_TIMED_OUT), then a match on a 1-second clock with no bank where
// one seat stops moving: the other claims its timeout once due (ClaimWhenDue), sees
// SeatAbsent and the bot's move for it, and the match goes on; the late seat's move
// from its old token is refused; it plays on, leaves (a bot holds its seat), comes
// back, and the match is played to its end.
func (r *refusals) turnClocks(ctx context.Context, c *engine.Client) (string, error) {
	// No clock: no timeout to claim.
	plain, err := newClocked(ctx, c, &allfivesv1.Rules{Players: 2})
	if err != nil {
		return "", err
	}
	if err := plain.deal(ctx); err != nil {
		return "", err
	}
	if plain.view.GetClock() != nil {
		return "", fmt.Errorf("a match without a clock shows clocks")
	}
	_, err = c.ClaimTimeout(ctx, &allfivesv1.ClaimTimeoutRequest{State: plain.token, Seat: 0, Credential: plain.creds[0]})
	if _, err := r.expect("ClaimTimeout in a match without a clock", err, codes.FailedPrecondition, allfivesv1.ErrorReason_NO_TURN_CLOCK, ""); err != nil {
		return "", err
	}

	// The default clock, 30 s a move and a 60 s bank: a claim at once is long early.
	slow, err := newClocked(ctx, c, &allfivesv1.Rules{Players: 2, Clock: &allfivesv1.TurnClock{}})
	if err != nil {
		return "", err
	}
	rules := slow.view.GetRules()
	if k := rules.GetClock(); k.GetMoveSeconds() != 30 || k.BankSeconds == nil || k.GetBankSeconds() != 60 || k.GetIncrementSeconds() != 0 {
		return "", fmt.Errorf("an empty TurnClock came back as %v; want the defaults 30 s, 60 s, 0", k)
	}
	if a := rules.GetAbsence(); a.GetRule() != allfivesv1.AbsenceRule_ABSENCE_RULE_BOT || a.GetBot() != allfivesv1.BotLevel_BOT_LEVEL_MEDIUM ||
		a.BotTakesSeatAfter == nil || a.GetBotTakesSeatAfter() != 2 {
		return "", fmt.Errorf("the absence option came back as %v; want the defaults (a MEDIUM bot, the seat after 2)", a)
	}
	_, err = c.Leave(ctx, &allfivesv1.LeaveRequest{State: slow.token, Seat: 1, Credential: slow.creds[1]})
	if _, err := r.expect("Leave before the first deal", err, codes.FailedPrecondition, allfivesv1.ErrorReason_WRONG_PHASE, ""); err != nil {
		return "", err
	}
	if err := slow.deal(ctx); err != nil {
		return "", err
	}
	k := slow.view.GetClock()
	if k == nil || k.MoveBeganMs == nil || k.TurnDeadlineMs == nil || k.ClaimableAtMs == nil {
		return "", fmt.Errorf("a dealt clocked match shows no deadline: %v", k)
	}
	if k.GetTurnDeadlineMs() != k.GetMoveBeganMs()+90_000 || k.GetClaimableAtMs() < k.GetTurnDeadlineMs() ||
		len(k.GetBankSeconds()) != 2 || k.GetBankSeconds()[0] != 60 {
		return "", fmt.Errorf("the clocks after the deal: %v; want the deadline 30 + 60 s after the move began", k)
	}
	countdown, _ := engine.NewCountdown(slow.view, slow.received)
	if left := countdown.TimeLeft(slow.received); left != time.Duration(k.GetTurnDeadlineMs()-k.GetNowMs())*time.Millisecond {
		return "", fmt.Errorf("the countdown on the view's arrival shows %v; want turn_deadline_ms - now_ms", left)
	}
	waiting := 1 - slow.view.GetTurn()
	_, err = c.ClaimTimeout(ctx, &allfivesv1.ClaimTimeoutRequest{State: slow.token, Seat: waiting, Credential: slow.creds[waiting]})
	e, err := r.expect("ClaimTimeout at once after the deal", err, codes.FailedPrecondition, allfivesv1.ErrorReason_TIMEOUT_NOT_DUE, "")
	if err != nil {
		return "", err
	}
	if ms, ok := e.ClaimableAtMs(); !ok || ms != k.GetClaimableAtMs() {
		return "", fmt.Errorf("TIMEOUT_NOT_DUE says claimable_at_ms %q; the view said %d", e.Metadata["claimable_at_ms"], k.GetClaimableAtMs())
	}
	if wait, ok := e.NotDueFor(); !ok || wait <= 0 {
		return "", fmt.Errorf("TIMEOUT_NOT_DUE says now_ms %q; want the refusing server's time, before claimable_at_ms", e.Metadata["now_ms"])
	}
	_, err = c.ReturnToSeat(ctx, &allfivesv1.ReturnToSeatRequest{State: slow.token, Seat: waiting, Credential: slow.creds[waiting]})
	if _, err := r.expect("ReturnToSeat for a seat its player plays", err, codes.FailedPrecondition, allfivesv1.ErrorReason_SEAT_NOT_HELD, ""); err != nil {
		return "", err
	}

	// [START go_clock_match]
	// One second a move and no bank: the seat on turn stops moving, and the other seat
	// claims its timeout as soon as the view it was given says it may.
	m, err := newClocked(ctx, c, &allfivesv1.Rules{Players: 2, Target: 100,
		Clock: &allfivesv1.TurnClock{MoveSeconds: 1, BankSeconds: proto.Uint32(0)}})
	if err != nil {
		return "", err
	}
	if err := m.deal(ctx); err != nil {
		return "", err
	}
	late := m.view.GetTurn()
	waiting = 1 - late
	before, dealt := m.token, m.view
	countdown, ok := engine.NewCountdown(dealt, m.received)
	if !ok {
		return "", fmt.Errorf("a match made with a clock shows none")
	}
	claimed, notDue, err := c.ClaimWhenDue(ctx,
		&allfivesv1.ClaimTimeoutRequest{State: m.token, Seat: waiting, Credential: m.creds[waiting]}, countdown)
	if err != nil {
		return "", err
	}
	// [END go_clock_match]
	m.take(claimed.GetState(), claimed.GetView())
	events := claimed.GetEvents()
	if now := m.view.GetClock().GetNowMs(); now < dealt.GetClock().GetClaimableAtMs() {
		return "", fmt.Errorf("a timeout was taken at %d by the server's clock, before its claimable_at_ms %d", now, dealt.GetClock().GetClaimableAtMs())
	}
	if absentAt(events, late, allfivesv1.AbsenceReason_ABSENCE_REASON_TIMED_OUT) != 0 || !movedBy(events[1:], late) {
		return "", fmt.Errorf("the claim's events do not begin with seat %d's SeatAbsent (TIMED_OUT) and the bot's move for it: %v", late, events)
	}
	seats, banks := m.view.GetSeats(), m.view.GetClock().GetBankSeconds()
	if seats[late].GetKind() != allfivesv1.SeatKind_SEAT_KIND_CLAIMED || seats[late].GetTimeoutsInRow() != 1 || banks[late] != 0 {
		return "", fmt.Errorf("after one timeout seat %d is %v with %d in a row; want its player's, 1", late, seats[late].GetKind(), seats[late].GetTimeoutsInRow())
	}
	// The late seat's move, sent from the token it had, arrives after the claim: its
	// time ran out, and nothing is applied.
	mine, err := c.Score(ctx, &allfivesv1.ScoreRequest{State: before, Viewer: proto.Uint32(late), Credential: m.creds[late]})
	if err != nil {
		return "", err
	}
	lead := mine.GetView().GetLegalMoves()[0]
	_, err = c.Play(ctx, &allfivesv1.PlayRequest{State: before, Seat: late, Tile: lead.GetTile(), Credential: m.creds[late]})
	e, err = r.expect("Play by the timed-out seat from its token before the claim", err, codes.FailedPrecondition, allfivesv1.ErrorReason_TURN_TIMED_OUT, "")
	if err != nil {
		return "", err
	}
	if e.Metadata["turn_deadline_ms"] != strconv.FormatUint(dealt.GetClock().GetTurnDeadlineMs(), 10) {
		return "", fmt.Errorf("TURN_TIMED_OUT's turn_deadline_ms is %q; the view said %d", e.Metadata["turn_deadline_ms"], dealt.GetClock().GetTurnDeadlineMs())
	}

	// The match goes on; the late seat's own move in time ends its run of timeouts.
	for steps := 0; ; steps++ {
		if m.view.GetPhase() == allfivesv1.Phase_PHASE_OVER || steps > 200 {
			return "", fmt.Errorf("the late seat %d never moved again", late)
		}
		mover := m.view.GetTurn()
		playing := m.view.GetPhase() == allfivesv1.Phase_PHASE_PLAYING
		lateBefore := m.late
		events, err := m.step(ctx)
		if err != nil {
			return "", err
		}
		if playing && mover == late && m.late == lateBefore && movedBy(events, late) {
			if n := m.view.GetSeats()[late].GetTimeoutsInRow(); n != 0 {
				return "", fmt.Errorf("seat %d moved in time and still has %d timeouts in a row", late, n)
			}
			break
		}
	}

	// The late seat's player leaves: a bot holds the seat until it comes back.
	left, err := c.Leave(ctx, &allfivesv1.LeaveRequest{State: m.token, Seat: late, Credential: m.creds[late]})
	if err != nil {
		return "", err
	}
	m.take(left.GetState(), left.GetView())
	at := absentAt(left.GetEvents(), late, allfivesv1.AbsenceReason_ABSENCE_REASON_LEFT)
	if at < 0 || at+1 >= len(left.GetEvents()) || left.GetEvents()[at+1].GetBotTookSeat().GetSeat() != late ||
		left.GetEvents()[at+1].GetBotTookSeat() == nil {
		return "", fmt.Errorf("Leave's events are not SeatAbsent (LEFT) then BotTookSeat for seat %d: %v", late, left.GetEvents())
	}
	held := m.view.GetSeats()[late]
	if held.GetKind() != allfivesv1.SeatKind_SEAT_KIND_HELD_BY_BOT || held.GetAbsent() != allfivesv1.AbsenceReason_ABSENCE_REASON_LEFT ||
		held.GetBot() != allfivesv1.BotLevel_BOT_LEVEL_MEDIUM {
		return "", fmt.Errorf("after Leave seat %d is %v (%v, %v); want HELD_BY_BOT by the MEDIUM bot, LEFT", late, held.GetKind(), held.GetBot(), held.GetAbsent())
	}
	// The other seat plays on; the bot's moves for the seat come inside its calls.
	botMoves := 0
	for steps := 0; botMoves == 0 && m.view.GetPhase() != allfivesv1.Phase_PHASE_OVER && steps < 50; steps++ {
		if m.view.GetPhase() == allfivesv1.Phase_PHASE_PLAYING && m.view.GetTurn() == late {
			return "", fmt.Errorf("seat %d, which a bot holds, was left on turn", late)
		}
		events, err := m.step(ctx)
		if err != nil {
			return "", err
		}
		if movedBy(events, late) {
			botMoves++
		}
	}
	if m.view.GetPhase() == allfivesv1.Phase_PHASE_OVER {
		return "", fmt.Errorf("the match ended while seat %d was away: nothing to come back to", late)
	}
	back, err := c.ReturnToSeat(ctx, &allfivesv1.ReturnToSeatRequest{State: m.token, Seat: late, Credential: m.creds[late]})
	if err != nil {
		return "", err
	}
	m.take(back.GetState(), back.GetView())
	returned := false
	for _, ev := range back.GetEvents() {
		returned = returned || (ev.GetSeatReturned() != nil && ev.GetSeatReturned().GetSeat() == late)
	}
	if s := m.view.GetSeats()[late]; !returned || s.GetKind() != allfivesv1.SeatKind_SEAT_KIND_CLAIMED ||
		s.GetAbsent() != allfivesv1.AbsenceReason_ABSENCE_REASON_UNSPECIFIED || s.GetTimeoutsInRow() != 0 {
		return "", fmt.Errorf("after ReturnToSeat seat %d is %v (absent %v, %d timeouts in a row), events %v", late, s.GetKind(), s.GetAbsent(), s.GetTimeoutsInRow(), back.GetEvents())
	}

	// To the end, both players back at the table.
	for steps := 0; m.view.GetPhase() != allfivesv1.Phase_PHASE_OVER; steps++ {
		if steps > 2000 {
			return "", fmt.Errorf("the clocked match did not end in 2000 calls")
		}
		if _, err := m.step(ctx); err != nil {
			return "", err
		}
	}
	if m.view.WinnerSide == nil {
		return "", fmt.Errorf("the clocked match ended without a winner")
	}
	return fmt.Sprintf("a claim at once refused TIMEOUT_NOT_DUE with the view's claimable_at_ms; on a 1 s clock, seat %d's timeout claimed by seat %d "+
		"once due (%d TIMEOUT_NOT_DUE waited out), SeatAbsent and the bot's move, its late move refused TURN_TIMED_OUT; it left (the bot moved %d time(s) for it), "+
		"came back, and the match ended after %d moves (%d own moves too late for this machine, claimed)",
		late, waiting, notDue, botMoves, m.view.GetMoves(), m.late), nil
}
