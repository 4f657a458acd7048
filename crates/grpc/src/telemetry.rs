//! Telemetry: each client opens a bidirectional stream and sends its
//! Settings first; the proxy answers with the settings merged with its own
//! (RocketMQ's `GrpcClientSettingsManager` defaults), and keeps the stream
//! to send the client commands later. A session lives as long as its
//! stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;
use tonic::Streaming;

use crate::convert::duration;
use crate::limits::{BODY_BYTES_MAX, CLIENTS_MAX, LONG_POLL_MS_MAX, RECEIVE_BATCH_MAX};
use crate::pb::{
    self, retry_policy::Strategy, settings::PubSub, telemetry_command::Command, ClientType,
    CustomizedBackoff, ExponentialBackoff, RetryPolicy, Settings,
};
use crate::status::ok;

/// What the proxy sends down a Telemetry stream.
pub type Outbound = Result<pb::TelemetryCommand, tonic::Status>;

/// Commands queued for one client's stream.
const OUTBOUND_QUEUE_MAX: usize = 64;
/// Send attempts of a producer (`maxAttempts` in the proxy's defaults).
const PRODUCER_ATTEMPTS: i32 = 3;
/// A consumer's deliveries: the first and `maxReconsumeTimes` (16) retries.
const CONSUMER_ATTEMPTS: i32 = 17;
/// Java's delay levels 3..=18: the waits between a consumer's retries.
pub(crate) const RETRY_WAITS_S: [i64; 16] = [
    10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200,
];

/// One client's session.
struct Session {
    settings: Settings,
    outbound: mpsc::Sender<Outbound>,
}

/// Every client with a Telemetry stream, by client id.
#[derive(Default)]
pub struct Sessions {
    clients: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `client_id` sent its settings.
    pub fn knows(&self, client_id: &str) -> bool {
        self.lock().contains_key(client_id)
    }

    /// The client's settings as merged.
    pub fn settings(&self, client_id: &str) -> Option<Settings> {
        self.lock().get(client_id).map(|s| s.settings.clone())
    }

    pub fn forget(&self, client_id: &str) {
        self.lock().remove(client_id);
    }

    /// Every topic some connected producer publishes.
    pub fn published_topics(&self) -> Vec<String> {
        let mut topics: Vec<String> = self
            .lock()
            .values()
            .filter_map(|s| publishing(&s.settings))
            .flat_map(|p| p.topics.iter().map(|t| t.name.clone()))
            .collect();
        topics.sort();
        topics.dedup();
        topics
    }

    /// Sends `command` to one connected producer of `topic`; false when
    /// there is none (or its stream is full).
    pub fn send_to_publisher(&self, topic: &str, command: pb::TelemetryCommand) -> bool {
        let clients = self.lock();
        let producer = clients.values().find(|s| {
            publishing(&s.settings).is_some_and(|p| p.topics.iter().any(|t| t.name == topic))
        });
        match producer {
            Some(session) => session.outbound.try_send(Ok(command)).is_ok(),
            None => false,
        }
    }

    /// Connected clients.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn keep(&self, client_id: &str, settings: Settings, outbound: mpsc::Sender<Outbound>) -> bool {
        let mut clients = self.lock();
        if clients.len() >= CLIENTS_MAX && !clients.contains_key(client_id) {
            return false;
        }
        clients.insert(client_id.to_string(), Session { settings, outbound });
        true
    }

    /// Forgets `client_id` only if its session is still this stream's;
    /// true when it did.
    fn forget_stream(&self, client_id: &str, outbound: &mpsc::Sender<Outbound>) -> bool {
        let mut clients = self.lock();
        let mine = clients
            .get(client_id)
            .is_some_and(|s| s.outbound.same_channel(outbound));
        if mine {
            clients.remove(client_id);
        }
        mine
    }
}

fn publishing(settings: &Settings) -> Option<&pb::Publishing> {
    match settings.pub_sub.as_ref() {
        Some(PubSub::Publishing(publishing)) => Some(publishing),
        _ => None,
    }
}

/// Whether a client type is a lite consumer's.
fn is_lite(client_type: Option<i32>) -> bool {
    matches!(
        client_type.map(ClientType::try_from),
        Some(Ok(
            ClientType::LitePushConsumer | ClientType::LiteSimpleConsumer
        ))
    )
}

