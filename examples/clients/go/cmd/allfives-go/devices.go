package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"example.com/allfives/goclient/engine"
	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/protobuf/proto"
)

// device is one player's device in a two-player match through the server's match
// store: it holds its own seat's credential only, learns every move (its own too) from
// its Watch stream, and plays on its turn from the token the stream gave it.
type device struct {
	c       *engine.Client
	seat    uint32
	cred    []byte
	token   []byte
	view    *allfivesv1.GameView
	pause   time.Duration
	say     func(format string, args ...any)
	acted   []byte // the state_id last acted on
	changes int
	catchUp int
	watches atomic.Int32 // its Watch streams opened (read by twoDevices' goroutine too)
}

// take checks a change and keeps it as the latest: it follows the last one seen (one
// unbroken chain of state ids) unless it says it is a catch-up; the view is this
// seat's; no event shows a tile the other seat drew.
func (d *device) take(change *allfivesv1.WatchChange) error {
	v := change.GetView()
	if change.GetCatchUp() {
		d.catchUp++
	} else if !bytes.Equal(v.GetPreviousStateId(), d.view.GetStateId()) {
		return fmt.Errorf("seat %d: a change that does not follow the last one seen, and is no catch-up", d.seat)
	}
	if v.Viewer == nil || v.GetViewer() != d.seat || uint32(len(v.GetHand())) != v.GetHandSizes()[d.seat] {
		return fmt.Errorf("seat %d: a change that is not this seat's view", d.seat)
	}
	for _, e := range change.GetEvents() {
		if drawn := e.GetTileDrawn(); drawn != nil && (drawn.GetTile() != nil) != (drawn.GetSeat() == d.seat) {
			return fmt.Errorf("seat %d: seat %d's drawn tile shown, or hidden from its drawer", d.seat, drawn.GetSeat())
		}
	}
	d.token, d.view = change.GetState(), v
	d.changes++
	return nil
}

// act makes this device's move if the latest state waits for it (once per state): the
// host deals every hand after the first (twoDevices deals the first); the seat on turn
// plays its first legal move, or draws. The answer comes back on the stream, so only a
// refusal matters here, and STATE_STALE only says the match moved on first (the stream
// will show how).
func (d *device) act(ctx context.Context) error {
	v := d.view
	if bytes.Equal(d.acted, v.GetStateId()) {
		return nil
	}
	var err error
	switch {
	case v.GetPhase() == allfivesv1.Phase_PHASE_DEALING && d.seat == 0 && v.GetHandNumber() > 0:
		time.Sleep(d.pause)
		_, err = d.c.Deal(ctx, &allfivesv1.DealRequest{State: d.token, Viewer: proto.Uint32(d.seat), Credential: d.cred})
	case v.GetPhase() == allfivesv1.Phase_PHASE_PLAYING && v.GetTurn() == d.seat && v.GetMustDraw():
		time.Sleep(d.pause)
		_, err = d.c.Draw(ctx, &allfivesv1.DrawRequest{State: d.token, Seat: d.seat, Viewer: proto.Uint32(d.seat), Credential: d.cred})
	case v.GetPhase() == allfivesv1.Phase_PHASE_PLAYING && v.GetTurn() == d.seat:
		time.Sleep(d.pause)
		move := v.GetLegalMoves()[0]
		_, err = d.c.Play(ctx, &allfivesv1.PlayRequest{
			State: d.token, Seat: d.seat, Tile: move.GetTile(), End: move.GetEnd(),
			Viewer: proto.Uint32(d.seat), Credential: d.cred,
		})
	default:
		return nil
	}
	if err != nil && !engine.IsReason(err, allfivesv1.ErrorReason_STATE_STALE) {
		// Not marked as acted on: the engine package has already retried what was
		// safe to retry, so the caller reports the move's own failure.
		return err
	}
	// Done, or STATE_STALE: the other device moved first, and its state is on the way.
	d.acted = v.GetStateId()
	return nil
}

// [START go_watch]
// follow follows the match as this device's seat until it is over, acting on its
// turns, with the engine package's Follow: it watches again, from the last state_id
// seen, each time a stream ends (the connection aged every second in CI). The waits
// between streams are short here, for a test's match; a device keeps DefaultFollow's.
func (d *device) follow(ctx context.Context) error {
	d.watches.Store(1)
	policy := engine.DefaultFollow
	policy.FirstBackoff, policy.MaxBackoff = 20*time.Millisecond, 500*time.Millisecond
	policy.OnRewatch = func(cause error) {
		d.watches.Add(1)
		if cause != nil {
			d.say("seat %d: the stream broke (%v); watching again", d.seat, cause)
		}
	}
	if err := d.act(ctx); err != nil {
		return fmt.Errorf("seat %d: a move failed: %w", d.seat, err)
	}
	err := d.c.Follow(ctx, &allfivesv1.WatchRequest{State: d.token, Viewer: proto.Uint32(d.seat), Credential: d.cred},
		d.view, policy, func(change *allfivesv1.WatchChange) error {
			if err := d.take(change); err != nil {
				return err
			}
			if err := d.act(ctx); err != nil {
				return fmt.Errorf("seat %d: a move failed: %w", d.seat, err)
			}
			return nil
		})
	if err != nil {
		return fmt.Errorf("seat %d: %w", d.seat, err)
	}
	return nil
}

// [END go_watch]

