//! The calls auto-renew takes part in: a push consumer's receive (its
//! messages tracked), its ack, nack and dead-lettering (sent with the
//! newest handle, ending the tracking), and the renewals and releases
//! themselves, all through the same calls the clients' requests take.

use std::sync::{Arc, Weak};

use futures_util::StreamExt;

use crate::backend::Backend;
use crate::convert::{duration, now_ms};
use crate::pb::{self, receive_message_response::Content, ClientType, Code};
use crate::receive::{self, parse_handle, Responses};
use crate::renew::{Delivered, Job, RenewSettings, Renewals};

/// The retry waits of a nacked push consumer's message (the consumer
/// settings' backoff), by deliveries so far.
use crate::telemetry::RETRY_WAITS_S;

/// Whether `client` said in its Settings that it is a push consumer.
fn is_push_consumer(backend: &Backend, client: &str) -> bool {
    backend
        .sessions
        .settings(client)
        .is_some_and(|s| s.client_type == Some(ClientType::PushConsumer as i32))
}

/// ReceiveMessage: with `auto_renew` from a (lite) push consumer, popped with
/// `defaultInvisibleTimeMills` and each message tracked.
pub async fn receive_message(
    backend: &Arc<Backend>,
    renewals: &Arc<Renewals>,
    client: &str,
    mut request: pb::ReceiveMessageRequest,
) -> Responses {
    let lite = crate::lite::calls::is_lite_consumer(backend, client);
    let settings = renewals.settings();
    let push = lite || is_push_consumer(backend, client);
    if !(request.auto_renew && settings.enabled && push) {
        return receive_any(backend, client, lite, request).await;
    }
    request.invisible_duration = Some(duration(settings.default_invisible_ms));
    let group = request
        .group
        .as_ref()
        .map_or("", |g| g.name.as_str())
        .to_string();
    let items = receive_any(backend, client, lite, request).await;
    let mut untracked = 0;
    for item in &items {
        let Some(Content::Message(message)) = &item.content else {
            continue;
        };
        let Some(delivered) = delivered(&group, message) else {
            continue;
        };
        if !renewals.track(client, delivered) {
            untracked += 1;
        }
    }
    if untracked > 0 {
        tracing::warn!(
            client,
            untracked,
            "auto-renew handle limit reached: messages delivered without renewal"
        );
    }
    start(renewals, backend);
    items
}

/// A lite consumer's receive or any other.
async fn receive_any(
    backend: &Backend,
    client: &str,
    lite: bool,
    request: pb::ReceiveMessageRequest,
) -> Responses {
    match lite {
        true => crate::lite::calls::receive_message(backend, client, request).await,
        false => receive::receive_message(backend, request).await,
    }
}

/// What a delivered message is tracked with (a lite topic's message as
/// its lite group).
fn delivered(group: &str, message: &pb::Message) -> Option<Delivered> {
    let sys = message.system_properties.as_ref()?;
    let handle = sys.receipt_handle.clone()?;
    let info = parse_handle(&handle).ok()?.info;
    let topic = message.topic.as_ref().map_or("", |t| t.name.as_str());
    Some(Delivered {
        group: crate::lite::entry_group(group, topic, sys.lite_topic.as_deref()),
        topic: topic.to_string(),
        message_id: sys.message_id.clone(),
        reconsumed: sys.delivery_attempt.unwrap_or(1).max(1) as u32 - 1,
        visible_at_ms: info.pop_time_ms + info.invisible_time_ms,
        handle,
    })
}

/// AckMessage: tracked entries acked with their newest handle.
pub async fn ack_message(
    backend: &Backend,
    renewals: &Renewals,
    client: &str,
    mut request: pb::AckMessageRequest,
) -> pb::AckMessageResponse {
    if request.entries.len() > crate::limits::ACK_ENTRIES_MAX {
        return receive::ack_message(backend, request).await;
    }
    let mut originals = Vec::with_capacity(request.entries.len());
    for entry in &mut request.entries {
        let received = entry.receipt_handle.clone();
        if let Some(newest) = renewals.take(client, &received).await {
            entry.receipt_handle = newest;
        }
        originals.push(received);
    }
    let mut response = receive::ack_message(backend, request).await;
    // The results name the handles the client sent.
    for (entry, original) in response.entries.iter_mut().zip(originals) {
        entry.receipt_handle = original;
    }
    response
}

/// ChangeInvisibleDuration (a push consumer's nack): with the newest handle.
pub async fn change_invisible(
    backend: &Backend,
    renewals: &Renewals,
    client: &str,
    mut request: pb::ChangeInvisibleDurationRequest,
) -> pb::ChangeInvisibleDurationResponse {
    if let Some(newest) = renewals.take(client, &request.receipt_handle).await {
        request.receipt_handle = newest;
    }
    receive::change_invisible(backend, request).await
}

