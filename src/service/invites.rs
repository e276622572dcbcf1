//! `CreateInviteCode` and `OpenInviteCode`: a short code for a friend to type, kept in
//! the match store (`crate::store::invites`). The requests are read and the tokens
//! checked in `handlers`; this file asks the store, within the call's deadline.

use std::time::Instant;

use tonic::{Request, Response, Status};

use super::handlers;
use super::status::ApiError;
use super::{Api, traced, within};
use crate::proto::v1 as pb;

impl Api {
    pub(super) async fn create_invite_code_call(
        &self,
        req: Request<pb::CreateInviteCodeRequest>,
    ) -> Result<Response<pb::CreateInviteCodeResponse>, Status> {
        let deadline = Api::call(&req)?.deadline;
        let seat = Some(req.get_ref().viewer);
        let answer = self.create_invite_code(req.get_ref(), deadline).await;
        traced(&self.metrics, "CreateInviteCode", seat, || answer)
    }

    pub(super) async fn open_invite_code_call(
        &self,
        req: Request<pb::OpenInviteCodeRequest>,
    ) -> Result<Response<pb::OpenInviteCodeResponse>, Status> {
        let deadline = Api::call(&req)?.deadline;
        let answer = self.open_invite_code(req.get_ref(), deadline).await;
        traced(&self.metrics, "OpenInviteCode", None, || answer)
    }

    /// The match's code, for a seated player, while it takes a friend: checked on the
    /// match's latest state, which the store must hold.
    async fn create_invite_code(
        &self,
        req: &pb::CreateInviteCodeRequest,
        deadline: Instant,
    ) -> Result<pb::CreateInviteCodeResponse, ApiError> {
        let Some(store) = &self.store else {
            return Err(ApiError::StoreRequired);
        };
        let match_id = handlers::invite_in(&self.tokens, req)?;
        let head = within(deadline, store.latest(&match_id))
            .await?
            .ok_or(ApiError::MatchForgotten)?;
        handlers::invitable(&self.tokens, &head.token)?;
        let candidates = handlers::invite_candidates()?;
        let invite = within(deadline, store.invite(&match_id, candidates)).await?;
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
        deadline: Instant,
    ) -> Result<pb::OpenInviteCodeResponse, ApiError> {
        let code = handlers::code_in(&req.code)?;
        let Some(store) = &self.store else {
            return Err(ApiError::StoreRequired);
        };
        let match_id = within(deadline, store.open_invite(&code))
            .await?
            .ok_or(ApiError::InviteNotFound)?;
        let head = within(deadline, store.latest(&match_id))
            .await?
            .ok_or(ApiError::InviteNotFound)?;
        handlers::invite_opened(&self.tokens, &head.token)
    }
}
