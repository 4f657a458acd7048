//! `ferrocket admin broker`: a broker's settings, read and changed online
//! (mqadmin's `getBrokerConfig` and `updateBrokerConfig`).

use clap::{Args, Subcommand};
use ferrocket_client::admin::cluster_master_addrs;
use ferrocket_client::{Admin, ClientError};

#[derive(Debug, Subcommand)]
pub enum BrokerCommand {
    /// Print the settings in force (`mqadmin getBrokerConfig`).
    Config(BrokerTarget),
    /// Change one setting while the broker runs (`mqadmin
    /// updateBrokerConfig`); it is also written into the broker's -c file.
    UpdateConfig(UpdateArgs),
    /// Every group's per-queue progress on one broker (`mqadmin
    /// brokerConsumeStats`).
    ConsumeStats(super::stats::ConsumeStatsArgs),
}

/// Which brokers: one by address, or the masters of a cluster.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct BrokerTarget {
    /// One broker, host:port.
    #[arg(short = 'b', long)]
    pub broker_addr: Option<String>,
    /// Every master of this cluster.
    #[arg(short = 'c', long)]
    pub cluster: Option<String>,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    #[command(flatten)]
    target: BrokerTarget,
    /// The setting's key, RocketMQ's name (e.g. autoCreateTopicEnable).
    #[arg(short = 'k', long)]
    key: String,
    /// Its new value.
    #[arg(short = 'v', long)]
    value: String,
}

pub async fn run(admin: &Admin, command: BrokerCommand) -> Result<(), ClientError> {
    match command {
        BrokerCommand::ConsumeStats(args) => super::stats::broker_consume_stats(admin, args).await,
        BrokerCommand::Config(target) => {
            for addr in addrs(admin, &target).await? {
                println!("============{addr}============");
                for (key, value) in admin.broker_config(&addr).await? {
                    // mqadmin's layout.
                    println!("{key:<50}=  {value}");
                }
                println!();
            }
            Ok(())
        }
        BrokerCommand::UpdateConfig(update) => {
            let pairs = [(
                update.key.trim().to_string(),
                update.value.trim().to_string(),
            )];
            // As mqadmin: a broker that fails does not stop the others.
            let mut failed = Vec::new();
            for addr in addrs(admin, &update.target).await? {
                match admin.update_broker_config(&addr, &pairs).await {
                    Ok(()) => println!("update broker config success, {addr}"),
                    Err(error) => {
                        eprintln!("update broker config failed, {addr}: {error}");
                        failed.push(addr);
                    }
                }
            }
            match failed.is_empty() {
                true => Ok(()),
                false => Err(ClientError::PartlyFailed(format!(
                    "not updated on {}",
                    failed.join(", ")
                ))),
            }
        }
    }
}

pub async fn addrs(admin: &Admin, target: &BrokerTarget) -> Result<Vec<String>, ClientError> {
    match (&target.broker_addr, &target.cluster) {
        (Some(addr), _) => Ok(vec![addr.clone()]),
        (None, Some(cluster)) => cluster_master_addrs(&admin.cluster_info().await?, cluster),
        (None, None) => Err(ClientError::InvalidArgument(
            "give --broker-addr or --cluster".into(),
        )),
    }
}
