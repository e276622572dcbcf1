//! `Watch`: a match's changes streamed to a device, from the match store (`crate::store`).
//!
//! A stream subscribes to its match's changes in this process first, then reads the
//! store's head, so no move falls between the two; it answers the head at once if the
//! device has not seen it (else a heartbeat), then each move as it is told of it. A
//! move whose previous state is not the last one sent, a watcher that fell behind, or
//! a reconnection to the store, makes it read the head again and send it as a catch-up
//! (the view, and the hand's events from its deal): the state id is the cursor, so
//! nothing is missed, only summed up. A heartbeat goes out after `heartbeat` without a
//! message (proxies close idle streams). The stream ends with OK when its connection
//! begins to close (its age, or the server draining): the client watches again with the
//! last state id it saw.
//!
//! Streams are bounded, and make room for the match's players (`super::watch_limits`:
//! a seat's stream is admitted only once its credential holds on the match's latest
//! state); a stream told to make room ends `TOO_MANY_WATCHES`, and one whose client
//! has not read a message for two heartbeats ends by itself. A stream is a task, a
//! two-message channel and a place among its match's watchers: its memory is measured
//! in docs/PERFORMANCE.md. It holds no call slot (the calls-in-flight budget lets it go
//! once its response has begun) and no deadline once it has answered (the request
//! timeout ends its opening: the store's read and subscription).

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Response, Status};

use super::convert::{event_out, match_id_in};
use super::seat_events;
use super::status::ApiError;
use super::steps::{open, render};
use super::watch_limits::{self, OnConnection, Permit, Watcher};
use super::{Api, traced};
use crate::call::CallContext;
use crate::connection::Closing;
use crate::proto::v1 as pb;
use crate::state::{self, MatchId, StateId, Tokens};
use crate::store::{Head, MatchStore, Notice, Watching};

/// The answer of a Watch call.
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchResponse, Status>> + Send>>;

/// How long a stream stays silent before a heartbeat, unless the server says otherwise
/// (`--watch-heartbeat-secs`): well under the idle timeouts of common proxies (nginx's
/// 60 s).
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(15);

/// How long a stream whose store did not answer a resync waits to ask again.
const RESYNC_RETRY: Duration = Duration::from_secs(1);

/// What a stream sends next: a message (or the error that ends it), boxed from the
/// start ([`Queued`]: the task's states across its awaits hold 8 bytes, not 464), or
/// nothing yet: the store did not answer, ask again later.
enum Next {
    Message(Queued),
    Later,
}

/// Messages a stream holds for a slow reader before it waits for it.
const BUFFER: usize = 2;

/// A message on its way to the stream's client, boxed: tokio's channel keeps its
/// slots in blocks of 32 whatever its bound, so a channel of the message itself (464
/// bytes) held 14.5 KiB for each stream's life; of boxes, 256 bytes, and a message's
/// box only while it waits (docs/PERFORMANCE.md, "Watch").
type Queued = Box<Result<pb::WatchResponse, Status>>;

/// A Watch call's answer: the messages its task sends, then the status it ended with
/// (none: OK), and its place among its connection's streams, given back with the
/// answer.
struct Answer {
    messages: ReceiverStream<Queued>,
    ending: Ending,
    _on_connection: OnConnection,
}

/// The status a stream's task ended it with, if not OK: told after the messages it
/// sent, whatever room its channel had.
type Ending = Arc<std::sync::Mutex<Option<Status>>>;

impl Stream for Answer {
    type Item = Result<pb::WatchResponse, Status>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        match Pin::new(&mut self.messages).poll_next(cx) {
            std::task::Poll::Ready(None) => {
                let mut ending = self
                    .ending
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                std::task::Poll::Ready(ending.take().map(Err))
            }
            other => other.map(|queued| queued.map(|message| *message)),
        }
    }
}