/// The settings a client gets back: its own, with the proxy's policy.
pub fn merge(mut settings: Settings) -> Settings {
    match settings.pub_sub.as_mut() {
        Some(PubSub::Publishing(publishing)) => {
            publishing.max_body_size = BODY_BYTES_MAX as i32;
            publishing.validate_message_type = true;
            let attempts = settings
                .backoff_policy
                .as_ref()
                .map_or(PRODUCER_ATTEMPTS, |p| p.max_attempts)
                .max(1);
            settings.backoff_policy = Some(RetryPolicy {
                max_attempts: attempts,
                strategy: Some(Strategy::ExponentialBackoff(ExponentialBackoff {
                    initial: Some(duration(10)),
                    max: Some(duration(1000)),
                    multiplier: 2.0,
                })),
            });
        }
        Some(PubSub::Subscription(subscription)) => {
            subscription
                .receive_batch_size
                .get_or_insert(RECEIVE_BATCH_MAX);
            subscription
                .long_polling_timeout
                .get_or_insert_with(|| duration(LONG_POLL_MS_MAX));
            subscription.fifo.get_or_insert(false);
            if is_lite(settings.client_type) {
                subscription.lite_subscription_quota =
                    Some(crate::lite::LITE_SUBSCRIPTION_QUOTA as i32);
                subscription.max_lite_topic_size =
                    Some(ferrocket_protocol::lite::LITE_TOPIC_BYTES_MAX as i32);
            }
            settings.backoff_policy = Some(RetryPolicy {
                max_attempts: CONSUMER_ATTEMPTS,
                strategy: Some(Strategy::CustomizedBackoff(CustomizedBackoff {
                    next: RETRY_WAITS_S.iter().map(|s| duration(s * 1000)).collect(),
                })),
            });
        }
        None => {}
    }
    settings
}

/// Serves one client's Telemetry stream; returns the outbound half.
pub fn open(
    sessions: Arc<crate::Backend>,
    client_id: String,
    mut inbound: Streaming<pb::TelemetryCommand>,
) -> mpsc::Receiver<Outbound> {
    let (outbound, receiver) = mpsc::channel(OUTBOUND_QUEUE_MAX);
    tokio::spawn(async move {
        loop {
            let command = match inbound.message().await {
                Ok(Some(command)) => command,
                Ok(None) | Err(_) => break,
            };
            if !on_command(&sessions.sessions, &client_id, command, &outbound).await {
                break;
            }
        }
        if sessions.sessions.forget_stream(&client_id, &outbound) {
            sessions.lite.forget_client(&client_id);
        }
    });
    receiver
}

/// One command from the client; false ends the stream.
async fn on_command(
    sessions: &Sessions,
    client_id: &str,
    command: pb::TelemetryCommand,
    outbound: &mpsc::Sender<Outbound>,
) -> bool {
    let Some(Command::Settings(settings)) = command.command else {
        // Answers to our commands (stack traces, verify results): nothing
        // is waiting for them yet.
        return true;
    };
    if settings.pub_sub.is_none() {
        let refused =
            tonic::Status::invalid_argument("settings carry neither publishing nor subscription");
        let _ = outbound.send(Err(refused)).await;
        return false;
    }
    let known_type = matches!(
        ClientType::try_from(settings.client_type.unwrap_or(0)),
        Ok(ClientType::Producer
            | ClientType::SimpleConsumer
            | ClientType::PushConsumer
            | ClientType::LitePushConsumer)
    );
    if !known_type {
        tracing::debug!(
            client_id,
            "telemetry settings from a client type the proxy does not serve fully"
        );
    }
    let merged = merge(settings);
    if !sessions.keep(client_id, merged.clone(), outbound.clone()) {
        let full = tonic::Status::resource_exhausted("the proxy holds its maximum of clients");
        let _ = outbound.send(Err(full)).await;
        return false;
    }
    let reply = pb::TelemetryCommand {
        status: Some(ok()),
        command: Some(Command::Settings(merged)),
    };
    outbound.send(Ok(reply)).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn producers_get_the_proxy_limits_and_consumers_its_retry_policy() {
        let producer = merge(Settings {
            pub_sub: Some(PubSub::Publishing(pb::Publishing::default())),
            ..Default::default()
        });
        let Some(PubSub::Publishing(publishing)) = producer.pub_sub else {
            panic!("publishing kept");
        };
        assert_eq!(publishing.max_body_size, BODY_BYTES_MAX as i32);
        assert_eq!(
            producer.backoff_policy.unwrap().max_attempts,
            PRODUCER_ATTEMPTS
        );
        let consumer = merge(Settings {
            pub_sub: Some(PubSub::Subscription(pb::Subscription::default())),
            ..Default::default()
        });
        let Some(PubSub::Subscription(subscription)) = consumer.pub_sub else {
            panic!("subscription kept");
        };
        assert_eq!(subscription.receive_batch_size, Some(RECEIVE_BATCH_MAX));
        let policy = consumer.backoff_policy.unwrap();
        assert_eq!(policy.max_attempts, CONSUMER_ATTEMPTS);
        assert!(
            matches!(policy.strategy, Some(Strategy::CustomizedBackoff(ref b)) if b.next.len() == 16)
        );
    }
}
