//! Handing the set back without delivering twice. Java's returning master
//! resumes its delay levels and timers from its own checkpoints, so what
//! its acting slave delivered in the meantime is delivered again. Here the
//! master, before its delay levels and timers deliver anything, asks each
//! slave of its set (GET_BROKER_MEMBER_GROUP) for the services back
//! ([`HAND_BACK`], Ferrocket's own request): the slave stops acting (and
//! holds off for [`HAND_BACK_HOLD_MS`], whatever a name server that has not
//! seen the master yet says), waits for the delivery under way, and
//! answers its delay levels' progress, the timer messages it sent to
//! another set and the open half messages it sent there (which the master
//! then ends as rolled back). A slave that cannot be reached leaves Java's behaviour: the
//! master delivers those again.

use std::rc::Rc;
use std::time::Duration;

use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_runtime::shard::ShardCall;

use crate::clock::now_ms;
use crate::error::Reject;
use crate::services::acting_master::{HandBack, HAND_BACK_HOLD_MS};
use crate::shard::Shard;

pub(crate) use ferrocket_protocol::codes::request_code::HAND_BACK;

/// Longest a slave waits for its delivery under way.
const IN_FLIGHT_WAIT_MS: u64 = 3_000;
/// Longest the master waits for one slave's answer: well above the
/// slave's wait, since the slave hands its ledger over as it answers (an
/// answer the master gave up on is lost, and what it names is delivered
/// again).
const HAND_BACK_TIMEOUT_MS: u64 = 15_000;
const _: () = assert!(HAND_BACK_TIMEOUT_MS >= 3 * IN_FLIGHT_WAIT_MS);

/// On a slave: [`HAND_BACK`].
pub(crate) async fn answer(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    let acting = &shard.env().acting;
    if !acting.enabled() {
        // Never acted (a master, or a slave without the flag).
        let body =
            serde_json::to_vec(&HandBack::default()).map_err(|e| Reject::system(e.to_string()))?;
        return Ok(
            RemotingCommand::response_to(request, response_code::SUCCESS, None).with_body(body),
        );
    }
    let master = request.ext_fields.get("brokerAddr").map(str::to_owned);
    if acting.hand_back(master.as_deref(), now_ms(), HAND_BACK_HOLD_MS) {
        tracing::warn!(master = ?master, "the returning master takes the master's services back");
    }
    crate::tasks::acting_master::register_soon(shard).await;
    let mut waited = 0;
    while acting.in_flight() > 0 && waited < IN_FLIGHT_WAIT_MS {
        glommio::timer::sleep(Duration::from_millis(5)).await;
        waited += 5;
    }
    let (delay_offsets, _) = shard.delay_progress(false).await.unwrap_or_default();
    let timer_shard = crate::services::topics::timer_shard(shard.count());
    let timer_delivered = shard.call(timer_shard, TakeTimerLedger).await?;
    let txn_shard = crate::services::topics::txn_shard(shard.count());
    let half_escaped = shard.call(txn_shard, TakeEscapedHalves).await?;
    tracing::info!(
        timers = timer_delivered.len(),
        half_messages = half_escaped.len(),
        "handing back what this slave delivered while acting"
    );
    let handed = HandBack {
        delay_offsets,
        timer_delivered,
        half_escaped,
    };
    let body = serde_json::to_vec(&handed).map_err(|e| Reject::system(e.to_string()))?;
    Ok(RemotingCommand::response_to(request, response_code::SUCCESS, None).with_body(body))
}

/// To the timer shard: the timer offsets delivered while acting (taken).
struct TakeTimerLedger;

impl ShardCall<Shard> for TakeTimerLedger {
    type Reply = Vec<i64>;

    async fn run(self, shard: Rc<Shard>) -> Vec<i64> {
        shard
            .services()
            .timer
            .get()
            .map(|timer| timer.take_acting_ledger())
            .unwrap_or_default()
    }
}

/// To the transaction shard: the half messages sent elsewhere while
/// acting (taken).
struct TakeEscapedHalves;

impl ShardCall<Shard> for TakeEscapedHalves {
    type Reply = Vec<i64>;

    async fn run(self, shard: Rc<Shard>) -> Vec<i64> {
        shard
            .services()
            .txn
            .get()
            .map(|txn| txn.take_escaped())
            .unwrap_or_default()
    }
}

/// On a master's shard 0 with `enableSlaveActingMaster`, once at start:
/// asks every slave of the set what it delivered, then lets the delay
/// levels and timers start.
pub(crate) async fn reclaim(shard: Rc<Shard>) {
    let mut handed = HandBack::default();
    let own = shard.config().broker_id;
    let members = crate::tasks::acting_master::member_group(&shard).await;
    for (id, addr) in members.unwrap_or_default() {
        if id == own {
            continue;
        }
        match ask(&shard, &addr).await {
            Ok(theirs) => {
                tracing::info!(slave = %addr, timers = theirs.timer_delivered.len(),
                    "took the services back from a slave");
                handed.merge(theirs);
            }
            Err(reject) => tracing::warn!(slave = %addr, remark = %reject.remark,
                "could not ask a slave what it delivered while acting; what it did may be delivered again"),
        }
    }
    shard.env().acting.finish_hand_back(handed);
}

async fn ask(shard: &Shard, addr: &str) -> Result<HandBack, Reject> {
    let control = shard.control()?;
    let target = crate::config::parse_host_port(addr, "slave address")
        .map_err(|e| Reject::system(e.to_string()))?;
    let request =
        RemotingCommand::request(HAND_BACK).with_ext("brokerAddr", &shard.env().broker_addr);
    let answer = (control
        .namesrv
        .call(target, request, HAND_BACK_TIMEOUT_MS)
        .await)
        .map_err(|e| Reject::new(response_code::SERVICE_NOT_AVAILABLE, e.to_string()))?;
    if answer.code != response_code::SUCCESS {
        return Err(Reject::new(answer.code, answer.remark.unwrap_or_default()));
    }
    serde_json::from_slice(&answer.body).map_err(|e| Reject::system(format!("undecodable: {e}")))
}
