//! Connection behaviour against a scripted fake server.

use std::sync::Arc;
use std::time::Duration;

use ferrocket_client::{expect_success, ClientError, Connection, ConnectionConfig, RequestHandler};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::{LanguageCode, RemotingCommand, SerializeType};
use ferrocket_testkit::server::{self as support, FakeListener};

fn numbered(n: usize) -> RemotingCommand {
    RemotingCommand::request(request_code::GET_MAX_OFFSET).with_ext("n", n)
}

#[tokio::test]
async fn pipelined_requests_match_out_of_order_responses() {
    let listener = FakeListener::bind().await;
    let addr = listener.addr.clone();
    let server = tokio::spawn(async move {
        let mut conn = listener.accept().await;
        let mut requests = Vec::new();
        for _ in 0..3 {
            requests.push(conn.recv().await.unwrap());
        }
        // All three arrived before any answer: they were pipelined.
        for request in requests.iter().rev() {
            let n = request.ext_fields.get("n").unwrap().to_string();
            let response = RemotingCommand::response_to(request, 0, Some(format!("answer {n}")));
            conn.send(&response).await;
        }
        requests
    });
    let connection = Connection::connect(&addr, ConnectionConfig::default(), None)
        .await
        .unwrap();
    let (a, b, c) = tokio::join!(
        connection.invoke(numbered(0)),
        connection.invoke(numbered(1)),
        connection.invoke(numbered(2)),
    );
    assert_eq!(a.unwrap().remark.as_deref(), Some("answer 0"));
    assert_eq!(b.unwrap().remark.as_deref(), Some("answer 1"));
    assert_eq!(c.unwrap().remark.as_deref(), Some("answer 2"));
    assert_eq!(connection.in_flight(), 0);
    let requests = server.await.unwrap();
    let mut opaques: Vec<i32> = requests.iter().map(|r| r.opaque).collect();
    opaques.sort_unstable();
    opaques.dedup();
    assert_eq!(opaques.len(), 3, "opaques must be distinct");
    for request in &requests {
        assert_eq!(request.language, LanguageCode::Java);
        assert_eq!(request.version, 453);
        assert_eq!(request.serialize_type, SerializeType::Json);
        assert_eq!(request.flag, 0);
    }
}

#[tokio::test]
async fn timeout_frees_the_request_and_ignores_the_late_answer() {
    let listener = FakeListener::bind().await;
    let addr = listener.addr.clone();
    let (late_tx, late_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let mut conn = listener.accept().await;
        let first = conn.recv().await.unwrap();
        late_rx.await.unwrap();
        conn.send(&RemotingCommand::response_to(
            &first,
            0,
            Some("late".into()),
        ))
        .await;
        let second = conn.recv().await.unwrap();
        conn.send(&RemotingCommand::response_to(
            &second,
            0,
            Some("second".into()),
        ))
        .await;
        // Stay open until the client goes away.
        assert!(conn.recv().await.is_none());
    });
    let connection = Connection::connect(&addr, ConnectionConfig::default(), None)
        .await
        .unwrap();
    let error = connection
        .invoke_timeout(numbered(1), Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::Timeout { timeout_ms: 50, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("GET_MAX_OFFSET"), "{error}");
    assert_eq!(connection.in_flight(), 0);
    late_tx.send(()).unwrap();
    let second = connection.invoke(numbered(2)).await.unwrap();
    assert_eq!(second.remark.as_deref(), Some("second"));
    assert!(!connection.is_closed());
    drop(connection);
    server.await.unwrap();
}

#[tokio::test]
async fn oneway_requests_are_flagged_and_not_awaited() {
    let listener = FakeListener::bind().await;
    let addr = listener.addr.clone();
    let server = tokio::spawn(async move {
        let mut conn = listener.accept().await;
        let oneway = conn.recv().await.unwrap();
        let normal = conn.recv().await.unwrap();
        conn.send(&RemotingCommand::response_to(&normal, 0, None))
            .await;
        (oneway, normal)
    });
    let connection = Connection::connect(&addr, ConnectionConfig::default(), None)
        .await
        .unwrap();
    connection
        .invoke_oneway(RemotingCommand::request(
            request_code::UPDATE_CONSUMER_OFFSET,
        ))
        .await
        .unwrap();
    assert_eq!(connection.in_flight(), 0);
    connection.invoke(numbered(1)).await.unwrap();
    let (oneway, normal) = server.await.unwrap();
    assert!(oneway.is_oneway());
    assert!(!oneway.is_response());
    assert_eq!(oneway.code, request_code::UPDATE_CONSUMER_OFFSET);
    assert!(!normal.is_oneway());
}

