//! Between the JSON the admin requests carry ([`UserInfo`], [`AclInfo`])
//! and the model, with Java's checks in Java's order and its words
//! (`AuthorizationMetadataManagerImpl.validate`), plus a clear refusal
//! where Java would drop what it cannot read.

use super::model::*;

impl From<&User> for UserInfo {
    fn from(user: &User) -> UserInfo {
        UserInfo {
            username: Some(user.username.clone()),
            password: Some(user.password.clone()),
            user_type: Some(user.user_type.name().to_string()),
            user_status: Some(user.user_status.name().to_string()),
        }
    }
}

/// A field that is absent, or blank, is none.
fn given(field: &Option<String>) -> Option<&str> {
    field.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl UserInfo {
    pub fn user_type(&self) -> Result<Option<UserType>, String> {
        given(&self.user_type).map(UserType::parse).transpose()
    }

    pub fn user_status(&self) -> Result<Option<UserStatus>, String> {
        given(&self.user_status).map(UserStatus::parse).transpose()
    }

    /// The password as given (spaces kept: they are part of the secret);
    /// none when absent or blank.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref().filter(|p| !p.trim().is_empty())
    }
}

impl From<&Acl> for AclInfo {
    fn from(acl: &Acl) -> AclInfo {
        AclInfo {
            subject: Some(acl.subject.clone()),
            policies: acl.policies.iter().map(PolicyInfo::from).collect(),
        }
    }
}

impl From<&Policy> for PolicyInfo {
    fn from(policy: &Policy) -> PolicyInfo {
        PolicyInfo {
            policy_type: Some(policy.policy_type.name().to_string()),
            entries: policy.entries.iter().map(EntryInfo::from).collect(),
        }
    }
}

impl From<&Entry> for EntryInfo {
    fn from(entry: &Entry) -> EntryInfo {
        EntryInfo {
            resource: Some(entry.resource.to_string()),
            actions: entry.actions.iter().map(|a| a.name().to_string()).collect(),
            source_ips: entry.source_ips.iter().map(|ip| ip.text.clone()).collect(),
            decision: Some(entry.decision.name().to_string()),
        }
    }
}

impl AclInfo {
    /// The ACL this body describes, checked. The subject is the body's,
    /// else `subject` (the header's), as Java takes it. A policy without a
    /// type is Custom; a policy without entries is left out (Java's
    /// converter), and an ACL left with no policies is refused.
    pub fn to_acl(&self, subject: Option<&str>) -> Result<Acl, String> {
        let subject = given(&self.subject)
            .or(subject.map(str::trim).filter(|s| !s.is_empty()))
            .ok_or("The subject type is null.")?;
        let username = parse_subject(subject)?;
        let mut policies = Vec::with_capacity(self.policies.len());
        for info in self.policies.iter().filter(|p| !p.entries.is_empty()) {
            policies.push(info.to_policy()?);
        }
        if policies.is_empty() {
            return Err("The policies is empty.".into());
        }
        Ok(Acl {
            subject: subject_of(&username),
            policies,
        })
    }
}

impl PolicyInfo {
    fn to_policy(&self) -> Result<Policy, String> {
        let policy_type = given(&self.policy_type)
            .map(PolicyType::parse)
            .transpose()?
            .unwrap_or(PolicyType::Custom);
        let entries = self
            .entries
            .iter()
            .map(EntryInfo::to_entry)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Policy {
            policy_type,
            entries,
        })
    }
}

impl EntryInfo {
    fn to_entry(&self) -> Result<Entry, String> {
        let resource = given(&self.resource).ok_or("The resource is null.")?;
        let resource = Resource::parse(resource)?;
        let actions = self
            .actions
            .iter()
            .map(|a| Action::parse(a))
            .collect::<Result<Vec<_>, _>>()?;
        if actions.is_empty() {
            return Err("The actions is empty.".into());
        }
        if actions.contains(&Action::Any) {
            return Err("The actions can not be Any.".into());
        }
        let source_ips = self
            .source_ips
            .iter()
            .map(|ip| SourceIp::parse(ip))
            .collect::<Result<Vec<_>, _>>()?;
        let decision = given(&self.decision).ok_or("The decision is null or illegal.")?;
        let decision = Decision::parse(decision).map_err(|_| "The decision is null or illegal.")?;
        Ok(Entry {
            resource,
            actions,
            source_ips,
            decision,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(resource: &str, actions: &[&str], decision: &str) -> EntryInfo {
        EntryInfo {
            resource: Some(resource.into()),
            actions: actions.iter().map(|a| a.to_string()).collect(),
            source_ips: vec![],
            decision: Some(decision.into()),
        }
    }

    fn acl_info(entries: Vec<EntryInfo>) -> AclInfo {
        AclInfo {
            subject: Some("user:alice".into()),
            policies: vec![PolicyInfo {
                policy_type: None,
                entries,
            }],
        }
    }

    #[test]
    fn the_json_is_javas() {
        let text = r#"{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[
            {"resource":"Topic:t1","actions":["Pub","Sub"],"sourceIps":["10.0.0.0/8"],"decision":"Allow"}]}]}"#;
        let info: AclInfo = serde_json::from_str(text).unwrap();
        let acl = info.to_acl(None).unwrap();
        assert_eq!(acl.policies[0].entries[0].resource.to_string(), "Topic:t1");
        let back = serde_json::to_value(AclInfo::from(&acl)).unwrap();
        assert_eq!(
            back,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
        let user = User {
            username: "bob".into(),
            password: "pw".into(),
            user_type: UserType::Super,
            user_status: UserStatus::Enable,
        };
        let json = serde_json::to_string(&UserInfo::from(&user)).unwrap();
        assert_eq!(
            json,
            r#"{"username":"bob","password":"pw","userType":"Super","userStatus":"enable"}"#
        );
    }