/// A stream's match, followed: what its task needs besides its connection's closing
/// and the channel its messages go out on.
struct Followed {
    store: Arc<MatchStore>,
    watch: Watch,
    watching: Watching,
    /// The state id of the last state sent.
    last: [u8; 16],
    permit: Permit,
    /// The seats of the table, whose presence is sent.
    players: usize,
    /// The presence last sent (none yet).
    presence: Option<Vec<pb::SeatPresence>>,
    /// The match was over when the stream opened: a rematch may be on offer already.
    over: bool,
    /// The match's rematch offer was sent.
    offered: bool,
    /// A seat's stream: its place in the match's presence, given back when it ends.
    _present: Option<crate::store::presence::Present>,
}

/// A stream's task.
struct Follower {
    api: Api,
    followed: Followed,
    closing: Closing,
    sender: mpsc::Sender<Queued>,
    ending: Ending,
}

impl Api {
    /// A Watch call: see the module's documentation.
    pub(super) async fn watch_call(
        &self,
        req: tonic::Request<pb::WatchRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        let call = Api::call(&req)?;
        let closing = call.connection.closing();
        let seat = req.get_ref().viewer;
        let opened = self.open_watch(&call, req.get_ref()).await;
        let (first, followed, on_connection) = match opened {
            Ok(opened) => opened,
            Err(error) => return traced(&self.metrics, &call, seat, || Err(error)),
        };
        let (sender, receiver) = mpsc::channel(BUFFER);
        // The first message fits the empty channel: this cannot fail.
        let _ = sender.try_send(Box::new(Ok(first)));
        let ending = Ending::default();
        let follower = Follower {
            api: self.clone(),
            followed,
            closing,
            sender,
            ending: Arc::clone(&ending),
        };
        tokio::spawn(follower.run());
        traced(&self.metrics, &call, seat, || {
            let answer = Answer {
                messages: ReceiverStream::new(receiver),
                ending,
                _on_connection: on_connection,
            };
            Ok(Box::pin(answer) as WatchStream)
        })
    }

    /// A stream ready to run, and its first message: the head if the device has not
    /// seen it, else a heartbeat. Refused before any message for a request that does
    /// not hold (a bad credential, a match the store does not hold, no store).
    async fn open_watch(
        &self,
        call: &CallContext,
        req: &pb::WatchRequest,
    ) -> Result<(pb::WatchResponse, Followed, OnConnection), ApiError> {
        let Some(store) = self.store.clone() else {
            return Err(ApiError::StoreRequired);
        };
        let watch = watch_in(&self.tokens, req)?;
        // A seat's stream is one only once its credential holds (on the match's latest
        // state): a seat's places are not for anyone naming a seat.
        let watcher = match watch.viewer {
            Some(seat) => {
                let head = latest(&store, &watch).await?;
                let (opened, _) = open(&self.tokens, &head.token, Some(seat), &watch.credential)?;
                self.tokens.keep(opened);
                Watcher::Seat(seat as usize)
            }
            None => Watcher::Spectator,
        };
        let seat = watch.viewer;
        let (permit, on_connection) = self
            .watches
            .admit(&call.connection, call.client, watch.match_id, watcher)
            .map_err(|_| ApiError::TooManyWatches)?;
        let watching = store.watch(watch.match_id).await.map_err(ApiError::from)?;
        let head = latest(&store, &watch).await?;
        let first = match watch.last_seen {
            Some(seen) if seen == head.state => {
                // Seen already: the credential is checked all the same.
                watched(&self.tokens, &self.judge(), &watch, &head, false)?;
                heartbeat(self.watch_heartbeat)
            }
            seen => {
                let catch_up = seen.is_none() || head.previous != seen;
                let watched = watched(&self.tokens, &self.judge(), &watch, &head, catch_up);
                change(self.certified(&head, watched?))
            }
        };
        let (players, over) = match self.tokens.open(&head.token) {
            Ok(opened) => {
                let players = opened.game.rules().players;
                let over = opened.game.phase() == crate::engine::Phase::Over;
                self.tokens.keep(opened);
                (players, over)
            }
            Err(_) => (0, false),
        };
        // Counted among the seat's devices once its first message is made.
        let present = seat
            .and_then(|s| u8::try_from(s).ok())
            .map(|s| store.arrive(watch.match_id, s));
        let followed = Followed {
            store,
            last: head.state,
            watch,
            watching,
            permit,
            players,
            presence: None,
            over,
            offered: false,
            _present: present,
        };
        Ok((first, followed, on_connection))
    }
}

