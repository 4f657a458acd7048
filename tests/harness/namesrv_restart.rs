//! Restarting a test name server on the same home directory and port, for
//! tests of what it keeps across restarts (the KV config).

use std::path::Path;

use super::{namesrv_args, Namesrv, NamesrvOpts, ServerProcess};

impl Namesrv {
    /// The temporary `HOME` the name server runs with.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// Stops the name server (SIGTERM) and starts it again with `opts` on
    /// the same home directory and port. Panics when it does not exit
    /// cleanly or does not come back.
    pub fn restart_with(&mut self, opts: &NamesrvOpts) {
        let status = self.process.stop();
        assert!(
            status.success(),
            "namesrv exited with {status} on SIGTERM; its output:\n{}",
            self.process.output()
        );
        let port = self.process.port();
        let args = namesrv_args(port, opts);
        self.process = ServerProcess::start("namesrv", &args, self.home.path(), port)
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
