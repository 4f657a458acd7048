//! Issue 43, "first hour, second pass": what `start` says its store takes
//! (and the disk agrees), a controller's and a new controller-mode set's
//! logs at INFO, a v5 call refused by ACL logged by the broker, the
//! README's metrics example run as written, and `--help` that describes
//! every option.

mod harness;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{ferrocket_bin, free_port, ready_timeout};

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Starts `ferrocket ARGS` with `RUST_LOG` set to `log_level` (unset:
/// the default), collects its stderr until a line contains `done` and
/// for `linger` more, stops it by pid (SIGTERM, which `start` passes to
/// its children) and returns what it logged.
fn log_until(args: &[String], log_level: Option<&str>, done: &str, linger: Duration) -> String {
    let mut command = Command::new(ferrocket_bin());
    command.args(args).env_remove("NO_COLOR");
    match log_level {
        Some(level) => command.env("RUST_LOG", level),
        None => command.env_remove("RUST_LOG"),
    };
    let mut child = command
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
        let finished = line.contains(done);
        lines.push(line);
        if finished {
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
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let waited = harness::wait_for(Duration::from_secs(15), || child.try_wait().ok().flatten());
    if waited.is_none() {
        // SAFETY: as above.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let _ = child.wait();
    }
    lines.join("\n")
}

/// Bytes allocated to the files directly in `dir`.
fn allocated_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.blocks() * 512)
                .sum()
        })
        .unwrap_or(0)
}

/// `start` says what its store takes before the first message (a whole
/// CommitLog segment) and how long it keeps it; the number it says is the
/// one the disk shows.
#[test]
fn start_says_what_the_store_takes_and_the_disk_agrees() {
    let data = tempfile::tempdir().unwrap();
    let conf = data.path().join("broker.conf");
    std::fs::write(&conf, "fileReservedTime=24\n").unwrap();
    let args = strings(&[
        "start",
        "--namesrv-port",
        &free_port().to_string(),
        "--broker-port",
        &free_port().to_string(),
        "--data-dir",
        &data.path().join("data").display().to_string(),
        "-c",
        &conf.display().to_string(),
        "--broker-set",
        "mappedFileSizeCommitLog=16777216",
        "--broker-set",
        &format!("haListenPort={}", free_port()),
    ]);
    let text = log_until(&args, None, "broker listening on", Duration::from_secs(1));
    assert!(text.contains("broker listening on"), "{text}");
    assert!(
        text.contains("(0 MiB now): the CommitLog allocates each 16 MiB segment whole")
            && text.contains(
                "every message at least fileReservedTime (24 h) unless the disk is 85% full"
            )
            && text.contains("--broker-set mappedFileSizeCommitLog=BYTES"),
        "{text}"
    );
    let commitlog = data.path().join("data/broker/commitlog");
    let taken = allocated_bytes(&commitlog);
    assert!(
        (16 << 20..=17 << 20).contains(&taken),
        "{taken} bytes under {} after start",
        commitlog.display()
    );
}

/// A controller at the default log level, or at INFO, says what it is
/// doing in a few short lines: openraft's internals are shown only when
/// `RUST_LOG` names openraft.
#[test]
fn a_controller_logs_few_short_lines_at_info() {
    for level in [None, Some("info"), Some("info,openraft=info")] {
        let store = tempfile::tempdir().unwrap();
        let args = strings(&[
            "controller",
            "--listen-port",
            &free_port().to_string(),
            "--set",
            &format!("controllerStorePath={}", store.path().display()),
        ]);
        // The group of one elects itself within its election timeout (1 s).
        let text = log_until(&args, level, "listening on", Duration::from_secs(3));
        assert!(text.contains("listening on"), "{level:?}: {text}");
        if level == Some("info,openraft=info") {
            assert!(text.contains("openraft"), "{text}");
            continue;
        }
        assert!(!text.contains("openraft"), "{level:?}: {text}");
        let lines = text.lines().count();
        let longest = text.lines().map(str::len).max().unwrap_or(0);
        assert!(
            lines <= 10 && longest <= 300,
            "{level:?}: {lines} lines, longest {longest}:\n{text}"
        );
    }
}

