package engine

import (
	"testing"

	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/grpc/codes"
)

// Every value of the generated ErrorReason enum has a sentence of its own, so a reason
// added to the proto (and regenerated) fails here until ReasonSentence covers it.
func TestEveryReasonHasASentence(t *testing.T) {
	if len(allfivesv1.ErrorReason_name) < 40 {
		t.Fatalf("the generated enum has %d values; the proto had 40 when this was written", len(allfivesv1.ErrorReason_name))
	}
	seen := map[string]string{}
	for number, name := range allfivesv1.ErrorReason_name {
		reason := allfivesv1.ErrorReason(number)
		sentence := ReasonSentence(reason)
		if reason == allfivesv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
			if sentence != "" {
				t.Errorf("ERROR_REASON_UNSPECIFIED has a sentence; it must fall back to the code's")
			}
			continue
		}
		if sentence == "" {
			t.Errorf("ErrorReason %s (%d) has no sentence in ReasonSentence", name, number)
			continue
		}
		if other, dup := seen[sentence]; dup {
			t.Errorf("%s and %s share a sentence: %q", name, other, sentence)
		}
		seen[sentence] = name
	}
}

func TestRetryableReasonsAndCodes(t *testing.T) {
	for _, c := range []struct {
		code   codes.Code
		reason allfivesv1.ErrorReason
		want   bool
	}{
		{codes.Unavailable, allfivesv1.ErrorReason_ERROR_REASON_UNSPECIFIED, true},
		{codes.DeadlineExceeded, allfivesv1.ErrorReason_ERROR_REASON_UNSPECIFIED, true},
		{codes.ResourceExhausted, allfivesv1.ErrorReason_OVERLOADED, true},
		{codes.ResourceExhausted, allfivesv1.ErrorReason_SEARCH_QUEUE_FULL, true},
		{codes.Unavailable, allfivesv1.ErrorReason_STORE_UNAVAILABLE, true},
		{codes.Canceled, allfivesv1.ErrorReason_REQUEST_BODY_TIMEOUT, true},
		{codes.DeadlineExceeded, allfivesv1.ErrorReason_REQUEST_TIMEOUT, true},
		// Another replica, or this one a moment later, may take it.
		{codes.Unavailable, allfivesv1.ErrorReason_CLOCK_SKEW, true},
		// Not yet: ClaimWhenDue waits for claimable_at_ms, no retry loop's backoff.
		{codes.FailedPrecondition, allfivesv1.ErrorReason_TIMEOUT_NOT_DUE, false},
		// Nothing was applied, and the same move would be refused again: claim the timeout.
		{codes.FailedPrecondition, allfivesv1.ErrorReason_TURN_TIMED_OUT, false},
		// A minute's wait is the caller's decision, not a retry loop's.
		{codes.ResourceExhausted, allfivesv1.ErrorReason_INVITE_RATE_LIMITED, false},
		// The same token again would be refused again.
		{codes.Aborted, allfivesv1.ErrorReason_STATE_STALE, false},
		{codes.FailedPrecondition, allfivesv1.ErrorReason_NOT_YOUR_TURN, false},
		{codes.InvalidArgument, allfivesv1.ErrorReason_TOKEN_INVALID, false},
		{codes.PermissionDenied, allfivesv1.ErrorReason_CREDENTIAL_INVALID, false},
		{codes.Internal, allfivesv1.ErrorReason_ERROR_REASON_UNSPECIFIED, false},
	} {
		e := &Error{Code: c.code, Reason: c.reason}
		if got := e.Retryable(); got != c.want {
			t.Errorf("%s %s: Retryable() = %v, want %v", c.code, c.reason, got, c.want)
		}
	}
}
