//! `ferrocket admin consumer status` (mqadmin `consumerStatus`): the
//! group's online clients from each broker, then each client's own account
//! of itself (GET_CONSUMER_RUNNING_INFO, which the broker passes to the
//! client): its properties, subscriptions and, with `--raw`, the whole
//! answer.

use clap::Args;
use ferrocket_client::{Admin, ClientError};

use super::print_table;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The consumer group.
    #[arg(short = 'g', long)]
    pub group: String,
    /// Only this client (default: every online client of the group).
    #[arg(short = 'i', long)]
    pub client_id: Option<String>,
    /// Only the clients connected to this broker (default: every master).
    #[arg(short = 'b', long)]
    pub broker_addr: Option<String>,
    /// Ask for the clients' thread stacks too (mqadmin's `-s`).
    #[arg(short = 's', long)]
    pub jstack: bool,
    /// Print each client's whole answer as it came.
    #[arg(long)]
    pub raw: bool,
}

/// Asks every online client of the group (on any of `addrs`) about itself.
pub async fn status(admin: &Admin, args: &StatusArgs, addrs: &[String]) -> Result<(), ClientError> {
    let mut asked = 0;
    for addr in addrs {
        let Some(conn) = admin.consumer_connection(addr, &args.group).await? else {
            continue;
        };
        for client in &conn.connection_set {
            if args
                .client_id
                .as_ref()
                .is_some_and(|id| *id != client.client_id)
            {
                continue;
            }
            asked += 1;
            println!(
                "#Client {} ({}, {} {}) via {addr}",
                client.client_id,
                client.client_addr,
                client.language,
                ferrocket_protocol::version::version_desc(client.version)
            );
            let info = admin
                .consumer_running_info(addr, &args.group, &client.client_id, args.jstack)
                .await;
            match info {
                Ok(answer) => print_info(&answer, args.raw),
                Err(error) => println!("  not answered: {error}"),
            }
            println!();
        }
    }
    if asked == 0 {
        return Err(ClientError::NotFound(format!(
            "no online client of consumer group `{}`{} on {}",
            args.group,
            args.client_id
                .as_ref()
                .map_or(String::new(), |id| format!(" is `{id}`")),
            addrs.join(", ")
        )));
    }
    Ok(())
}

fn print_info(answer: &Result<serde_json::Value, String>, raw: bool) {
    let info = match answer {
        Ok(info) => info,
        Err(body) => {
            println!("  (the answer is not JSON; as it came:)\n{body}");
            return;
        }
    };
    if let Some(properties) = info.get("properties").and_then(|p| p.as_object()) {
        let mut rows = vec![["Property", "Value"].map(String::from)];
        for (key, value) in properties {
            let value = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_string);
            rows.push([key.clone(), value]);
        }
        print_table(&rows);
    }
    if let Some(subscriptions) = info.get("subscriptionSet").and_then(|s| s.as_array()) {
        for sub in subscriptions {
            let field = |name: &str| {
                sub.get(name)
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_string()
            };
            println!("  subscribes {} {}", field("topic"), field("subString"));
        }
    }
    let queues = info
        .get("mqTable")
        .and_then(|t| t.as_object())
        .map_or(0, |t| t.len());
    println!("  queues held: {queues}");
    if raw {
        println!("{info:#}");
    }
}
