//! One child process of the harness: spawned with piped output, watched
//! until it prints its listening line, stopped by pid.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{ferrocket_bin, ready_timeout, STOP_GRACE_MS};

/// How long to wait for the output of an exited process to be collected.
const READER_SETTLE_MS: u64 = 1_000;

/// A port nobody listens on right now (bind port 0, read it, let it go).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Removes ANSI colour sequences, so log lines match whatever the
/// subscriber's colour setting.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // ESC [ ... final byte in '@'..='~'
            if chars.clone().next() == Some('[') {
                chars.next();
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Collected stdout+stderr of a child, shared with its reader threads.
#[derive(Clone, Default)]
pub struct OutputLog {
    text: Arc<Mutex<String>>,
}

impl OutputLog {
    pub fn contents(&self) -> String {
        self.text.lock().map(|t| t.clone()).unwrap_or_default()
    }

    fn push_line(&self, line: &str) {
        if let Ok(mut text) = self.text.lock() {
            text.push_str(line);
            text.push('\n');
        }
    }
}

/// Spawns a thread copying `source` line by line into `log`, sending each
/// line to `lines` as well.
fn pump(
    source: impl Read + Send + 'static,
    log: OutputLog,
    lines: mpsc::Sender<String>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let reader = BufReader::new(source);
        for line in reader.split(b'\n') {
            let Ok(line) = line else { break };
            let line = strip_ansi(&String::from_utf8_lossy(&line));
            log.push_line(&line);
            // The receiver is gone once the process is ready; keep draining.
            let _ = lines.send(line);
        }
    })
}

/// A `ferrocket` child process the harness started and will stop.
pub struct ServerProcess {
    role: String,
    child: Child,
    pid: i32,
    port: u16,
    addr: String,
    log: OutputLog,
    lines: mpsc::Receiver<String>,
    // Never joined: a grandchild holding the pipes open must not hang a test.
    readers: Vec<JoinHandle<()>>,
    exit: Option<ExitStatus>,
}

impl ServerProcess {
    /// Runs `ferrocket ARGS` with `HOME=home` and waits until it prints
    /// `ferrocket ROLE listening on 127.0.0.1:PORT`. On failure returns an
    /// error holding the child's output (the child is stopped).
    pub fn start(role: &str, args: &[String], home: &Path, port: u16) -> Result<Self, String> {
        Self::start_in(None, "127.0.0.1", role, args, home, port)
    }

    /// [`ServerProcess::start`] in network namespace `netns` (through `ip
    /// netns exec`, which execs the server: the pid is the server's),
    /// listening on `ip`.
    pub fn start_in(
        netns: Option<&str>,
        ip: &str,
        role: &str,
        args: &[String],
        home: &Path,
        port: u16,
    ) -> Result<Self, String> {
        let needle = format!("ferrocket {role} listening on ");
        let mut process = Self::spawn_in(netns, role, args, home)?;
        process.port = port;
        let line = process.wait_for_line(&needle, ready_timeout())?;
        let addr = line
            .split(&needle)
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_default()
            .to_string();
        let expected = format!("{ip}:{port}");
        if addr != expected {
            return Err(format!(
                "{role} says it listens on {addr:?}, expected {expected}; its output:\n{}",
                process.output()
            ));
        }
        process.addr = addr;
        Ok(process)
    }

    /// Runs `ferrocket ARGS` without waiting for anything.
    pub fn spawn(role: &str, args: &[String], home: &Path) -> Result<Self, String> {
        Self::spawn_in(None, role, args, home)
    }

    /// [`ServerProcess::spawn`] in network namespace `netns`, if given.
    pub fn spawn_in(
        netns: Option<&str>,
        role: &str,
        args: &[String],
        home: &Path,
    ) -> Result<Self, String> {
        let command = match netns {
            Some(ns) => {
                let mut ip = Command::new("ip");
                ip.args(["netns", "exec", ns, ferrocket_bin()]);
                ip
            }
            None => Command::new(ferrocket_bin()),
        };
        Self::launch(role, command, args, home)
    }

    /// Runs another server program (a test's S3 server, say) with `HOME=home`.
    pub fn spawn_program(program: &Path, args: &[String], home: &Path) -> Result<Self, String> {
        let role = program
            .file_name()
            .map_or("program".into(), |n| n.to_string_lossy().into_owned());
        Self::launch(&role, Command::new(program), args, home)
    }

