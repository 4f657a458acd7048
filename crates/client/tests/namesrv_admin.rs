//! Name server client, route cache and admin calls against fake servers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ferrocket_client::namesrv::is_topic_not_exist;
use ferrocket_client::{Admin, ConnectionConfig, ConnectionPool, MessageQueue, NameServerClient};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::CreateTopicRequestHeader;
use ferrocket_protocol::RemotingCommand;
use ferrocket_testkit::server::{self as support, ok_with_body, serve};

fn route_json(broker_addr: &str) -> String {
    format!(
        r#"{{"queueDatas":[{{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":2,"perm":6,"topicSysFlag":0}}],
            "brokerDatas":[{{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{{"0":"{broker_addr}"}}}}]}}"#
    )
}

/// A name server knowing topic "T" (and nothing else), counting route
/// requests. Cluster info uses fastjson's unquoted integer keys.
fn fake_namesrv(broker_addr: String, route_requests: Arc<AtomicUsize>) -> support::Handler {
    Arc::new(move |request: RemotingCommand| {
        let response = match request.code {
            request_code::GET_ROUTEINFO_BY_TOPIC => {
                route_requests.fetch_add(1, Ordering::SeqCst);
                assert_eq!(
                    request.ext_fields.get("acceptStandardJsonOnly"),
                    Some("true")
                );
                if request.ext_fields.get("topic") == Some("T") {
                    ok_with_body(&request, route_json(&broker_addr))
                } else {
                    RemotingCommand::response_to(
                        &request,
                        response_code::TOPIC_NOT_EXIST,
                        Some("No topic route info".into()),
                    )
                }
            }
            request_code::GET_BROKER_CLUSTER_INFO => ok_with_body(
                &request,
                format!(
                    r#"{{"brokerAddrTable":{{"broker-a":{{"cluster":"DefaultCluster","brokerName":"broker-a",
                        "brokerAddrs":{{0:"{broker_addr}"}}}}}},"clusterAddrTable":{{"DefaultCluster":["broker-a"]}}}}"#
                ),
            ),
            request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER => {
                ok_with_body(&request, r#"{"topicList":["T","TBW102"]}"#)
            }
            _ => RemotingCommand::not_supported(&request),
        };
        Some(response)
    })
}

fn closed_port_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

#[tokio::test]
async fn route_is_parsed_cached_and_invalidated() {
    let requests = Arc::new(AtomicUsize::new(0));
    let namesrv = serve(fake_namesrv("127.0.0.1:10911".into(), requests.clone())).await;
    let pool = ConnectionPool::new(ConnectionConfig::default(), None);
    let client = NameServerClient::new(&namesrv.addr, pool).unwrap();
    let queues = client.write_queues("T").await.unwrap();
    assert_eq!(
        queues,
        vec![
            MessageQueue::new("T", "broker-a", 0),
            MessageQueue::new("T", "broker-a", 1)
        ]
    );
    assert_eq!(client.read_queues("T").await.unwrap().len(), 4);
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "second lookup served from cache"
    );
    assert_eq!(
        client.master_addr("broker-a").as_deref(),
        Some("127.0.0.1:10911")
    );
    client.invalidate("T");
    client.route("T").await.unwrap();
    assert_eq!(requests.load(Ordering::SeqCst), 2);
    let error = client.route("Nope").await.unwrap_err();
    assert!(is_topic_not_exist(&error), "{error}");
}

#[tokio::test]
async fn unreachable_name_servers_are_skipped() {
    let requests = Arc::new(AtomicUsize::new(0));
    let namesrv = serve(fake_namesrv("127.0.0.1:10911".into(), requests)).await;
    let list = format!("{};{}", closed_port_addr(), namesrv.addr);
    let pool = ConnectionPool::new(ConnectionConfig::default(), None);
    let client = NameServerClient::new(&list, pool).unwrap();
    let topics = client.topic_list().await.unwrap();
    assert!(topics.topic_list.contains("T"));
    let all_down = format!("{};{}", closed_port_addr(), closed_port_addr());
    let pool = ConnectionPool::new(ConnectionConfig::default(), None);
    let down = NameServerClient::new(&all_down, pool).unwrap();
    let error = down.topic_list().await.unwrap_err();
    assert!(error.is_transport(), "{error}");
    assert!(NameServerClient::new(
        " ; ",
        ConnectionPool::new(ConnectionConfig::default(), None)
    )
    .is_err());
}

