//! The v5 gRPC side of the tests: `ferrocket proxy` as a process and a
//! client of its MessagingService.

use std::path::Path;

use ferrocket_grpc::pb::{self, messaging_service_client::MessagingServiceClient};
use tonic::transport::Channel;

use super::process::{free_port, ServerProcess};

pub type Client = MessagingServiceClient<Channel>;

/// `ferrocket proxy` on a free port of 127.0.0.1 in front of the name
/// server at `namesrv`, with `--set` for each of `settings`.
pub fn start_proxy(namesrv: &str, home: &Path, settings: &[&str]) -> ServerProcess {
    let port = free_port();
    let mut args: Vec<String> = ["proxy", "--namesrv-addr", namesrv, "--listen-port"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(port.to_string());
    for setting in settings {
        args.extend(["--set".to_string(), setting.to_string()]);
    }
    ServerProcess::start("proxy", &args, home, port).unwrap_or_else(|e| panic!("{e}"))
}

/// `message` from the client `client_id` (the header every v5 call bears).
pub fn request<T>(client_id: &str, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("x-mq-client-id", client_id.parse().unwrap());
    request
}

pub fn resource(name: &str) -> Option<pb::Resource> {
    Some(pb::Resource {
        name: name.to_string(),
        ..Default::default()
    })
}

/// A client of the endpoint at `addr` (host:port, plaintext).
pub async fn connect(addr: &str) -> Client {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    MessagingServiceClient::new(channel)
}
