//! The `ferrocket` command line: `start` supervises its two children, and
//! config files are parsed with clear errors.

mod harness;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use ferrocket_protocol::body::{decode_json, ClusterInfo};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use harness::remoting::route_request;
use harness::{ferrocket_bin, free_port, ready_timeout, wait_for, RemotingConn, ServerProcess};

/// What `/proc/PID/stat` says about a process: (state, parent pid, start
/// time in clock ticks).
fn proc_stat(pid: i32) -> Option<(char, i32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let start_time = fields.get(19)?.parse().ok()?;
    Some((state, ppid, start_time))
}

fn children_of(parent: i32) -> Vec<(i32, u64)> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some((_, ppid, start_time)) = proc_stat(pid) {
            if ppid == parent {
                children.push((pid, start_time));
            }
        }
    }
    children
}

/// Whether the process `pid` that started at `start_time` still exists
/// (a zombie counts: it was not reaped).
fn still_exists(pid: i32, start_time: u64) -> bool {
    proc_stat(pid).is_some_and(|(_, _, t)| t == start_time)
}

/// SIGKILLs the recorded children of `ferrocket start` unless they are
/// already gone, so a failing test leaks nothing.
struct ChildGuard(Vec<(i32, u64)>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        for &(pid, start_time) in &self.0 {
            if still_exists(pid, start_time) {
                // SAFETY: plain syscall; pid and start time were checked
                // just above, so this is the process we recorded.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

#[test]
fn start_runs_namesrv_and_broker_and_stops_both_on_sigterm() {
    let data = tempfile::tempdir().unwrap();
    let namesrv_port = free_port();
    let broker_port = free_port();
    let args: Vec<String> = vec![
        "start".into(),
        "--data-dir".into(),
        data.path().join("data").display().to_string(),
        "--namesrv-port".into(),
        namesrv_port.to_string(),
        "--broker-port".into(),
        broker_port.to_string(),
        "--broker-set".into(),
        format!(
            "mappedFileSizeCommitLog={}",
            harness::TEST_COMMIT_LOG_SEGMENT_BYTES
        ),
        "--broker-set".into(),
        format!("haListenPort={}", free_port()),
    ];
    let mut start = ServerProcess::spawn("start", &args, data.path()).unwrap();
    // Both children write to the same stderr, so their listening lines may
    // interleave with each other's logs; readiness is checked by connecting.
    let namesrv_addr = format!("127.0.0.1:{namesrv_port}");
    let broker_addr = format!("127.0.0.1:{broker_port}");
    let both_up = wait_for(ready_timeout(), || {
        if !start.is_running() {
            return Some(false);
        }
        let accepts = |addr: &str| std::net::TcpStream::connect(addr).is_ok();
        (accepts(&namesrv_addr) && accepts(&broker_addr)).then_some(true)
    });
    assert_eq!(
        both_up,
        Some(true),
        "namesrv and broker did not both come up; output:\n{}",
        start.output()
    );

    let children = ChildGuard(children_of(start.pid()));
    assert_eq!(
        children.0.len(),
        2,
        "expected 2 children of `start`: {:?}",
        children.0
    );

    // Both serve: the name server answers, and the broker registered with it.
    let mut conn = RemotingConn::connect(&namesrv_addr).unwrap();
    let response = conn.request(route_request("NoSuchTopicForStart"));
    assert_eq!(
        response.code,
        response_code::TOPIC_NOT_EXIST,
        "{response:?}"
    );
    let registered = wait_for(Duration::from_secs(20), || {
        let info = conn.request(RemotingCommand::request(
            request_code::GET_BROKER_CLUSTER_INFO,
        ));
        let info: ClusterInfo = decode_json(&info.body).ok()?;
        info.broker_addr_table
            .values()
            .any(|b| b.broker_addrs.values().any(|a| *a == broker_addr))
            .then_some(())
    });
    assert!(
        registered.is_some(),
        "broker did not register; output:\n{}",
        start.output()
    );

    let status = start.stop();
    assert!(
        status.success(),
        "`start` exited with {status}; output:\n{}",
        start.output()
    );
    for &(pid, start_time) in &children.0 {
        let gone = wait_for(Duration::from_secs(5), || {
            (!still_exists(pid, start_time)).then_some(())
        });
        assert!(
            gone.is_some(),
            "child {pid} of `start` is still there (state {:?}) after `start` exited; output:\n{}",
            proc_stat(pid),
            start.output()
        );
    }
}

/// Runs `ferrocket ARGS` that should fail quickly; returns (exit code,
/// stderr).
fn run_expecting_failure(args: &[&str], home: &Path) -> (i32, String) {
    let mut process = ServerProcess::spawn(
        "config-check",
        &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        home,
    )
    .unwrap();
    let status = process.wait_exit(Duration::from_secs(30));
    let output = process.output();
    let Some(status) = status else {
        process.kill();
        panic!(
            "`ferrocket {}` still runs after 30 s; output:\n{output}",
            args.join(" ")
        );
    };
    (status.code().unwrap_or(-1), output)
}

fn write_conf(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn bad_config_values_are_rejected_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("namesrv", "listenPort=not-a-port\n", "listenPort"),
        (
            "namesrv",
            "# comment\nlistenPort = 99999999\n",
            "listenPort",
        ),
        ("broker", "listenPort=abc\n", "listenPort"),
        ("broker", "flushDiskType=SOMETIMES\n", "flushDiskType"),
        (
            "broker",
            "autoCreateTopicEnable=maybe\n",
            "autoCreateTopicEnable",
        ),
        (
            "broker",
            "mappedFileSizeCommitLog=-5\n",
            "mappedFileSizeCommitLog",
        ),
    ];
    for (i, (role, text, key)) in cases.iter().enumerate() {
        let conf = write_conf(dir.path(), &format!("bad{i}.conf"), text);
        let (code, output) = run_expecting_failure(&[role, "-c", &conf], dir.path());
        assert_ne!(code, 0, "{role} accepted {text:?}; output:\n{output}");
        assert!(
            output.contains(key),
            "{role} with {text:?}: error does not name {key}:\n{output}"
        );
    }
}

#[test]
fn missing_config_file_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.conf").display().to_string();
    for role in ["namesrv", "broker"] {
        let (code, output) = run_expecting_failure(&[role, "-c", &missing], dir.path());
        assert_ne!(
            code, 0,
            "{role} started without its config file; output:\n{output}"
        );
        assert!(
            output.contains("nope.conf"),
            "{role}: error does not name the file:\n{output}"
        );
    }
}

#[test]
fn config_file_is_read_flags_override_it_and_unknown_keys_are_warned() {
    let dir = tempfile::tempdir().unwrap();
    // listenPort from the file.
    let file_port = free_port();
    let conf = write_conf(
        dir.path(),
        "namesrv.conf",
        &format!("# our name server\nlistenPort={file_port}\nsomeUnknownKeyXyz=1\n"),
    );
    let args: Vec<String> = ["namesrv", "-c", &conf, "--listen-addr", "127.0.0.1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut namesrv = ServerProcess::start("namesrv", &args, dir.path(), file_port).unwrap();
    assert!(
        namesrv.output().contains("someUnknownKeyXyz"),
        "unknown key not warned about:\n{}",
        namesrv.output()
    );
    let status = namesrv.stop();
    assert!(status.success(), "namesrv exited with {status} on SIGTERM");

    // A flag beats the file.
    let flag_port = free_port();
    let flag_port_text = flag_port.to_string();
    let args: Vec<String> = [
        "namesrv",
        "-c",
        &conf,
        "--listen-addr",
        "127.0.0.1",
        "--listen-port",
        &flag_port_text,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut namesrv = ServerProcess::start("namesrv", &args, dir.path(), flag_port).unwrap();
    let mut conn = RemotingConn::connect(namesrv.addr()).unwrap();
    assert_eq!(
        conn.request(route_request("NoTopicX")).code,
        response_code::TOPIC_NOT_EXIST
    );
    assert!(namesrv.stop().success());
}

#[test]
fn help_lists_the_subcommands() {
    let output = Command::new(ferrocket_bin())
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for sub in ["namesrv", "broker", "start", "admin"] {
        assert!(text.contains(sub), "--help does not list {sub}:\n{text}");
    }
}

/// `broker --help` lists every declared key with its default; `-h` stays
/// short.
#[test]
fn broker_help_lists_the_keys_and_their_defaults() {
    let help = |flag: &str| {
        let output = Command::new(ferrocket_bin())
            .args(["broker", flag])
            .output()
            .unwrap();
        assert!(output.status.success());
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let long = help("--help");
    for line in [
        "maxMessageSize",
        "[4194304]",
        "flushDiskType",
        "[ASYNC_FLUSH]",
    ] {
        assert!(long.contains(line), "--help lacks {line}:\n{long}");
    }
    assert!(
        long.contains("Unset, it listens on 127.0.0.1:10911"),
        "{long}"
    );
    let short = help("-h");
    assert!(!short.contains("maxMessageSize"), "{short}");
}
