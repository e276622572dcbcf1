package engine

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// flaky is a fake server: its first `failures` calls of each method are refused
// with `refusal`, later ones answered.
type flaky struct {
	allfivesv1.UnimplementedAllFivesServiceServer
	mu       sync.Mutex
	failures int
	refusal  error
	seen     map[string]int
}

func (f *flaky) next(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen[method]++
	if f.seen[method] <= f.failures {
		return f.refusal
	}
	return nil
}

func (f *flaky) Play(context.Context, *allfivesv1.PlayRequest) (*allfivesv1.PlayResponse, error) {
	if err := f.next("Play"); err != nil {
		return nil, err
	}
	return &allfivesv1.PlayResponse{State: []byte("next")}, nil
}

func (f *flaky) ClaimSeat(context.Context, *allfivesv1.ClaimSeatRequest) (*allfivesv1.ClaimSeatResponse, error) {
	if err := f.next("ClaimSeat"); err != nil {
		return nil, err
	}
	return &allfivesv1.ClaimSeatResponse{State: []byte("claimed")}, nil
}

func refusal(t *testing.T, code codes.Code, reason allfivesv1.ErrorReason, field string) error {
	t.Helper()
	st := status.New(code, "refused by the fake")
	info := &errdetails.ErrorInfo{Reason: reason.String(), Domain: Domain, Metadata: map[string]string{"turn": "1"}}
	if field != "" {
		bad := &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: "out of range"}}}
		st, _ = st.WithDetails(info, bad)
	} else {
		st, _ = st.WithDetails(info)
	}
	return st.Err()
}

// client serves f over an in-memory connection and answers its client.
func client(t *testing.T, f *flaky) *Client {
	t.Helper()
	f.seen = map[string]int{}
	return serve(t, f)
}

