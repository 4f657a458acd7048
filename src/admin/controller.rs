//! `ferrocket admin controller`: what a controller knows of controller-mode
//! broker sets (mqadmin's `getSyncStateSet`).

use std::time::Duration;

use clap::{Args, Subcommand};
use ferrocket_client::Admin;
use ferrocket_controller::handler::SYNC_STATE_NAMES_MAX as SETS_MAX;
use ferrocket_controller::member::ControllerClient;
use ferrocket_protocol::body::controller::{BrokerReplicasInfo, ReplicaIdentity};
use ferrocket_protocol::body::{decode_json, encode_json};
use ferrocket_protocol::codes::{request_code, response_code};

#[derive(Debug, Subcommand)]
pub enum ControllerCommand {
    /// Each broker set's master, epochs and in-sync and out-of-sync
    /// replicas, as the controller leader has them (`mqadmin
    /// getSyncStateSet`).
    SyncStateSet(SyncStateSetArgs),
}

#[derive(Debug, Args)]
pub struct SyncStateSetArgs {
    /// Controller address(es), "host:port;host:port"; the leader is found
    /// among them.
    #[arg(short = 'a', long)]
    controller_addr: String,
    /// Which broker sets, by broker name (comma-separated).
    #[arg(short = 'b', long, value_delimiter = ',', conflicts_with = "cluster")]
    broker_name: Vec<String>,
    /// Every broker set of this cluster (from the name server).
    #[arg(short = 'c', long)]
    cluster: Option<String>,
}

pub async fn run(
    admin: &Admin,
    command: ControllerCommand,
    timeout: Duration,
) -> Result<(), String> {
    match command {
        ControllerCommand::SyncStateSet(args) => sync_state_set(admin, args, timeout).await,
    }
}

async fn broker_names(admin: &Admin, args: &SyncStateSetArgs) -> Result<Vec<String>, String> {
    let names: Vec<String> = match &args.cluster {
        Some(cluster) => {
            let info = admin.cluster_info().await.map_err(|e| e.to_string())?;
            let names = info.cluster_addr_table.get(cluster).ok_or_else(|| {
                format!("cluster `{cluster}` is not registered with the name server")
            })?;
            names.iter().cloned().collect()
        }
        None => args
            .broker_name
            .iter()
            .map(|n| n.trim().to_string())
            .collect(),
    };
    let names: Vec<String> = names.into_iter().filter(|n| !n.is_empty()).collect();
    if names.is_empty() {
        return Err("give --broker-name or --cluster".into());
    }
    if names.len() > SETS_MAX {
        return Err(format!("at most {SETS_MAX} broker sets at once"));
    }
    Ok(names)
}

async fn sync_state_set(
    admin: &Admin,
    args: SyncStateSetArgs,
    timeout: Duration,
) -> Result<(), String> {
    let names = broker_names(admin, &args).await?;
    let addrs: Vec<String> = args
        .controller_addr
        .split(';')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect();
    // Signed with --access-key / --secret-key, over TLS with --tls, as the
    // admin's other calls.
    let client = ControllerClient::with_config(addrs, timeout, admin.pool().config().clone());
    let answer = client
        .call(
            request_code::CONTROLLER_GET_SYNC_STATE_DATA,
            Default::default(),
            encode_json(&names),
        )
        .await
        .map_err(|e| e.to_string())?;
    if answer.code != response_code::SUCCESS {
        return Err(format!(
            "the controller refused ({}): {}",
            answer.code,
            answer.remark.unwrap_or_default()
        ));
    }
    let info = decode_json::<BrokerReplicasInfo>(&answer.body)
        .map_err(|e| format!("the controller's answer does not parse: {e}"))?;
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !info.replicas_info_table.contains_key(*n))
        .collect();
    for (name, set) in &info.replicas_info_table {
        // mqadmin's layout.
        print!(
            "\n#brokerName\t{name}\n#MasterBrokerId\t{}\n#MasterAddr\t{}\n#MasterEpoch\t{}\n\
             #SyncStateSetEpoch\t{}\n#SyncStateSetNums\t{}\n",
            set.master_broker_id
                .map_or("null".into(), |id| id.to_string()),
            set.master_address.as_deref().unwrap_or("null"),
            set.master_epoch,
            set.sync_state_set_epoch,
            set.in_sync_replicas.len()
        );
        for replica in &set.in_sync_replicas {
            print!("\nInSyncReplica:\t{}\n", replica_text(replica));
        }
        for replica in &set.not_in_sync_replicas {
            print!("\nNotInSyncReplica:\t{}\n", replica_text(replica));
        }
    }
    if !missing.is_empty() {
        return Err(format!("the controller knows no broker set {missing:?}"));
    }
    Ok(())
}

/// As Java's `ReplicaIdentity.toString`.
fn replica_text(replica: &ReplicaIdentity) -> String {
    format!(
        "ReplicaIdentity{{brokerName='{}', brokerId={}, brokerAddress='{}', alive={}}}",
        replica.broker_name, replica.broker_id, replica.broker_address, replica.alive
    )
}