/// The match's head, or why there is none to watch.
async fn latest(store: &MatchStore, watch: &Watch) -> Result<Head, ApiError> {
    match tokio::time::timeout(
        crate::store::RESPONSE_TIMEOUT,
        store.latest(&watch.match_id),
    )
    .await
    {
        Ok(Ok(Some(head))) => Ok(head),
        Ok(Ok(None)) => Err(ApiError::MatchForgotten),
        Ok(Err(why)) => Err(why.into()),
        Err(_) => Err(ApiError::StoreUnavailable("no answer in time".into())),
    }
}

/// A heartbeat, saying the server's heartbeat `period` (so a client knows how long a
/// silence means a lost stream).
fn heartbeat(period: Duration) -> pb::WatchResponse {
    let interval_ms = u32::try_from(period.as_millis()).unwrap_or(u32::MAX);
    pb::WatchResponse {
        kind: Some(pb::watch_response::Kind::Heartbeat(pb::Heartbeat {
            interval_ms,
        })),
    }
}

impl Api {
    /// `change` of `head`, with the match's signed result on its view once it is over.
    fn certified(&self, head: &Head, mut change: pb::WatchChange) -> pb::WatchChange {
        if let Some(view) = &mut change.view {
            self.certify(&head.token, view);
        }
        change
    }
}

fn change(change: pb::WatchChange) -> pb::WatchResponse {
    pb::WatchResponse {
        kind: Some(pb::watch_response::Kind::Change(change)),
    }
}

impl Follower {
    /// Sends the match's changes until the client goes, the connection closes, or the
    /// match cannot be shown any more (forgotten: the stream ends with its status).
    async fn run(mut self) {
        let period = self.api.watch_heartbeat;
        let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // A resync the store could not answer, tried again at this moment.
        let retry = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(retry);
        let mut retrying = false;
        let mut recheck = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Who is watching, after the first message.
        if let Some(Next::Message(message)) = self.presence().await
            && !self.send(message).await
        {
            return;
        }
        // A finished match's rematch, offered before the stream opened.
        if self.followed.over
            && let Some(Next::Message(message)) = self.rematch().await
            && !self.send(message).await
        {
            return;
        }
        loop {
            let message = tokio::select! {
                () = self.closing.closed() => return,
                () = self.sender.closed() => return,
                () = self.followed.permit.told_to_end() => return self.end_crowded(),
                _ = beat.tick() => Some(Next::Message(Box::new(Ok(heartbeat(period))))),
                // Who is watching, read again on a period that moves do not put off:
                // a replica that died sends no notice, its leases only lapse.
                _ = recheck.tick(), if self.followed.watch.presence => self.presence().await,
                () = &mut retry, if retrying => {
                    retrying = false;
                    self.resync().await
                }
                notice = self.followed.watching.notices.recv() => match notice {
                    Ok(Notice::Moved(head)) if head.state == self.followed.last => None,
                    Ok(Notice::Moved(head)) if head.previous == Some(self.followed.last) => {
                        self.next(&head, false)
                    }
                    Ok(Notice::Moved(_) | Notice::Resync) | Err(RecvError::Lagged(_)) => {
                        self.resync().await
                    }
                    Ok(Notice::Presence) => self.presence().await,
                    Ok(Notice::Rematch) => self.rematch().await,
                    Err(RecvError::Closed) => return,
                },
            };
            let message = match message {
                Some(Next::Message(message)) => message,
                Some(Next::Later) => {
                    retry
                        .as_mut()
                        .reset(tokio::time::Instant::now() + RESYNC_RETRY);
                    retrying = true;
                    continue;
                }
                None => continue,
            };
            let failed = message.is_err();
            let sent = self.send(message).await;
            if !sent || failed {
                return;
            }
            beat.reset();
        }
    }

