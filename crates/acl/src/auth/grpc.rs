//! ACL 2.0 for the v5 gRPC clients (Java's `DefaultAuthenticationContext
//! Builder.build(Metadata, ...)`): the `authorization` metadata names the
//! user and signs the `x-mq-date-time` value with the user's password.

use hmac::{KeyInit, Mac};

use super::metadata::AuthMetadata;
use super::model::User;
use crate::grpc::parse_authorization;
use crate::Denied;

type HmacSha1 = hmac::Hmac<sha1::Sha1>;

impl AuthMetadata {
    /// The user a gRPC call's metadata signs for.
    pub fn authenticate_grpc(
        &self,
        authorization: Option<&str>,
        date_time: Option<&str>,
    ) -> Result<&User, Denied> {
        let authorization =
            authorization.ok_or_else(|| Denied("username cannot be null.".into()))?;
        let date_time = date_time.ok_or_else(|| Denied("datetime is null.".into()))?;
        let credential = parse_authorization(authorization).map_err(Denied)?;
        if credential.access_key.is_empty() {
            return Err(Denied("username cannot be null.".into()));
        }
        let user = self.signer(&credential.access_key)?;
        let mut mac = HmacSha1::new_from_slice(user.password.as_bytes()).expect("any key length");
        mac.update(date_time.as_bytes());
        mac.verify_slice(&credential.signature)
            .map_err(|_| Denied("check signature failed.".into()))?;
        Ok(user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;

    #[test]
    fn a_call_signs_its_date_time_with_the_password() {
        let mut meta = AuthMetadata::default();
        let info = UserInfo {
            password: Some("1234567".into()),
            ..UserInfo::default()
        };
        meta.create_user(None, "abc", &info).unwrap();
        let header = crate::grpc_authorization("abc", "1234567", "20231227T194619Z");
        assert_eq!(
            meta.authenticate_grpc(Some(&header), Some("20231227T194619Z"))
                .unwrap()
                .username,
            "abc"
        );
        assert_eq!(
            meta.authenticate_grpc(Some(&header), Some("20231227T194620Z"))
                .unwrap_err()
                .0,
            "check signature failed."
        );
        assert_eq!(
            meta.authenticate_grpc(None, Some("x")).unwrap_err().0,
            "username cannot be null."
        );
        assert_eq!(
            meta.authenticate_grpc(Some(&header), None).unwrap_err().0,
            "datetime is null."
        );
    }
}
