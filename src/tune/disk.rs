//! Disk and filesystem checks for the data directory.

use super::*;

pub(super) fn existing_ancestor(dir: &Path) -> PathBuf {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut current = absolute.as_path();
    loop {
        if current.exists() {
            return current.to_path_buf();
        }
        match current.parent() {
            Some(parent) => current = parent,
            None => return PathBuf::from("/"),
        }
    }
}

/// Splits a Linux `dev_t` into (major, minor).
pub fn dev_major_minor(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & 0xffff_f000);
    let minor = (dev & 0xff) | ((dev >> 12) & 0xffff_ff00);
    (major, minor)
}

/// The mount source and fs type of the mount holding `path`, from
/// `/proc/self/mountinfo` text (longest matching mount point wins).
pub fn mount_of(mountinfo: &str, path: &Path) -> Option<(String, String)> {
    let mut best: Option<(usize, String, String)> = None;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(mount_point), Some(fstype), Some(source)) =
            (fields.get(4), fields.get(dash + 1), fields.get(dash + 2))
        else {
            continue;
        };
        let mount_point = mount_point.replace("\\040", " ");
        if path.starts_with(&mount_point)
            && !matches!(&best, Some((len, _, _)) if mount_point.len() < *len)
        {
            best = Some((mount_point.len(), source.to_string(), fstype.to_string()));
        }
    }
    best.map(|(_, source, fstype)| (source, fstype))
}

fn block_queue(major: u64, minor: u64) -> Option<PathBuf> {
    let dev = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    let queue = if dev.join("partition").exists() {
        dev.parent()?.join("queue")
    } else {
        dev.join("queue")
    };
    queue.exists().then_some(queue)
}

pub(super) fn check_disk(dir: &Path, data_dir: &Path) -> Finding {
    let Ok(meta) = std::fs::metadata(dir) else {
        return finding(
            "disk",
            Level::Warn,
            format!("cannot stat {}", dir.display()),
            "",
        );
    };
    let (major, minor) = device_numbers(dir, &meta);
    let Some(queue) = block_queue(major, minor) else {
        return finding(
            "disk",
            Level::Info,
            format!(
                "{} is not on a block device ({major}:{minor})",
                data_dir.display()
            ),
            "put storePathRootDir on a local SSD/NVMe volume for real numbers",
        );
    };
    queue_finding(&queue)
}

/// The block device (major, minor) holding `dir`, whose metadata is `meta`.
fn device_numbers(dir: &Path, meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let (mut major, mut minor) = dev_major_minor(meta.dev());
    if major == 0 {
        // Anonymous device (btrfs, overlay, tmpfs): try the mount source.
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        if let Some((source, _)) = mount_of(&mountinfo, dir).filter(|(s, _)| s.starts_with("/dev/"))
        {
            if let Ok(src) = std::fs::metadata(&source) {
                (major, minor) = dev_major_minor(src.rdev());
            }
        }
    }
    (major, minor)
}

/// What the device's queue settings (scheduler, rotational) mean for the
/// store.
fn queue_finding(queue: &Path) -> Finding {
    let device = queue
        .parent()
        .and_then(|p| p.file_name())
        .map_or("?".into(), |n| n.to_string_lossy().into_owned());
    let scheduler_text = std::fs::read_to_string(queue.join("scheduler")).unwrap_or_default();
    let scheduler = bracketed(&scheduler_text)
        .unwrap_or(scheduler_text.trim())
        .to_string();
    let rotational = std::fs::read_to_string(queue.join("rotational"))
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    let observed = format!(
        "{device}: scheduler {scheduler}, {}",
        if rotational {
            "rotational (HDD)"
        } else {
            "non-rotational (SSD/NVMe)"
        }
    );
    let virtual_disk = device.starts_with("vd") || device.starts_with("xvd");
    if rotational && virtual_disk {
        return finding(
            "disk",
            Level::Info,
            observed,
            "a virtual disk: the rotational flag may not describe the backing storage; measure fdatasync latency (e.g. fio --fdatasync=1) before choosing SYNC_FLUSH",
        );
    }
    if rotational {
        return finding("disk", Level::Warn, observed, "an HDD: use mq-deadline, writeMode=buffered with ASYNC_FLUSH; SYNC_FLUSH will be seek-bound");
    }
    if scheduler != "none" && !scheduler.is_empty() {
        return finding(
            "disk",
            Level::Warn,
            observed,
            format!(
                "echo none > /sys/block/{device}/queue/scheduler (flash needs no I/O scheduler)"
            ),
        );
    }
    finding("disk", Level::Ok, observed, "")
}

/// The name of a statfs `f_type`.
pub fn fs_type_name(magic: i64) -> &'static str {
    match magic {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x794C_7630 => "overlayfs",
        0x6969 => "nfs",
        0x2FC1_2FC1 => "zfs",
        0xF2F5_2010 => "f2fs",
        0x6573_5546 => "fuse",
        0x0102_1997 => "9p",
        _ => "other",
    }
}

pub(super) fn check_filesystem(dir: &Path) -> Finding {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return finding(
            "filesystem",
            Level::Warn,
            "path holds a NUL byte".into(),
            "",
        );
    };
    // SAFETY: statfs only writes the zeroed struct we pass; the path is a valid C string.
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c_path.as_ptr(), &mut stat) } != 0 {
        return finding(
            "filesystem",
            Level::Warn,
            format!(
                "statfs {} failed: {}",
                dir.display(),
                std::io::Error::last_os_error()
            ),
            "",
        );
    }
    #[allow(clippy::unnecessary_cast)]
    let name = fs_type_name(stat.f_type as i64);
    let free_gib = (stat.f_bavail as u64).saturating_mul(stat.f_bsize as u64) >> 30;
    let observed = format!("{name} at {}, {free_gib} GiB free", dir.display());
    let (level, advice) = match name {
        "xfs" | "ext4" => (Level::Ok, ""),
        "tmpfs" => (Level::Warn, "tmpfs: nothing survives a reboot and O_DIRECT is unsupported: writeMode=buffered, benchmarks only"),
        "overlayfs" => (Level::Warn, "container overlay: mount a volume (xfs/ext4) for storePathRootDir"),
        "btrfs" | "zfs" => (Level::Warn, "copy-on-write filesystem: CommitLog appends fragment and fdatasync is slower; prefer xfs or ext4"),
        "nfs" | "fuse" | "9p" => (Level::Warn, "network/user-space filesystem: not suitable for the CommitLog; use a local disk"),
        _ => (Level::Info, "xfs or ext4 are the tested choices"),
    };
    finding("filesystem", level, observed, advice)
}
