//! `ferrocket admin user|acl`: ACL 2.0's users and ACLs (mqadmin's
//! `createUser` ... `listUser`, `createAcl` ... `listAcl`, with its option
//! letters). With `-c`, changes go to every broker of the cluster, slaves
//! too, and reads to its masters, as mqadmin sends them.

use clap::{Args, Subcommand};
use ferrocket_acl::auth::{AclInfo, EntryInfo, PolicyInfo, UserInfo};
use ferrocket_client::admin::{broker_entries, cluster_master_addrs};
use ferrocket_client::{Admin, ClientError};

use super::broker::BrokerTarget;

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Make a user (`mqadmin createUser`).
    Create(UserArgs),
    /// Change a user's password, type or status (`mqadmin updateUser`).
    Update(UserArgs),
    /// Remove a user and its ACL (`mqadmin deleteUser`).
    Delete(UserName),
    /// Print one user (`mqadmin getUser`).
    Get(UserName),
    /// Print the users whose name contains a filter (`mqadmin listUser`).
    List {
        #[command(flatten)]
        target: BrokerTarget,
        /// Only users whose name contains this.
        #[arg(short = 'f', long, default_value = "")]
        filter: String,
    },
}

#[derive(Debug, Args)]
pub struct UserArgs {
    #[command(flatten)]
    target: BrokerTarget,
    /// The user's name.
    #[arg(short = 'u', long)]
    username: String,
    /// The user's password.
    #[arg(short = 'p', long)]
    password: Option<String>,
    /// Super or Normal.
    #[arg(short = 't', long)]
    user_type: Option<String>,
    /// enable or disable.
    #[arg(short = 's', long)]
    user_status: Option<String>,
}

#[derive(Debug, Args)]
pub struct UserName {
    #[command(flatten)]
    target: BrokerTarget,
    /// The user's name.
    #[arg(short = 'u', long)]
    username: String,
}

#[derive(Debug, Subcommand)]
pub enum AclCommand {
    /// Give a user entries (`mqadmin createAcl`; merged by resource).
    Create(AclArgs),
    /// The same as create (`mqadmin updateAcl`).
    Update(AclArgs),
    /// Remove one entry, or without -r the whole ACL (`mqadmin deleteAcl`).
    Delete {
        #[command(flatten)]
        target: BrokerTarget,
        /// Whose ACL: `User:NAME`.
        #[arg(short = 's', long)]
        subject: String,
        /// The entry's resource (`Topic:NAME`, `Group:NAME`, ...); without it the whole ACL goes.
        #[arg(short = 'r', long)]
        resource: Option<String>,
        /// Custom (default) or Default.
        #[arg(long)]
        policy_type: Option<String>,
    },
    /// Print a user's ACL (`mqadmin getAcl`).
    Get {
        #[command(flatten)]
        target: BrokerTarget,
        /// Whose ACL: `User:NAME`.
        #[arg(short = 's', long)]
        subject: String,
    },
    /// Print ACLs by subject and resource filters (`mqadmin listAcl`).
    List {
        #[command(flatten)]
        target: BrokerTarget,
        /// Only subjects that contain this.
        #[arg(short = 's', long, default_value = "")]
        subject: String,
        /// Only resources that contain this.
        #[arg(short = 'r', long, default_value = "")]
        resource: String,
    },
}

#[derive(Debug, Args)]
pub struct AclArgs {
    #[command(flatten)]
    target: BrokerTarget,
    /// User:<name>.
    #[arg(short = 's', long)]
    subject: String,
    /// Resources, comma-separated: Topic:t, Group:g, Cluster:c, Topic:p*, Topic:*, *.
    #[arg(short = 'r', long, value_delimiter = ',', required = true)]
    resources: Vec<String>,
    /// Actions, comma-separated: All, Pub, Sub, Create, Update, Delete, Get, List.
    #[arg(short = 'a', long, value_delimiter = ',', required = true)]
    actions: Vec<String>,
    /// Allow or Deny.
    #[arg(short = 'd', long)]
    decision: String,
    /// Addresses the entries hold for, comma-separated IPs or CIDR blocks.
    #[arg(short = 'i', long, value_delimiter = ',')]
    source_ip: Vec<String>,
    /// Custom (default) or Default.
    #[arg(long)]
    policy_type: Option<String>,
}

impl AclArgs {
    fn to_info(&self) -> AclInfo {
        let entries = self
            .resources
            .iter()
            .map(|resource| EntryInfo {
                resource: Some(resource.trim().to_string()),
                actions: self.actions.iter().map(|a| a.trim().to_string()).collect(),
                source_ips: self
                    .source_ip
                    .iter()
                    .map(|i| i.trim().to_string())
                    .collect(),
                decision: Some(self.decision.clone()),
            })
            .collect();
        AclInfo {
            subject: Some(self.subject.clone()),
            policies: vec![PolicyInfo {
                policy_type: self.policy_type.clone(),
                entries,
            }],
        }
    }
}

