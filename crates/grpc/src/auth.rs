//! ACL 1.0 for the v5 clients: each call's `authorization` metadata is
//! checked against the accounts, and the topics and groups the call names
//! against the account's permissions (Java's gRPC side of
//! `PlainAccessResource`: sends need PUB on the topic, consuming calls SUB
//! on the topic and the group, route queries either). A refusal is the
//! gRPC status UNAUTHENTICATED with Java's words and code 40100.

use std::sync::Arc;

use ferrocket_acl::{AclStore, Perm, ANY, PUB, SUB};
use tonic::Request;

use crate::pb::{self, Code};

const AUTHORIZATION: &str = "authorization";
const DATE_TIME: &str = "x-mq-date-time";
/// Java's prefix of a group's resource name.
const RETRY_PREFIX: &str = "%RETRY%";

/// The accounts calls are checked against, when ACL is on.
#[derive(Clone, Default)]
pub struct Access {
    pub acl: Option<Arc<AclStore>>,
    /// ACL 2.0: the broker's users and ACLs.
    pub users: Option<Arc<crate::auth_v2::BrokerUsers>>,
    /// How far a signed call's `x-mq-date-time` may be from now, either
    /// way (`grpcRequestTimeSkewMs`); 0: not checked.
    pub request_time_skew_ms: u64,
}

/// The topics and groups a call names, with the permission each needs.
pub trait Needs {
    fn needs(&self) -> Vec<(String, Perm)>;
}

fn topic(resource: &Option<pb::Resource>, perm: Perm, out: &mut Vec<(String, Perm)>) {
    if let Some(resource) = resource.as_ref().filter(|r| !r.name.is_empty()) {
        let perm = if resource.name.starts_with(RETRY_PREFIX) {
            SUB
        } else {
            perm
        };
        out.push((resource.name.clone(), perm));
    }
}

fn group(resource: &Option<pb::Resource>, out: &mut Vec<(String, Perm)>) {
    if let Some(resource) = resource.as_ref().filter(|r| !r.name.is_empty()) {
        out.push((format!("{RETRY_PREFIX}{}", resource.name), SUB));
    }
}

fn queue_topic(queue: &Option<pb::MessageQueue>) -> Option<pb::Resource> {
    queue.as_ref().and_then(|q| q.topic.clone())
}

/// `Needs` for a request type from its topic and group fields.
macro_rules! needs {
    ($type:ty, |$r:ident, $out:ident| $body:block) => {
        impl Needs for $type {
            fn needs(&self) -> Vec<(String, Perm)> {
                let $r = self;
                let mut $out = Vec::new();
                $body
                $out
            }
        }
    };
}

needs!(pb::QueryRouteRequest, |r, out| {
    topic(&r.topic, ANY, &mut out)
});
needs!(pb::HeartbeatRequest, |r, out| { group(&r.group, &mut out) });
needs!(pb::SendMessageRequest, |r, out| {
    for message in &r.messages {
        topic(&message.topic, PUB, &mut out);
    }
});
needs!(pb::QueryAssignmentRequest, |r, out| {
    topic(&r.topic, SUB, &mut out);
    group(&r.group, &mut out);
});
needs!(pb::ReceiveMessageRequest, |r, out| {
    topic(&queue_topic(&r.message_queue), SUB, &mut out);
    group(&r.group, &mut out);
});
needs!(pb::AckMessageRequest, |r, out| {
    topic(&r.topic, SUB, &mut out);
    group(&r.group, &mut out);
});
needs!(pb::ForwardMessageToDeadLetterQueueRequest, |r, out| {
    topic(&r.topic, SUB, &mut out);
    group(&r.group, &mut out);
});
needs!(pb::PullMessageRequest, |r, out| {
    topic(&queue_topic(&r.message_queue), SUB, &mut out);
    group(&r.group, &mut out);
});
needs!(pb::UpdateOffsetRequest, |r, out| {
    topic(&queue_topic(&r.message_queue), SUB, &mut out);
    group(&r.group, &mut out);
});
needs!(pb::GetOffsetRequest, |r, out| {
    topic(&queue_topic(&r.message_queue), SUB, &mut out);
    group(&r.group, &mut out);
});
needs!(pb::QueryOffsetRequest, |r, out| {
    topic(&queue_topic(&r.message_queue), SUB, &mut out)
});
needs!(pb::EndTransactionRequest, |r, out| {
    topic(&r.topic, PUB, &mut out)
});
needs!(pb::NotifyClientTerminationRequest, |r, out| {
    group(&r.group, &mut out)
});
needs!(pb::ChangeInvisibleDurationRequest, |r, out| {
    topic(&r.topic, SUB, &mut out);
    group(&r.group, &mut out);
});
needs!(pb::RecallMessageRequest, |r, out| {
    topic(&r.topic, PUB, &mut out)
});
needs!(pb::SyncLiteSubscriptionRequest, |r, out| {
    topic(&r.topic, SUB, &mut out);
    group(&r.group, &mut out);
});

impl Access {
    /// Whether the call may go on: always with ACL off.
    pub fn authorize<T: Needs>(&self, request: &Request<T>) -> Result<(), tonic::Status> {
        self.check(request, &request.get_ref().needs())
    }

