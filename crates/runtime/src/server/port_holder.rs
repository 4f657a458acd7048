//! Who holds a busy TCP port: another process with a listening socket on
//! it, found in /proc (the sockets in `/proc/net/tcp{,6}`, their inodes in
//! `/proc/PID/fd`). A busy port held by another live process is reported
//! at once; one held by nobody (a killed server's socket the kernel is
//! still tearing down) or by this process (a listener of its own still
//! closing, as when a server restarts in-process) is worth waiting for.

use std::collections::HashSet;

/// `st` of a listening socket in /proc/net/tcp.
const TCP_LISTEN: &str = "0A";
/// Processes looked at, at most (a bound on the scan).
const PROCESSES_SCANNED_MAX: usize = 65_536;

/// "pid 1234 (java)" for another process listening on `port`, if one can
/// be seen (processes of other users may not be).
pub fn port_holder(port: u16) -> Option<String> {
    let inodes = listening_inodes(port);
    if inodes.is_empty() {
        return None;
    }
    let own = std::process::id();
    let processes = std::fs::read_dir("/proc").ok()?;
    for entry in processes.flatten().take(PROCESSES_SCANNED_MAX) {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid != own && holds_any(pid, &inodes) {
            let command = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|c| c.trim().to_string())
                .unwrap_or_default();
            return Some(format!("pid {pid} ({command})"));
        }
    }
    None
}

/// Inodes of the sockets listening on `port`, on any address.
fn listening_inodes(port: u16) -> HashSet<String> {
    let mut inodes = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            if let Some(inode) = listening_inode(line, port) {
                inodes.insert(inode.to_string());
            }
        }
    }
    inodes
}

/// The inode of one /proc/net/tcp line when it listens on `port`.
fn listening_inode(line: &str, port: u16) -> Option<&str> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let local = fields.get(1)?;
    let state = fields.get(3)?;
    let inode = fields.get(9)?;
    let (_, port_hex) = local.rsplit_once(':')?;
    let listening = *state == TCP_LISTEN && u16::from_str_radix(port_hex, 16).ok()? == port;
    (listening && *inode != "0").then_some(*inode)
}

fn holds_any(pid: u32, inodes: &HashSet<String>) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| {
            let target = target.to_string_lossy();
            target
                .strip_prefix("socket:[")
                .and_then(|rest| rest.strip_suffix(']'))
                .is_some_and(|inode| inodes.contains(inode))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_process_listening_is_found_by_its_port_and_this_one_is_not() {
        use std::io::BufRead;
        let own = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert_eq!(port_holder(own.local_addr().unwrap().port()), None);
        // A listener in a child process (python3 is on every test host).
        let script = "import socket,sys\n\
                      s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n\
                      print(s.getsockname()[1], flush=True); sys.stdin.read()";
        let mut child = std::process::Command::new("python3")
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line.trim().parse().unwrap();
        let holder = port_holder(port);
        drop(child.stdin.take());
        let _ = child.wait();
        let holder = holder.unwrap();
        assert!(
            holder.starts_with(&format!("pid {} (python", child.id())),
            "{holder}"
        );
        assert_eq!(port_holder(port), None);
    }

    #[test]
    fn proc_net_tcp_lines_parse() {
        let line = "   0: 0100007F:2694 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 123456 1 0000000000000000 100 0 0 10 0";
        assert_eq!(listening_inode(line, 0x2694), Some("123456"));
        assert_eq!(listening_inode(line, 9877), None);
        let established = line.replace(" 0A ", " 01 ");
        assert_eq!(listening_inode(&established, 0x2694), None);
        assert_eq!(listening_inode("garbage", 1), None);
    }
}
