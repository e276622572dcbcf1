// Package engine is how a backend calls the allfives engine: one connection per
// server, a deadline on every call, retries only for the calls docs/clients.md says
// are safe to repeat, and refusals turned into *Error values carrying the status code,
// the google.rpc.ErrorInfo and the BadRequest's field violations.
package engine

//go:generate sh ../generate.sh

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Retry says how often, and how patiently, a call that is safe to repeat is made
// again after a retryable failure (Error.Retryable).
type Retry struct {
	// Attempts in all, the first included; 1 never retries.
	Attempts int
	// The wait before the second attempt, doubled before each later one (up to
	// MaxBackoff), each wait drawn between half of it and all of it.
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// DefaultRetry: four attempts over about a second and a half.
var DefaultRetry = Retry{Attempts: 4, Backoff: 200 * time.Millisecond, MaxBackoff: 2 * time.Second}

// Client calls one allfives server. It is safe for concurrent use; make one per
// server and keep it.
type Client struct {
	conn    *grpc.ClientConn
	stub    allfivesv1.AllFivesServiceClient
	timeout time.Duration
	retry   Retry
	calls   atomic.Int64
	retries atomic.Int64
}

// [START go_connect]
// Dial makes the client of the server at addr ("127.0.0.1:50051"): one gRPC channel,
// which connects lazily, keeps its HTTP/2 connection, reconnects by itself when the
// server closes it (age, idle, a restart), and resends a call the server refused
// unprocessed during a graceful close. timeout bounds every attempt of every call.
func Dial(addr string, timeout time.Duration, retry Retry) (*Client, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err // a malformed address; nothing is dialled yet
	}
	c := FromConn(allfivesv1.NewAllFivesServiceClient(conn), timeout, retry)
	c.conn = conn
	return c, nil
}

// [END go_connect]

// FromConn wraps a stub made elsewhere (tests give one over an in-memory connection).
func FromConn(stub allfivesv1.AllFivesServiceClient, timeout time.Duration, retry Retry) *Client {
	if retry.Attempts < 1 {
		retry.Attempts = 1
	}
	return &Client{stub: stub, timeout: timeout, retry: retry}
}

// Close closes the connection (a no-op for FromConn's clients).
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

// Calls is how many attempts this client made; Retries how many of them were retries.
func (c *Client) Calls() int64   { return c.calls.Load() }
func (c *Client) Retries() int64 { return c.retries.Load() }

// [START go_call]
// call makes one unary call with a deadline on each attempt. repeatable says the
// request may be sent again (docs/clients.md, "Errors": the token holds the whole
// match and the server's moves are deterministic given it, so the same request gives
// the same answer whether or not an earlier attempt got through; a ClaimSeat only with
// a claim_key). Only retryable failures are retried, with backoff, and never past
// ctx: a refusal comes back at once as an *Error.
func call[Req, Resp any](
	ctx context.Context, c *Client, method string, repeatable bool, req Req,
	rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error),
) (Resp, error) {
	attempts := 1
	if repeatable {
		attempts = c.retry.Attempts
	}
	backoff := c.retry.Backoff
	for attempt := 1; ; attempt++ {
		attemptCtx, cancel := context.WithTimeout(ctx, c.timeout)
		resp, err := rpc(attemptCtx, req)
		cancel()
		c.calls.Add(1)
		if err == nil {
			return resp, nil
		}
		failure := FromError(method, err)
		failure.Attempts = attempt
		if attempt >= attempts || !failure.Retryable() || ctx.Err() != nil {
			return resp, failure
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return resp, failure
		}
		backoff = min(2*backoff, c.retry.MaxBackoff)
		c.retries.Add(1)
	}
}

// [END go_call]

// NewGame makes a match. Repeatable: an answer lost on the way leaves a match nobody
// holds a token of (it is never seen again), and the retry makes another.
func (c *Client) NewGame(ctx context.Context, req *allfivesv1.NewGameRequest) (*allfivesv1.NewGameResponse, error) {
	return call(ctx, c, "NewGame", true, req, c.stub.NewGame)
}

// ClaimSeat claims an open seat. Repeatable only with a claim_key: without one, a
// retry is another claim (another credential; with a match store, STATE_STALE once
// the first was recorded).
func (c *Client) ClaimSeat(ctx context.Context, req *allfivesv1.ClaimSeatRequest) (*allfivesv1.ClaimSeatResponse, error) {
	return call(ctx, c, "ClaimSeat", len(req.GetClaimKey()) > 0, req, c.stub.ClaimSeat)
}

