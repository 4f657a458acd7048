//! `ferrocket-bench`: a throughput and latency harness for any RocketMQ
//! Remoting name server (Ferrocket, Apache RocketMQ, rocketmq-rust).
//!
//! Owns: the produce / consume / e2e / compare modes, fixed-rate pacing with
//! coordinated-omission-correct latency, HDR histograms, broker CPU per
//! message from /proc, and the table, JSON and SVG reports.
//!
//! Runs on a tokio multi-thread runtime (`--client-threads`, default half
//! the CPUs) plus one pacing thread when `--rate` is set; the once-a-second
//! sampler runs on the same runtime.

mod args;
mod ceiling;
mod control;
mod error;
#[cfg(test)]
mod fake;
mod grpc;
mod hist;
mod host;
mod message;
mod meter;
mod pacing;
mod proc_stat;
mod progress;
mod raw;
mod recorder;
mod report;
mod run;
mod svg;
mod target;
mod window;
mod workers;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Mode};
use crate::run::SingleMode;

fn main() -> ExitCode {
    // Tables piped into `head` end quietly when the reader goes, as other
    // Unix tools do (Rust ignores SIGPIPE, so printing would panic). The
    // harness's sockets are unaffected: Rust writes them with MSG_NOSIGNAL.
    // SAFETY: restoring the default disposition of one signal.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    let outcome = match cli.mode {
        Mode::Produce(args) => run::run_single(SingleMode::Produce, args, Default::default()),
        Mode::Consume(args) => run::run_consume(args),
        Mode::E2e(args) => run::run_single(SingleMode::E2e, args, Default::default()),
        Mode::Compare(args) => run::run_compare(args),
        Mode::Grpc(args) => grpc::run(args),
        Mode::Ceiling(args) => ceiling::run(args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
