//! GET_BROKER_CONFIG (26) and UPDATE_BROKER_CONFIG (25)
//! (`AdminBrokerProcessor`): the settings in force as Java's properties
//! text, and online changes to the keys the broker reads at each use.

use std::rc::Rc;

use ferrocket_protocol::body::{parse_properties, properties_text};
use ferrocket_protocol::codes::response_code;
use ferrocket_protocol::RemotingCommand;

use crate::error::Reject;
use crate::shard::settings::UpdateSettings;
use crate::shard::Shard;

/// Largest UPDATE_BROKER_CONFIG body read.
const UPDATE_BODY_BYTES_MAX: usize = 64 * 1024;

/// GET_BROKER_CONFIG: every key's value in force, sorted, one `key=value`
/// line each (Java's `MixAll.properties2String`), and the settings' data
/// version in the `version` header.
pub(crate) fn get_broker_config(shard: &Shard, request: &RemotingCommand) -> RemotingCommand {
    if shard.env().handles.online_keys.is_none() {
        return RemotingCommand::not_supported(request);
    }
    let config = shard.config();
    let mut pairs = crate::config::keys::render(&config);
    pairs.sort();
    let body = properties_text(&pairs);
    let (counter, timestamp) = shard.config_version();
    let version = format!(r#"{{"counter":{counter},"stateVersion":0,"timestamp":{timestamp}}}"#);
    let mut response = RemotingCommand::response_to(request, response_code::SUCCESS, None);
    response.ext_fields.insert("version", version);
    response.with_body(body.into_bytes())
}

/// UPDATE_BROKER_CONFIG: the body's `key=value` lines applied together on
/// shard 0, or none of them (see `config::apply_online`). An empty body
/// changes nothing, as in Java.
pub(crate) async fn update_broker_config(
    shard: &Rc<Shard>,
    request: &RemotingCommand,
) -> Result<RemotingCommand, Reject> {
    if shard.env().handles.online_keys.is_none() {
        return Ok(RemotingCommand::not_supported(request));
    }
    if request.body.len() > UPDATE_BODY_BYTES_MAX {
        return Err(Reject::new(
            response_code::INVALID_PARAMETER,
            format!("the config body is over {UPDATE_BODY_BYTES_MAX} bytes"),
        ));
    }
    let text = String::from_utf8_lossy(&request.body);
    let pairs = parse_properties(&text);
    if pairs.is_empty() {
        return Ok(RemotingCommand::response_to(
            request,
            response_code::SUCCESS,
            None,
        ));
    }
    match shard.call(0, UpdateSettings(pairs)).await? {
        Ok(()) => Ok(RemotingCommand::response_to(
            request,
            response_code::SUCCESS,
            None,
        )),
        Err(refusal) => Err(Reject::new(refusal.code, refusal.remark)),
    }
}
