//! The changes of the matches this process's `Watch` streams follow: one topic per
//! match watched here, fanned out in process to its watchers (a tokio `broadcast`).
//!
//! The memory store publishes its moves here itself. A Redis store publishes every move
//! in its script, and this process keeps one subscription to the server (or sharded
//! subscriptions in a cluster) for the matches watched here ([`Subscription`] commands,
//! carried out in order by the store's subscriber, `super::redis`), publishing what
//! arrives. What may have been lost (a reconnection; a watcher fallen behind) is told
//! as [`Notice::Resync`]: the watcher reads the store's head again, so a lost message
//! costs a read, never a missed move.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{broadcast, mpsc, watch};

use super::{Head, MatchId, StoreRefusal};

/// Notices a topic holds for a watcher that has not read them yet; past it the watcher
/// is told it lagged, and reads the head again.
const BACKLOG: usize = 16;

/// The most streams that watch one match on one replica: its seats' devices (a few
/// each) and some spectators. Every move is rendered for each watcher, so a match must
/// not take a replica's whole budget of streams. A backstop: the service's own bounds
/// (`service::watch_limits`: 24 spectators and 4 devices a seat) sit within it, with
/// room for streams told to end that have not yet let go.
pub const MAX_WATCHERS_PER_MATCH: usize = 48;

/// What a watcher of a match is told.
#[derive(Clone, Debug)]
pub enum Notice {
    /// The match moved to this head.
    Moved(Arc<Head>),
    /// Moves may have been missed: read the head again.
    Resync,
    /// Which seats have a device watching changed: read the presence again.
    Presence,
    /// A seat asked for the finished match's rematch: read the offer.
    Rematch,
}

/// What the store's subscriber is asked to do (in this order).
#[derive(Debug)]
pub enum Subscription {
    /// Subscribe to the match's changes, and say when the server confirmed it.
    Subscribe(MatchId, watch::Sender<Ready>),
    /// Nobody here watches the match any more.
    Unsubscribe(MatchId),
}

/// Whether a topic's subscription is in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ready {
    Waiting,
    Yes,
    Failed(String),
}

/// The topics of the matches watched in this process.
#[derive(Debug)]
pub struct Changes {
    topics: Mutex<HashMap<MatchId, Topic>>,
    /// The store's subscriber (none for the memory store: its moves are all here).
    subscriber: Option<mpsc::UnboundedSender<Subscription>>,
}

#[derive(Debug)]
struct Topic {
    sender: broadcast::Sender<Notice>,
    watchers: usize,
    ready: watch::Receiver<Ready>,
}

/// One watcher of a match: its notices; leaving (dropped) ends the topic if it was the
/// last.
#[derive(Debug)]
pub struct Watching {
    changes: Arc<Changes>,
    match_id: MatchId,
    pub notices: broadcast::Receiver<Notice>,
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut topics = self.changes.topics();
        let Some(topic) = topics.get_mut(&self.match_id) else {
            return;
        };
        topic.watchers -= 1;
        if topic.watchers == 0 {
            topics.remove(&self.match_id);
            if let Some(subscriber) = &self.changes.subscriber {
                let _ = subscriber.send(Subscription::Unsubscribe(self.match_id));
            }
        }
    }
}

impl Changes {
    pub fn new(subscriber: Option<mpsc::UnboundedSender<Subscription>>) -> Arc<Changes> {
        Arc::new(Changes {
            topics: Mutex::default(),
            subscriber,
        })
    }

