package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"example.com/allfives/goclient/engine"
	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// newClaimKey draws the 16 random bytes that make a claim repeatable.
func newClaimKey() []byte {
	key := make([]byte, 16)
	rand.Read(key) // never fails (crypto/rand's contract since Go 1.24)
	return key
}

// storeRefusals runs against a server with a match store: a claim made again with its
// key is answered again, a keyless one from the same token is refused STATE_STALE
// (with the latest state's id), a deal made again from the same token is answered
// again; invite codes unknown or malformed, and asked for a full match, are refused.
func (r *refusals) storeRefusals(ctx context.Context, c *engine.Client) error {
	game, err := c.NewGame(ctx, &allfivesv1.NewGameRequest{Seats: []*allfivesv1.SeatSetup{{Claim: true}, {}}})
	if err != nil {
		return err
	}
	invite, host := game.GetState(), game.GetCredentials()[0].GetCredential()

	// [START go_claim]
	// A claim with a claim key is the same request every time: retried (by the engine
	// package, or by hand after a lost answer) it is answered the same credential.
	key := newClaimKey()
	claim := &allfivesv1.ClaimSeatRequest{State: invite, Seat: 1, ClaimKey: key}
	claimed, err := c.ClaimSeat(ctx, claim)
	if err != nil {
		return err
	}
	again, err := c.ClaimSeat(ctx, claim)
	if err != nil {
		return err
	}
	if !bytes.Equal(again.GetCredential().GetCredential(), claimed.GetCredential().GetCredential()) ||
		!bytes.Equal(again.GetView().GetStateId(), claimed.GetView().GetStateId()) {
		return fmt.Errorf("a claim made again with its key was answered another credential or state")
	}
	// [END go_claim]
	r.say("ClaimSeat made again with its claim key: the same credential and state %x", claimed.GetView().GetStateId())

	// [START go_stale]
	// Without a key it is another claim, which the store refuses: the match has moved
	// on. Never retry that; get the latest token (a Watch's first message brings it).
	_, err = c.ClaimSeat(ctx, &allfivesv1.ClaimSeatRequest{State: invite, Seat: 1})
	var stale *engine.Error
	if errors.As(err, &stale) && stale.Reason == allfivesv1.ErrorReason_STATE_STALE {
		r.say("the match is at state %s already", stale.Metadata["latest_state_id"])
	}
	// [END go_stale]
	e, err := r.expect("ClaimSeat without a key from the token the claim was made on", err, codes.Aborted, allfivesv1.ErrorReason_STATE_STALE, "")
	if err != nil {
		return err
	}
	if want := hex.EncodeToString(claimed.GetView().GetStateId()); e.Metadata["latest_state_id"] != want {
		return fmt.Errorf("STATE_STALE's latest_state_id is %q; want %s", e.Metadata["latest_state_id"], want)
	}

	_, err = c.CreateInviteCode(ctx, &allfivesv1.CreateInviteCodeRequest{State: claimed.GetState(), Viewer: 0, Credential: host})
	if _, err := r.expect("CreateInviteCode with every seat claimed", err, codes.FailedPrecondition, allfivesv1.ErrorReason_NO_OPEN_SEAT, ""); err != nil {
		return err
	}
	deal := &allfivesv1.DealRequest{State: claimed.GetState(), Viewer: proto.Uint32(0), Credential: host}
	dealt, err := c.Deal(ctx, deal)
	if err != nil {
		return err
	}
	dealtAgain, err := c.Deal(ctx, deal)
	if err != nil {
		return fmt.Errorf("a Deal made again from the same token: %w", err)
	}
	if !bytes.Equal(dealt.GetView().GetStateId(), dealtAgain.GetView().GetStateId()) {
		return fmt.Errorf("a Deal made again from the same token answered another state")
	}
	r.say("Deal made again from the same token: answered the same state %x", dealt.GetView().GetStateId())

	_, err = c.OpenInviteCode(ctx, &allfivesv1.OpenInviteCodeRequest{Code: "7K2M-4XPR-2D9F"})
	if _, err := r.expect("OpenInviteCode of a code nobody made", err, codes.NotFound, allfivesv1.ErrorReason_INVITE_NOT_FOUND, ""); err != nil {
		return err
	}
	_, err = c.OpenInviteCode(ctx, &allfivesv1.OpenInviteCodeRequest{Code: "not a code"})
	_, err = r.expect("OpenInviteCode of a malformed code", err, codes.InvalidArgument, allfivesv1.ErrorReason_INVALID_FIELD, "code")
	return err
}