    fn launch(
        role: &str,
        mut command: Command,
        args: &[String],
        home: &Path,
    ) -> Result<Self, String> {
        command
            .args(args)
            .env("HOME", home)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if std::env::var_os("RUST_LOG").is_none() {
            command.env("RUST_LOG", "info");
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run {role} {args:?}: {e}"))?;
        let pid = i32::try_from(child.id()).map_err(|e| e.to_string())?;
        let log = OutputLog::default();
        let (sender, lines) = mpsc::channel();
        let mut readers = Vec::new();
        if let Some(stderr) = child.stderr.take() {
            readers.push(pump(stderr, log.clone(), sender.clone()));
        }
        if let Some(stdout) = child.stdout.take() {
            readers.push(pump(stdout, log.clone(), sender));
        }
        Ok(Self {
            role: role.to_string(),
            child,
            pid,
            port: 0,
            addr: String::new(),
            log,
            lines,
            readers,
            exit: None,
        })
    }

    /// Waits until an output line contains `needle`; returns that line.
    /// Errors (with the output so far) when the process exits first or
    /// `timeout` passes; the process is then stopped.
    pub fn wait_for_line(&mut self, needle: &str, timeout: Duration) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.stop();
                return Err(format!(
                    "{} did not print {needle:?} within {timeout:?}; its output:\n{}",
                    self.role,
                    self.output()
                ));
            }
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(line) if line.contains(needle) => return Ok(line),
                Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.wait_exit(Duration::from_secs(5));
                    return Err(format!(
                        "{} exited ({status:?}) before printing {needle:?}; its output:\n{}",
                        self.role,
                        self.output()
                    ));
                }
            }
        }
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT` as the server printed it.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Everything the process wrote to stdout and stderr so far.
    pub fn output(&self) -> String {
        self.log.contents()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        if self.exit.is_some() {
            return false;
        }
        match self.child.try_wait() {
            Ok(Some(status)) => {
                self.exit = Some(status);
                false
            }
            Ok(None) => true,
            Err(_) => false,
        }
    }

    /// Waits up to `timeout` for the process to exit by itself; once it
    /// has, its remaining output is collected too.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while self.is_running() {
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.settle_readers();
        self.exit
    }

    /// Sends `signal` to this process (by its pid), if it still runs.
    pub fn signal(&mut self, signal: i32) {
        if self.is_running() {
            // SAFETY: plain syscall on the pid of our own, not yet reaped,
            // child; a pid we have not waited for cannot be reused.
            unsafe {
                libc::kill(self.pid, signal);
            }
        }
    }

    /// SIGTERM, then SIGKILL after the grace period; returns the exit
    /// status. Idempotent.
    pub fn stop(&mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        if let Some(status) = self.wait_exit(Duration::from_millis(STOP_GRACE_MS)) {
            return status;
        }
        eprintln!(
            "{} (pid {}) ignored SIGTERM for {STOP_GRACE_MS} ms; sending SIGKILL",
            self.role, self.pid
        );
        self.kill()
    }

    /// SIGKILL now; returns the exit status.
    pub fn kill(&mut self) -> ExitStatus {
        self.signal(libc::SIGKILL);
        let status = match self.exit {
            Some(status) => status,
            None => {
                let status = self.child.wait().unwrap();
                self.exit = Some(status);
                status
            }
        };
        self.settle_readers();
        status
    }

    /// Gives the reader threads a moment to copy the last lines of an exited
    /// process (they end when every holder of the pipes has exited).
    fn settle_readers(&self) {
        let deadline = Instant::now() + Duration::from_millis(READER_SETTLE_MS);
        while Instant::now() < deadline && !self.readers.iter().all(|r| r.is_finished()) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let was_running = self.is_running();
        let status = self.stop();
        if std::thread::panicking() {
            eprintln!(
                "---- output of {} (pid {}, {}) ----\n{}---- end of {} output ----",
                self.role,
                self.pid,
                if was_running {
                    format!("stopped by the harness: {status}")
                } else {
                    format!("had already exited: {status}")
                },
                self.output(),
                self.role
            );
        }
    }
}
