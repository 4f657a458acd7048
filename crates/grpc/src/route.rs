//! QueryRoute and QueryAssignment: the name server's route of a topic, with
//! every queue addressed to the proxy itself (the client reaches brokers
//! only through it), as the proxy's `RouteActivity` answers.

use ferrocket_protocol::body::{perm, QueueData, TopicRouteData};

use crate::backend::Backend;
use crate::pb::{self, Code, MessageType, Permission};
use crate::status::{ok, status};

/// The queues of `route` as v5 message queues reached at `endpoints`.
pub fn message_queues(
    topic: &str,
    route: &TopicRouteData,
    endpoints: Option<&pb::Endpoints>,
) -> Vec<pb::MessageQueue> {
    let mut queues = Vec::new();
    for data in &route.queue_datas {
        let has_master = route
            .broker_datas
            .iter()
            .any(|b| b.broker_name == data.broker_name && b.master_addr().is_some());
        if !has_master {
            continue;
        }
        let count = data.read_queue_nums.max(data.write_queue_nums).max(0);
        for id in 0..count {
            queues.push(pb::MessageQueue {
                topic: Some(resource(topic)),
                id,
                permission: permission(data, id) as i32,
                broker: Some(pb::Broker {
                    name: data.broker_name.clone(),
                    id: 0,
                    endpoints: endpoints.cloned(),
                }),
                accept_message_types: ACCEPTED.iter().map(|t| *t as i32).collect(),
            });
        }
    }
    queues
}

/// Every queue takes every kind (Java's proxy names only the topic's
/// `message.type`, or the first four for a topic without one).
const ACCEPTED: [MessageType; 6] = [
    MessageType::Normal,
    MessageType::Fifo,
    MessageType::Delay,
    MessageType::Transaction,
    MessageType::Priority,
    MessageType::Lite,
];

fn permission(data: &QueueData, id: i32) -> Permission {
    let read = data.perm & perm::READ != 0 && id < data.read_queue_nums;
    let write = data.perm & perm::WRITE != 0 && id < data.write_queue_nums;
    match (read, write) {
        (true, true) => Permission::ReadWrite,
        (true, false) => Permission::Read,
        (false, true) => Permission::Write,
        (false, false) => Permission::None,
    }
}

pub fn resource(name: &str) -> pb::Resource {
    pb::Resource {
        name: name.to_string(),
        ..Default::default()
    }
}

/// QueryRoute.
pub async fn query_route(
    backend: &Backend,
    request: pb::QueryRouteRequest,
) -> pb::QueryRouteResponse {
    let topic = request.topic.as_ref().map_or("", |t| t.name.as_str());
    if topic.is_empty() {
        return pb::QueryRouteResponse {
            status: Some(status(Code::IllegalTopic, "no topic")),
            message_queues: Vec::new(),
        };
    }
    match backend.route(topic).await {
        Ok(route) => pb::QueryRouteResponse {
            status: Some(ok()),
            message_queues: message_queues(topic, &route, request.endpoints.as_ref()),
        },
        Err(failed) => {
            if failed.code == Code::TopicNotFound as i32 {
                ferrocket_acl::refusal_log::log_refusal(format_args!(
                    "a v5 client asked for the route of topic `{topic}`, which the name server \
                     does not know: create it (ferrocket admin topic create) or set \
                     autoCreateTopicEnable=true"
                ));
            }
            pb::QueryRouteResponse {
                status: Some(failed),
                message_queues: Vec::new(),
            }
        }
    }
}

/// QueryAssignment: for pop-based consumers one assignment per readable
/// broker (the proxy pops any queue of it), as RocketMQ's proxy assigns.
pub async fn query_assignment(
    backend: &Backend,
    request: pb::QueryAssignmentRequest,
) -> pb::QueryAssignmentResponse {
    let topic = request.topic.as_ref().map_or("", |t| t.name.as_str());
    let route = match backend.route(topic).await {
        Ok(route) => route,
        Err(failed) => {
            return pb::QueryAssignmentResponse {
                status: Some(failed),
                assignments: Vec::new(),
            }
        }
    };
    let mut assignments: Vec<pb::Assignment> = Vec::new();
    for queue in message_queues(topic, &route, request.endpoints.as_ref()) {
        let readable = matches!(
            Permission::try_from(queue.permission),
            Ok(Permission::Read | Permission::ReadWrite)
        );
        let broker = queue.broker.as_ref().map(|b| b.name.clone());
        let seen = assignments.iter().any(|a| {
            a.message_queue
                .as_ref()
                .and_then(|q| q.broker.as_ref())
                .map(|b| &b.name)
                == broker.as_ref()
        });
        if readable && !seen {
            // -1: any queue of that broker.
            let mut any = queue;
            any.id = -1;
            assignments.push(pb::Assignment {
                message_queue: Some(any),
            });
        }
    }
    let code = if assignments.is_empty() {
        status(
            Code::Forbidden,
            format!("no readable queue of topic {topic}"),
        )
    } else {
        ok()
    };
    pb::QueryAssignmentResponse {
        status: Some(code),
        assignments,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocket_protocol::body::BrokerData;

    #[test]
    fn queues_are_addressed_to_the_proxy_with_their_permission() {
        let mut route = TopicRouteData::default();
        route.queue_datas.push(QueueData {
            broker_name: "broker-a".into(),
            read_queue_nums: 2,
            write_queue_nums: 1,
            perm: perm::READ | perm::WRITE,
            topic_sys_flag: 0,
        });
        let mut broker = BrokerData {
            broker_name: "broker-a".into(),
            ..Default::default()
        };
        broker.broker_addrs.insert(0, "127.0.0.1:10911".into());
        route.broker_datas.push(broker);
        let endpoints = pb::Endpoints {
            scheme: pb::AddressScheme::IPv4 as i32,
            addresses: vec![pb::Address {
                host: "127.0.0.1".into(),
                port: 8081,
            }],
        };
        let queues = message_queues("T", &route, Some(&endpoints));
        assert_eq!(queues.len(), 2);
        assert_eq!(queues[0].permission, Permission::ReadWrite as i32);
        assert_eq!(queues[1].permission, Permission::Read as i32);
        let broker = queues[0].broker.as_ref().unwrap();
        assert_eq!(broker.endpoints.as_ref(), Some(&endpoints));
    }
}
