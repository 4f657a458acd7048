//! Names become paths in one place: an append whose topic is not a legal
//! topic name, or whose queue id is negative, is refused before anything is
//! written, and no file appears outside the store.

mod common;

use common::*;
use ferrocket_store::StoreError;

#[test]
fn appends_with_illegal_names_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let config = small_config(&root);
    let (outputs, outcome, handle) = run_store(config, None, 1, |shard| async move {
        let long = "x".repeat(300);
        let mut refused = Vec::new();
        for (topic, queue_id) in [
            ("../../escaped", 0),
            ("/abs", 0),
            ("a/b", 0),
            ("nul\0", 0),
            (long.as_str(), 0),
            ("Legal", -1),
        ] {
            let result = shard.append(request(topic, queue_id, b"x", "t")).await;
            refused.push(matches!(result, Err(StoreError::InvalidRecord(_))));
        }
        let legal = shard.append(request("Legal", 0, b"ok", "t")).await;
        (refused, legal.map(|r| r.queue_offset))
    });
    outcome.unwrap();
    let (refused, legal) = outputs.into_iter().next().unwrap();
    assert!(refused.iter().all(|r| *r), "{refused:?}");
    assert_eq!(legal, Ok(0));
    assert!(!dir.path().join("escaped").exists());
    assert!(!root.join("escaped").exists());
    let queues: Vec<_> = std::fs::read_dir(root.join("consumequeue"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(queues, vec![std::ffi::OsString::from("Legal")]);
    // Only the legal record reached the CommitLog.
    assert!(handle.written_offset() > 0 && handle.written_offset() < 300);
}
