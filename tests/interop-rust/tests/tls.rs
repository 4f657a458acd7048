//! TLS with `rocketmq-client-rust` 1.0.0 (a Java-compatible client nobody
//! here wrote): a name server and a broker with `tls.server.mode=enforcing`
//! and a certificate signed by a test CA. The broker registers over TLS
//! (enforcing implies it, as Java's `useTLS` default does); the client
//! verifies the certificate against the CA and sends; Ferrocket's own
//! client pulls over TLS; plaintext clients and a client trusting another
//! CA are refused.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use ferrocket_client::{ConnectionConfig, PullConsumer, PullConsumerConfig, PullStatus};
use ferrocket_interop_rust::Cluster;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rocketmq_client_rust::ClientConfig;
use rocketmq_client_rust::DefaultMQProducer;
use rocketmq_model::common::message::message_single::Message;

const TOPIC: &str = "TlsTopic";
const MESSAGES: usize = 20;

/// Writes a CA and a 127.0.0.1 server certificate it signed; returns the
/// CA's path and the `tls.*` settings that serve the certificate.
fn write_pki(dir: &Path, name: &str) -> (String, Vec<String>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    let cert = CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let path = |file: &str| dir.join(format!("{name}-{file}")).display().to_string();
    std::fs::write(path("ca.pem"), ca.pem()).unwrap();
    std::fs::write(path("cert.pem"), cert.pem()).unwrap();
    std::fs::write(path("key.pem"), key.serialize_pem()).unwrap();
    let settings = vec![
        "tls.server.mode=enforcing".to_string(),
        "tls.test.mode.enable=false".to_string(),
        format!("tls.server.certPath={}", path("cert.pem")),
        format!("tls.server.keyPath={}", path("key.pem")),
        "tls.config.file=/nonexistent/tls.properties".to_string(),
    ];
    (path("ca.pem"), settings)
}

/// Ferrocket's client over TLS, trusting any certificate.
fn tls_connection() -> ConnectionConfig {
    let settings = ferrocket_tls::TlsSettings::default();
    ConnectionConfig {
        tls: Some(ferrocket_tls::client_config(&settings, &[]).unwrap()),
        ..ConnectionConfig::default()
    }
}

/// rocketmq-client-rust's settings: TLS, verifying the server against `ca`.
fn verifying_client(namesrv: &str, ca: &str) -> ClientConfig {
    ClientConfig::builder()
        .namesrv_addr(namesrv.to_string())
        .enable_tls(true)
        .tls_test_mode_enable(false)
        .tls_client_auth_server(true)
        .tls_client_trust_cert_path(ca.to_string())
        .build()
        .unwrap()
}

async fn producer(config: ClientConfig, group: &str) -> DefaultMQProducer {
    let mut producer = DefaultMQProducer::builder(ferrocket_interop_rust::client_runtime("tls"))
        .client_config(config)
        .producer_group(group.to_string())
        .send_msg_timeout(5_000)
        .build();
    producer.start().await.expect("producer starts");
    producer
}

fn message(body: &str) -> Message {
    Message::builder()
        .topic(TOPIC)
        .body_slice(body.as_bytes())
        .build_unchecked()
}

/// Bodies in `TOPIC` (all queues, from offset 0).
async fn delivered(consumer: &PullConsumer) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for queue in consumer.read_queues(TOPIC).await.unwrap_or_default() {
        let mut offset = 0;
        loop {
            let result = consumer.pull(&queue, offset, 32, "*", None).await.unwrap();
            if result.status != PullStatus::Found {
                break;
            }
            for message in &result.messages {
                let body = String::from_utf8_lossy(&message.body).into_owned();
                *out.entry(body).or_default() += 1;
            }
            offset = result.next_begin_offset;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enforcing_cluster_serves_verified_tls_clients_and_refuses_plaintext() {
    // Two rustls providers are built in (ring here, aws-lc in the client's
    // transport): an application picks one, as rustls asks.
    let _ = ferrocket_tls::rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let (ca, settings) = write_pki(dir.path(), "ours");
    let (other_ca, _) = write_pki(dir.path(), "theirs");
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    let cluster = Cluster::start_with(&settings, &settings, tls_connection());
    let namesrv = cluster.namesrv.addr();

    let mut sender = producer(verifying_client(&namesrv, &ca), "tls_producer").await;
    for n in 0..MESSAGES {
        let sent = sender.send(message(&format!("tls-{n}"))).await;
        assert!(sent.is_ok(), "send {n} over TLS: {sent:?}");
    }
    sender.shutdown().await;

    let mut config = PullConsumerConfig::new("tls_checker", namesrv.clone());
    config.connection = tls_connection();
    let consumer = PullConsumer::new(config).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = delivered(&consumer).await;
    while seen.len() < MESSAGES && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        seen = delivered(&consumer).await;
    }
    consumer.shutdown();
    assert_eq!(seen.len(), MESSAGES, "delivered over TLS: {seen:?}");
    assert!(seen.values().all(|&n| n == 1), "each once: {seen:?}");

    // Plaintext is closed unanswered, by the name server and the broker.
    let plain = ferrocket_client::Admin::new(&namesrv).unwrap();
    assert!(
        plain.cluster_brokers().await.is_err(),
        "plaintext name server call"
    );
    let plain = ferrocket_client::Connection::connect(
        &cluster.broker.addr(),
        ConnectionConfig::default(),
        None,
    )
    .await
    .unwrap();
    // GET_BROKER_RUNTIME_INFO (28): any broker answers it.
    let request = ferrocket_protocol::RemotingCommand::request(28);
    assert!(
        plain.invoke(request).await.is_err(),
        "plaintext broker call"
    );

    // A client that trusts another CA does not get through.
    let mut stranger = producer(verifying_client(&namesrv, &other_ca), "tls_stranger").await;
    let refused = tokio::time::timeout(Duration::from_secs(20), stranger.send(message("x"))).await;
    assert!(
        !matches!(refused, Ok(Ok(_))),
        "a certificate of another CA was trusted"
    );
    stranger.shutdown().await;
}
