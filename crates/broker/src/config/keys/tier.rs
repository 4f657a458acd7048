//! Tiered storage's keys, each declared once (see `keys`): RocketMQ's
//! tiered store names where it has them (`tieredStorageLevel`,
//! `tieredBackendServiceProvider`, `tieredStoreFilePath`, `objectStore*`),
//! Ferrocket's own for the local budget, the cache and S3's region.
//! Collected raw into the config's `TierKeys`, checked together
//! at start.

use super::*;

/// A number for `key`, as the tier's keys word a refusal.
fn number<T: std::str::FromStr>(key: &str, setting: &Setting) -> Result<T, String> {
    let text = setting.value.trim();
    text.parse().map_err(|_| {
        format!(
            "{}: {key}={text}: expected a non-negative number",
            setting.origin
        )
    })
}

fn level(setting: &Setting) -> Result<bool, String> {
    let text = setting.value.trim();
    match text.to_ascii_uppercase().as_str() {
        "DISABLE" | "0" => Ok(false),
        "NOT_IN_DISK" | "1" => Ok(true),
        _ => Err(format!(
            "{}: tieredStorageLevel={text}: expected DISABLE or NOT_IN_DISK (NOT_IN_MEM and FORCE are not supported)",
            setting.origin
        )),
    }
}

fn text(setting: &Setting) -> String {
    setting.value.trim().to_owned()
}

pub(super) static TIER: &[Decl<BrokerConfig>] = &[
    decl!(
        "tieredStorageLevel",
        "`DISABLE`",
        start,
        "`NOT_IN_DISK` (or 1) turns tiering on (`NOT_IN_MEM`, `FORCE` are refused)",
        |c, _, s| c.tier.enabled = level(s)?,
    ),
    decl!(
        "tieredBackendServiceProvider",
        "-",
        start,
        "`posix` (or Java's PosixFileSegment class): a directory; `s3`: S3 or a compatible server",
        |c, _, s| c.tier.provider = text(s),
    ),
    decl!(
        "tieredStoreFilePath",
        "-",
        start,
        "the directory (`posix`), or the key prefix inside the bucket (`s3`)",
        |c, _, s| c.tier.file_path = text(s),
    ),
    decl!(
        "objectStoreEndpoint",
        "AWS",
        start,
        "the S3 endpoint, e.g. http://127.0.0.1:8014 for an S3-compatible server",
        |c, _, s| c.tier.endpoint = text(s),
    ),
    decl!(
        "objectStoreBucket",
        "-",
        start,
        "the bucket (`s3`); it must exist",
        |c, _, s| c.tier.bucket = text(s),
    ),
    decl!(
        "objectStoreRegion",
        "`us-east-1`",
        start,
        "the bucket's region (Ferrocket key)",
        |c, _, s| c.tier.region = text(s),
    ),
    decl!(
        "objectStoreAccessKey",
        "-",
        start,
        "the access key (`s3`)",
        |c, _, s| c.tier.access_key = text(s),
    ),
    decl!(
        "objectStoreSecretKey",
        "-",
        start,
        "the secret key (`s3`)",
        |c, _, s| c.tier.secret_key = text(s),
    ),
    decl!(
        "tieredStoreLocalMaxBytes",
        "0",
        start,
        "local CommitLog bytes kept; older offloaded segments beyond it are deleted locally",
        |c, k, s| c.tier.local_max_bytes = Some(number(k, s)?),
    ),
    decl!(
        "tieredStoreLocalReservedTimeMs",
        "0",
        start,
        "offloaded segments older than this are deleted locally; 0: no time budget",
        |c, k, s| c.tier.local_reserved_ms = Some(number(k, s)?),
    ),
    decl!(
        "tieredStoreFileReservedTime",
        "72",
        start,
        "hours an offloaded segment stays in object storage; 0: forever",
        |c, k, s| {
            let hours: u64 = number(k, s)?;
            c.tier.remote_reserved_ms = Some(hours.saturating_mul(3_600_000));
        },
    ),
    decl!(
        "tieredStoreFileReservedTimeMs",
        "-",
        start,
        "the same in ms (Ferrocket key; wins when set)",
        |c, k, s| c.tier.remote_reserved_ms = Some(number(k, s)?),
    ),
    decl!(
        "tieredStoreUploadIntervalMs",
        "10000",
        start,
        "ms between upload passes",
        |c, k, s| c.tier.upload_interval_ms = Some(number(k, s)?),
    ),
    decl!(
        "tieredStoreReadAheadBytes",
        "4194304",
        start,
        "bytes one remote read fetches",
        |c, k, s| c.tier.read_ahead_bytes = Some(number(k, s)?),
    ),
    decl!(
        "tieredStoreReadCacheBytes",
        "268435456",
        start,
        "bound of the read-through cache",
        |c, k, s| c.tier.read_cache_bytes = Some(number(k, s)?),
    ),
    decl!(
        "tieredStoreEpochBase",
        "0",
        start,
        "controller mode, after the controller's metadata was lost (epochs start again at 1): the epoch the set's published manifest carries, on every broker of the set; added to the epoch its tier publishes and fences by",
        |c, k, s| c.tier.epoch_base = Some(number(k, s)?),
    ),
];