// twoDevices plays a match between two devices, one goroutine and one connection
// each: the host makes the match (seat 0 claimed, seat 1 open) and an invite code; the
// guest opens the code, claims seat 1 with a claim key, and both follow the match on
// their own streams to its end, which must be the same state for both. The first hand
// is dealt here, once each device has watched minWatches times.
func twoDevices(ctx context.Context, addr string, timeout time.Duration, target uint32, pause time.Duration, minWatches int,
	say func(string, ...any)) (string, error) {
	started := time.Now()
	// The first device to fail stops the other (it would otherwise wait out the deadline).
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	dial := func() (*engine.Client, error) { return engine.Dial(addr, timeout, engine.DefaultRetry) }
	hostClient, err := dial()
	if err != nil {
		return "", err
	}
	defer hostClient.Close()
	guestClient, err := dial()
	if err != nil {
		return "", err
	}
	defer guestClient.Close()

	codes := make(chan string, 1)
	seated := make(chan []byte, 1) // the guest's claim's state, the first deal's
	results := make(chan error, 2)
	host := &device{c: hostClient, seat: 0, pause: pause, say: say}
	guest := &device{c: guestClient, seat: 1, pause: pause, say: say}
	go func() {
		results <- func() error {
			game, err := host.c.NewGame(ctx, &allfivesv1.NewGameRequest{
				Rules:  &allfivesv1.Rules{Players: 2, Target: target},
				Seats:  []*allfivesv1.SeatSetup{{Claim: true}, {}},
				Viewer: proto.Uint32(0),
			})
			if err != nil {
				return err
			}
			host.cred, host.token, host.view = game.GetCredentials()[0].GetCredential(), game.GetState(), game.GetView()
			code, err := host.c.CreateInviteCode(ctx, &allfivesv1.CreateInviteCodeRequest{State: host.token, Viewer: 0, Credential: host.cred})
			if err != nil {
				return err
			}
			codes <- code.GetCode()
			return host.follow(ctx)
		}()
	}()
	go func() {
		results <- func() error {
			var code string
			select {
			case code = <-codes:
			case <-ctx.Done():
				return ctx.Err()
			}
			opened, err := guest.c.OpenInviteCode(ctx, &allfivesv1.OpenInviteCodeRequest{Code: code})
			if err != nil {
				return err
			}
			claimed, err := guest.c.ClaimSeat(ctx, &allfivesv1.ClaimSeatRequest{State: opened.GetState(), Seat: 1, ClaimKey: newClaimKey()})
			if err != nil {
				return err
			}
			guest.cred, guest.token, guest.view = claimed.GetCredential().GetCredential(), claimed.GetState(), claimed.GetView()
			say("seat 1 claimed through invite code %s", code)
			seated <- claimed.GetState()
			return guest.follow(ctx)
		}()
	}()
	// The first hand is dealt once each device has watched minWatches times (with 2: its
	// first stream ended with its connection's age, and its follow opened another from
	// the last state id), so every follow is shown resuming, however fast the match then
	// goes. A device that stops first says why; stop(), deferred, ends the other.
	stopped := func(err error) error {
		if err == nil {
			err = errors.New("a device's follow ended before the first deal")
		}
		return err
	}
	var state []byte
	select {
	case state = <-seated:
	case err := <-results:
		return "", stopped(err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
	guard := time.After(30 * time.Second) // a hang guard: connections that never age
	for int(host.watches.Load()) < minWatches || int(guest.watches.Load()) < minWatches {
		select {
		case <-time.After(20 * time.Millisecond):
		case err := <-results:
			return "", stopped(err)
		case <-guard:
			return "", fmt.Errorf("the devices watched %d and %d times in 30 s; want %d each before the first deal (their connections never aged?)",
				host.watches.Load(), guest.watches.Load(), minWatches)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if _, err := host.c.Deal(ctx, &allfivesv1.DealRequest{State: state, Viewer: proto.Uint32(0), Credential: host.cred}); err != nil {
		return "", fmt.Errorf("seat 0: the first deal failed: %w", err)
	}
	for range 2 {
		if err := <-results; err != nil {
			return "", err
		}
	}
	a, b := host.view.GetStateId(), guest.view.GetStateId()
	if !bytes.Equal(a, b) {
		return "", fmt.Errorf("the devices ended on different states: %x and %x", a, b)
	}
	for _, d := range []*device{host, guest} {
		if int(d.watches.Load()) < minWatches {
			return "", fmt.Errorf("seat %d watched %d times; want at least %d (its connection never aged mid-match)", d.seat, d.watches.Load(), minWatches)
		}
	}
	v := host.view
	// Calls sent while a connection aged were resent by grpc-go itself, unseen here: the
	// retries counted are the engine package's, after a failure grpc-go reported.
	return fmt.Sprintf("match over in %.1f s, scores %d %d, side %d wins; seat 0: %d changes from %d Watch streams (%d catch-ups), seat 1: %d changes from %d streams (%d catch-ups); %d calls, %d retried; both at last state %x",
		time.Since(started).Seconds(), v.GetScores()[0].GetScore(), v.GetScores()[1].GetScore(), v.GetWinnerSide(),
		host.changes, host.watches.Load(), host.catchUp, guest.changes, guest.watches.Load(), guest.catchUp,
		hostClient.Calls()+guestClient.Calls(), hostClient.Retries()+guestClient.Retries(), a), nil
}