#[tokio::test]
async fn admin_creates_topics_on_cluster_masters() {
    let created = Arc::new(Mutex::new(Vec::new()));
    let broker = serve({
        let created = created.clone();
        Arc::new(move |request: RemotingCommand| {
            Some(match request.code {
                request_code::UPDATE_AND_CREATE_TOPIC => {
                    let header = CreateTopicRequestHeader::from_ext(&request.ext_fields).unwrap();
                    created.lock().unwrap().push(header);
                    RemotingCommand::response_to(&request, 0, None)
                }
                request_code::GET_BROKER_RUNTIME_INFO => ok_with_body(
                    &request,
                    r#"{"table":{"brokerVersionDesc":"V5_3_0","putTps":"1.5 1.0 0.5"}}"#,
                ),
                _ => RemotingCommand::not_supported(&request),
            })
        })
    })
    .await;
    let namesrv = serve(fake_namesrv(
        broker.addr.clone(),
        Arc::new(AtomicUsize::new(0)),
    ))
    .await;
    let admin = Admin::new(&namesrv.addr).unwrap();
    let options = ferrocket_client::CreateTopicOptions {
        read_queue_nums: 3,
        write_queue_nums: 2,
        order: true,
        ..Default::default()
    };
    let addrs = admin
        .create_topic_in_cluster("DefaultCluster", "NewTopic", &options)
        .await
        .unwrap();
    assert_eq!(addrs, vec![broker.addr.clone()]);
    let headers = created.lock().unwrap().clone();
    assert_eq!(headers.len(), 1);
    assert_eq!(headers[0].topic, "NewTopic");
    assert_eq!(headers[0].default_topic.as_deref(), Some("TBW102"));
    assert_eq!(
        (headers[0].read_queue_nums, headers[0].write_queue_nums),
        (3, 2)
    );
    assert_eq!(headers[0].perm, 6);
    assert!(headers[0].order);

    let brokers = admin.cluster_brokers().await.unwrap();
    assert_eq!(brokers.len(), 1);
    assert_eq!(brokers[0].broker_name, "broker-a");
    assert_eq!(brokers[0].addr, broker.addr);
    let runtime = admin.broker_runtime_info(&broker.addr).await.unwrap();
    assert_eq!(
        runtime.get("brokerVersionDesc").map(String::as_str),
        Some("V5_3_0")
    );
    let mut topics = admin.topic_list().await.unwrap();
    topics.sort();
    assert_eq!(topics, vec!["T".to_string(), "TBW102".to_string()]);
    let route = admin.topic_route("T").await.unwrap();
    assert_eq!(route.queue_datas[0].write_queue_nums, 2);
    let error = admin
        .create_topic_in_cluster("NoCluster", "NewTopic", &options)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("DefaultCluster"), "{error}");
}

#[tokio::test]
async fn broker_errors_surface_as_response_errors() {
    let broker = serve(Arc::new(|request: RemotingCommand| {
        Some(RemotingCommand::response_to(
            &request,
            response_code::NO_PERMISSION,
            Some("topic create forbidden".into()),
        ))
    }))
    .await;
    let admin = Admin::new("127.0.0.1:1").unwrap();
    let error = admin
        .create_topic(&broker.addr, "T", &Default::default())
        .await
        .unwrap_err();
    assert_eq!(error.response_code(), Some(response_code::NO_PERMISSION));
    assert!(
        error.to_string().contains("topic create forbidden"),
        "{error}"
    );
}
