package engine

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Domain is the google.rpc.ErrorInfo domain of every reason the service sends.
const Domain = "allfives.v1"

// Error is a failed call as the server (or the transport) reported it.
type Error struct {
	Method  string
	Code    codes.Code
	Message string
	// Reason is ErrorInfo.reason as a generated constant: ERROR_REASON_UNSPECIFIED
	// when there was no ErrorInfo of the service's domain, or its reason is a name
	// this code was not generated with (treat those by Code).
	Reason allfivesv1.ErrorReason
	// ReasonName is ErrorInfo.reason as sent, Domain its domain ("" without one).
	ReasonName string
	Domain     string
	Metadata   map[string]string
	// Violations are the google.rpc.BadRequest's field violations (INVALID_FIELD, and
	// the token's reasons on `state`).
	Violations []Violation
	// Attempts is how many times the call was sent.
	Attempts int
}

// Violation is one field a BadRequest names.
type Violation struct {
	Field       string
	Description string
}

// [START go_errors]
// FromError reads a failed call's status: its code and message, and from its details
// (the grpc-status-details-bin trailer) the ErrorInfo and the BadRequest.
func FromError(method string, err error) *Error {
	var done *Error
	if errors.As(err, &done) {
		return done
	}
	st, ok := status.FromError(err)
	if !ok {
		st = status.FromContextError(err) // a context error, or one not from gRPC: UNKNOWN
	}
	e := &Error{Method: method, Code: st.Code(), Message: st.Message(), Attempts: 1}
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			// Ours only (a proxy may add its own), and the first of ours.
			if d.GetDomain() != Domain || e.Domain == Domain {
				continue
			}
			e.ReasonName, e.Domain, e.Metadata = d.GetReason(), d.GetDomain(), d.GetMetadata()
			// 0, ERROR_REASON_UNSPECIFIED, for a name this code does not know.
			e.Reason = allfivesv1.ErrorReason(allfivesv1.ErrorReason_value[d.GetReason()])
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				e.Violations = append(e.Violations, Violation{v.GetField(), v.GetDescription()})
			}
		}
	}
	return e
}

// [END go_errors]

// Error is one line for logs: the method, code, reason, metadata, fields and message.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Method, e.Code)
	if e.ReasonName != "" {
		fmt.Fprintf(&b, " %s", e.ReasonName)
	}
	if len(e.Metadata) > 0 {
		keys := make([]string, 0, len(e.Metadata))
		for k := range e.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%s", k, e.Metadata[k])
		}
	}
	for _, v := range e.Violations {
		fmt.Fprintf(&b, " field %s", v.Field)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// Field is the first field violation's field, or "".
func (e *Error) Field() string {
	if len(e.Violations) == 0 {
		return ""
	}
	return e.Violations[0].Field
}

// Sentence says what went wrong and what to do, for a person: the reason's sentence,
// or the code's for a failure without a reason this code knows.
func (e *Error) Sentence() string {
	if s := ReasonSentence(e.Reason); s != "" {
		return s
	}
	return CodeSentence(e.Code)
}

// [START go_retryable]
// Retryable says the call did nothing (or doing it again answers the same) and trying
// again after a wait may succeed (docs/clients.md, "Errors"). Whether the call itself
// may be repeated is the caller's to know: every call with the same token, ClaimSeat
// only with a claim_key.
func (e *Error) Retryable() bool {
	switch e.Reason {
	case allfivesv1.ErrorReason_RANDOM_UNAVAILABLE, allfivesv1.ErrorReason_STORE_UNAVAILABLE,
		allfivesv1.ErrorReason_OVERLOADED, allfivesv1.ErrorReason_SEARCH_QUEUE_FULL,
		allfivesv1.ErrorReason_TOO_MANY_WATCHES, allfivesv1.ErrorReason_REQUEST_BODY_TIMEOUT,
		allfivesv1.ErrorReason_REQUEST_TIMEOUT, allfivesv1.ErrorReason_CLOCK_SKEW:
		return true
	case allfivesv1.ErrorReason_ERROR_REASON_UNSPECIFIED:
		// No reason (or one this code does not know): the transport's and the server's
		// limits, by code. DEADLINE_EXCEEDED is this attempt's own deadline.
		switch e.Code {
		case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Canceled:
			return true
		}
	}
	return false
}

// [END go_retryable]

// [START go_reason]
// IsReason says err is a refusal with that reason: compare with the generated
// constants (allfivesv1.ErrorReason_STATE_STALE), never with bare strings.
func IsReason(err error, reason allfivesv1.ErrorReason) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == reason
}

// [END go_reason]

// CodeSentence says what a status code without a known reason means to a person.
func CodeSentence(code codes.Code) string {
	switch code {
	case codes.Unavailable:
		return "The server cannot be reached (not running, or not at that address); try again later."
	case codes.DeadlineExceeded:
		return "The server did not answer in time; try again."
	case codes.ResourceExhausted:
		return "The server is busy; try again in a moment."
	case codes.Canceled:
		return "The call was cut short before the server answered; try again."
	case codes.Unimplemented:
		return "That server does not speak this API (wrong address, or an older release)."
	default:
		return fmt.Sprintf("The server failed the call (%s): a bug to report.", code)
	}
}