    /// Sends `message` when its client has read what came before; `false` if the
    /// stream is over: the client went, the connection closes, its place was given to
    /// another stream, or its client has not read for the stall limit (its connection's
    /// window may stay shut for ever: ended, and counted).
    async fn send(&mut self, message: Queued) -> bool {
        let message = match self.sender.try_send(message) {
            Ok(()) => return true,
            Err(TrySendError::Closed(_)) => return false,
            Err(TrySendError::Full(message)) => message,
        };
        let permit = &self.followed.permit;
        permit.blocked();
        let stall_limit = watch_limits::stall_limit(self.api.watch_heartbeat);
        let sent = tokio::select! {
            sent = self.sender.send(message) => sent.is_ok(),
            () = self.closing.closed() => false,
            () = permit.told_to_end() => {
                self.end_crowded();
                false
            }
            () = tokio::time::sleep(stall_limit) => {
                permit.stalled();
                self.end_crowded();
                false
            }
        };
        self.followed.permit.unblocked();
        sent
    }

    /// Ends the stream with `TOO_MANY_WATCHES` (after what it sent): its place was given
    /// to another stream, or its client stopped reading. Its client watches again later,
    /// with backoff, not at once.
    fn end_crowded(&self) {
        *self
            .ending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(ApiError::TooManyWatches.into());
    }

    /// Which seats have a device watching, if it changed since it was last sent (and
    /// the store answered: it is advice, read again at the next heartbeat).
    async fn presence(&mut self) -> Option<Next> {
        if !self.followed.watch.presence {
            return None;
        }
        let followed = &mut self.followed;
        let seats = followed
            .store
            .presence(&followed.watch.match_id)
            .await
            .ok()?;
        let shown: Vec<pb::SeatPresence> = seats[..followed.players.min(4)]
            .iter()
            .enumerate()
            .map(|(seat, p)| pb::SeatPresence {
                seat: seat as u32,
                watching: p.watching,
                gone_since_ms: p.gone_since_ms,
            })
            .collect();
        if followed.presence.as_ref() == Some(&shown) {
            return None;
        }
        followed.presence = Some(shown.clone());
        let presence = pb::Presence {
            now_ms: self.api.judge().now_ms,
            seats: shown,
        };
        Some(Next::Message(Box::new(Ok(pb::WatchResponse {
            kind: Some(pb::watch_response::Kind::Presence(presence)),
        }))))
    }

    /// The match's rematch offer, once a seat asked for it, if not sent yet (and the
    /// store answered: a store that did not is asked again at the next offer's notice).
    async fn rematch(&mut self) -> Option<Next> {
        if self.followed.offered {
            return None;
        }
        let store = &self.followed.store;
        let asked = store.rematch_offer(&self.followed.watch.match_id);
        let offer = tokio::time::timeout(crate::store::RESPONSE_TIMEOUT, asked)
            .await
            .ok()?
            .ok()??;
        self.followed.offered = true;
        let offer = pb::RematchOffer {
            match_id: offer.match_id.hex().as_str().to_owned(),
            seat: u32::from(offer.seat),
        };
        Some(Next::Message(Box::new(Ok(pb::WatchResponse {
            kind: Some(pb::watch_response::Kind::Rematch(offer)),
        }))))
    }

    /// The change to `head`, which becomes the last sent.
    fn next(&mut self, head: &Head, catch_up: bool) -> Option<Next> {
        let watched = watched(
            &self.api.tokens,
            &self.api.judge(),
            &self.followed.watch,
            head,
            catch_up,
        );
        self.followed.last = head.state;
        Some(Next::Message(Box::new(
            watched
                .map(|w| change(self.api.certified(head, w)))
                .map_err(Status::from),
        )))
    }