    #[test]
    fn names_read_in_any_case_and_a_policy_type_defaults_to_custom() {
        let acl = acl_info(vec![entry("topic:abc*", &["pub", "SUB"], "deny")])
            .to_acl(None)
            .unwrap();
        assert_eq!(acl.subject, "User:alice");
        let policy = &acl.policies[0];
        assert_eq!(policy.policy_type, PolicyType::Custom);
        assert_eq!(policy.entries[0].resource.to_string(), "Topic:abc*");
        assert_eq!(policy.entries[0].actions, [Action::Pub, Action::Sub]);
        assert_eq!(policy.entries[0].decision, Decision::Deny);
    }

    #[test]
    fn bad_entries_are_refused_with_javas_words_or_a_clear_one() {
        let refused = |e: EntryInfo| acl_info(vec![e]).to_acl(None).unwrap_err();
        assert_eq!(
            refused(entry("Topic:t", &[], "Allow")),
            "The actions is empty."
        );
        assert_eq!(
            refused(entry("Topic:t", &["Any"], "Allow")),
            "The actions can not be Any."
        );
        assert_eq!(
            refused(entry("Topic:t", &["Pub"], "Maybe")),
            "The decision is null or illegal."
        );
        assert!(refused(entry("Topic:t", &["Publish"], "Allow")).contains("Publish"));
        assert!(refused(entry("Queue:t", &["Pub"], "Allow")).contains("resource type"));
        let mut ip = entry("Topic:t", &["Pub"], "Allow");
        ip.source_ips = vec!["10.1.*".into()];
        assert!(refused(ip).contains("source ip"));
        assert_eq!(
            acl_info(vec![]).to_acl(None).unwrap_err(),
            "The policies is empty."
        );
        let mut no_subject = acl_info(vec![entry("Topic:t", &["Pub"], "Allow")]);
        no_subject.subject = None;
        assert_eq!(
            no_subject.to_acl(None).unwrap_err(),
            "The subject type is null."
        );
        assert!(no_subject.to_acl(Some("User:carol")).is_ok());
    }

    #[test]
    fn resources_and_addresses() {
        let topic = |name| Resource::literal(ResourceType::Topic, name);
        assert!(Resource::parse("*").unwrap().covers(&topic("x")));
        assert!(Resource::parse("Topic:*").unwrap().covers(&topic("x")));
        assert!(!Resource::parse("Group:*").unwrap().covers(&topic("x")));
        assert!(Resource::parse("Topic:ab*").unwrap().covers(&topic("abc")));
        assert!(!Resource::parse("Topic:ab*").unwrap().covers(&topic("a")));
        assert!(!Resource::parse("Topic:ab").unwrap().covers(&topic("abc")));
        assert!(Resource::parse("Topic:").is_err());
        assert!(Resource::parse("abc").is_err());
        let block = SourceIp::parse("10.0.0.0/8").unwrap();
        assert!(block.contains("10.200.1.1".parse().unwrap()));
        assert!(!block.contains("11.0.0.1".parse().unwrap()));
        assert!(block.contains("::ffff:10.0.0.1".parse().unwrap()));
        assert!(SourceIp::parse("::1")
            .unwrap()
            .contains("::1".parse().unwrap()));
        assert!(SourceIp::parse("0.0.0.0/0")
            .unwrap()
            .contains("1.2.3.4".parse().unwrap()));
        assert!(SourceIp::parse("10.0.0.0/33").is_err());
    }
}
