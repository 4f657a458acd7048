//! Papercuts a newcomer hits first: logs redirected to a file carry no
//! colour codes, a broker without `namesrvAddr` says so, config errors say
//! where and what, refused sends are logged, and a report piped into
//! `head` does not panic.

mod harness;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{ferrocket_bin, free_port, ready_timeout};

/// Starts `ferrocket ARGS` with plain-text logs, collects its stderr until
/// it says it listens (or the ready timeout passes), kills it by pid and
/// returns what it logged.
fn log_until_listening(args: &[String]) -> String {
    log_until_listening_and(args, Duration::ZERO)
}

/// The same, collecting for `linger` more after the listening line.
fn log_until_listening_and(args: &[String], linger: Duration) -> String {
    let mut child = Command::new(ferrocket_bin())
        .args(args)
        .env_remove("NO_COLOR")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + harness::ready_timeout();
    let mut lines = Vec::new();
    while Instant::now() < deadline {
        let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) else {
            continue;
        };
        let done = line.contains("listening on");
        lines.push(line);
        if done {
            break;
        }
    }
    let linger_end = Instant::now() + linger;
    while let Some(left) = linger_end.checked_duration_since(Instant::now()) {
        if let Ok(line) = rx.recv_timeout(left) {
            lines.push(line);
        }
    }
    // SAFETY: signalling the child this test started, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    lines.join("\n")
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_broker_without_namesrv_addr_warns_in_plain_text_logs() {
    let store = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    let ha_port = format!("haListenPort={}", free_port());
    let store_dir = store.path().display().to_string();
    let text = log_until_listening(&strings(&[
        "broker",
        "--listen-addr",
        "127.0.0.1",
        "--listen-port",
        &port,
        "--set",
        &ha_port,
        "--store-path-root-dir",
        &store_dir,
    ]));
    assert!(text.contains("listening on"), "{text}");
    assert!(text.contains("namesrvAddr is not set"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log that is not a terminal:\n{text}"
    );
}

/// Runs `ferrocket ARGS` that must refuse its settings before it opens a
/// store or a port; returns its stderr.
fn refused(args: &[&str]) -> String {
    let output = Command::new(ferrocket_bin())
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !output.status.success(),
        "`{args:?}` was accepted: {stderr}"
    );
    stderr
}

#[test]
fn config_errors_name_their_source_and_say_what_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let set = refused(&["broker", "--set", "listenPort=99999"]);
    assert!(
        set.contains(
            "--set listenPort=99999: invalid value `99999` for listenPort: expected a port, 1-65535"
        ),
        "{set}"
    );
    assert!(
        !set.contains("line 0") && !set.contains("target type"),
        "{set}"
    );

    let conf = dir.path().join("broker.conf");
    std::fs::write(&conf, "# a broker\nbrokerName=b\nfileReservedTime=-2\n").unwrap();
    let file = refused(&["broker", "-c", conf.to_str().unwrap()]);
    let expected = format!(
        "{} line 3: invalid value `-2` for fileReservedTime: expected a whole number",
        conf.display()
    );
    assert!(file.contains(&expected), "{file}");

    let flag = refused(&["namesrv", "--set", "brokerExpiryMs=soon"]);
    assert!(
        flag.contains("--set brokerExpiryMs=soon: invalid value `soon`"),
        "{flag}"
    );

    // Java would read a mistyped TLS mode as permissive; here it stops.
    let mode = refused(&["broker", "--set", "tls.server.mode=enforce"]);
    assert!(
        mode.contains(
            "--set tls.server.mode=enforce: invalid value `enforce` for tls.server.mode: \
             expected disabled, permissive or enforcing"
        ),
        "{mode}"
    );
    // A certificate that is not there stops the start, naming the key.
    let missing = refused(&[
        "namesrv",
        "--listen-port",
        "0",
        "--set",
        "tls.test.mode.enable=false",
        "--set",
        "tls.server.certPath=/nonexistent/cert.pem",
        "--set",
        "tls.server.keyPath=/nonexistent/key.pem",
        "--set",
        "tls.config.file=/nonexistent/tls.properties",
    ]);
    assert!(
        missing.contains("/nonexistent/cert.pem") && missing.contains("TLS"),
        "{missing}"
    );
}

