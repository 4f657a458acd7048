//! Papercuts a newcomer hits first: logs redirected to a file carry no
//! colour codes, a broker without `namesrvAddr` says so, and a report piped
//! into `head` does not panic.

mod harness;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{ferrocket_bin, free_port};

#[test]
fn a_broker_without_namesrv_addr_warns_in_plain_text_logs() {
    let store = tempfile::tempdir().unwrap();
    let mut child = Command::new(ferrocket_bin())
        .args(["broker", "--listen-addr", "127.0.0.1", "--listen-port"])
        .arg(free_port().to_string())
        .args(["--set", &format!("haListenPort={}", free_port())])
        .arg("--store-path-root-dir")
        .arg(store.path())
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
    // SAFETY: signalling the child this test started, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let text = lines.join("\n");
    assert!(text.contains("listening on"), "{text}");
    assert!(text.contains("namesrvAddr is not set"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log that is not a terminal:\n{text}"
    );
}

#[test]
fn tune_check_piped_into_a_closed_reader_does_not_panic() {
    let output = Command::new("bash")
        .arg("-c")
        .arg(r#"set -o pipefail; "$0" tune check --json | (exec 0<&-; true)"#)
        .arg(ferrocket_bin())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(101), "panicked: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
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
}
