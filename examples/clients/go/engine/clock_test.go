package engine

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The server's times of the views below: a server whose clock is far from this
// machine's (2030), which a countdown must not care about.
const serverNow = uint64(1_900_000_000_000)

func clockedView(now, deadline, claimable uint64) *allfivesv1.GameView {
	return &allfivesv1.GameView{Clock: &allfivesv1.ClockView{
		NowMs: now, TurnDeadlineMs: proto.Uint64(deadline), ClaimableAtMs: proto.Uint64(claimable),
	}}
}

func TestACountdownIsTheViewsTimeLeftOnTheDevicesClock(t *testing.T) {
	received := time.Now()
	c, ok := NewCountdown(clockedView(serverNow, serverNow+5_000, serverNow+7_000), received)
	if !ok {
		t.Fatal("a clocked view has no countdown")
	}
	if got := c.TimeLeft(received); got != 5*time.Second {
		t.Errorf("time left on arrival: %v; want the view's deadline - now_ms, 5s", got)
	}
	if got := c.TimeLeft(received.Add(1500 * time.Millisecond)); got != 3500*time.Millisecond {
		t.Errorf("time left 1.5 s after arrival: %v; want 3.5s", got)
	}
	if got := c.TimeLeft(received.Add(time.Minute)); got != 0 {
		t.Errorf("time left past the deadline: %v; want 0", got)
	}
	if at, ok := c.ClaimableAt(); !ok || !at.Equal(received.Add(7*time.Second)) {
		t.Errorf("claimable at %v (%v); want 7 s after arrival", at.Sub(received), ok)
	}
	if !c.Local(serverNow - 250).Equal(received.Add(-250 * time.Millisecond)) {
		t.Error("a server time before now_ms is not before the arrival")
	}
	// Between hands, or over: a clock, and nobody's time running.
	between, ok := NewCountdown(&allfivesv1.GameView{Clock: &allfivesv1.ClockView{NowMs: serverNow}}, received)
	if _, running := between.Deadline(); !ok || running || between.TimeLeft(received) != 0 {
		t.Error("a clock with no human seat on turn shows a deadline")
	}
	none, ok := NewCountdown(&allfivesv1.GameView{}, received)
	if ok {
		t.Error("a match without a clock has a countdown")
	}
	// Its zero Countdown, used all the same, shows nobody's time running.
	if _, running := none.Deadline(); running || none.TimeLeft(received) != 0 {
		t.Error("the countdown of a view without a clock shows a deadline")
	}
	if _, claimable := none.ClaimableAt(); claimable {
		t.Error("the countdown of a view without a clock shows a claimable moment")
	}
}

// clockFake answers ClaimTimeout with its refusals in turn, then with a new token;
// it notes when each claim arrived.
type clockFake struct {
	allfivesv1.UnimplementedAllFivesServiceServer
	mu       sync.Mutex
	refusals []error
	arrived  []time.Time
}

func (f *clockFake) ClaimTimeout(context.Context, *allfivesv1.ClaimTimeoutRequest) (*allfivesv1.ClaimTimeoutResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.arrived = append(f.arrived, time.Now())
	if n := len(f.arrived); n <= len(f.refusals) {
		return nil, f.refusals[n-1]
	}
	return &allfivesv1.ClaimTimeoutResponse{State: []byte("claimed")}, nil
}

