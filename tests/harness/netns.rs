//! Test hosts in network namespaces this test makes (root and iproute2
//! only): node `i` is namespace `{prefix}-n{i}` with address
//! `10.213.0.{i+1}` on one bridge (in its own hub namespace), so servers
//! bind fixed ports on their own addresses and a partition is a blackhole
//! route between two nodes. Nothing is added to the host's own namespace;
//! [`Net`]'s `Drop` deletes every namespace it made.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

const SUBNET: &str = "10.213.0";

pub struct Net {
    prefix: String,
    nodes: usize,
}

/// Runs `ip ARGS`; `Err` with its stderr on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {args:?}: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

impl Net {
    /// Makes `nodes` hosts on one bridge; `Err` says why it cannot here
    /// (not root, no iproute2, no namespaces).
    pub fn create(nodes: usize) -> Result<Net, String> {
        // SAFETY: a plain getter.
        if unsafe { libc::geteuid() } != 0 {
            return Err("network namespaces need root".into());
        }
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let prefix = format!(
            "fr{}x{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let net = Net { prefix, nodes: 0 };
        let hub = net.hub();
        ip(&["netns", "add", &hub])?;
        let mut net = net;
        ip(&["-n", &hub, "link", "set", "lo", "up"])?;
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &hub, "link", "set", "br0", "up"])?;
        for i in 0..nodes {
            let ns = net.ns(i);
            ip(&["netns", "add", &ns])?;
            net.nodes = i + 1;
            let port = format!("vh{i}");
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&[
                "-n", &hub, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &ns,
            ])?;
            ip(&["-n", &hub, "link", "set", &port, "master", "br0", "up"])?;
            let addr = format!("{}/24", net.ip(i));
            ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
        }
        Ok(net)
    }

    fn hub(&self) -> String {
        format!("{}-hub", self.prefix)
    }

    /// Node `i`'s namespace.
    pub fn ns(&self, i: usize) -> String {
        format!("{}-n{i}", self.prefix)
    }

    /// Node `i`'s address.
    pub fn ip(&self, i: usize) -> String {
        format!("{SUBNET}.{}", i + 1)
    }

    /// Drops everything from node `from` to node `to` (one way: TCP between
    /// them stalls either way, as behind a real one-way fault).
    pub fn cut_one_way(&self, from: usize, to: usize) {
        let route = format!("{}/32", self.ip(to));
        ip(&[
            "-n",
            &self.ns(from),
            "route",
            "replace",
            "blackhole",
            &route,
        ])
        .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Partitions nodes `a` and `b` from each other.
    pub fn cut(&self, a: usize, b: usize) {
        self.cut_one_way(a, b);
        self.cut_one_way(b, a);
    }

    /// Removes every cut.
    pub fn heal_all(&self) {
        for from in 0..self.nodes {
            for to in 0..self.nodes {
                let route = format!("{}/32", self.ip(to));
                // Most pairs have no cut: "no such route" is expected.
                let _ = ip(&["-n", &self.ns(from), "route", "del", "blackhole", &route]);
            }
        }
    }

    /// Moves the calling thread (and the threads it starts later) into
    /// node `i`'s namespace: its sockets are that host's.
    pub fn enter(&self, i: usize) {
        use std::os::unix::io::AsRawFd;
        let path = format!("/var/run/netns/{}", self.ns(i));
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on an open namespace file; it changes only this
        // thread's network namespace.
        let joined = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(joined, 0, "setns: {}", std::io::Error::last_os_error());
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for i in 0..self.nodes {
            let _ = ip(&["netns", "del", &self.ns(i)]);
        }
        let _ = ip(&["netns", "del", &self.hub()]);
    }
}
