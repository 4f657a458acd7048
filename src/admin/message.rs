//! `ferrocket admin message ...`: mqadmin's queryMsgById, queryMsgByKey,
//! queryMsgByUniqueKey and queryMsgByOffset. Each prints every message found
//! with its fields and properties; none found is an error (exit 1).

use clap::Subcommand;
use ferrocket_client::{Admin, ClientError, IdForm, KeyQuery, MessageExt};

// The variant names are the subcommands (`query-by-id`, ...).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Subcommand)]
pub enum MessageCommand {
    /// Find a message by its id: the broker's offset message id (send
    /// result `offsetMsgId`), or the producer's message id (its unique key,
    /// what the C++ and Python clients print), which needs `--topic`. Only
    /// brokers the name server lists are asked.
    QueryById {
        /// The message id (offset message id, or with --topic the producer's id).
        #[arg(short = 'i', long = "id")]
        id: String,
        /// The message's topic: lets a producer's message id be found.
        #[arg(short = 't', long)]
        topic: Option<String>,
    },
    /// Find messages of a topic by one of their KEYS.
    QueryByKey {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
        /// One of the message's KEYS.
        #[arg(short = 'k', long)]
        key: String,
        /// Most messages to ask each broker for.
        #[arg(short = 'm', long, default_value_t = 64)]
        max_num: i32,
    },
    /// Find a message of a topic by its unique key (the producer's msgId).
    QueryByUniqueKey {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
        /// The producer's message id (the message's unique key).
        #[arg(short = 'k', long = "key", alias = "id")]
        key: String,
    },
    /// Read the message at a queue offset.
    QueryByOffset {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
        /// The queue id.
        #[arg(short = 'q', long = "queue-id")]
        queue_id: i32,
        /// The queue offset.
        #[arg(short = 'o', long)]
        offset: i64,
    },
}

impl MessageCommand {
    /// The topic the command names, if any (a missing one is said in words).
    pub fn topic(&self) -> Option<&str> {
        match self {
            MessageCommand::QueryById { topic, .. } => topic.as_deref(),
            MessageCommand::QueryByKey { topic, .. }
            | MessageCommand::QueryByUniqueKey { topic, .. }
            | MessageCommand::QueryByOffset { topic, .. } => Some(topic),
        }
    }
}

/// Runs one message command; `Ok(false)` when nothing was found.
pub async fn run(admin: &Admin, command: MessageCommand) -> Result<bool, ClientError> {
    let found: Vec<MessageExt> = match command {
        MessageCommand::QueryById { id, topic } => {
            let (form, found) = admin.find_by_id(&id, topic.as_deref()).await?;
            if !found.is_empty() {
                println!("Found by:           {}", id_form_name(form));
            }
            found
        }
        MessageCommand::QueryByKey {
            topic,
            key,
            max_num,
        } => {
            let mut query = KeyQuery::by_key(&topic, &key);
            query.max_num = max_num;
            admin.query_messages(&query).await?
        }
        MessageCommand::QueryByUniqueKey { topic, key } => {
            admin
                .query_messages(&KeyQuery::by_unique_key(&topic, &key))
                .await?
        }
        MessageCommand::QueryByOffset {
            topic,
            queue_id,
            offset,
        } => admin
            .query_message_by_offset(&topic, queue_id, offset)
            .await?
            .into_iter()
            .collect(),
    };
    for (index, message) in found.iter().enumerate() {
        if index > 0 {
            println!();
        }
        print!("{}", describe(message));
    }
    Ok(!found.is_empty())
}

fn id_form_name(form: IdForm) -> &'static str {
    match form {
        IdForm::OffsetId => "offset message id",
        IdForm::UniqueKey => "unique key (the producer's message id)",
    }
}

/// The message as mqadmin prints it: one `Name: value` line per field,
/// then the properties and the body.
pub fn describe(message: &MessageExt) -> String {
    let mut out = String::new();
    let mut line = |name: &str, value: String| {
        out.push_str(&format!("{name:<20}{value}\n"));
    };
    line("OffsetID:", message.msg_id.clone());
    line(
        "MsgId:",
        message.unique_key.clone().unwrap_or_else(|| "-".into()),
    );
    line("Topic:", message.topic.clone());
    line("Tags:", message.tags.clone().unwrap_or_default());
    line("Keys:", message.keys.join(" "));
    line("Queue ID:", message.queue_id.to_string());
    line("Queue Offset:", message.queue_offset.to_string());
    line("CommitLog Offset:", message.commit_log_offset.to_string());
    line("Reconsume Times:", message.reconsume_times.to_string());
    line("Born Timestamp:", message.born_timestamp_ms.to_string());
    line("Store Timestamp:", message.store_timestamp_ms.to_string());
    line("Born Host:", message.born_host.to_string());
    line("Store Host:", message.store_host.to_string());
    line("System Flag:", message.sys_flag.to_string());
    let mut props: Vec<(&str, &str)> = message.properties.iter().collect();
    props.sort();
    let props: Vec<String> = props.iter().map(|(k, v)| format!("{k}={v}")).collect();
    line("Properties:", format!("{{{}}}", props.join(", ")));
    line("Body Size:", message.body.len().to_string());
    let compressed = message.sys_flag & ferrocket_protocol::record::sys_flag::COMPRESSED != 0;
    let body = if compressed {
        "(compressed)".to_string()
    } else {
        String::from_utf8_lossy(&message.body).into_owned()
    };
    line("Message Body:", body);
    out
}
