//! `ferrocket proxy`: the RocketMQ 5 gRPC endpoint for a Remoting cluster
//! (Ferrocket's or Apache RocketMQ's), found through its name server, as
//! RocketMQ's proxy runs in cluster mode.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the stop flag is looked at.
const STOP_POLL_MS: u64 = 100;

#[derive(Debug, clap::Args)]
pub struct ProxyArgs {
    /// Name servers of the cluster to serve, "host:port;host:port".
    #[arg(short = 'n', long = "namesrv-addr", default_value = "127.0.0.1:9876")]
    namesrv_addr: String,
    /// Address the gRPC endpoint binds.
    #[arg(long, default_value = "127.0.0.1")]
    listen_addr: IpAddr,
    /// gRPC port (RocketMQ's `grpcServerPort`); 0 picks a free one.
    #[arg(long, default_value_t = ferrocket_grpc::GRPC_PORT_DEFAULT)]
    listen_port: u16,
}

pub fn run(args: ProxyArgs, stop: Arc<AtomicBool>) -> Result<(), String> {
    let config = ferrocket_grpc::ProxyConfig {
        listen: SocketAddr::new(args.listen_addr, args.listen_port),
        namesrv_addr: args.namesrv_addr.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("ferrocket-proxy")
        .build()
        .map_err(|e| format!("cannot start the proxy's runtime: {e}"))?;
    let shutdown = async move {
        while !stop.load(Ordering::Acquire) {
            tokio::time::sleep(Duration::from_millis(STOP_POLL_MS)).await;
        }
    };
    let namesrv = args.namesrv_addr;
    let bound = move |addr: SocketAddr| {
        // Tests and scripts wait for this line.
        println!("ferrocket proxy listening on {addr}");
        tracing::info!(%addr, %namesrv, "gRPC proxy serving");
    };
    runtime
        .block_on(ferrocket_grpc::serve(config, bound, shutdown))
        .map_err(|e| format!("proxy: {e}"))
}
