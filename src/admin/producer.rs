//! `ferrocket admin producer`: a producer group's online clients (mqadmin's
//! `producerConnection`).

use clap::Subcommand;
use ferrocket_client::{Admin, ClientError, ProducerConnection};

#[derive(Debug, Subcommand)]
pub enum ProducerCommand {
    /// The group's connected clients on every master, or on one broker
    /// (`mqadmin producerConnection`; the broker knows them from their
    /// heartbeats).
    Connection {
        /// The producer group.
        #[arg(short = 'g', long)]
        group: String,
        /// Only this broker (default: every master).
        #[arg(short = 'b', long)]
        broker_addr: Option<String>,
    },
}

pub async fn run(admin: &Admin, command: ProducerCommand) -> Result<(), ClientError> {
    match command {
        ProducerCommand::Connection { group, broker_addr } => {
            connection(admin, &group, broker_addr.as_deref()).await
        }
    }
}

/// A producer connects to every broker it sends to, so the same client
/// can be listed by several: each is shown once.
async fn connection(
    admin: &Admin,
    group: &str,
    broker_addr: Option<&str>,
) -> Result<(), ClientError> {
    let addrs = super::consumer::masters(admin, broker_addr, None).await?;
    let mut all = ProducerConnection::default();
    for addr in &addrs {
        let Some(found) = admin.producer_connection(addr, group).await? else {
            continue;
        };
        for client in found.connection_set {
            if !all.connection_set.contains(&client) {
                all.connection_set.push(client);
            }
        }
    }
    if all.connection_set.is_empty() {
        return Err(ClientError::NotFound(format!(
            "producer group `{group}` is offline: no client of it is connected to {}",
            addrs.join(", ")
        )));
    }
    let mut rows = vec![["#", "ClientId", "ClientAddr", "Language", "Version"].map(String::from)];
    for (i, client) in all.connection_set.iter().enumerate() {
        rows.push([
            (i + 1).to_string(),
            client.client_id.clone(),
            client.client_addr.clone(),
            client.language.clone(),
            client.version.to_string(),
        ]);
    }
    super::print_table(&rows);
    Ok(())
}
