package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// [START go_follow]
// FollowPolicy says how Follow keeps a match followed (docs/clients.md, "Following a
// match"). A zero duration is DefaultFollow's: FollowPolicy{OnRewatch: f} follows on
// the defaults.
type FollowPolicy struct {
	// Liveness is how long a stream may say nothing before any heartbeat told the
	// server's period; after one, the bound is twice Heartbeat.interval_ms.
	Liveness time.Duration
	// The wait between streams: FirstBackoff, doubled at each stream in a row that
	// brought no change and lived less than the liveness bound, up to MaxBackoff; drawn
	// between half and all of it after an error, between none and all after an OK end.
	FirstBackoff, MaxBackoff time.Duration
	// OnRewatch, if set, is told why a stream ended (nil: an OK end; ErrSilent) before
	// each wait.
	OnRewatch func(cause error)
	// OnMessage, if set, is told of every message as it arrives, before a change is
	// handed on: a heartbeat (the stream is alive: clear a "reconnecting" banner), a
	// rematch offer (WatchResponse.rematch, which Follow does not act on).
	OnMessage func(*allfivesv1.WatchResponse)
}

// DefaultFollow: 2 × the default 15 s heartbeat period and some slack before a heartbeat
// says the period; waits of 1 s doubling up to 15 s.
var DefaultFollow = FollowPolicy{Liveness: 35 * time.Second, FirstBackoff: time.Second, MaxBackoff: 15 * time.Second}

// filled is p with every zero (or negative) duration taken from DefaultFollow.
func (p FollowPolicy) filled() FollowPolicy {
	for _, d := range []struct {
		field *time.Duration
		def   time.Duration
	}{
		{&p.Liveness, DefaultFollow.Liveness}, {&p.FirstBackoff, DefaultFollow.FirstBackoff}, {&p.MaxBackoff, DefaultFollow.MaxBackoff},
	} {
		if *d.field <= 0 {
			*d.field = d.def
		}
	}
	return p
}

// ErrSilent is the cause OnRewatch is told of a stream that said nothing, not even a
// heartbeat, for the liveness bound: its connection is taken for dead, and the next
// stream goes on a new one.
var ErrSilent = errors.New("the stream said nothing, not even a heartbeat, for the liveness bound")

