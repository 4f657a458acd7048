//! ACL 2.0's admin requests (AUTH_CREATE_USER 3001 ... AUTH_LIST_ACL 3010)
//! to one broker, as mqadmin's `createUser` ... `listAcl` send them.

use ferrocket_acl::auth::{auth_code::*, AclInfo, UserInfo};
use ferrocket_protocol::RemotingCommand;
use serde::de::DeserializeOwned;

use crate::{expect_success, Admin, ClientError};

impl Admin {
    async fn auth_request(
        &self,
        broker_addr: &str,
        code: i32,
        fields: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Result<RemotingCommand, ClientError> {
        let mut request = RemotingCommand::request(code);
        for (key, value) in fields {
            request.ext_fields.insert(*key, *value);
        }
        if let Some(body) = body {
            request = request.with_body(body);
        }
        expect_success(self.pool().invoke(broker_addr, request).await?)
    }

    /// AUTH_CREATE_USER, or AUTH_UPDATE_USER with `update`.
    pub async fn put_user(
        &self,
        broker_addr: &str,
        user: &UserInfo,
        update: bool,
    ) -> Result<(), ClientError> {
        let code = if update {
            AUTH_UPDATE_USER
        } else {
            AUTH_CREATE_USER
        };
        let name = user.username.as_deref().unwrap_or("");
        let body = json(user)?;
        self.auth_request(broker_addr, code, &[("username", name)], Some(body))
            .await?;
        Ok(())
    }

    pub async fn delete_user(&self, broker_addr: &str, username: &str) -> Result<(), ClientError> {
        self.auth_request(
            broker_addr,
            AUTH_DELETE_USER,
            &[("username", username)],
            None,
        )
        .await?;
        Ok(())
    }

    pub async fn get_user(
        &self,
        broker_addr: &str,
        username: &str,
    ) -> Result<Option<UserInfo>, ClientError> {
        let response = self
            .auth_request(broker_addr, AUTH_GET_USER, &[("username", username)], None)
            .await?;
        optional(&response)
    }

    pub async fn list_users(
        &self,
        broker_addr: &str,
        filter: &str,
    ) -> Result<Vec<UserInfo>, ClientError> {
        let response = self
            .auth_request(broker_addr, AUTH_LIST_USER, &[("filter", filter)], None)
            .await?;
        Ok(optional(&response)?.unwrap_or_default())
    }

    /// AUTH_CREATE_ACL, or AUTH_UPDATE_ACL with `update` (both merge).
    pub async fn put_acl(
        &self,
        broker_addr: &str,
        acl: &AclInfo,
        update: bool,
    ) -> Result<(), ClientError> {
        let code = if update {
            AUTH_UPDATE_ACL
        } else {
            AUTH_CREATE_ACL
        };
        let subject = acl.subject.as_deref().unwrap_or("");
        let body = json(acl)?;
        self.auth_request(broker_addr, code, &[("subject", subject)], Some(body))
            .await?;
        Ok(())
    }

    /// AUTH_DELETE_ACL: the entry for `resource` (none: the whole ACL) in
    /// the policy of `policy_type` (none: Custom).
    pub async fn delete_acl(
        &self,
        broker_addr: &str,
        subject: &str,
        resource: Option<&str>,
        policy_type: Option<&str>,
    ) -> Result<(), ClientError> {
        let mut fields = vec![("subject", subject)];
        fields.extend(resource.map(|r| ("resource", r)));
        fields.extend(policy_type.map(|p| ("policyType", p)));
        self.auth_request(broker_addr, AUTH_DELETE_ACL, &fields, None)
            .await?;
        Ok(())
    }

    pub async fn get_acl(
        &self,
        broker_addr: &str,
        subject: &str,
    ) -> Result<Option<AclInfo>, ClientError> {
        let response = self
            .auth_request(broker_addr, AUTH_GET_ACL, &[("subject", subject)], None)
            .await?;
        optional(&response)
    }

    pub async fn list_acls(
        &self,
        broker_addr: &str,
        subject_filter: &str,
        resource_filter: &str,
    ) -> Result<Vec<AclInfo>, ClientError> {
        let fields = [
            ("subjectFilter", subject_filter),
            ("resourceFilter", resource_filter),
        ];
        let response = self
            .auth_request(broker_addr, AUTH_LIST_ACL, &fields, None)
            .await?;
        Ok(optional(&response)?.unwrap_or_default())
    }
}

fn json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, ClientError> {
    serde_json::to_vec(value).map_err(|e| ClientError::InvalidArgument(e.to_string()))
}

/// The answer's JSON body; none when it has no body.
fn optional<T: DeserializeOwned>(response: &RemotingCommand) -> Result<Option<T>, ClientError> {
    if response.body.is_empty() {
        return Ok(None);
    }
    Ok(Some(crate::decode_body(&response.body)?))
}