/// ForwardMessageToDeadLetterQueue: with the newest handle.
pub async fn forward_to_dead_letter(
    backend: &Backend,
    renewals: &Renewals,
    client: &str,
    mut request: pb::ForwardMessageToDeadLetterQueueRequest,
) -> pb::ForwardMessageToDeadLetterQueueResponse {
    if let Some(newest) = renewals.take(client, &request.receipt_handle).await {
        request.receipt_handle = newest;
    }
    crate::dead_letter::forward(backend, request).await
}

/// Changes the invisible time of `handle`'s message: the new handle, or
/// the status that refused it.
async fn change(
    backend: &Backend,
    job: &Job,
    handle: &str,
    invisible_ms: i64,
) -> Result<String, pb::Status> {
    let request = pb::ChangeInvisibleDurationRequest {
        group: Some(crate::route::resource(&job.tracked.group)),
        topic: Some(crate::route::resource(&job.tracked.topic)),
        receipt_handle: handle.to_string(),
        invisible_duration: Some(duration(invisible_ms)),
        message_id: job.tracked.message_id.clone(),
        ..Default::default()
    };
    let answer = receive::change_invisible(backend, request).await;
    match answer.status {
        Some(status) if status.code == Code::Ok as i32 => Ok(answer.receipt_handle),
        Some(status) => Err(status),
        None => Err(crate::status::status(
            Code::InternalServerError,
            "no status",
        )),
    }
}

/// One renewal: the message invisible for the next slice, or, past
/// `renewMaxTimeMillis`, for the group's retry wait and no longer tracked.
async fn renew(backend: &Arc<Backend>, renewals: &Renewals, job: Job) {
    let settings = renewals.settings();
    let mut current = job.tracked.current.lock().await;
    let Some(handle) = current.clone() else {
        return; // acked or nacked meanwhile
    };
    let now = now_ms();
    if now - job.tracked.received_ms >= settings.max_ms {
        let step = (job.tracked.reconsumed as usize).min(RETRY_WAITS_S.len() - 1);
        if let Err(status) = change(backend, &job, &handle, RETRY_WAITS_S[step] * 1000).await {
            tracing::warn!(
                message_id = job.tracked.message_id,
                ?status,
                "stop-renew nack failed"
            );
        }
        *current = None;
        renewals.forget(&job.client, &job.original);
        return;
    }
    let slice = RenewSettings::slice_ms(job.tracked.renewed);
    match change(backend, &job, &handle, slice).await {
        Ok(newest) => {
            *current = Some(newest);
            renewals.renewed(&job, now + slice, false);
        }
        Err(status) => {
            let final_ = status.code == Code::InvalidReceiptHandle as i32
                || job.tracked.failures + 1 >= settings.max_retries;
            tracing::warn!(
                message_id = job.tracked.message_id,
                ?status,
                given_up = final_,
                "renewing a receipt handle failed"
            );
            match final_ {
                true => {
                    *current = None;
                    renewals.forget(&job.client, &job.original);
                }
                false => renewals.renewed(&job, 0, true),
            }
        }
    }
}

/// A gone client's message, already untracked: visible again after
/// `invisibleTimeMillisWhenClear`.
async fn release(backend: &Arc<Backend>, renewals: &Renewals, job: Job) {
    let clear_ms = renewals.settings().clear_invisible_ms;
    let Some(handle) = job.tracked.current.lock().await.take() else {
        return;
    };
    if let Err(status) = change(backend, &job, &handle, clear_ms).await {
        tracing::warn!(
            message_id = job.tracked.message_id,
            ?status,
            "releasing a gone client's message failed"
        );
    }
}

/// Starts the renew loop once, for as long as both live.
fn start(renewals: &Arc<Renewals>, backend: &Arc<Backend>) {
    if !renewals.first_start() {
        return;
    }
    let weak_backend: Weak<Backend> = Arc::downgrade(backend);
    let weak_renewals: Weak<Renewals> = Arc::downgrade(renewals);
    let period = renewals.period();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(period).await;
            let (Some(backend), Some(renewals)) = (weak_backend.upgrade(), weak_renewals.upgrade())
            else {
                break;
            };
            tick(&backend, &renewals).await;
        }
    });
}

/// One pass: release the gone clients' messages, renew the due ones.
async fn tick(backend: &Arc<Backend>, renewals: &Renewals) {
    let concurrency = renewals.settings().concurrency;
    let gone = renewals.take_gone(|client| backend.sessions.knows(client));
    if !gone.is_empty() {
        tracing::info!(
            handles = gone.len(),
            "clients gone: their messages are released"
        );
    }
    futures_util::stream::iter(gone)
        .for_each_concurrent(concurrency, |job| release(backend, renewals, job))
        .await;
    let due = renewals.due(now_ms());
    futures_util::stream::iter(due)
        .for_each_concurrent(concurrency, |job| renew(backend, renewals, job))
        .await;
}
