//! `CreateInviteCode` and `OpenInviteCode`: a short code for a friend to type, kept in
//! the match store (`crate::store::invites`). The requests are read and the tokens
//! checked here through the steps (`steps.rs`); the store is asked, within the call's deadline.

use tonic::{Request, Response, Status};

use super::convert::code_in;
use super::status::ApiError;
use super::steps::{open, render, secret_bytes};
use super::{Api, traced, within};
use crate::call::CallContext;
use crate::metrics::InviteLookup;
use crate::proto::v1 as pb;
use crate::state::{MatchId, Opened, Tokens};
use crate::store::invites::{CANDIDATES, ClientKey, InviteCode};
use crate::throttle::SharedThrottle;

impl Api {
    pub(super) async fn create_invite_code_call(
        &self,
        req: Request<pb::CreateInviteCodeRequest>,
    ) -> Result<Response<pb::CreateInviteCodeResponse>, Status> {
        let call = Api::call(&req)?;
        let seat = Some(req.get_ref().viewer);
        let answer = self.create_invite_code(req.get_ref(), &call).await;
        traced(&self.metrics, &call, seat, || answer)
    }

    pub(super) async fn open_invite_code_call(
        &self,
        req: Request<pb::OpenInviteCodeRequest>,
    ) -> Result<Response<pb::OpenInviteCodeResponse>, Status> {
        let call = Api::call(&req)?;
        let answer = self.open_invite_code(req.get_ref(), &call).await;
        if let Err(error @ ApiError::InviteRateLimited(_)) = answer {
            return Err(self.refuse_guess(&call, error));
        }
        traced(&self.metrics, &call, None, || answer)
    }

    /// A look-up refused for spent misses: counted, and logged at most once per period
    /// (a guesser refused goes on guessing as fast as it can; a line a call would be a
    /// flood of its own).
    fn refuse_guess(&self, call: &CallContext, error: ApiError) -> Status {
        static REFUSALS: SharedThrottle = SharedThrottle::new();
        self.metrics.refused(error.reason());
        if let Some(held_back) = REFUSALS.check() {
            let method = call.route.map_or("", |route| route.method);
            tracing::info_span!("rpc", method, seat = None::<u32>, result = error.reason())
                .in_scope(|| tracing::info!(held_back, ?error, "refused"));
        }
        error.into()
    }

    /// The match's code, for a seated player, while it takes a friend: checked on the
    /// match's latest state, which the store must hold.
    async fn create_invite_code(
        &self,
        req: &pb::CreateInviteCodeRequest,
        call: &CallContext,
    ) -> Result<pb::CreateInviteCodeResponse, ApiError> {
        let Some(store) = &self.store else {
            return Err(ApiError::StoreRequired);
        };
        let match_id = invite_in(&self.tokens, req)?;
        let head = within(call, store.latest(&match_id))
            .await?
            .ok_or(ApiError::MatchForgotten)?;
        invitable(&self.tokens, &head.token)?;
        let candidates = invite_candidates()?;
        let invite = within(call, store.invite(&match_id, candidates)).await?;
        Ok(pb::CreateInviteCodeResponse {
            code: invite.code.to_string(),
            // Whole seconds, rounded down: the code lives at least as long as it says.
            expires_in_seconds: u32::try_from(invite.expires_in.as_secs()).unwrap_or(u32::MAX),
        })
    }

    /// The latest token of a live code's match, while it takes a friend; every other
    /// case is `INVITE_NOT_FOUND`, alike.
    async fn open_invite_code(
        &self,
        req: &pb::OpenInviteCodeRequest,
        call: &CallContext,
    ) -> Result<pb::OpenInviteCodeResponse, ApiError> {
        let code = code_in(&req.code)?;
        let Some(store) = &self.store else {
            return Err(ApiError::StoreRequired);
        };
        // Misses are counted per client under its pseudonym, never its address.
        let client = ClientKey::of(&call.client, self.tokens.ring());
        let looked_up = within(call, store.open_invite(&code, &client)).await;
        match &looked_up {
            Ok(found) => self.metrics.invite_looked_up(InviteLookup::of(found)),
            Err(ApiError::InviteRateLimited(limit)) => {
                self.metrics.invite_looked_up(InviteLookup::Refused(*limit))
            }
            Err(_) => {}
        }
        let match_id = looked_up?.ok_or(ApiError::InviteNotFound)?;
        let head = within(call, store.latest(&match_id))
            .await?
            .ok_or(ApiError::InviteNotFound)?;
        invite_opened(&self.tokens, &self.judge(), &head.token)
    }
}

/// A CreateInviteCode request read: the match, once the token opened and the viewer's
/// credential holds (the match's latest state, from the store, is what
/// [`invitable`] then checks).
pub fn invite_in(tokens: &Tokens, req: &pb::CreateInviteCodeRequest) -> Result<MatchId, ApiError> {
    let (opened, _) = open(tokens, &req.state, Some(req.viewer), &req.credential)?;
    Ok(opened.match_id)
}

/// Whether the match in `token` (its latest state) takes a friend: not dealt yet, and a
/// human seat open.
pub fn invitable(tokens: &Tokens, token: &[u8]) -> Result<(), ApiError> {
    let opened = tokens.open(token)?;
    let takes = takes_a_friend(&opened);
    tokens.keep(opened);
    takes
}

fn takes_a_friend(opened: &Opened) -> Result<(), ApiError> {
    if opened.game.hand_number() != 0 {
        return Err(ApiError::Rules(crate::engine::Error::WrongPhase {
            phase: opened.game.phase(),
        }));
    }
    if !opened.seats.any_open(opened.game.rules().players) {
        return Err(ApiError::NoOpenSeat);
    }
    Ok(())
}

/// Fresh random codes for a match's first ask, from the operating system (a code is a
/// secret, as a credential is).
pub fn invite_candidates() -> Result<[InviteCode; CANDIDATES], ApiError> {
    let bytes: [u8; 8 * CANDIDATES] = secret_bytes()?;
    let mut codes = [InviteCode::from_random([0; 8]); CANDIDATES];
    for (code, chunk) in codes.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(chunk);
        *code = InviteCode::from_random(eight);
    }
    Ok(codes)
}

/// OpenInviteCode's answer from the match's latest token: the token and the public
/// view, if the match still takes a friend; else the code is as good as gone
/// (`INVITE_NOT_FOUND`, as for a code nobody made).
pub fn invite_opened(
    tokens: &Tokens,
    judge: &super::clocks::Judge,
    token: &[u8],
) -> Result<pb::OpenInviteCodeResponse, ApiError> {
    let opened = tokens.open(token)?;
    if takes_a_friend(&opened).is_err() {
        return Err(ApiError::InviteNotFound);
    }
    let view = render(&opened, None, judge)?;
    tokens.keep(opened);
    Ok(pb::OpenInviteCodeResponse {
        state: token.to_vec(),
        view: Some(view),
    })
}
