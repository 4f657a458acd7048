//! A topic's queues over every broker of its route, asked of the name
//! servers by shard 0 (which holds their connections) and kept for
//! [`ROUTE_TTL_MS`](crate::services::assignment::ROUTE_TTL_MS).

use std::rc::Rc;

use ferrocket_protocol::body::{perm, TopicRouteData};
use ferrocket_protocol::codes::{request_code, response_code};
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;

use super::Shard;
use crate::services::assignment::Queue;
use crate::services::fastjson::quote_integer_keys;

/// Longest one route lookup may take, per name server.
const ROUTE_TIMEOUT_MS: u64 = 3_000;

/// On shard 0: the readable queues of `topic` on every broker the name
/// servers route it to, sorted; `None` when none answers with a route.
pub(crate) struct TopicQueues {
    pub topic: String,
}

impl ShardCall<Shard> for TopicQueues {
    type Reply = Option<Vec<Queue>>;

    async fn run(self, shard: Rc<Shard>) -> Option<Vec<Queue>> {
        let control = shard.control_plane()?;
        if let Some(queues) = control.routes.borrow().get(&self.topic) {
            return Some(queues);
        }
        for addr in &shard.env.namesrvs {
            let request = RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC)
                .with_ext("topic", &self.topic);
            let Ok(answer) = control.namesrv.call(*addr, request, ROUTE_TIMEOUT_MS).await else {
                continue;
            };
            if answer.code != response_code::SUCCESS {
                continue;
            }
            let text = quote_integer_keys(&String::from_utf8_lossy(&answer.body));
            let Ok(route) = serde_json::from_str::<TopicRouteData>(&text) else {
                tracing::warn!(topic = %self.topic, %addr, "a route the broker cannot read");
                continue;
            };
            let queues = readable_queues(&route);
            control.routes.borrow_mut().put(&self.topic, queues.clone());
            return Some(queues);
        }
        None
    }
}

fn readable_queues(route: &TopicRouteData) -> Vec<Queue> {
    let mut queues: Vec<Queue> = route
        .queue_datas
        .iter()
        .filter(|q| q.perm & perm::READ != 0)
        .flat_map(|q| {
            (0..q.read_queue_nums.max(0)).map(|queue_id| Queue {
                broker_name: q.broker_name.clone(),
                queue_id,
            })
        })
        .collect();
    queues.sort();
    queues
}
