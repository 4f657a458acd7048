//! The lite calls: SyncLiteSubscription, and a lite push consumer's
//! ReceiveMessage (its lite topics popped in turns until one has messages
//! or the long poll ends).

use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::convert::duration_ms;
use crate::limits::{LONG_POLL_MS_MAX, LONG_POLL_MS_MIN};
use crate::lite::{lite_group, Sync};
use crate::pb::{
    self, receive_message_response::Content, ClientType, Code, LiteSubscriptionAction,
};
use crate::receive::{self, only, Responses};
use crate::status::{ok, status};

/// Lite topics one round of a receive pops (one non-waiting pop each).
const POPS_PER_ROUND: usize = 32;
/// The wait between rounds that found nothing, cut short by a lite send
/// through this endpoint.
const ROUND_WAIT: Duration = Duration::from_millis(500);

/// Whether `client` said in its Settings that it is a lite consumer.
pub fn is_lite_consumer(backend: &Backend, client: &str) -> bool {
    backend.sessions.settings(client).is_some_and(|s| {
        let kind = s.client_type.unwrap_or(0);
        kind == ClientType::LitePushConsumer as i32 || kind == ClientType::LiteSimpleConsumer as i32
    })
}

/// SyncLiteSubscription.
pub async fn sync_lite_subscription(
    backend: &Backend,
    client: &str,
    request: &pb::SyncLiteSubscriptionRequest,
) -> pb::SyncLiteSubscriptionResponse {
    let answer = |status| pb::SyncLiteSubscriptionResponse {
        status: Some(status),
    };
    let Ok(action) = LiteSubscriptionAction::try_from(request.action) else {
        return answer(status(Code::BadRequest, "unknown lite subscription action"));
    };
    let sync = Sync {
        client,
        group: request.group.as_ref().map_or("", |g| g.name.as_str()),
        topic: request.topic.as_ref().map_or("", |t| t.name.as_str()),
        action,
        lite_topics: &request.lite_topic_set,
    };
    if let Err(refused) = backend.lite.sync(&sync) {
        return answer(refused);
    }
    if action == LiteSubscriptionAction::PartialAdd
        && super::start::starts_at_newest(request.offset_option.as_ref())
    {
        let started =
            super::start::start_at_newest(backend, sync.group, sync.topic, sync.lite_topics);
        if let Err(failed) = started.await {
            return answer(failed);
        }
    }
    answer(ok())
}

/// Whether a receive's answer ends the receive: messages, or a refusal
/// other than "no message".
fn settles(items: &Responses) -> bool {
    items.iter().any(|item| match &item.content {
        Some(Content::Message(_)) => true,
        Some(Content::Status(s)) => {
            s.code != Code::Ok as i32 && s.code != Code::MessageNotFound as i32
        }
        _ => false,
    })
}

/// A lite consumer's ReceiveMessage: rounds over its lite topics of the
/// request's topic until one has messages or the long poll is over.
pub async fn receive_message(
    backend: &Backend,
    client: &str,
    request: pb::ReceiveMessageRequest,
) -> Responses {
    let group = request.group.as_ref().map_or("", |g| g.name.as_str());
    let topic = request
        .message_queue
        .as_ref()
        .and_then(|q| q.topic.as_ref())
        .map_or("", |t| t.name.as_str());
    let poll_ms = request
        .long_polling_timeout
        .as_ref()
        .map_or(LONG_POLL_MS_MAX, duration_ms)
        .clamp(LONG_POLL_MS_MIN, LONG_POLL_MS_MAX);
    let deadline = Instant::now() + Duration::from_millis(poll_ms as u64);
    loop {
        // Listening before the round: a send during it is not missed.
        let woken = backend.lite.woken();
        tokio::pin!(woken);
        woken.as_mut().enable();
        for lite in backend.lite.round(client, group, topic, POPS_PER_ROUND) {
            let items =
                receive::receive_lite(backend, &request, lite_group(group, topic, &lite), &lite)
                    .await;
            if settles(&items) {
                return items;
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return only(status(Code::MessageNotFound, "no new message"));
        }
        let _ = tokio::time::timeout(ROUND_WAIT.min(deadline - now), woken).await;
    }
}
