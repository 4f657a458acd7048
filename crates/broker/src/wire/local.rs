//! The shards' side of the in-process door (`proxyMode=local`, handle in
//! [`crate::local_port`]): each shard serves one in-process [`Connection`],
//! answering the calls of its door as it answers a socket's requests
//! (without the ACL check: the endpoint checked its callers). What the
//! broker sends on that connection (transaction checks for the producers
//! whose heartbeats came in on it) goes to the front end's sink.

use std::net::SocketAddr;
use std::rc::Rc;

use ferrocket_protocol::frame::{FLAG_ONEWAY, FLAG_RESPONSE};
use ferrocket_runtime::server::{Connection, RequestHandler};
use futures_lite::StreamExt;

use crate::local_port::{DoorInbox, LocalCall, LocalPort, OpenCalls};
use crate::shard::Shard;

/// Opens this shard's door when the broker has a local port, and serves it
/// until the shard stops.
pub(crate) fn start(shard: &Rc<Shard>) {
    let Some(port) = shard.env().handles.local_port.clone() else {
        return;
    };
    let inbox = port.open_door(shard.index(), shard.count(), &shard.env().broker_addr);
    let listen: SocketAddr = shard.env().listen;
    let conn = Connection::in_process(shard.index() as u16, listen, listen);
    // Registered as an accepted connection is: transaction checks for the
    // producers whose heartbeats came in on it find it by id.
    RequestHandler::on_open(&**shard, &conn);
    shard.tasks().spawn(
        "in-process calls",
        serve_calls(shard.clone(), conn.clone(), inbox, port.clone()),
    );
    shard
        .tasks()
        .spawn("in-process requests out", forward_sent(conn, port));
}

async fn serve_calls(shard: Rc<Shard>, conn: Rc<Connection>, inbox: DoorInbox, port: LocalPort) {
    let DoorInbox { mut calls, open } = inbox;
    let serving = async {
        while let Some(call) = calls.next().await {
            let answering = answer(shard.clone(), conn.clone(), call, open.clone());
            glommio::spawn_local(answering).detach();
        }
    };
    shard.stopping().interrupts(serving).await;
    port.detach(shard.index());
    conn.close();
    RequestHandler::on_close(&*shard, &conn);
}

async fn answer(shard: Rc<Shard>, conn: Rc<Connection>, call: LocalCall, open: OpenCalls) {
    let LocalCall { request, reply } = call;
    let opaque = request.opaque;
    let mut response = super::answer(&shard, &conn, &request, super::Caller::InProcess).await;
    open.answered();
    shard.metrics().count_in_process();
    response.opaque = opaque;
    response.flag = (response.flag | FLAG_RESPONSE) & !FLAG_ONEWAY;
    // The front end gave up waiting (timeout): nobody reads it.
    let _ = reply.send(response);
}

/// Requests the broker sends on the in-process connection, to the front end.
async fn forward_sent(conn: Rc<Connection>, port: LocalPort) {
    loop {
        let sent = conn.next_sent().await;
        if sent.is_empty() {
            return;
        }
        for command in sent {
            port.to_front_end(command);
        }
    }
}