// serve serves fake over an in-memory connection and answers its client.
func serve(t *testing.T, fake allfivesv1.AllFivesServiceServer) *Client {
	t.Helper()
	listener := bufconn.Listen(1 << 16)
	server := grpc.NewServer()
	allfivesv1.RegisterAllFivesServiceServer(server, fake)
	go server.Serve(listener)
	t.Cleanup(server.Stop)
	conn, err := grpc.NewClient("passthrough:///fake",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return listener.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return FromConn(allfivesv1.NewAllFivesServiceClient(conn), time.Second,
		Retry{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond})
}

func TestRetriesARetryableFailureUntilAnswered(t *testing.T) {
	f := &flaky{failures: 2, refusal: refusal(t, codes.Unavailable, allfivesv1.ErrorReason_STORE_UNAVAILABLE, "")}
	c := client(t, f)
	resp, err := c.Play(context.Background(), &allfivesv1.PlayRequest{State: []byte("t")})
	if err != nil || string(resp.GetState()) != "next" {
		t.Fatalf("Play: %v, %v; want the third attempt's answer", resp, err)
	}
	if f.seen["Play"] != 3 || c.Retries() != 2 {
		t.Fatalf("the server saw %d calls, the client counted %d retries; want 3 and 2", f.seen["Play"], c.Retries())
	}
}

func TestGivesUpAfterItsAttempts(t *testing.T) {
	f := &flaky{failures: 10, refusal: refusal(t, codes.ResourceExhausted, allfivesv1.ErrorReason_OVERLOADED, "")}
	c := client(t, f)
	_, err := c.Play(context.Background(), &allfivesv1.PlayRequest{})
	e := FromError("Play", err)
	if e.Reason != allfivesv1.ErrorReason_OVERLOADED || e.Attempts != 3 || f.seen["Play"] != 3 {
		t.Fatalf("got %v after %d calls; want OVERLOADED after 3 attempts", err, f.seen["Play"])
	}
}

func TestNeverRetriesARefusal(t *testing.T) {
	f := &flaky{failures: 1, refusal: refusal(t, codes.InvalidArgument, allfivesv1.ErrorReason_INVALID_FIELD, "tile.a")}
	c := client(t, f)
	_, err := c.Play(context.Background(), &allfivesv1.PlayRequest{})
	e := FromError("Play", err)
	if f.seen["Play"] != 1 || e.Attempts != 1 {
		t.Fatalf("a refusal was sent %d times; want once", f.seen["Play"])
	}
	if e.Code != codes.InvalidArgument || e.Reason != allfivesv1.ErrorReason_INVALID_FIELD || e.Domain != Domain ||
		e.Field() != "tile.a" || e.Violations[0].Description != "out of range" || e.Metadata["turn"] != "1" {
		t.Fatalf("the details were misread: %+v", e)
	}
	if !IsReason(err, allfivesv1.ErrorReason_INVALID_FIELD) || IsReason(err, allfivesv1.ErrorReason_TOKEN_INVALID) {
		t.Fatal("IsReason does not tell the reasons apart")
	}
}

// A ClaimSeat without a claim_key is a new claim each time: never resent. With one it
// is the same claim, and is retried like any call.
func TestClaimSeatIsRetriedOnlyWithAClaimKey(t *testing.T) {
	f := &flaky{failures: 1, refusal: status.Error(codes.Unavailable, "connection reset")}
	c := client(t, f)
	if _, err := c.ClaimSeat(context.Background(), &allfivesv1.ClaimSeatRequest{Seat: 1}); err == nil || f.seen["ClaimSeat"] != 1 {
		t.Fatalf("a keyless ClaimSeat: %v after %d calls; want UNAVAILABLE after 1", err, f.seen["ClaimSeat"])
	}
	f.seen["ClaimSeat"] = 0
	key := []byte("0123456789abcdef")
	if _, err := c.ClaimSeat(context.Background(), &allfivesv1.ClaimSeatRequest{Seat: 1, ClaimKey: key}); err != nil || f.seen["ClaimSeat"] != 2 {
		t.Fatalf("a keyed ClaimSeat: %v after %d calls; want an answer after 2", err, f.seen["ClaimSeat"])
	}
}

// An unknown reason (a newer server's) is read by its code: no constant, the name kept.
func TestAnUnknownReasonFallsBackToTheCode(t *testing.T) {
	st, _ := status.New(codes.Unavailable, "new").WithDetails(&errdetails.ErrorInfo{Reason: "SOMETHING_NEW", Domain: Domain})
	e := FromError("Deal", st.Err())
	if e.Reason != allfivesv1.ErrorReason_ERROR_REASON_UNSPECIFIED || e.ReasonName != "SOMETHING_NEW" || !e.Retryable() ||
		e.Sentence() != CodeSentence(codes.Unavailable) {
		t.Fatalf("an unknown reason was misread: %+v", e)
	}
}

// Only our ErrorInfo is read, the first of ours, whatever a proxy added before or after.
func TestOnlyOurErrorInfoIsRead(t *testing.T) {
	ours := &errdetails.ErrorInfo{Reason: "NOT_YOUR_TURN", Domain: Domain, Metadata: map[string]string{"turn": "2"}}
	theirs := &errdetails.ErrorInfo{Reason: "RATE_LIMITED", Domain: "proxy.example", Metadata: map[string]string{"x": "y"}}
	second := &errdetails.ErrorInfo{Reason: "GAME_OVER", Domain: Domain}
	for _, details := range [][]*errdetails.ErrorInfo{{theirs, ours}, {ours, theirs}, {ours, second}} {
		st := status.New(codes.FailedPrecondition, "no")
		for _, d := range details {
			st, _ = st.WithDetails(d)
		}
		e := FromError("Play", st.Err())
		if e.Reason != allfivesv1.ErrorReason_NOT_YOUR_TURN || e.ReasonName != "NOT_YOUR_TURN" || e.Domain != Domain ||
			e.Metadata["turn"] != "2" || len(e.Metadata) != 1 {
			t.Fatalf("details %v were read as %+v", details, e)
		}
	}
}

// The caller's deadline bounds the retries: no attempt starts after it.
func TestTheCallersDeadlineStopsTheRetries(t *testing.T) {
	f := &flaky{failures: 100, refusal: status.Error(codes.Unavailable, "down")}
	c := client(t, f)
	c.retry = Retry{Attempts: 100, Backoff: 20 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err := c.Play(ctx, &allfivesv1.PlayRequest{})
	if err == nil || time.Since(started) > time.Second || f.seen["Play"] >= 100 {
		t.Fatalf("%v after %v and %d calls; want a failure within the deadline", err, time.Since(started), f.seen["Play"])
	}
}
