//! `ferrocket controller` and the controller embedded in the name server
//! (`enableControllerInNamesrv=true`), as processes on 127.0.0.1.

mod harness;

use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::header::controller::{
    GetMetaDataResponseHeader, GetNextBrokerIdRequestHeader,
};
use ferrocket_protocol::RemotingCommand;
use harness::remoting::route_request;
use harness::{free_port, wait_for, RemotingConn, ServerProcess};

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Waits until the controller at `addr` leads, then asks it for a broker id.
fn check_controller(addr: &str) {
    let mut conn = RemotingConn::connect(addr).unwrap();
    let leads = wait_for(std::time::Duration::from_secs(20), || {
        let answer = conn.request(RemotingCommand::request(
            request_code::CONTROLLER_GET_METADATA_INFO,
        ));
        let header = GetMetaDataResponseHeader::from_ext(&answer.ext_fields).ok()?;
        header.is_leader.then_some(())
    });
    assert!(
        leads.is_some(),
        "the controller at {addr} never became leader"
    );
    let ask = GetNextBrokerIdRequestHeader {
        cluster_name: "DefaultCluster".into(),
        broker_name: "broker-a".into(),
    };
    let mut request = RemotingCommand::request(request_code::CONTROLLER_GET_NEXT_BROKER_ID);
    request.ext_fields = ask.to_ext();
    let answer = conn.request(request);
    assert_eq!(answer.code, response_code::SUCCESS, "{:?}", answer.remark);
    assert_eq!(answer.ext_fields.get("nextBrokerId"), Some("1"));
}

#[test]
fn a_standalone_controller_serves_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let store = dir.path().join("controller");
    let args = strings(&[
        "controller",
        "--listen-addr",
        "127.0.0.1",
        "--listen-port",
        &port.to_string(),
        "--set",
        &format!("controllerStorePath={}", store.display()),
    ]);
    let mut controller = ServerProcess::start("controller", &args, dir.path(), port).unwrap();
    check_controller(controller.addr());
    assert!(controller.stop().success());
    assert!(
        store.join("raft-vote.json").exists(),
        "the Raft vote is on disk"
    );
}

#[test]
fn the_name_server_embeds_a_controller_on_its_own_port() {
    let dir = tempfile::tempdir().unwrap();
    let (namesrv_port, controller_port) = (free_port(), free_port());
    let store = dir.path().join("controller");
    let args = strings(&[
        "namesrv",
        "--listen-addr",
        "127.0.0.1",
        "--listen-port",
        &namesrv_port.to_string(),
        "--set",
        "enableControllerInNamesrv=true",
        "--set",
        &format!("controllerDLegerPeers=n0-127.0.0.1:{controller_port}"),
        "--set",
        &format!("controllerStorePath={}", store.display()),
    ]);
    let mut namesrv = ServerProcess::start("namesrv", &args, dir.path(), namesrv_port).unwrap();
    let mut conn = RemotingConn::connect(namesrv.addr()).unwrap();
    let route = conn.request(route_request("NoTopicX"));
    assert_eq!(route.code, response_code::TOPIC_NOT_EXIST);
    check_controller(&format!("127.0.0.1:{controller_port}"));
    assert!(
        !namesrv.output().contains("ignoring unknown setting"),
        "controller keys are known to the name server:\n{}",
        namesrv.output()
    );
    assert!(namesrv.stop().success());
}