/// `ferrocket PATH -h`'s options without a description, and its
/// subcommands (each then walked the same way).
fn undescribed_options(path: &[String], missing: &mut Vec<String>) {
    let output = Command::new(ferrocket_bin())
        .args(path)
        .arg("-h")
        .output()
        .unwrap();
    assert!(output.status.success(), "{path:?}");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let mut section = "";
    let mut subcommands = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        if !line.starts_with(' ') && line.ends_with(':') {
            section = line;
            continue;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if section == "Commands:" && indent == 2 {
            let name = trimmed.split_whitespace().next().unwrap_or("");
            if name != "help" {
                subcommands.push(name.to_string());
            }
        }
        let is_option = (2..=6).contains(&indent)
            && (trimmed.starts_with('-') || trimmed.starts_with('<') || trimmed.starts_with('['));
        if !matches!(section, "Options:" | "Arguments:") || !is_option {
            continue;
        }
        let same_line = trimmed.split_once("  ").map(|(_, d)| d.trim());
        let next_line = lines
            .get(n + 1)
            .filter(|next| next.starts_with("          "))
            .map(|next| next.trim());
        let description = same_line.or(next_line).unwrap_or("");
        if description.is_empty() || description.starts_with('[') {
            missing.push(format!("{} {trimmed}", path.join(" ")));
        }
        if line.contains("=]") {
            missing.push(format!("{} {trimmed}: a stray `=`", path.join(" ")));
        }
    }
    for sub in subcommands {
        let mut deeper = path.to_vec();
        deeper.push(sub);
        undescribed_options(&deeper, missing);
    }
}