// Follow follows a match until it is over (a server with a match store): it calls
// onChange with every change after view (req's state, viewer and credential; view is
// the latest view the caller holds), once each and in order (a CatchUp change, when
// the device missed several, replaces the table), and returns nil after the change
// that ends the match (at once if view is over). It watches again from the last
// state_id seen after every stream that ends: with OK (the server drained, or the
// connection aged), with an error (Watch changes nothing, so every error is tried
// again) except a final one (EndsFollow), or silent for a liveness bound. A dialled
// client's streams go on a connection of Follow's own (closed when it returns), so that
// a silent one can be replaced; the client's calls keep theirs: every Follow on a
// dialled client opens a TCP connection of its own. A FromConn client's Follow watches
// on the caller's connection, and a silent stream is watched again on it. Heartbeats and rematch
// offers are not passed on (FollowPolicy.OnMessage sees them). It returns onChange's
// error at once (the stream cancelled), an *Error for a final refusal, and ctx.Err()
// when ctx ends.
func (c *Client) Follow(ctx context.Context, req *allfivesv1.WatchRequest, view *allfivesv1.GameView,
	policy FollowPolicy, onChange func(*allfivesv1.WatchChange) error) error {
	policy = policy.filled()
	req = proto.Clone(req).(*allfivesv1.WatchRequest)
	req.LastStateId = view.GetStateId()
	over := view.GetPhase() == allfivesv1.Phase_PHASE_OVER
	// A dialled client's streams go on a connection of Follow's own, replaced by a new
	// one after a silent stream (grpc-go has no call that drops a channel's connection
	// and keeps the channel); FromConn's client watches on its own stub.
	stub, conn := c.stub, (*grpc.ClientConn)(nil)
	dial := func() error {
		if c.conn == nil {
			return nil
		}
		if conn != nil {
			conn.Close()
		}
		var err error
		conn, err = grpc.NewClient(c.conn.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err == nil {
			stub = allfivesv1.NewAllFivesServiceClient(conn)
		}
		return err
	}
	if err := dial(); err != nil {
		return err
	}
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	liveness := policy.Liveness
	failures := 0 // streams in a row that brought no change and lived less than the liveness bound
	for !over {
		opened, changed := time.Now(), false
		cause := c.watchOnce(ctx, stub, req, &liveness, policy.OnMessage, func(change *allfivesv1.WatchChange) error {
			if bytes.Equal(change.GetView().GetStateId(), req.LastStateId) {
				return nil // already handed on
			}
			changed = true
			if len(change.GetState()) > 0 {
				req.State = change.GetState()
			}
			req.LastStateId = change.GetView().GetStateId()
			over = change.GetView().GetPhase() == allfivesv1.Phase_PHASE_OVER
			if err := onChange(change); err != nil {
				return &callerError{err}
			}
			if over {
				return errOver
			}
			return nil
		})
		var theirs *callerError
		switch {
		case errors.As(cause, &theirs):
			return theirs.err
		case over:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(cause, ErrSilent):
			if err := dial(); err != nil { // the connection is dead: the next stream opens another
				return err
			}
		case cause != nil:
			e := FromError("Watch", cause)
			if e.EndsFollow() {
				return e
			}
			cause = e // OnRewatch is told the *Error
			// Unreachable: grpc-go's own reconnect backoff (up to two minutes) must not
			// outlast this one's, so the next stream tries a connection at once.
			if e.Code == codes.Unavailable && conn != nil {
				conn.ResetConnectBackoff()
			}
		}
		heard := changed || time.Since(opened) >= liveness
		if heard && !IsReason(cause, allfivesv1.ErrorReason_TOO_MANY_WATCHES) {
			failures = 1
		} else {
			failures++
		}
		if policy.OnRewatch != nil {
			policy.OnRewatch(cause)
		}
		select {
		case <-time.After(policy.backoff(failures, cause == nil)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// watchOnce runs one Watch stream from req, telling told of each message and giving
// each change to take until it
// returns an error, the stream ends (nil: an OK end), fails, or says nothing for
// *liveness (ErrSilent); a heartbeat sets *liveness to twice its period.
func (c *Client) watchOnce(ctx context.Context, stub allfivesv1.AllFivesServiceClient, req *allfivesv1.WatchRequest, liveness *time.Duration,
	told func(*allfivesv1.WatchResponse), take func(*allfivesv1.WatchChange) error) error {
	streamCtx, cancel := context.WithCancel(ctx) // no deadline: a stream lasts
	defer cancel()
	var silent atomic.Bool
	timer := time.AfterFunc(*liveness, func() { silent.Store(true); cancel() })
	defer timer.Stop()
	c.calls.Add(1)
	stream, err := stub.Watch(streamCtx, req)
	for err == nil {
		var m *allfivesv1.WatchResponse
		if m, err = stream.Recv(); err != nil {
			break
		}
		if !timer.Stop() {
			err = ErrSilent // expired meanwhile: the stream is already cancelled
			break
		}
		if beat := m.GetHeartbeat(); beat.GetIntervalMs() > 0 {
			*liveness = 2 * time.Duration(beat.GetIntervalMs()) * time.Millisecond
		}
		if told != nil {
			told(m)
		}
		if change := m.GetChange(); change != nil {
			err = take(change)
		}
		timer.Reset(*liveness) // the time the caller spent on a change does not count
	}
	switch {
	case (silent.Load() || errors.Is(err, ErrSilent)) && ctx.Err() == nil:
		return ErrSilent
	case errors.Is(err, io.EOF), errors.Is(err, errOver):
		return nil
	}
	return err
}

// EndsFollow says a Watch refusal ends Follow: a reason watching again cannot change
// (the match forgotten, the seat's credential refused or missing, a bot's seat, a
// damaged or foreign token, a server without a match store, a request it cannot
// read), or a server without Watch. Anything else, even an INTERNAL without a reason
// (a proxy's reset stream), is tried again: Watch changes nothing.
func (e *Error) EndsFollow() bool {
	switch e.Reason {
	case allfivesv1.ErrorReason_MATCH_FORGOTTEN, allfivesv1.ErrorReason_CREDENTIAL_REQUIRED,
		allfivesv1.ErrorReason_CREDENTIAL_INVALID, allfivesv1.ErrorReason_SEAT_IS_BOT,
		allfivesv1.ErrorReason_STORE_REQUIRED, allfivesv1.ErrorReason_TOKEN_MALFORMED,
		allfivesv1.ErrorReason_TOKEN_UNKNOWN_KEY, allfivesv1.ErrorReason_TOKEN_UNSUPPORTED_VERSION,
		allfivesv1.ErrorReason_TOKEN_INVALID, allfivesv1.ErrorReason_INVALID_FIELD,
		allfivesv1.ErrorReason_MALFORMED_REQUEST:
		return true
	}
	return e.Code == codes.Unimplemented
}

// backoff is the wait before the next stream, the failures-th in a row that brought no
// change (1 after one that did); okEnd: the stream ended with OK.
func (p FollowPolicy) backoff(failures int, okEnd bool) time.Duration {
	step := p.FirstBackoff << min(max(failures-1, 0), 30)
	if step > p.MaxBackoff || step <= 0 {
		step = p.MaxBackoff
	}
	lowest := step / 2
	if okEnd {
		lowest = 0
	}
	return lowest + rand.N(step-lowest+1)
}

// [END go_follow]

// callerError carries onChange's error out of the stream unchanged.
type callerError struct{ err error }

func (e *callerError) Error() string { return fmt.Sprint("onChange: ", e.err) }

// errOver ends the stream after the change that ends the match.
var errOver = errors.New("the match is over")
