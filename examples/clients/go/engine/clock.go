package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
)

// Turn clocks (docs/rules.md section 11) are judged by the server's clock when a call
// arrives; no timer runs anywhere. A view's ClockView gives the server's times in
// milliseconds since the Unix epoch, with now_ms, the server's time when it made the
// view: a device never compares them with its own wall clock (which may be off by
// seconds), only with now_ms, and counts the difference down on its monotonic clock
// from when the view arrived.

// [START go_countdown]
// Countdown is a clocked view's ClockView read against this device's monotonic clock.
type Countdown struct {
	clock *allfivesv1.ClockView
	// When the view arrived: time.Now(), whose monotonic reading Go keeps, so a step
	// of the device's wall clock changes nothing.
	received time.Time
}

// NewCountdown reads view's clocks as of received, the time.Now() taken when the
// answer carrying view arrived. ok is false for a match without a clock.
func NewCountdown(view *allfivesv1.GameView, received time.Time) (Countdown, bool) {
	if view.GetClock() == nil {
		return Countdown{}, false
	}
	return Countdown{clock: view.GetClock(), received: received}, true
}

// Local is when the server's time serverMs comes on this device: as long after the
// view's arrival as it is after the view's now_ms. (now_ms was read when the call
// arrived, before the answer travelled back, so Local errs late by the call's time:
// a countdown shows a little more time than there is (the answer's way back, which
// the lag grace covers), and a claim is never early.)
func (c Countdown) Local(serverMs uint64) time.Time {
	return c.received.Add(time.Duration(int64(serverMs)-int64(c.clock.GetNowMs())) * time.Millisecond)
}

// Deadline is when the seat on turn's time runs out, on this device's clock; ok is
// false when no human seat is on turn (between hands, the match over), and for the
// zero Countdown (of a view without a clock).
func (c Countdown) Deadline() (deadline time.Time, ok bool) {
	if c.clock == nil || c.clock.TurnDeadlineMs == nil {
		return time.Time{}, false
	}
	return c.Local(c.clock.GetTurnDeadlineMs()), true
}

// TimeLeft is the countdown to show at now (time.Now()): the seat on turn's time left,
// never below zero; 0 when no human seat is on turn.
func (c Countdown) TimeLeft(now time.Time) time.Duration {
	deadline, ok := c.Deadline()
	if !ok {
		return 0
	}
	return max(deadline.Sub(now), 0)
}

// ClaimableAt is from when the server takes the seat on turn's timeout, on this
// device's clock (its deadline plus the server's lag grace); ok is false when no
// human seat is on turn, and for the zero Countdown.
func (c Countdown) ClaimableAt() (at time.Time, ok bool) {
	if c.clock == nil || c.clock.ClaimableAtMs == nil {
		return time.Time{}, false
	}
	return c.Local(c.clock.GetClaimableAtMs()), true
}

// [END go_countdown]

// ClaimableAtMs is TIMEOUT_NOT_DUE's metadata "claimable_at_ms": when the server will
// take the timeout, by the refusing server's clock; ok is false for another refusal.
func (e *Error) ClaimableAtMs() (ms uint64, ok bool) {
	if e.Reason != allfivesv1.ErrorReason_TIMEOUT_NOT_DUE {
		return 0, false
	}
	ms, err := strconv.ParseUint(e.Metadata["claimable_at_ms"], 10, 64)
	return ms, err == nil
}

// NotDueFor is how long after a TIMEOUT_NOT_DUE refusal arrived the refusing server
// will take the timeout: its metadata's claimable_at_ms - now_ms, both by that
// server's clock (never below zero). ok is false for another refusal, or one without
// both (a server older than now_ms in the refusal).
func (e *Error) NotDueFor() (wait time.Duration, ok bool) {
	claimable, ok := e.ClaimableAtMs()
	if !ok {
		return 0, false
	}
	now, err := strconv.ParseUint(e.Metadata["now_ms"], 10, 64)
	if err != nil {
		return 0, false
	}
	if claimable <= now {
		return 0, true
	}
	return time.Duration(claimable-now) * time.Millisecond, true
}

// ClaimNotDueAttempts bounds how often ClaimWhenDue claims after TIMEOUT_NOT_DUE. The
// refusal says when the refusing server will take the timeout by its own clock
// (claimable_at_ms, now_ms): one wait is enough unless the next claim reaches a
// replica whose clock is behind that one (within the skew the deployment allows);
// DefaultRetry's backoff, at least 2.5 s before the last claim, covers that, past the
// default --max-clock-skew-ms of 1 s.
const ClaimNotDueAttempts = 6

// [START go_claim_when_due]
// ClaimWhenDue claims the timeout of the seat on turn (req.Seat is the seat claiming,
// with its credential) once countdown says it is due: it sleeps until ClaimableAt,
// then calls ClaimTimeout (retried like any call: CLOCK_SKEW, UNAVAILABLE and the
// other retryable failures, with backoff). Refused TIMEOUT_NOT_DUE, it sleeps the
// refusal's claimable_at_ms - now_ms (the refusing server's clock) from when the
// refusal arrived, and at least a backoff, then claims again, up to
// ClaimNotDueAttempts times. Every other refusal comes back at once: STATE_STALE (a match store took a
// late move or another claim first), WRONG_PHASE or GAME_OVER (no seat on turn).
// notDue counts the TIMEOUT_NOT_DUE refusals waited out. Never past ctx: when ctx
// ends, during a wait or a call, its error (ctx.Err()) comes back.
func (c *Client) ClaimWhenDue(ctx context.Context, req *allfivesv1.ClaimTimeoutRequest, countdown Countdown) (
	resp *allfivesv1.ClaimTimeoutResponse, notDue int, err error,
) {
	at, ok := countdown.ClaimableAt()
	if !ok {
		at = time.Now() // no human seat on turn: the server says why
	}
	backoff := c.retry.Backoff
	for {
		if err := sleepUntil(ctx, at); err != nil {
			return nil, notDue, err
		}
		resp, err = c.ClaimTimeout(ctx, req)
		if err != nil && ctx.Err() != nil {
			return nil, notDue, ctx.Err() // ended by the caller, not refused
		}
		var e *Error
		if err == nil || !errors.As(err, &e) || e.Reason != allfivesv1.ErrorReason_TIMEOUT_NOT_DUE ||
			notDue+1 >= ClaimNotDueAttempts {
			return resp, notDue, err
		}
		notDue++
		refused := time.Now()
		at = refused.Add(backoff/2 + rand.N(backoff/2+1))
		if wait, ok := e.NotDueFor(); ok {
			at = later(at, refused.Add(wait))
		} else if ms, ok := e.ClaimableAtMs(); ok {
			at = later(at, countdown.Local(ms)) // an older server: no now_ms
		}
		backoff = min(2*backoff, c.retry.MaxBackoff)
	}
}

// [END go_claim_when_due]

func sleepUntil(ctx context.Context, at time.Time) error {
	wait := time.Until(at)
	if wait <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