#[test]
fn an_unknown_key_is_warned_with_its_line_and_the_key_meant() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("namesrv.conf");
    let port = free_port();
    std::fs::write(
        &conf,
        format!("listenPort={port}\nbrokerExpiryMS=60000\nsomeUnknownKeyXyz=1\n"),
    )
    .unwrap();
    let conf = conf.display().to_string();
    let text = log_until_listening(&strings(&["namesrv", "-c", &conf]));
    assert!(text.contains("listening on"), "{text}");
    let meant = format!(
        "{conf} line 2: ignoring unknown setting `brokerExpiryMS`: did you mean `brokerExpiryMs`?"
    );
    assert!(text.contains(&meant), "{text}");
    let plain = format!("{conf} line 3: ignoring unknown setting `someUnknownKeyXyz`");
    assert!(
        text.contains(&plain) && !text.contains("Xyz`: did"),
        "{text}"
    );
}

/// Runs `BIN ARGS | (reader that closes at once)`; fails on a panic.
fn piped_into_a_closed_reader(bin: &str, args: &str) {
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!(
            r#"set -o pipefail; "$0" {args} | (exec 0<&-; true)"#
        ))
        .arg(bin)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(101), "{args} panicked: {stderr}");
    assert!(!stderr.contains("panicked"), "{args}: {stderr}");
}

#[test]
fn reports_piped_into_a_closed_reader_do_not_panic() {
    piped_into_a_closed_reader(ferrocket_bin(), "tune check --json");
    let namesrv = harness::Namesrv::start();
    let _broker = harness::Broker::start(&namesrv.addr(), harness::BrokerOpts::default());
    // The reader is gone before the name server answers: the first line
    // printed meets a closed pipe.
    let list = format!("admin -n {} topic list", namesrv.addr());
    piped_into_a_closed_reader(ferrocket_bin(), &list);
}

#[test]
fn admin_pointed_at_a_broker_says_to_give_the_name_server() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), harness::BrokerOpts::default());
    let output = Command::new(ferrocket_bin())
        .args(["admin", "-n", &broker.addr(), "topic", "list"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("give the name server"), "{stderr}");
    assert!(
        stderr.contains("(request type 206 (GET_ALL_TOPIC_LIST_FROM_NAMESERVER) not supported"),
        "{stderr}"
    );
}

#[test]
fn the_broker_logs_refused_sends_with_the_client_and_the_reason_rate_limited() {
    let namesrv = harness::Namesrv::start();
    let mut broker = harness::Broker::start(&namesrv.addr(), harness::BrokerOpts::default());
    let header = harness::requests::send_header("g", "bad topic", 0);
    let request = harness::requests::send_request(&header, "x");
    let mut conn = broker.connect();
    let first = conn.request(request.clone());
    assert_ne!(first.code, 0, "{first:?}");
    let line = broker
        .process
        .wait_for_line("refused SEND_MESSAGE from 127.0.0.1:", ready_timeout())
        .unwrap();
    assert!(
        line.contains("WARN")
            && line.contains("MESSAGE_ILLEGAL (13): invalid topic name `bad topic`"),
        "{line}"
    );
    // A burst of refusals is logged at most ten lines a second per shard;
    // the rest are counted in the next line.
    for _ in 0..100 {
        assert_ne!(conn.request(request.clone()).code, 0);
    }
    std::thread::sleep(Duration::from_millis(1_100));
    assert_ne!(conn.request(request).code, 0);
    broker
        .process
        .wait_for_line("refusals in the last window not logged", ready_timeout())
        .unwrap();
    let logged = broker
        .process
        .output()
        .matches("refused SEND_MESSAGE")
        .count();
    assert!(logged < 50, "{logged} lines for 102 refusals");
}

