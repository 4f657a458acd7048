//! A broker stopped and started again in the same process (as controller
//! mode does on a role change) while a client keeps connecting: every
//! request is answered or its connection closed, none is left hanging (an
//! accept in flight at stop used to hand its socket to nobody).

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{config, Broker};
use ferrocket_protocol::codes::request_code;
use ferrocket_protocol::RemotingCommand;
use ferrocket_testkit::remoting::RemotingConn;

#[test]
fn no_request_hangs_across_an_in_process_restart() {
    let dir = tempfile::tempdir().unwrap();
    // Two shards: two listeners share the port (SO_REUSEPORT).
    let config = config(dir.path(), 2);
    let addr = std::net::SocketAddr::new(config.listen_addr, config.listen_port);
    let stop = Arc::new(AtomicBool::new(false));
    let hangs = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let client = {
        let (stop, hangs, answered) = (stop.clone(), hangs.clone(), answered.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                let Ok(conn) = RemotingConn::connect(addr) else {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                };
                let mut conn = conn.with_answer_timeout(Duration::from_secs(2));
                let started = Instant::now();
                let request = RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO);
                match conn.try_request(request) {
                    Some(_) => answered.fetch_add(1, Ordering::Relaxed),
                    None if started.elapsed() >= Duration::from_secs(2) => {
                        eprintln!("a request hung: sent {:?} into the run", started - t0);
                        hangs.fetch_add(1, Ordering::Relaxed)
                    }
                    None => 0,
                };
            }
        })
    };
    for _ in 0..8 {
        let broker = Broker::start(config.clone());
        std::thread::sleep(Duration::from_millis(300));
        broker.stop();
    }
    stop.store(true, Ordering::Release);
    client.join().unwrap();
    assert!(answered.load(Ordering::Relaxed) > 0);
    assert_eq!(hangs.load(Ordering::Relaxed), 0, "requests left hanging");
}