    fn topics(&self) -> MutexGuard<'_, HashMap<MatchId, Topic>> {
        self.topics.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Watches `match_id` from now on: answers once the match's subscription is in
    /// place (at once for the memory store).
    pub async fn watch(self: &Arc<Self>, match_id: MatchId) -> Result<Watching, StoreRefusal> {
        let (notices, mut ready) = {
            let mut topics = self.topics();
            let topic = topics.entry(match_id).or_insert_with(|| {
                let (ready_tx, ready) = watch::channel(match self.subscriber {
                    Some(_) => Ready::Waiting,
                    None => Ready::Yes,
                });
                if let Some(subscriber) = &self.subscriber
                    && subscriber
                        .send(Subscription::Subscribe(match_id, ready_tx))
                        .is_err()
                {
                    // The subscriber is gone: `ready`'s sender with it, so the wait
                    // below fails.
                }
                Topic {
                    sender: broadcast::channel(BACKLOG).0,
                    watchers: 0,
                    ready,
                }
            });
            if topic.watchers >= MAX_WATCHERS_PER_MATCH {
                return Err(StoreRefusal::Crowded);
            }
            topic.watchers += 1;
            (topic.sender.subscribe(), topic.ready.clone())
        };
        let watching = Watching {
            changes: Arc::clone(self),
            match_id,
            notices,
        };
        let answer = ready
            .wait_for(|r| *r != Ready::Waiting)
            .await
            .map(|r| r.clone());
        match answer {
            Ok(Ready::Yes) => Ok(watching),
            Ok(Ready::Failed(why)) => Err(StoreRefusal::Unavailable(why)),
            Ok(Ready::Waiting) | Err(_) => Err(StoreRefusal::Unavailable(
                "the store's subscription is gone".into(),
            )),
        }
    }

    /// Tells the match's watchers here, if any.
    pub fn publish(&self, match_id: &MatchId, notice: Notice) {
        if let Some(topic) = self.topics().get(match_id) {
            // No receiver: nobody to tell.
            let _ = topic.sender.send(notice);
        }
    }

    /// Tells every watcher here to read its head again.
    pub fn resync_all(&self) {
        for topic in self.topics().values() {
            let _ = topic.sender.send(Notice::Resync);
        }
    }

    /// Whether a match is watched here.
    pub fn watched(&self, match_id: &MatchId) -> bool {
        self.topics().contains_key(match_id)
    }

    /// The matches watched here.
    pub fn matches(&self) -> Vec<MatchId> {
        self.topics().keys().copied().collect()
    }

    /// Watch streams open here (the watchers of every topic).
    pub fn watchers(&self) -> usize {
        self.topics().values().map(|t| t.watchers).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(n: u8) -> Arc<Head> {
        Arc::new(Head {
            state: [n; 16],
            previous: None,
            events: 0,
            seats: Vec::new(),
            token: vec![n],
        })
    }

    #[tokio::test]
    async fn watchers_of_a_match_hear_its_moves_and_leave() {
        let changes = Changes::new(None);
        let mut a = changes.watch(MatchId([1; 16])).await.expect("watch");
        let mut b = changes.watch(MatchId([1; 16])).await.expect("watch");
        let mut other = changes.watch(MatchId([2; 16])).await.expect("watch");
        changes.publish(&MatchId([1; 16]), Notice::Moved(head(7)));
        for w in [&mut a, &mut b] {
            match w.notices.recv().await {
                Ok(Notice::Moved(h)) => assert_eq!(h.state, [7; 16]),
                other => panic!("{other:?}"),
            }
        }
        assert!(other.notices.try_recv().is_err());
        assert_eq!(changes.watchers(), 3);
        drop(a);
        drop(b);
        assert!(!changes.watched(&MatchId([1; 16])));
        assert_eq!(changes.watchers(), 1);
    }

    #[tokio::test]
    async fn a_subscription_is_asked_for_once_and_waited_for() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let changes = Changes::new(Some(tx));
        let first = tokio::spawn({
            let changes = Arc::clone(&changes);
            async move { changes.watch(MatchId([1; 16])).await.map(|_| ()) }
        });
        let Some(Subscription::Subscribe(id, ready)) = rx.recv().await else {
            panic!("a subscription asked for");
        };
        assert_eq!(id, MatchId([1; 16]));
        assert!(!first.is_finished());
        ready.send(Ready::Yes).expect("ready");
        assert_eq!(first.await.expect("task"), Ok(()));
        // The watcher left when the task's `Watching` dropped: unsubscribed.
        assert!(
            matches!(rx.recv().await, Some(Subscription::Unsubscribe(id)) if id == MatchId([1; 16]))
        );
    }
}