// Deal deals the next hand.
func (c *Client) Deal(ctx context.Context, req *allfivesv1.DealRequest) (*allfivesv1.DealResponse, error) {
	return call(ctx, c, "Deal", true, req, c.stub.Deal)
}

// Play places a tile for the seat on turn.
func (c *Client) Play(ctx context.Context, req *allfivesv1.PlayRequest) (*allfivesv1.PlayResponse, error) {
	return call(ctx, c, "Play", true, req, c.stub.Play)
}

// Draw draws a tile for the seat on turn.
func (c *Client) Draw(ctx context.Context, req *allfivesv1.DrawRequest) (*allfivesv1.DrawResponse, error) {
	return call(ctx, c, "Draw", true, req, c.stub.Draw)
}

// Score answers the sheet and a view; it changes nothing.
func (c *Client) Score(ctx context.Context, req *allfivesv1.ScoreRequest) (*allfivesv1.ScoreResponse, error) {
	return call(ctx, c, "Score", true, req, c.stub.Score)
}

// Suggest asks the server's bot for advice; it changes nothing.
func (c *Client) Suggest(ctx context.Context, req *allfivesv1.SuggestRequest) (*allfivesv1.SuggestResponse, error) {
	return call(ctx, c, "Suggest", true, req, c.stub.Suggest)
}

// CreateInviteCode answers the match's invite code (the same code while it lasts).
func (c *Client) CreateInviteCode(ctx context.Context, req *allfivesv1.CreateInviteCodeRequest) (*allfivesv1.CreateInviteCodeResponse, error) {
	return call(ctx, c, "CreateInviteCode", true, req, c.stub.CreateInviteCode)
}

// OpenInviteCode answers the latest token of the code's match; it changes nothing.
func (c *Client) OpenInviteCode(ctx context.Context, req *allfivesv1.OpenInviteCodeRequest) (*allfivesv1.OpenInviteCodeResponse, error) {
	return call(ctx, c, "OpenInviteCode", true, req, c.stub.OpenInviteCode)
}

// ClaimTimeout applies the timeout of the seat on turn, whose time has run out
// (claimable_at_ms has passed by the server's clock), for req.Seat, any seat of the
// match: a bot plays the turn, or takes the seat, or the seat forfeits, as the match's
// Rules.absence says. Refused TIMEOUT_NOT_DUE before then (ClaimWhenDue waits for the
// moment and claims again). Repeatable, as a move is.
func (c *Client) ClaimTimeout(ctx context.Context, req *allfivesv1.ClaimTimeoutRequest) (*allfivesv1.ClaimTimeoutResponse, error) {
	return call(ctx, c, "ClaimTimeout", true, req, c.stub.ClaimTimeout)
}

// Leave hands req.Seat to a bot until its player comes back (ReturnToSeat), or
// forfeits the match, as the match's Rules.absence says. From the first deal until
// the match is over; the seat's credential still shows its view.
func (c *Client) Leave(ctx context.Context, req *allfivesv1.LeaveRequest) (*allfivesv1.LeaveResponse, error) {
	return call(ctx, c, "Leave", true, req, c.stub.Leave)
}

// ReturnToSeat gives req.Seat, which a bot holds (SEAT_KIND_HELD_BY_BOT: its player
// left or timed out), back to its player, who plays on from the seat's next turn.
// Refused SEAT_NOT_HELD for a seat no bot holds.
func (c *Client) ReturnToSeat(ctx context.Context, req *allfivesv1.ReturnToSeatRequest) (*allfivesv1.ReturnToSeatResponse, error) {
	return call(ctx, c, "ReturnToSeat", true, req, c.stub.ReturnToSeat)
}

// Watch opens a stream of the match's changes. It has no deadline of its own (a
// stream lasts; ctx ends it) and is not retried here: the caller watches again, with
// the last state_id it saw, whenever a stream ends. Errors of Recv are read with
// FromError("Watch", err).
func (c *Client) Watch(ctx context.Context, req *allfivesv1.WatchRequest) (grpc.ServerStreamingClient[allfivesv1.WatchResponse], error) {
	c.calls.Add(1)
	stream, err := c.stub.Watch(ctx, req)
	if err != nil {
		return nil, FromError("Watch", err)
	}
	return stream, nil
}
