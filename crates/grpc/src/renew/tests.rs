use super::*;

fn delivered(handle: &str, visible_at_ms: i64) -> Delivered {
    Delivered {
        group: "G".into(),
        topic: "T".into(),
        message_id: format!("id-{handle}"),
        handle: handle.into(),
        reconsumed: 0,
        visible_at_ms,
    }
}

fn limited(per_client_max: usize, total_max: usize) -> Renewals {
    Renewals::new(RenewSettings {
        per_client_max,
        total_max,
        ahead_ms: 1_000,
        ..RenewSettings::default()
    })
}

#[tokio::test]
async fn handles_are_bounded_per_client_and_in_all() {
    let renewals = limited(2, 3);
    assert!(renewals.track("a", delivered("h1", 0)));
    assert!(renewals.track("a", delivered("h2", 0)));
    assert!(!renewals.track("a", delivered("h3", 0)), "a's limit");
    assert!(renewals.track("b", delivered("h4", 0)));
    assert!(!renewals.track("c", delivered("h5", 0)), "the total limit");
    assert_eq!(renewals.len(), 3);
    assert_eq!(renewals.take("a", "h1").await.as_deref(), Some("h1"));
    assert!(renewals.track("c", delivered("h5", 0)), "room again");
    assert_eq!(renewals.take("a", "h1").await, None, "taken once");
    assert_eq!(renewals.take("b", "h2").await, None, "another client's");
}

#[tokio::test]
async fn due_handles_are_those_near_visible_and_an_ack_gets_the_newest() {
    let renewals = limited(10, 10);
    let now = now_ms();
    assert!(renewals.track("a", delivered("soon", now + 500)));
    assert!(renewals.track("a", delivered("later", now + 60_000)));
    let due = renewals.due(now);
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].original, "soon");
    // A renewal stores the broker's new handle and the new visible time.
    *due[0].tracked.current.lock().await = Some("soon-2".into());
    renewals.renewed(&due[0], now + 60_000, false);
    assert!(renewals.due(now).is_empty());
    assert_eq!(renewals.take("a", "soon").await.as_deref(), Some("soon-2"));
    assert_eq!(renewals.len(), 1);
}

#[tokio::test]
async fn a_gone_clients_handles_are_all_taken_at_once() {
    let renewals = limited(10, 10);
    assert!(renewals.track("gone", delivered("g1", 0)));
    assert!(renewals.track("gone", delivered("g2", 0)));
    assert!(renewals.track("here", delivered("h1", 0)));
    let jobs = renewals.take_gone(|client| client == "here");
    assert_eq!(jobs.len(), 2);
    assert!(jobs.iter().all(|j| j.client == "gone"));
    assert_eq!(renewals.len(), 1);
    assert_eq!(renewals.take("gone", "g1").await, None);
}