/// Runs `ferrocket admin -n NAMESRV ARGS`: (success, stdout, stderr).
fn admin(namesrv: &str, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(ferrocket_bin())
        .args(["admin", "-n", namesrv])
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn admin_fails_for_groups_that_are_not_there_and_says_why() {
    let namesrv = harness::Namesrv::start();
    let _broker = harness::Broker::start(&namesrv.addr(), harness::BrokerOpts::default());
    let ns = namesrv.addr();
    let (ok, _, err) = admin(&ns, &["consumer", "progress", "-g", "NoSuchGroupX"]);
    assert!(
        !ok && err.contains("no consumer group `NoSuchGroupX`"),
        "{err}"
    );
    let (ok, _, err) = admin(&ns, &["group", "get", "-g", "NoSuchGroupX"]);
    assert!(
        !ok && err.contains("no subscription group `NoSuchGroupX`"),
        "{err}"
    );
    let (ok, _, err) = admin(&ns, &["consumer", "connection", "-g", "NoSuchGroupX"]);
    assert!(!ok && err.contains("`NoSuchGroupX` is offline"), "{err}");
    assert!(!err.contains("invalid argument"), "{err}");
    // A group that exists but has committed nothing is not an error.
    let (ok, _, err) = admin(&ns, &["group", "update", "-g", "QuietGroup"]);
    assert!(ok, "{err}");
    let (ok, out, err) = admin(&ns, &["consumer", "progress", "-g", "QuietGroup"]);
    assert!(
        ok && out.contains("has no committed offsets yet"),
        "{out}{err}"
    );
    let (ok, _, err) = admin(
        &ns,
        &[
            "offset",
            "reset-by-time",
            "-g",
            "QuietGroup",
            "-t",
            "T",
            "-s",
            "yesterday",
        ],
    );
    assert!(!ok && err.contains("yyyy-MM-dd#HH:mm:ss:SSS"), "{err}");
}

#[test]
fn cluster_list_shows_live_in_and_out_tps() {
    let namesrv = harness::Namesrv::start();
    let broker = harness::Broker::start(&namesrv.addr(), harness::BrokerOpts::default());
    let mut conn = broker.connect();
    harness::requests::create_topic(&mut conn, "TpsTopic", 1);
    let header = harness::requests::send_header("g", "TpsTopic", 0);
    // The broker samples its counters once a second and InTPS is the
    // 10 s average of the samples: sends on both sides of a sample show.
    for _ in 0..2 {
        for _ in 0..100 {
            let answer = conn.request(harness::requests::send_request(&header, "x"));
            assert_eq!(answer.code, 0, "{answer:?}");
        }
        std::thread::sleep(Duration::from_millis(1_200));
    }
    let in_tps = harness::wait_for(ready_timeout(), || {
        let (ok, out, _) = admin(&namesrv.addr(), &["cluster", "list"]);
        let row = out
            .lines()
            .find(|l| l.contains(&broker.addr()))?
            .to_string();
        let cells: Vec<&str> = row.split_whitespace().collect();
        let in_tps: f64 = cells.get(6)?.parse().ok()?;
        (ok && in_tps > 0.0).then_some(row)
    });
    let (_, table, _) = admin(&namesrv.addr(), &["cluster", "list"]);
    assert!(in_tps.is_some(), "InTPS stayed 0 or `-`:\n{table}");
}

#[test]
fn start_refuses_a_port_another_process_listens_on_at_once() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let data = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let output = Command::new(ferrocket_bin())
        .args(["start", "--namesrv-port", &port, "--broker-port"])
        .arg(free_port().to_string())
        .arg("--data-dir")
        .arg(data.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    let expected = format!(
        "port {port}, the name server's, is in use by pid {}",
        std::process::id()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(stderr.contains("--namesrv-port PORT"), "{stderr}");
    // Before the servers' own wait for a released port (10 s).
    assert!(started.elapsed() < Duration::from_secs(8), "{stderr}");
}

#[test]
fn the_direct_write_profiles_start_without_an_error() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for profile in ["durable.conf", "low-latency.conf"] {
        let store = tempfile::tempdir().unwrap();
        let conf = root.join("tuning").join(profile).display().to_string();
        let port = free_port().to_string();
        let ha_port = format!("haListenPort={}", free_port());
        let store_dir = store.path().display().to_string();
        let args = strings(&[
            "broker",
            "-c",
            &conf,
            "--listen-port",
            &port,
            "--set",
            &ha_port,
            "--set",
            "namesrvAddr=127.0.0.1:1",
            "--store-path-root-dir",
            &store_dir,
        ]);
        // The CommitLog segment opens (and glommio probes its device) just
        // after the broker starts listening.
        let text = log_until_listening_and(&args, Duration::from_secs(2));
        assert!(text.contains("listening on"), "{profile}: {text}");
        assert!(!text.contains(" ERROR "), "{profile}: {text}");
    }
}

#[test]
fn start_refuses_one_port_for_both_servers() {
    let port = free_port().to_string();
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().display().to_string();
    let stderr = refused(&[
        "start",
        "--namesrv-port",
        &port,
        "--broker-port",
        &port,
        "--data-dir",
        &data_dir,
    ]);
    let expected =
        format!("the same port {port} for the name server's and the broker's: pass --broker-port");
    assert!(stderr.contains(&expected), "{stderr}");
}

#[test]
fn a_store_path_that_is_a_file_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store");
    std::fs::write(&file, b"a file").unwrap();
    let port = free_port().to_string();
    // The HA port (listenPort + 1 unless set) is checked before the store:
    // a free one of its own, so a neighbour's port cannot answer first.
    let ha_port = format!("haListenPort={}", free_port());
    let stderr = refused(&[
        "broker",
        "--listen-port",
        &port,
        "--set",
        &ha_port,
        "--store-path-root-dir",
        &file.display().to_string(),
    ]);
    assert!(stderr.contains("is a file, not a directory"), "{stderr}");
}