/// The brokers a change goes to: one, or every broker of a cluster.
async fn writers(admin: &Admin, target: &BrokerTarget) -> Result<Vec<String>, ClientError> {
    match (&target.broker_addr, &target.cluster) {
        (Some(addr), _) => Ok(vec![addr.clone()]),
        (None, Some(cluster)) => {
            let info = admin.cluster_info().await?;
            let masters = cluster_master_addrs(&info, cluster)?;
            let mut all: Vec<String> = broker_entries(&info)
                .into_iter()
                .filter(|e| &e.cluster == cluster)
                .map(|e| e.addr)
                .collect();
            all.extend(masters);
            all.sort();
            all.dedup();
            Ok(all)
        }
        (None, None) => Err(ClientError::InvalidArgument(
            "give --broker-addr or --cluster".into(),
        )),
    }
}

/// Sends one change to each broker; all are tried, a failure is reported.
async fn on_each<F, Fut>(
    admin: &Admin,
    target: &BrokerTarget,
    what: &str,
    f: F,
) -> Result<(), ClientError>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<(), ClientError>>,
{
    let mut failed = Vec::new();
    for addr in writers(admin, target).await? {
        match f(addr.clone()).await {
            Ok(()) => println!("{what} to {addr} success."),
            Err(error) => {
                eprintln!("{what} to {addr} failed: {error}");
                failed.push(addr);
            }
        }
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(ClientError::PartlyFailed(format!(
            "{what} failed on {}",
            failed.join(", ")
        ))),
    }
}

pub async fn run_user(admin: &Admin, command: UserCommand) -> Result<(), ClientError> {
    match command {
        UserCommand::Create(args) => put_user(admin, args, false).await,
        UserCommand::Update(args) => put_user(admin, args, true).await,
        UserCommand::Delete(name) => {
            let username = name.username.as_str();
            on_each(admin, &name.target, "delete user", |addr| async move {
                admin.delete_user(&addr, username).await
            })
            .await
        }
        UserCommand::Get(name) => {
            let mut users = Vec::new();
            for addr in super::broker::addrs(admin, &name.target).await? {
                users.extend(admin.get_user(&addr, &name.username).await?);
            }
            print_users(&users);
            Ok(())
        }
        UserCommand::List { target, filter } => {
            for addr in super::broker::addrs(admin, &target).await? {
                let users = admin.list_users(&addr, &filter).await?;
                if !users.is_empty() {
                    print_users(&users);
                    break;
                }
            }
            Ok(())
        }
    }
}

async fn put_user(admin: &Admin, args: UserArgs, update: bool) -> Result<(), ClientError> {
    let info = UserInfo {
        username: Some(args.username.clone()),
        password: args.password.clone(),
        user_type: args.user_type.clone(),
        user_status: args.user_status.clone(),
    };
    let what = if update { "update user" } else { "create user" };
    let info = &info;
    on_each(admin, &args.target, what, |addr| async move {
        admin.put_user(&addr, info, update).await
    })
    .await
}

pub async fn run_acl(admin: &Admin, command: AclCommand) -> Result<(), ClientError> {
    match command {
        AclCommand::Create(args) => put_acl(admin, &args, false).await,
        AclCommand::Update(args) => put_acl(admin, &args, true).await,
        AclCommand::Delete {
            target,
            subject,
            resource,
            policy_type,
        } => {
            let (subject, resource, policy_type) =
                (&subject, resource.as_deref(), policy_type.as_deref());
            on_each(admin, &target, "delete acl", |addr| async move {
                admin
                    .delete_acl(&addr, subject, resource, policy_type)
                    .await
            })
            .await
        }
        AclCommand::Get { target, subject } => {
            for addr in super::broker::addrs(admin, &target).await? {
                print_acls(
                    &admin
                        .get_acl(&addr, &subject)
                        .await?
                        .into_iter()
                        .collect::<Vec<_>>(),
                );
            }
            Ok(())
        }
        AclCommand::List {
            target,
            subject,
            resource,
        } => {
            for addr in super::broker::addrs(admin, &target).await? {
                print_acls(&admin.list_acls(&addr, &subject, &resource).await?);
            }
            Ok(())
        }
    }
}

async fn put_acl(admin: &Admin, args: &AclArgs, update: bool) -> Result<(), ClientError> {
    let info = &args.to_info();
    let what = if update { "update acl" } else { "create acl" };
    on_each(admin, &args.target, what, |addr| async move {
        admin.put_acl(&addr, info, update).await
    })
    .await
}

fn print_users(users: &[UserInfo]) {
    println!(
        "{:<32}  {:<32}  {:<8}  {:<8}",
        "#UserName", "#Password", "#UserType", "#UserStatus"
    );
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    for user in users {
        println!(
            "{:<32}  {:<32}  {:<8}  {:<8}",
            text(&user.username),
            text(&user.password),
            text(&user.user_type),
            text(&user.user_status)
        );
    }
}

fn print_acls(acls: &[AclInfo]) {
    let row = |cells: [&str; 6]| {
        println!(
            "{:<32}  {:<10}  {:<40}  {:<24}  {:<24}  {}",
            cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]
        )
    };
    row([
        "#Subject",
        "#PolicyType",
        "#Resource",
        "#Actions",
        "#SourceIp",
        "#Decision",
    ]);
    for acl in acls {
        for policy in &acl.policies {
            for entry in &policy.entries {
                row([
                    acl.subject.as_deref().unwrap_or(""),
                    policy.policy_type.as_deref().unwrap_or(""),
                    entry.resource.as_deref().unwrap_or(""),
                    &entry.actions.join(","),
                    &entry.source_ips.join(","),
                    entry.decision.as_deref().unwrap_or(""),
                ]);
            }
        }
    }
}
