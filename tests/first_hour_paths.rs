//! Bad paths and busy ports a newcomer meets first (issue 43, item 6):
//! each is refused before a server starts or a store directory is made,
//! in words that say what is wrong.

mod harness;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use harness::{ferrocket_bin, free_port};

/// The user a refused command runs as when the tests run as root (root may
/// write any directory): `nobody`.
const UNPRIVILEGED_ID: u32 = 65534;

/// Runs `ferrocket ARGS`, unprivileged when `unprivileged`, that must fail;
/// returns its stderr.
fn refused_as(args: &[&str], unprivileged: bool) -> String {
    let mut command = Command::new(ferrocket_bin());
    command.args(args).env("NO_COLOR", "1").stdin(Stdio::null());
    // SAFETY: geteuid only reads this process's credentials.
    if unprivileged && unsafe { libc::geteuid() } == 0 {
        // (Root's groups stay: the directories' group bits deny writing too.)
        command.uid(UNPRIVILEGED_ID).gid(UNPRIVILEGED_ID);
    }
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !output.status.success(),
        "`{args:?}` was accepted: {stderr}"
    );
    stderr
}

fn refused(args: &[&str]) -> String {
    refused_as(args, false)
}

/// A temporary directory others may enter (tempfile makes them 0700).
fn open_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    set_mode(dir.path(), 0o755);
    dir
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn start_names_a_data_dir_that_is_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, b"a file").unwrap();
    for path in [file.clone(), file.join("below")] {
        let path = path.display().to_string();
        let namesrv_port = free_port().to_string();
        let broker_port = free_port().to_string();
        let stderr = refused(&[
            "start",
            "--namesrv-port",
            &namesrv_port,
            "--broker-port",
            &broker_port,
            "--data-dir",
            &path,
        ]);
        let expected = format!(
            "cannot use {path} as a data directory: it, or a path above it, is a file, not a \
             directory"
        );
        assert!(stderr.contains(&expected), "{stderr}");
        assert!(!stderr.contains("os error"), "{stderr}");
    }
}

#[test]
fn a_data_dir_this_user_may_not_write_is_said_in_words() {
    let dir = open_tempdir();
    let read_only = dir.path().join("read-only");
    std::fs::create_dir(&read_only).unwrap();
    set_mode(&read_only, 0o555);
    let words = "as a data directory: permission denied (choose a directory this user may \
                 create and write";
    // One that exists (the lock file cannot be made in it), one under it
    // (it cannot be created).
    for path in [read_only.clone(), read_only.join("store")] {
        let shown = path.display().to_string();
        let port = free_port().to_string();
        let ha_port = format!("haListenPort={}", free_port());
        let broker = refused_as(
            &[
                "broker",
                "--listen-port",
                &port,
                "--set",
                &ha_port,
                "--store-path-root-dir",
                &shown,
            ],
            true,
        );
        assert!(
            broker.contains(&format!("cannot use {shown} {words}")),
            "{broker}"
        );
        assert!(!broker.contains("cannot lock"), "{broker}");

        let namesrv_port = free_port().to_string();
        let broker_port = free_port().to_string();
        let start = refused_as(
            &[
                "start",
                "--namesrv-port",
                &namesrv_port,
                "--broker-port",
                &broker_port,
                "--data-dir",
                &shown,
            ],
            true,
        );
        // Said once, before either server starts.
        assert!(
            start.contains(&format!("cannot use {shown} {words}")),
            "{start}"
        );
        assert!(!start.contains("started namesrv"), "{start}");
    }
    assert_eq!(std::fs::read_dir(&read_only).unwrap().count(), 0);
}

#[test]
fn a_broker_refused_its_ha_or_metrics_port_leaves_no_store_directory() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("haListenPort", vec![format!("haListenPort={busy_port}")]),
        (
            "metricsPromExporterPort",
            vec![
                format!("haListenPort={}", free_port()),
                "metricsExporterType=PROM".to_string(),
                format!("metricsPromExporterPort={busy_port}"),
            ],
        ),
    ];
    for (key, settings) in cases {
        let store = dir.path().join(key);
        let port = free_port().to_string();
        let shown = store.display().to_string();
        let mut args = vec![
            "broker",
            "--listen-port",
            &port,
            "--store-path-root-dir",
            &shown,
        ];
        for setting in &settings {
            args.extend(["--set", setting.as_str()]);
        }
        let stderr = refused(&args);
        let expected = format!("port {busy_port} is in use by pid {}", std::process::id());
        assert!(
            stderr.contains(&expected) && stderr.contains(&format!("set {key} to a free port")),
            "{stderr}"
        );
        assert!(!store.exists(), "a refused broker created {shown}");
    }
}
