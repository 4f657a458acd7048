use super::*;

#[test]
fn cpu_lists_parse_ranges_and_singles() {
    assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
    assert_eq!(parse_cpu_list(""), Vec::<usize>::new());
    assert_eq!(parse_cpu_list("5"), vec![5]);
    assert_eq!(parse_cpu_list("x,2,3-y"), vec![2]);
    assert_eq!(comma_list(&[1, 2, 3]), "1,2,3");
}

#[test]
fn layout_keeps_a_core_for_the_appender_when_there_are_enough() {
    assert!(suggest_layout(&[0, 1, 2, 3]).starts_with("appenderCore=0 shardCores=1,2,3 "));
    assert!(suggest_layout(&[0, 1, 2]).starts_with("shardCores=1,2 "));
    assert!(suggest_layout(&[0, 1]).starts_with("shardCount=1 shardCores=0 "));
    assert!(suggest_layout(&[7]).starts_with("shardCores=7 "));
    assert!(suggest_layout(&[]).starts_with("shardCount=0"));
}

#[test]
fn sysfs_choices_and_dev_numbers() {
    assert_eq!(bracketed("always [madvise] never"), Some("madvise"));
    assert_eq!(bracketed("[none] mq-deadline kyber"), Some("none"));
    assert_eq!(bracketed("none"), None);
    // makedev(259, 3) and makedev(8, 17) as glibc encodes them.
    assert_eq!(dev_major_minor((259 << 8) | 3), (259, 3));
    assert_eq!(dev_major_minor((8 << 8) | 17), (8, 17));
    let big = 0x45 | (0x012 << 8) | (0x300 << 12) | (0x1000u64 << 32);
    assert_eq!(dev_major_minor(big), (0x1012, 0x345));
}

#[test]
fn mountinfo_picks_the_longest_mount_point() {
    let info = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                30 22 259:2 / /data rw shared:2 - xfs /dev/nvme0n1p2 rw\n\
                31 22 0:40 / /data/tmp rw - tmpfs tmpfs rw\n";
    assert_eq!(
        mount_of(info, Path::new("/data/ferrocket")),
        Some(("/dev/nvme0n1p2".into(), "xfs".into()))
    );
    assert_eq!(
        mount_of(info, Path::new("/home/x")),
        Some(("/dev/sda1".into(), "ext4".into()))
    );
    assert_eq!(mount_of(info, Path::new("/data/tmp/a")).unwrap().1, "tmpfs");
}

#[test]
fn filesystem_magics_and_io_uring_settings_have_names() {
    assert_eq!(fs_type_name(0xEF53), "ext4");
    assert_eq!(fs_type_name(0x5846_5342), "xfs");
    assert_eq!(fs_type_name(0x0102_1994), "tmpfs");
    assert_eq!(fs_type_name(1), "other");
    assert_eq!(io_uring_disabled_meaning(0), "enabled for all");
    assert_eq!(io_uring_disabled_meaning(2), "disabled for all");
}

#[test]
fn every_check_reports_something_on_this_host() {
    let args = CheckArgs {
        data_dir: PathBuf::from("/nonexistent/ferrocket/data"),
        shards: Some(2),
        config: None,
        json: false,
    };
    let findings = check_all(&args);
    assert_eq!(findings.len(), 11);
    assert!(findings.iter().all(|f| !f.observed.is_empty()));
    assert_eq!(
        existing_ancestor(Path::new("/nonexistent/ferrocket/data")),
        PathBuf::from("/")
    );
}

#[test]
fn a_broker_config_without_namesrv_addr_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let lonely = dir.path().join("lonely.conf");
    std::fs::write(&lonely, "brokerName=b\nshardCount=3\n").unwrap();
    let found = dir.path().join("found.conf");
    std::fs::write(&found, "namesrvAddr=10.0.0.1:9876\n").unwrap();
    let check = |path: &Path| {
        let args = CheckArgs {
            data_dir: dir.path().to_path_buf(),
            shards: None,
            config: Some(path.to_path_buf()),
            json: false,
        };
        let findings = check_all(&args);
        findings
            .into_iter()
            .find(|f| f.item == "broker config")
            .unwrap()
    };
    let warned = check(&lonely);
    assert_eq!(warned.level, Level::Warn);
    assert!(
        warned.observed.contains("namesrvAddr is not set"),
        "{warned:?}"
    );
    assert_eq!(check(&found).level, Level::Ok);
    assert_eq!(check(&dir.path().join("missing.conf")).level, Level::Warn);
}