    /// The head read again (moves may have been missed): sent as a catch-up unless it
    /// follows the last sent. A store that does not answer is asked again
    /// [`RESYNC_RETRY`] later (and on the next notice).
    async fn resync(&mut self) -> Option<Next> {
        match latest(&self.followed.store, &self.followed.watch).await {
            Ok(head) if head.state == self.followed.last => None,
            Ok(head) => {
                let catch_up = head.previous != Some(self.followed.last);
                self.next(&head, catch_up)
            }
            Err(ApiError::MatchForgotten) => Some(Next::Message(Box::new(Err(
                ApiError::MatchForgotten.into(),
            )))),
            Err(_) => Some(Next::Later),
        }
    }
}

/// A Watch request, read: the match, the seat and its credential, the last state the
/// device saw, and whether its changes carry tokens (not to a spectator who named the
/// match by its id only: it holds no token of the match).
#[derive(Clone, Debug)]
pub struct Watch {
    pub match_id: MatchId,
    viewer: Option<u32>,
    credential: Vec<u8>,
    pub last_seen: Option<StateId>,
    with_tokens: bool,
    /// The stream sends who is watching (`WatchRequest.presence`).
    presence: bool,
}

/// Reads a Watch request: a token of the match (opened: it must be one of ours) or its
/// id; the viewer and credential are checked against the match's latest state
/// ([`watched`]).
pub fn watch_in(tokens: &Tokens, req: &pb::WatchRequest) -> Result<Watch, ApiError> {
    let match_id = match (req.state.is_empty(), req.match_id.is_empty()) {
        (false, by_id) => {
            let match_id = tokens.open(&req.state)?.match_id;
            if !by_id && match_id_in(&req.match_id)? != match_id {
                return Err(ApiError::field(
                    "match_id",
                    "names another match than the token in `state`: send one of them",
                ));
            }
            match_id
        }
        (true, false) => match_id_in(&req.match_id)?,
        (true, true) => {
            return Err(ApiError::field(
                "match_id",
                "name the match: a token of it in `state`, or its id",
            ));
        }
    };
    let last_seen = match req.last_state_id.len() {
        0 => None,
        _ => Some(
            StateId::try_from(req.last_state_id.as_slice()).map_err(|_| {
                ApiError::field(
                    "last_state_id",
                    "a state id is 16 bytes (GameView.state_id)",
                )
            })?,
        ),
    };
    Ok(Watch {
        match_id,
        viewer: req.viewer,
        // Kept for the stream's life, and checked only for a viewer.
        credential: match req.viewer {
            Some(_) => req.credential.clone(),
            None => Vec::new(),
        },
        last_seen,
        with_tokens: !req.state.is_empty() || req.viewer.is_some(),
        presence: req.presence,
    })
}

/// The change a watcher is told of: `head`'s token as `watch`'s viewer sees it, with
/// the last `head.events` events of the current hand and the seat events among them
/// (the change that made it), or with `catch_up` every event of the hand so far
/// (replayed: its moves, not its seats' absences and returns, which the view shows).
/// Refused as the other calls refuse a viewer whose credential does not hold.
pub fn watched(
    tokens: &Tokens,
    judge: &super::clocks::Judge,
    watch: &Watch,
    head: &Head,
    catch_up: bool,
) -> Result<pb::WatchChange, ApiError> {
    let (opened, viewer) = open(tokens, &head.token, watch.viewer, &watch.credential)?;
    if opened.match_id != watch.match_id {
        return Err(ApiError::Token(state::TokenError::Corrupt));
    }
    let game = &opened.game;
    let rules = game.rules();
    let hand = game.hand_events();
    let events = match catch_up {
        true => hand,
        false => {
            let since = hand.len().saturating_sub(head.events as usize);
            seat_events::told(&hand[since..], &head.seats)
        }
    };
    let change = pb::WatchChange {
        state: match watch.with_tokens {
            true => head.token.clone(),
            false => Vec::new(),
        },
        view: Some(render(&opened, viewer, judge)?),
        events: events
            .into_iter()
            .map(|e| event_out(rules, e, viewer))
            .collect(),
        catch_up,
    };
    tokens.keep(opened);
    Ok(change)
}