#[tokio::test]
async fn server_requests_go_to_the_handler_and_are_answered() {
    let listener = FakeListener::bind().await;
    let addr = listener.addr.clone();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let handler: RequestHandler = {
        let seen = seen.clone();
        Arc::new(move |request: RemotingCommand| {
            seen.lock().unwrap().push(request.code);
            (request.code == request_code::CHECK_TRANSACTION_STATE)
                .then(|| RemotingCommand::response_to(&request, 0, Some("checked".into())))
        })
    };
    let connection = Connection::connect(&addr, ConnectionConfig::default(), Some(handler))
        .await
        .unwrap();
    let mut conn = listener.accept().await;
    // A oneway notification: handled, never answered.
    let mut notify = RemotingCommand::request(request_code::NOTIFY_CONSUMER_IDS_CHANGED);
    notify.opaque = 76;
    notify.mark_oneway();
    conn.send(&notify).await;
    let mut check = RemotingCommand::request(request_code::CHECK_TRANSACTION_STATE);
    check.opaque = 77;
    conn.send(&check).await;
    let answer = conn.recv().await.unwrap();
    assert!(answer.is_response());
    assert_eq!(answer.opaque, 77);
    assert_eq!(answer.code, response_code::SUCCESS);
    assert_eq!(answer.remark.as_deref(), Some("checked"));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            request_code::NOTIFY_CONSUMER_IDS_CHANGED,
            request_code::CHECK_TRANSACTION_STATE
        ]
    );
    drop(connection);
}

#[tokio::test]
async fn server_requests_without_handler_get_not_supported() {
    let listener = FakeListener::bind().await;
    let addr = listener.addr.clone();
    let _connection = Connection::connect(&addr, ConnectionConfig::default(), None)
        .await
        .unwrap();
    let mut conn = listener.accept().await;
    let mut request = RemotingCommand::request(request_code::GET_CONSUMER_RUNNING_INFO);
    request.opaque = 5;
    conn.send(&request).await;
    let answer = conn.recv().await.unwrap();
    assert_eq!(answer.opaque, 5);
    assert_eq!(answer.code, response_code::REQUEST_CODE_NOT_SUPPORTED);
}

#[tokio::test]
async fn error_codes_map_to_typed_response_errors() {
    let listener = FakeListener::bind().await;
    let addr = listener.addr.clone();
    tokio::spawn(async move {
        let mut conn = listener.accept().await;
        while let Some(request) = conn.recv().await {
            let response = RemotingCommand::response_to(
                &request,
                response_code::TOPIC_NOT_EXIST,
                Some("no such topic".into()),
            );
            conn.send(&response).await;
        }
    });
    let connection = Connection::connect(&addr, ConnectionConfig::default(), None)
        .await
        .unwrap();
    let response = connection.invoke(numbered(1)).await.unwrap();
    let error = expect_success(response).unwrap_err();
    match &error {
        ClientError::Response { code, remark } => {
            assert_eq!(*code, response_code::TOPIC_NOT_EXIST);
            assert_eq!(remark, "no such topic");
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(error.response_code(), Some(17));
    assert!(error.to_string().contains("TOPIC_NOT_EXIST"), "{error}");
    assert!(!error.is_transport());
}

#[tokio::test]
async fn peer_close_fails_waiting_requests_and_later_ones() {
    let listener = FakeListener::bind().await;
    let addr = listener.addr.clone();
    let server = tokio::spawn(async move {
        let mut conn = listener.accept().await;
        conn.recv().await.unwrap();
        drop(conn);
    });
    let connection = Connection::connect(&addr, ConnectionConfig::default(), None)
        .await
        .unwrap();
    let error = connection.invoke(numbered(1)).await.unwrap_err();
    assert!(matches!(error, ClientError::Closed { .. }), "{error}");
    server.await.unwrap();
    assert!(connection.is_closed());
    let again = connection.invoke(numbered(2)).await.unwrap_err();
    assert!(again.is_transport(), "{again}");
}

#[tokio::test]
async fn binary_serialization_can_be_chosen() {
    let listener = FakeListener::bind().await;
    let addr = listener.addr.clone();
    let server = tokio::spawn(async move {
        let mut conn = listener.accept().await;
        let request = conn.recv().await.unwrap();
        conn.send(&RemotingCommand::response_to(
            &request,
            0,
            Some("bin".into()),
        ))
        .await;
        request
    });
    let config = ConnectionConfig {
        serialize_type: SerializeType::RocketMq,
        ..ConnectionConfig::default()
    };
    let connection = Connection::connect(&addr, config, None).await.unwrap();
    let response = connection.invoke(numbered(9)).await.unwrap();
    assert_eq!(response.serialize_type, SerializeType::RocketMq);
    assert_eq!(response.remark.as_deref(), Some("bin"));
    let request = server.await.unwrap();
    assert_eq!(request.serialize_type, SerializeType::RocketMq);
    assert_eq!(request.ext_fields.get("n"), Some("9"));
    assert_eq!(request.version, 453);
}

#[tokio::test]
async fn refused_connection_names_the_address() {
    // A port that was free a moment ago: nothing listens there now.
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    let error = Connection::connect(&addr, ConnectionConfig::default(), None)
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Connect { .. }), "{error}");
    assert!(error.to_string().contains(&addr), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_requests_on_a_multi_thread_runtime() {
    let server = support::serve(Arc::new(|request: RemotingCommand| {
        let n = request.ext_fields.get("n").unwrap_or("").to_string();
        Some(RemotingCommand::response_to(&request, 0, Some(n)))
    }))
    .await;
    let addr = server.addr.clone();
    let runtime_test = tokio::spawn(async move {
        let connection = Connection::connect(&addr, ConnectionConfig::default(), None)
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for n in 0..200 {
            let connection = connection.clone();
            tasks.push(tokio::spawn(async move {
                let response = connection.invoke(numbered(n)).await.unwrap();
                assert_eq!(response.remark, Some(n.to_string()));
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
    runtime_test.await.unwrap();
}