#[test]
fn a_broker_refused_its_port_leaves_no_store_directory() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let stderr = refused(&[
        "broker",
        "--listen-port",
        &port,
        "--store-path-root-dir",
        &store.display().to_string(),
    ]);
    assert!(stderr.contains("listenPort"), "{stderr}");
    assert!(
        !store.exists(),
        "a refused broker created {}",
        store.display()
    );
}

#[test]
fn admin_says_what_is_wrong_in_words() {
    let namesrv = harness::Namesrv::start();
    let ns = namesrv.addr();
    let (ok, _, err) = admin(&ns, &["topic", "status", "-t", "NoSuchTopicY"]);
    assert!(!ok);
    assert!(
        err.contains("topic `NoSuchTopicY` has no route on the name server (does it exist?)"),
        "{err}"
    );
    assert!(!err.contains("code 17"), "{err}");
    // Every command that names a topic says so in the same words.
    for args in [
        &["message", "query-by-key", "-t", "NoSuchTopicY", "-k", "k"][..],
        &[
            "message",
            "query-by-id",
            "-t",
            "NoSuchTopicY",
            "-i",
            "AC11000200002A9F0000000000000000",
        ],
        &[
            "offset",
            "reset-by-time",
            "-g",
            "G",
            "-t",
            "NoSuchTopicY",
            "-s",
            "now",
        ],
    ] {
        let (ok, _, err) = admin(&ns, args);
        assert!(!ok, "{args:?}");
        assert!(
            err.contains("topic `NoSuchTopicY` has no route on the name server (does it exist?)")
                && !err.contains("code 17"),
            "{args:?}: {err}"
        );
    }
    // An offset message id of a host the name server does not list.
    let (ok, _, err) = admin(
        &ns,
        &[
            "message",
            "query-by-id",
            "-i",
            "0A0000010000271100000000000001F4",
        ],
    );
    assert!(!ok);
    assert!(
        err.contains(
            "names the store host 10.0.0.1:10001, which is not a broker the name server lists"
        ),
        "{err}"
    );
    assert_eq!(err.matches("invalid argument").count(), 1, "{err}");

    // A web server where a name server was expected.
    let web = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let web_addr = web.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        use std::io::Write;
        let (mut stream, _) = web.accept().unwrap();
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        std::thread::sleep(Duration::from_millis(500));
    });
    let (ok, _, err) = admin(&web_addr, &["cluster", "list"]);
    assert!(!ok);
    assert!(
        err.contains("this is not a RocketMQ server: it answered HTTP"),
        "{err}"
    );
    assert!(!err.contains("frame length"), "{err}");
    server.join().unwrap();
}