    /// The same for a call whose resources come later (Telemetry): the
    /// caller's credentials only.
    pub fn authenticate<T>(&self, request: &Request<T>) -> Result<(), tonic::Status> {
        self.check(request, &[])
    }

    /// Whether ACL is on and a call's credentials must be checked.
    pub fn enabled(&self) -> bool {
        self.acl.is_some()
            || self
                .users
                .as_ref()
                .is_some_and(|u| u.settings.authentication)
    }

    /// Whether these headers carry valid credentials (a signature that
    /// checks, or an address that needs none), before the call's body is
    /// read: what lifts a connection out of the unauthenticated budget.
    pub fn authenticates(&self, headers: &http::HeaderMap, peer: Option<std::net::IpAddr>) -> bool {
        let text = |key: &str| headers.get(key).and_then(|v| v.to_str().ok());
        let peer = peer.unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
        let fresh = text(AUTHORIZATION).is_none()
            || crate::replay::check_date(text(DATE_TIME), self.request_time_skew_ms).is_ok();
        let acl_passes = match &self.acl {
            Some(acl) => acl
                .current()
                .check_grpc(text(AUTHORIZATION), text(DATE_TIME), peer, &[])
                .is_ok(),
            None => true,
        };
        let users_pass = match &self.users {
            Some(users) => users
                .check::<()>(text(AUTHORIZATION), text(DATE_TIME), peer, &[])
                .is_ok(),
            None => true,
        };
        fresh && acl_passes && users_pass
    }

    fn check<T>(
        &self,
        request: &Request<T>,
        needs: &[(String, Perm)],
    ) -> Result<(), tonic::Status> {
        if self.acl.is_none() && self.users.is_none() {
            return Ok(());
        }
        let metadata = request.metadata();
        let text = |key: &str| metadata.get(key).and_then(|v| v.to_str().ok());
        let peer = request
            .remote_addr()
            .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |a| a.ip());
        let refused = |denied: ferrocket_acl::Denied| {
            ferrocket_acl::refusal_log::log_refusal(format_args!(
                "refused a v5 call from {peer}: {}",
                denied.0
            ));
            let code = Code::Unauthorized as i32;
            tonic::Status::unauthenticated(format!("{} ({code})", denied.0))
        };
        if text(AUTHORIZATION).is_some() {
            crate::replay::check_date(text(DATE_TIME), self.request_time_skew_ms)
                .map_err(refused)?;
        }
        if let Some(acl) = &self.acl {
            let config = acl.current();
            config
                .check_grpc(text(AUTHORIZATION), text(DATE_TIME), peer, needs)
                .map_err(refused)?;
        }
        if let Some(users) = &self.users {
            users
                .check::<T>(text(AUTHORIZATION), text(DATE_TIME), peer, needs)
                .map_err(refused)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay;

    const WINDOW_MS: u64 = 60_000;

    fn access(home: &std::path::Path) -> Access {
        let conf = home.join("conf");
        std::fs::create_dir_all(&conf).expect("conf dir");
        let accounts = "accounts:\n  - accessKey: appAccess1\n    secretKey: appSecret1\n    \
                        admin: true\n";
        std::fs::write(conf.join("plain_acl.yml"), accounts).expect("plain_acl.yml");
        Access {
            acl: Some(Arc::new(AclStore::open(home).expect("the accounts load"))),
            users: None,
            request_time_skew_ms: WINDOW_MS,
        }
    }

    fn signed_at(ms: i64) -> Request<pb::QueryRouteRequest> {
        let date = replay::format(ms);
        let authorization = ferrocket_acl::grpc_authorization("appAccess1", "appSecret1", &date);
        let mut request = Request::new(pb::QueryRouteRequest::default());
        let metadata = request.metadata_mut();
        metadata.insert(DATE_TIME, date.parse().expect("ascii"));
        metadata.insert(AUTHORIZATION, authorization.parse().expect("ascii"));
        request
    }

    fn now_ms() -> i64 {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.expect("after 1970").as_millis() as i64
    }

    #[test]
    fn a_signed_call_with_a_stale_or_future_date_is_refused() {
        let home = tempfile::tempdir().expect("a temporary home");
        let access = access(home.path());
        assert!(access.authorize(&signed_at(now_ms())).is_ok());
        for off_ms in [-20 * 60_000, 20 * 60_000] {
            let request = signed_at(now_ms() + off_ms);
            let refused = access.authorize(&request).expect_err("outside the window");
            assert_eq!(refused.code(), tonic::Code::Unauthenticated);
            assert!(
                refused.message().contains("grpcRequestTimeSkewMs"),
                "{refused:?}"
            );
            assert!(refused.message().ends_with("(40100)"), "{refused:?}");
            let headers = request.metadata().clone().into_headers();
            assert!(
                !access.authenticates(&headers, None),
                "nor lifts the budget"
            );
        }
        let lenient = Access {
            request_time_skew_ms: 0,
            ..access
        };
        assert!(
            lenient
                .authorize(&signed_at(now_ms() - 20 * 60_000))
                .is_ok(),
            "0: off"
        );
    }
}
