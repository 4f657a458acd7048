use super::*;

fn sync<'a>(client: &'a str, action: LiteSubscriptionAction, lite: &'a [String]) -> Sync<'a> {
    Sync {
        client,
        group: "G",
        topic: "P",
        action,
        lite_topics: lite,
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn adds_removes_and_replaces_a_clients_lite_topics() {
    let subs = LiteSubscriptions::default();
    subs.sync(&sync(
        "c1",
        LiteSubscriptionAction::PartialAdd,
        &names(&["a", "b"]),
    ))
    .unwrap();
    subs.sync(&sync(
        "c1",
        LiteSubscriptionAction::PartialAdd,
        &names(&["c"]),
    ))
    .unwrap();
    subs.sync(&sync(
        "c1",
        LiteSubscriptionAction::PartialRemove,
        &names(&["b"]),
    ))
    .unwrap();
    assert_eq!(subs.round("c1", "G", "P", 10), names(&["a", "c"]));
    assert!(subs.round("c1", "G", "Other", 10).is_empty(), "bound to P");
    assert!(subs.round("c2", "G", "P", 10).is_empty(), "per client");
    subs.sync(&sync(
        "c1",
        LiteSubscriptionAction::CompleteAdd,
        &names(&["x"]),
    ))
    .unwrap();
    assert_eq!(subs.round("c1", "G", "P", 10), names(&["x"]));
    assert_eq!(subs.total(), 1);
    subs.sync(&sync("c1", LiteSubscriptionAction::CompleteRemove, &[]))
        .unwrap();
    assert_eq!(subs.total(), 0);
}

#[test]
fn rounds_take_turns_over_the_lite_topics() {
    let subs = LiteSubscriptions::default();
    let all = names(&["a", "b", "c"]);
    subs.sync(&sync("c", LiteSubscriptionAction::CompleteAdd, &all))
        .unwrap();
    assert_eq!(subs.round("c", "G", "P", 2), names(&["a", "b"]));
    assert_eq!(subs.round("c", "G", "P", 2), names(&["c", "a"]));
    assert_eq!(subs.round("c", "G", "P", 2), names(&["b", "c"]));
}

#[test]
fn the_quota_and_the_names_are_javas() {
    let subs = LiteSubscriptions::default();
    let many: Vec<String> = (0..=LITE_SUBSCRIPTION_QUOTA)
        .map(|i| format!("l{i}"))
        .collect();
    let refused = subs
        .sync(&sync("c", LiteSubscriptionAction::CompleteAdd, &many))
        .unwrap_err();
    assert_eq!(refused.code, Code::LiteSubscriptionQuotaExceeded as i32);
    subs.sync(&sync("c", LiteSubscriptionAction::CompleteAdd, &many[1..]))
        .unwrap();
    let one_more = subs
        .sync(&sync("c", LiteSubscriptionAction::PartialAdd, &many[..1]))
        .unwrap_err();
    assert_eq!(one_more.code, Code::LiteSubscriptionQuotaExceeded as i32);
    let bad = subs
        .sync(&sync(
            "c",
            LiteSubscriptionAction::PartialAdd,
            &names(&["a b"]),
        ))
        .unwrap_err();
    assert_eq!(bad.code, Code::IllegalLiteTopic as i32);
    subs.forget_client("c");
    assert_eq!(subs.total(), 0);
}

#[test]
fn a_lite_topics_messages_are_acked_as_its_lite_group() {
    assert_eq!(entry_group("G", "P", Some("chat-1")), "G%LITE%chat-1");
    assert_eq!(entry_group("G", "P", Some("")), "G");
    assert_eq!(entry_group("G", "P", None), "G");
}

#[test]
fn long_names_get_a_hashed_lite_group_whose_retry_topic_fits() {
    let group = "g".repeat(60);
    let topic = "t".repeat(81);
    let lite = "l".repeat(64);
    let hashed = lite_group(&group, &topic, &lite);
    assert!(
        hashed.starts_with("%LITE%") && hashed.len() == 38,
        "{hashed}"
    );
    let retry = format!("%RETRY%{hashed}_{topic}");
    assert_eq!(retry.len(), 127, "the longest parent topic just fits");
    assert_eq!(hashed, lite_group(&group, &topic, &lite), "stable");
    assert_ne!(hashed, lite_group(&group, &topic, "other"));
    assert_ne!(hashed, lite_group("other", &topic, &lite));
    let subs = LiteSubscriptions::default();
    let longer = "t".repeat(82);
    let refused = subs
        .sync(&Sync {
            client: "c",
            group: "G",
            topic: &longer,
            action: LiteSubscriptionAction::PartialAdd,
            lite_topics: &names(&["a"]),
        })
        .unwrap_err();
    assert_eq!(refused.code, Code::IllegalTopic as i32);
}

#[tokio::test]
async fn a_lite_send_wakes_the_waiting_receives() {
    let subs = LiteSubscriptions::default();
    let woken = subs.woken();
    tokio::pin!(woken);
    woken.as_mut().enable();
    let early = tokio::time::timeout(std::time::Duration::from_millis(20), woken.as_mut()).await;
    assert!(early.is_err(), "nothing sent yet");
    subs.wake();
    let waited = tokio::time::timeout(std::time::Duration::from_secs(5), woken).await;
    assert!(waited.is_ok(), "woken by the send");
}
