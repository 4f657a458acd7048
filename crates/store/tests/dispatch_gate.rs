//! The dispatch gate (controller mode's confirm offset): records past it
//! are written and acknowledged but reach no ConsumeQueue, and the
//! checkpoint does not claim them, until the gate moves past them; they
//! then arrive in order, through the dispatch listener.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use ferrocket_store::AppendStatus;

const TOPIC: &str = "GateTopic";

#[test]
fn records_past_the_gate_wait_for_it_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (seen, outcome, _) = run_store_in_shard(small_config(dir.path()), |shard| async move {
        let heard = Rc::new(RefCell::new(Vec::new()));
        let log = Rc::clone(&heard);
        shard.set_dispatch_listener(move |entry| log.borrow_mut().push(entry.queue_offset));
        shard.set_dispatch_gate(0);
        let mut ends = Vec::new();
        for n in 0..3 {
            let body = body_for(0, 0, n);
            let result = shard.append(request(TOPIC, 0, &body, "t")).await.unwrap();
            assert_eq!(result.status, AppendStatus::Ok);
            ends.push(result.physical_offset + i64::from(result.total_bytes));
        }
        let queue = shard.consume_queue(TOPIC, 0).unwrap();
        // The appends' dispatches came with their answers: all held.
        assert_eq!(queue.max_offset(), 0, "nothing passes a closed gate");
        assert_eq!(shard.dispatched_offset(), 0, "the checkpoint claims none");
        shard.set_dispatch_gate(ends[0]);
        assert_eq!(queue.max_offset(), 1, "the first record is confirmed");
        shard.set_dispatch_gate(ends[1] - 1);
        assert_eq!(
            queue.max_offset(),
            1,
            "the second is not whole below the gate"
        );
        shard.set_dispatch_gate(i64::MAX);
        assert_eq!(queue.max_offset(), 3);
        assert_eq!(shard.dispatched_offset(), ends[2]);
        // A gate moved back holds new records; what is dispatched stays.
        shard.set_dispatch_gate(ends[1]);
        let body = body_for(0, 0, 3);
        shard.append(request(TOPIC, 0, &body, "t")).await.unwrap();
        assert_eq!(queue.max_offset(), 3);
        shard.set_dispatch_gate(i64::MAX);
        wait_for_entries(&shard, TOPIC, 0, 4).await;
        assert_eq!(read_queue(&shard, TOPIC, 0).len(), 4);
        let seen = heard.borrow().clone();
        seen
    });
    outcome.unwrap();
    assert_eq!(
        seen,
        vec![0, 1, 2, 3],
        "the listener hears each once, in order"
    );
}