// notDue is a TIMEOUT_NOT_DUE refusal as the server sends it: claimable_at_ms and
// now_ms, both by the refusing server's clock; nowMs 0 leaves now_ms out (an older
// server).
func notDue(t *testing.T, claimableAt, nowMs uint64) error {
	t.Helper()
	metadata := map[string]string{"claimable_at_ms": strconv.FormatUint(claimableAt, 10)}
	if nowMs != 0 {
		metadata["now_ms"] = strconv.FormatUint(nowMs, 10)
	}
	st, err := status.New(codes.FailedPrecondition, "the seat on turn still has time").WithDetails(&errdetails.ErrorInfo{
		Reason: allfivesv1.ErrorReason_TIMEOUT_NOT_DUE.String(), Domain: Domain, Metadata: metadata,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

// The first claim waits for the view's claimable_at_ms; refused TIMEOUT_NOT_DUE by a
// replica whose clock is 5 s behind the one that made the view, the next waits that
// refusal's claimable_at_ms - now_ms (80 ms) from when it arrived (by the view's clock
// the moment is long past: waiting for it would claim again at once); CLOCK_SKEW is
// retried; then the claim is taken.
func TestClaimWhenDueWaitsForTheMomentAndClaimsAgainWhenNotDue(t *testing.T) {
	behind := serverNow - 5_000
	f := &clockFake{refusals: []error{
		notDue(t, behind+80, behind),
		refusal(t, codes.Unavailable, allfivesv1.ErrorReason_CLOCK_SKEW, ""),
	}}
	c := serve(t, f)
	countdown, _ := NewCountdown(clockedView(serverNow, serverNow+10, serverNow+30), time.Now())
	req := &allfivesv1.ClaimTimeoutRequest{State: []byte("t"), Seat: 1}
	resp, waited, err := c.ClaimWhenDue(context.Background(), req, countdown)
	if err != nil || string(resp.GetState()) != "claimed" {
		t.Fatalf("ClaimWhenDue: %v, %v; want the third claim's answer", resp, err)
	}
	if waited != 1 || len(f.arrived) != 3 || c.Retries() != 1 {
		t.Fatalf("%d TIMEOUT_NOT_DUE waited out, %d claims, %d retries; want 1, 3 and 1 (CLOCK_SKEW)", waited, len(f.arrived), c.Retries())
	}
	// Sent no earlier than the moments said (a sleep never ends early; how much later
	// is the machine's business). The refusal arrived after the fake sent it.
	if first, _ := countdown.ClaimableAt(); f.arrived[0].Before(first) {
		t.Errorf("the first claim came %v before claimable_at_ms", first.Sub(f.arrived[0]))
	}
	if gap := f.arrived[1].Sub(f.arrived[0]); gap < 80*time.Millisecond {
		t.Errorf("the claim after TIMEOUT_NOT_DUE came %v after the refusal; want claimable_at_ms - now_ms, 80ms, at least", gap)
	}
}

// A refusal without now_ms (an older server): its claimable_at_ms is read with the
// view's countdown.
func TestClaimWhenDueReadsARefusalWithoutNowMsWithTheViewsCountdown(t *testing.T) {
	f := &clockFake{refusals: []error{notDue(t, serverNow+60, 0)}}
	c := serve(t, f)
	countdown, _ := NewCountdown(clockedView(serverNow, serverNow+10, serverNow+30), time.Now())
	_, waited, err := c.ClaimWhenDue(context.Background(), &allfivesv1.ClaimTimeoutRequest{}, countdown)
	if err != nil || waited != 1 || len(f.arrived) != 2 {
		t.Fatalf("%v, %d waited out, %d claims; want the second claim's answer", err, waited, len(f.arrived))
	}
	if again := countdown.Local(serverNow + 60); f.arrived[1].Before(again) {
		t.Errorf("the claim after TIMEOUT_NOT_DUE came %v before its claimable_at_ms", again.Sub(f.arrived[1]))
	}
}

func TestClaimWhenDueGivesUpAfterItsAttempts(t *testing.T) {
	refusals := []error{}
	for range ClaimNotDueAttempts + 3 {
		refusals = append(refusals, notDue(t, serverNow, serverNow)) // due now, by the refusing server's clock
	}
	f := &clockFake{refusals: refusals}
	c := serve(t, f)
	countdown, _ := NewCountdown(clockedView(serverNow, serverNow, serverNow), time.Now())
	_, waited, err := c.ClaimWhenDue(context.Background(), &allfivesv1.ClaimTimeoutRequest{}, countdown)
	if !IsReason(err, allfivesv1.ErrorReason_TIMEOUT_NOT_DUE) || len(f.arrived) != ClaimNotDueAttempts || waited != ClaimNotDueAttempts-1 {
		t.Fatalf("%v after %d claims (%d waited out); want TIMEOUT_NOT_DUE after %d", err, len(f.arrived), waited, ClaimNotDueAttempts)
	}
}

// Another refusal comes back at once: the match moved on (or is not where a claim
// belongs), and only the caller knows what to show.
func TestClaimWhenDueReturnsAnyOtherRefusalAtOnce(t *testing.T) {
	st, _ := status.New(codes.Aborted, "moved on").WithDetails(&errdetails.ErrorInfo{
		Reason: allfivesv1.ErrorReason_STATE_STALE.String(), Domain: Domain, Metadata: map[string]string{"latest_state_id": "00"},
	})
	f := &clockFake{refusals: []error{st.Err()}}
	c := serve(t, f)
	countdown, _ := NewCountdown(clockedView(serverNow, serverNow, serverNow), time.Now())
	_, _, err := c.ClaimWhenDue(context.Background(), &allfivesv1.ClaimTimeoutRequest{}, countdown)
	if !IsReason(err, allfivesv1.ErrorReason_STATE_STALE) || len(f.arrived) != 1 {
		t.Fatalf("%v after %d claims; want STATE_STALE after 1", err, len(f.arrived))
	}
}

// The caller's context bounds the wait: a claim due in an hour is not waited for.
func TestClaimWhenDueNeverWaitsPastTheContext(t *testing.T) {
	f := &clockFake{}
	c := serve(t, f)
	countdown, _ := NewCountdown(clockedView(serverNow, serverNow+3_600_000, serverNow+3_602_000), time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err := c.ClaimWhenDue(ctx, &allfivesv1.ClaimTimeoutRequest{}, countdown)
	if err == nil || len(f.arrived) != 0 {
		t.Fatalf("%v after %d claims; want the context's error and no claim", err, len(f.arrived))
	}
}

// silentFake's ClaimTimeout never answers: it says the call arrived, and waits for the
// call to end.
type silentFake struct {
	allfivesv1.UnimplementedAllFivesServiceServer
	arrived chan struct{}
}

func (f *silentFake) ClaimTimeout(ctx context.Context, _ *allfivesv1.ClaimTimeoutRequest) (*allfivesv1.ClaimTimeoutResponse, error) {
	f.arrived <- struct{}{}
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}

// The caller's context ending while the claim is in flight comes back as its own
// error, not as a failure of the call.
func TestClaimWhenDueEndedDuringTheCallAnswersTheContextsError(t *testing.T) {
	f := &silentFake{arrived: make(chan struct{}, 1)}
	c := serve(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-f.arrived; cancel() }()
	_, _, err := c.ClaimWhenDue(ctx, &allfivesv1.ClaimTimeoutRequest{}, Countdown{})
	if err != context.Canceled {
		t.Fatalf("ClaimWhenDue cancelled during its call: %v; want context.Canceled", err)
	}
}
