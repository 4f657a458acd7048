//! Local mode's bridge: the in-broker gRPC endpoint (`proxyMode=local`)
//! calls the broker through its in-process door.

use ferrocket_broker::{LocalError, LocalPort};
use ferrocket_grpc::pb::{Code, Status};
use ferrocket_grpc::status::status;
use ferrocket_grpc::{BrokerRequests, LocalAnswer, LocalBroker};
use ferrocket_protocol::RemotingCommand;

/// The broker's door, as the endpoint sees its broker.
pub struct BrokerDoor(pub LocalPort);

impl LocalBroker for BrokerDoor {
    fn is_local(&self, addr: &str) -> bool {
        self.0.broker_addr() == Some(addr)
    }

    fn call(&self, request: RemotingCommand) -> Result<LocalAnswer, Status> {
        match self.0.call(request) {
            Ok(reply) => Ok(Box::pin(async move { reply.await.ok() })),
            Err(busy @ LocalError::Busy { .. }) => {
                Err(status(Code::TooManyRequests, busy.to_string()))
            }
            Err(other) => Err(status(Code::InternalServerError, other.to_string())),
        }
    }

    fn on_requests(&self, requests: BrokerRequests) {
        self.0.on_requests(requests);
    }
}