/// Every option of every command says what it is; the servers' help says
/// what an unset config means and gives no other server's port as the
/// `--set` example.
#[test]
fn help_describes_every_option_and_each_servers_defaults() {
    let mut missing = Vec::new();
    undescribed_options(&[], &mut missing);
    assert!(
        missing.is_empty(),
        "options without a description:\n{}",
        missing.join("\n")
    );
    let help = |server: &str| {
        let output = Command::new(ferrocket_bin())
            .args([server, "--help"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    for server in ["broker", "controller", "namesrv", "proxy"] {
        let text = help(server);
        assert!(!text.contains("listenPort=9876"), "{server}:\n{text}");
    }
    let controller = help("controller");
    assert!(
        controller.contains("listening on 127.0.0.1:19876")
            && controller.contains("controllerDLegerPeers"),
        "{controller}"
    );
    assert!(help("broker").contains("[ASYNC_FLUSH]"));
    assert!(help("start").contains("-c, --config <FILE>"));
    let admin = help("admin");
    assert!(
        admin.contains("[env: FERROCKET_ACCESS_KEY]") && !admin.contains("=]"),
        "{admin}"
    );
}

/// A new controller-mode set of three brokers started at once logs no
/// warning until it is in sync: its brokers race for ids (all but one
/// lose each round), its slaves wait for their master's HA address, and
/// its first broker is elected before it listens (the controller's notice
/// to it is refused); none of that is a fault.
#[test]
fn a_new_controller_mode_set_starts_without_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let mut controllers = harness::failover::controllers(dir.path(), 1);
    let namesrv = harness::Namesrv::start();
    let (ns, addr) = (
        namesrv.addr(),
        harness::failover::controller_addr(&controllers),
    );
    let brokers: Vec<harness::Broker> = std::thread::scope(|scope| {
        let starting: Vec<_> = (0..3)
            .map(|_| {
                let settings = [
                    "enableControllerMode=true".to_string(),
                    format!("controllerAddr={addr}"),
                    format!("haListenPort={}", free_port()),
                    "allAckInSyncStateSet=true".into(),
                    "syncBrokerMetadataPeriod=1000".into(),
                    "checkSyncStateSetPeriod=1000".into(),
                ];
                let opts = harness::BrokerOpts {
                    broker_name: Some(harness::failover::SET.into()),
                    extra_args: settings
                        .iter()
                        .flat_map(|s| ["--set".to_string(), s.clone()])
                        .collect(),
                    ..Default::default()
                };
                let ns = &ns;
                scope.spawn(move || harness::Broker::start(ns, opts))
            })
            .collect();
        starting.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let in_sync = harness::wait_for(Duration::from_secs(30), || {
        let state = harness::failover::sync_state(&addr)?;
        (state.in_sync.len() == 3).then_some(state)
    });
    let mut said = controllers[0].output();
    for broker in &brokers {
        said.push_str(&broker.process.output());
    }
    assert!(in_sync.is_some(), "not in sync:\n{said}");
    let warnings: Vec<&str> = said.lines().filter(|l| l.contains(" WARN ")).collect();
    assert!(
        warnings.is_empty(),
        "{}\n\nin:\n{said}",
        warnings.join("\n")
    );
    drop(brokers);
    controllers[0].stop();
}

/// The README's Prometheus example (`curl -s http://127.0.0.1:5557/metrics
/// | ...`), read from the README and run on free ports, prints the
/// broker-wide series before any message is sent.
#[test]
fn the_readme_metrics_example_prints_before_the_first_message() {
    let data = tempfile::tempdir().unwrap();
    let metrics_port = free_port();
    let args = strings(&[
        "start",
        "--namesrv-port",
        &free_port().to_string(),
        "--broker-port",
        &free_port().to_string(),
        "--data-dir",
        &data.path().join("data").display().to_string(),
        "--broker-set",
        "mappedFileSizeCommitLog=16777216",
        "--broker-set",
        &format!("haListenPort={}", free_port()),
        "--broker-set",
        "metricsExporterType=PROM",
        "--broker-set",
        &format!("metricsPromExporterPort={metrics_port}"),
    ]);
    let mut start = harness::process::ServerProcess::spawn("start", &args, data.path()).unwrap();
    start
        .wait_for_line("ferrocket broker listening on", ready_timeout())
        .unwrap();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let example = readme
        .lines()
        .find(|l| l.starts_with("curl -s http://127.0.0.1:5557/metrics"))
        .expect("the README's metrics example")
        .replace(":5557", &format!(":{metrics_port}"));
    let printed = harness::wait_for(ready_timeout(), || {
        let output = Command::new("bash")
            .args(["-c", &example])
            .stdin(Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.contains("rocketmq_topic_number{").then_some(text)
    });
    start.stop();
    let printed = printed.unwrap_or_else(|| panic!("`{example}` printed no broker-wide gauge"));
    assert!(
        printed.lines().all(|l| l.starts_with("rocketmq_")),
        "{printed}"
    );
}

/// A v5 client the broker's ACL refuses gets only "unauthenticated": the
/// broker says whom it refused and why. Without
/// innerClientAuthenticationCredentials it still serves its own queues
/// to signed v5 clients, which its start note says without alarm.
#[test]
fn the_broker_logs_a_v5_call_its_acl_refuses() {
    use ferrocket_grpc::pb;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    let accounts =
        "accounts:\n  - accessKey: appAccess1\n    secretKey: appSecret1\n    admin: true\n";
    std::fs::write(home.path().join("conf/plain_acl.yml"), accounts).unwrap();
    let namesrv = harness::Namesrv::start();
    let settings = [
        "enableProxy=true".to_string(),
        "aclEnable=true".to_string(),
        format!("rocketmqHome={}", home.path().display()),
    ];
    let mut broker = harness::Broker::start(
        &namesrv.addr(),
        harness::BrokerOpts {
            extra_args: settings
                .iter()
                .flat_map(|s| ["--set".to_string(), s.clone()])
                .collect(),
            ..Default::default()
        },
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer = runtime.block_on(async {
        let mut client = harness::grpc::connect(&broker.addr()).await;
        let message = pb::Message {
            topic: harness::grpc::resource("TopicTest"),
            system_properties: Some(pb::SystemProperties {
                message_id: "first-hour-1".into(),
                message_type: pb::MessageType::Normal as i32,
                ..Default::default()
            }),
            body: b"x".to_vec(),
            ..Default::default()
        };
        let request = harness::grpc::request(
            "first-hour",
            pb::SendMessageRequest {
                messages: vec![message],
            },
        );
        client.send_message(request).await
    });
    let status = answer.expect_err("an unsigned send passed the ACL");
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status:?}");
    let line = broker
        .process
        .wait_for_line("refused a v5 call from 127.0.0.1", ready_timeout())
        .unwrap();
    assert!(line.contains("No accessKey is configured"), "{line}");
    let said = broker.process.output();
    let note = said
        .lines()
        .find(|l| l.contains("no innerClientAuthenticationCredentials"))
        .unwrap_or_else(|| panic!("no note:\n{said}"));
    assert!(
        note.contains(" INFO ") && !note.contains("will be refused"),
        "{note}"
    );
}
