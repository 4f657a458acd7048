use super::*;

#[test]
fn slave_messages_have_javas_layout() {
    let hello = SlaveMessage::Handshake(SlaveHandshake {
        sync_from_last_file: true,
        async_learner: false,
        broker_id: 2,
    });
    let bytes = hello.encode();
    assert_eq!(bytes, [0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    let report = SlaveMessage::Report { max_offset: 0x0102 };
    let mut stream = bytes.clone();
    stream.extend_from_slice(&report.encode());
    assert_eq!(&stream[16..], [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 2]);

    assert_eq!(SlaveMessage::decode(&stream), Ok(Some((hello, 16))));
    assert_eq!(SlaveMessage::decode(&stream[16..]), Ok(Some((report, 12))));
    // Incomplete messages wait for more bytes.
    for cut in [0, 3, 4, 15] {
        assert_eq!(SlaveMessage::decode(&stream[..cut]), Ok(None));
    }
    assert_eq!(SlaveMessage::decode(&stream[16..27]), Ok(None));
}

#[test]
fn slave_messages_in_other_states_are_refused() {
    assert_eq!(
        SlaveMessage::decode(&[0, 0, 0, 9, 0, 0]),
        Err(AutoSwitchError::UnknownState(9))
    );
    assert!(matches!(
        SlaveMessage::decode(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        Err(AutoSwitchError::UnexpectedState {
            state: HaState::Ready,
            ..
        })
    ));
    let mut negative = vec![0, 0, 0, 2];
    negative.extend_from_slice(&(-1i64).to_be_bytes());
    assert_eq!(
        SlaveMessage::decode(&negative),
        Err(AutoSwitchError::NegativeOffset(-1))
    );
}

#[test]
fn master_handshake_carries_every_epoch() {
    let epochs = vec![
        EpochEntry::new(6, 200),
        EpochEntry::new(7, 1200),
        EpochEntry::new(8, 2500),
    ];
    let hello = MasterMessage::Handshake {
        max_offset: 3000,
        last_epoch: 8,
        epochs,
    };
    let bytes = hello.encode();
    assert_eq!(bytes.len(), 20 + 3 * 12);
    assert_eq!(&bytes[..8], [0, 0, 0, 1, 0, 0, 0, 36]);
    assert_eq!(&bytes[16..20], 8i32.to_be_bytes());
    assert_eq!(&bytes[20..32], [0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 200]);
    assert_eq!(MasterMessage::decode(&bytes), Ok(Some((hello, 56))));
    assert_eq!(MasterMessage::decode(&bytes[..55]), Ok(None));
    assert_eq!(MasterMessage::decode(&bytes[..19]), Ok(None));
}

#[test]
fn master_handshake_refuses_bad_bodies() {
    let mut ragged = MasterMessage::Handshake {
        max_offset: 0,
        last_epoch: 1,
        epochs: vec![EpochEntry::new(1, 0)],
    }
    .encode();
    ragged[7] = 13;
    assert_eq!(
        MasterMessage::decode(&ragged),
        Err(AutoSwitchError::BadEpochBody(13))
    );
    let mut unordered = MasterMessage::Handshake {
        max_offset: 0,
        last_epoch: 2,
        epochs: vec![EpochEntry::new(1, 100), EpochEntry::new(2, 200)],
    }
    .encode();
    unordered[43] = 50; // the second entry now starts at 50
    assert_eq!(
        MasterMessage::decode(&unordered),
        Err(AutoSwitchError::EpochsOutOfOrder(
            EpochEntry::new(1, 100),
            EpochEntry::new(2, 50)
        ))
    );
}

#[test]
fn transfer_header_has_javas_layout() {
    let head = TransferHeader {
        offset: 4096,
        epoch: EpochEntry::new(8, 2500),
        confirm_offset: 4000,
        body_bytes: 512,
    };
    let bytes = MasterMessage::Transfer(head).encode();
    assert_eq!(bytes.len(), 36);
    assert_eq!(&bytes[..8], [0, 0, 0, 2, 0, 0, 2, 0]);
    assert_eq!(&bytes[8..16], 4096i64.to_be_bytes());
    assert_eq!(&bytes[16..20], 8i32.to_be_bytes());
    assert_eq!(&bytes[20..28], 2500i64.to_be_bytes());
    assert_eq!(&bytes[28..36], 4000i64.to_be_bytes());
    assert_eq!(
        MasterMessage::decode(&bytes),
        Ok(Some((MasterMessage::Transfer(head), 36)))
    );
    assert_eq!(MasterMessage::decode(&bytes[..30]), Ok(None));
    let mut huge = bytes.clone();
    huge[4] = 0x7f;
    assert!(matches!(
        MasterMessage::decode(&huge),
        Err(AutoSwitchError::BadTransferSize(_))
    ));
    let mut suspended = bytes;
    suspended[3] = 3;
    assert!(matches!(
        MasterMessage::decode(&suspended),
        Err(AutoSwitchError::UnexpectedState {
            state: HaState::Suspend,
            ..
        })
    ));
}
