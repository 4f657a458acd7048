//! ACL 2.0's admin requests (`AdminBrokerProcessor`): users (AUTH_CREATE_USER
//! 3001 ... AUTH_LIST_USER 3005) and ACLs (AUTH_CREATE_ACL 3006 ...
//! AUTH_LIST_ACL 3010), with Java's headers, JSON bodies and answers. A
//! change is persisted before it is answered and before any shard sees it.
//! Who asks is the request's `AccessKey` (unsigned: as a super user, as in
//! Java, which is why these need authentication in production).

use std::rc::Rc;

use ferrocket_acl::auth::{
    auth_code, AclInfo, AuthError, AuthMetadata, PolicyType, Resource, UserInfo,
};
use ferrocket_acl::ACCESS_KEY;
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::Reject;
use crate::services::auth;
use crate::shard::Shard;

/// Largest user or ACL body read.
const BODY_BYTES_MAX: usize = 1024 * 1024;
/// The answer while ACL 2.0 is off (Java's, when no metadata provider is
/// set, and what to do).
const OFF: &str = "The authenticationMetadataProvider is not configured: ACL 2.0 is off \
    (set authenticationEnabled=true or authorizationEnabled=true)";
/// Java's remark for a create or update without an ACL.
const NO_ACL_BODY: &str =
    "org.apache.rocketmq.auth.authorization.exception.AuthorizationException: The body of acl is null";

pub(crate) async fn handle(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    use auth_code::*;
    if !shard.env().config.auth.enabled() {
        return Err(auth::reject(AuthError::Denied(OFF.into())));
    }
    let field = |name: &str| request.ext_fields.get(name).unwrap_or("").to_string();
    let caller = request.ext_fields.get(ACCESS_KEY).map(str::to_string);
    match request.code {
        AUTH_CREATE_USER | AUTH_UPDATE_USER => {
            let info: UserInfo = body(request, "The body of user is null")?;
            let (username, create) = (field("username"), request.code == AUTH_CREATE_USER);
            change(shard, move |meta| {
                let caller = caller.as_deref();
                match create {
                    true => meta.create_user(caller, &username, &info),
                    false => meta.update_user(caller, &username, &info),
                }
            })
            .await?;
            Ok(success(request))
        }
        AUTH_DELETE_USER => {
            let username = field("username");
            change(shard, move |meta| {
                meta.delete_user(caller.as_deref(), &username)
            })
            .await?;
            Ok(success(request))
        }
        AUTH_GET_USER => {
            let username = field("username");
            if username.trim().is_empty() {
                return Err(auth::reject(AuthError::Invalid(
                    "The username is blank".into(),
                )));
            }
            let meta = current(shard);
            let mut users: Vec<UserInfo> = meta
                .user(&username)
                .map(UserInfo::from)
                .into_iter()
                .collect();
            hide_passwords(&meta, caller.as_deref(), &mut users)?;
            Ok(answer(request, users.first()))
        }
        AUTH_LIST_USER => {
            let meta = current(shard);
            let mut users = meta.list_users(&field("filter"));
            hide_passwords(&meta, caller.as_deref(), &mut users)?;
            Ok(answer(request, Some(&users).filter(|u| !u.is_empty())))
        }
        _ => acl_request(shard, request).await,
    }
}

async fn acl_request(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    use auth_code::*;
    let field = |name: &str| request.ext_fields.get(name).unwrap_or("").to_string();
    match request.code {
        AUTH_CREATE_ACL | AUTH_UPDATE_ACL => {
            let info: AclInfo = body(request, NO_ACL_BODY)?;
            if info.policies.is_empty() {
                return Err(Reject::system(NO_ACL_BODY));
            }
            let header_subject = field("subject");
            let acl = info.to_acl(Some(&header_subject)).map_err(denied)?;
            change(shard, move |meta| meta.upsert_acl(acl)).await?;
            Ok(success(request))
        }
        AUTH_DELETE_ACL => {
            let policy_type = match field("policyType").trim() {
                "" => PolicyType::Custom,
                text => PolicyType::parse(text).map_err(denied)?,
            };
            let resource = match field("resource").trim() {
                "" => None,
                text => Some(Resource::parse(text).map_err(denied)?),
            };
            let subject = field("subject");
            change(shard, move |meta| {
                meta.delete_acl(&subject, policy_type, resource.as_ref())
            })
            .await?;
            Ok(success(request))
        }
        AUTH_GET_ACL => {
            let acl = current(shard)
                .get_acl(&field("subject"))
                .map_err(auth::reject)?;
            Ok(answer(request, acl.as_ref()))
        }
        AUTH_LIST_ACL => {
            let acls = current(shard).list_acls(&field("subjectFilter"), &field("resourceFilter"));
            Ok(answer(request, Some(&acls).filter(|a| !a.is_empty())))
        }
        _ => Ok(RemotingCommand::not_supported(request)),
    }
}

/// Only a super user reads passwords (Java shows them to any caller the
/// ACL lets read the cluster, which lets a normal user sign as a super one).
fn hide_passwords(
    meta: &AuthMetadata,
    caller: Option<&str>,
    users: &mut [UserInfo],
) -> Result<(), Reject> {
    if !meta.caller_is_super(caller).map_err(auth::reject)? {
        for user in users {
            user.password = None;
        }
    }
    Ok(())
}

fn denied(message: String) -> Reject {
    auth::reject(AuthError::Denied(message))
}

fn current(shard: &Shard) -> std::sync::Arc<AuthMetadata> {
    crate::shard::access::users(shard)
}

async fn change(
    shard: &Shard,
    f: impl FnOnce(&mut AuthMetadata) -> Result<(), AuthError> + Send + 'static,
) -> Result<(), Reject> {
    auth::update(&shard.env().auth, &shard.env().config_dir, f)
        .await
        .map_err(auth::reject)
}

/// The request's JSON body; a missing one is refused with `missing`.
fn body<T: DeserializeOwned>(request: &RemotingCommand, missing: &str) -> Result<T, Reject> {
    if request.body.is_empty() {
        return Err(Reject::system(missing));
    }
    if request.body.len() > BODY_BYTES_MAX {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!("the body is over {BODY_BYTES_MAX} bytes"),
        ));
    }
    serde_json::from_slice(&request.body)
        .map_err(|e| Reject::system(format!("the body is not the JSON expected: {e}")))
}

fn success(request: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(request, response_code::SUCCESS, None)
}

/// SUCCESS, with `value` as the JSON body when there is one.
fn answer<T: Serialize>(request: &RemotingCommand, value: Option<&T>) -> RemotingCommand {
    let response = success(request);
    match value.and_then(|v| serde_json::to_vec(v).ok()) {
        Some(json) => response.with_body(json),
        None => response,
    }
}
