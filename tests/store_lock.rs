//! One process per data directory: a second broker on a store that a running
//! broker holds, or a second name server on the same KV file, stops at once
//! and names the directory and the holder's pid; the first keeps working.

mod harness;

use harness::{
    broker_args, free_port, namesrv_args, ready_timeout, Broker, BrokerOpts, Namesrv, NamesrvOpts,
    ServerProcess,
};

/// Runs `args` to its exit and returns its output; panics when it starts
/// serving instead.
fn refused_start(role: &str, args: &[String], home: &std::path::Path) -> String {
    let mut process = ServerProcess::spawn(role, args, home).unwrap();
    let status = process
        .wait_exit(ready_timeout())
        .unwrap_or_else(|| panic!("the second {role} kept running:\n{}", process.output()));
    assert!(!status.success(), "the second {role} exited 0");
    let output = process.output();
    assert!(
        !output.contains(&format!("ferrocket {role} listening on")),
        "the second {role} served:\n{output}"
    );
    output
}

#[test]
fn a_second_broker_on_the_same_store_is_refused_and_the_first_keeps_its_data() {
    let namesrv = Namesrv::start();
    let first = Broker::start(&namesrv.addr(), BrokerOpts::default());
    let store = first.store_dir().to_path_buf();
    let topic = harness::unique_name("LockedStore");
    let mut conn = first.connect();
    harness::requests::create_topic(&mut conn, &topic, 1);
    let send = harness::requests::send_header("LockPG", &topic, 0);
    let sent = conn.request(harness::requests::send_request(&send, "mine"));
    assert_eq!(sent.code, 0, "{sent:?}");

    let args = broker_args(&namesrv.addr(), &BrokerOpts::default(), &store, free_port());
    let output = refused_start("broker", &args, &store);
    assert!(output.contains(&store.display().to_string()), "{output}");
    assert!(
        output.contains(&format!("pid {}", first.process.pid())),
        "{output}"
    );
    // The first broker still serves its store.
    let again = conn.request(harness::requests::send_request(&send, "still mine"));
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.ext_fields.get("queueOffset"), Some("1"), "{again:?}");
}

#[test]
fn a_second_name_server_on_the_same_kv_file_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let kv = home.path().join("kvConfig.json");
    let opts = NamesrvOpts {
        extra_args: vec!["--set".into(), format!("kvConfigPath={}", kv.display())],
        ..Default::default()
    };
    let port = free_port();
    let first =
        ServerProcess::start("namesrv", &namesrv_args(port, &opts), home.path(), port).unwrap();
    let output = refused_start("namesrv", &namesrv_args(free_port(), &opts), home.path());
    assert!(output.contains("kvConfig.json.lock"), "{output}");
    assert!(output.contains(&format!("pid {}", first.pid())), "{output}");
    drop(first);
}
