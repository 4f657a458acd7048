//! The uploader id: a random name made once per store directory and kept
//! in [`super::TIER_DIR`]. Every object this store uploads carries it
//! (`commitlog/{start:020}.{uploader}`), so two brokers of one replica set
//! that both upload a segment of the same start (a deposed master cut off
//! from the controller, and the new master) never write the same key: each
//! manifest entry names the bytes its CRC32 was taken of.

use std::hash::{BuildHasher, Hasher};
use std::path::Path;

use crate::error::{IoContext, StoreError};

/// The file holding the id, in the tier directory.
pub const UPLOADER_FILE: &str = "uploader";

/// Hex digits of an id (64 random bits).
const ID_LEN: usize = 16;

/// The store's uploader id: read from `dir`, or made and written durably
/// (a torn or foreign file is refused, not replaced: objects already
/// uploaded carry the id it held).
///
/// The id is bound to the directory: the file also names `dir`'s device
/// and inode, which a copy of the store directory cannot keep, so two
/// brokers started from copies of one store upload under ids of their
/// own (a copy draws a new one; objects uploaded before stay readable:
/// manifest entries name their keys). A file written before the binding
/// (the id alone) keeps its id and gains the line.
pub fn load_or_create(dir: &Path) -> Result<String, StoreError> {
    let path = dir.join(UPLOADER_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).io_context("create dir", dir)?;
            None
        }
        Err(e) => return Err(e).io_context("read", &path).map_err(StoreError::from),
    };
    let here = identity(dir)?;
    let id = match text.as_deref().map(parse).transpose() {
        Ok(Some((id, Some(bound)))) if bound == here => return Ok(id.to_string()),
        Ok(Some((id, None))) => id.to_string(),
        Ok(Some((_, Some(bound)))) => {
            let id = fresh();
            tracing::info!(%id, was = bound, now = %here, dir = %dir.display(),
                "tiered storage: the store directory is a copy (another device/inode): \
                 this store uploads under a new uploader id");
            id
        }
        Ok(None) => fresh(),
        Err(why) => {
            return Err(StoreError::Corrupt(format!("{}: {why}", path.display())));
        }
    };
    let body = format!("{id}\n{here}\n");
    crate::json_file::write_atomic(&path, body.as_bytes(), false)?;
    Ok(id)
}

/// The id, and the directory identity it is bound to when the file names
/// one.
fn parse(text: &str) -> Result<(&str, Option<&str>), String> {
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let id = lines.next().unwrap_or("");
    if !valid(id) {
        return Err(format!("not an uploader id ({ID_LEN} hex digits): {id:?}"));
    }
    let bound = lines.next();
    if let Some(extra) = lines.next() {
        return Err(format!(
            "unexpected line after the directory identity: {extra:?}"
        ));
    }
    Ok((id, bound))
}

/// `dir`'s device and inode, as `{dev}:{ino}`.
fn identity(dir: &Path) -> Result<String, StoreError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir)
        .io_context("stat", dir)
        .map_err(StoreError::from)?;
    Ok(format!("{}:{}", meta.dev(), meta.ino()))
}

/// Whether `id` is what [`load_or_create`] makes.
pub fn valid(id: &str) -> bool {
    id.len() == ID_LEN && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// 64 random bits: std's `RandomState` keys are drawn from the operating
/// system's random source (no extra dependency for one draw per store).
fn fresh() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(now);
    format!("{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let tier = dir.path().join("tier");
        let id = load_or_create(&tier).unwrap();
        assert!(valid(&id), "{id}");
        assert_eq!(load_or_create(&tier).unwrap(), id);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(load_or_create(other.path()).unwrap(), id);
        std::fs::write(tier.join(UPLOADER_FILE), "x/y").unwrap();
        assert!(load_or_create(&tier).is_err());
    }

    #[test]
    fn a_copied_directory_draws_a_new_id() {
        let dir = tempfile::tempdir().unwrap();
        let tier = dir.path().join("tier");
        let id = load_or_create(&tier).unwrap();
        let copy = dir.path().join("copy");
        std::fs::create_dir(&copy).unwrap();
        let file = std::fs::read_to_string(tier.join(UPLOADER_FILE)).unwrap();
        std::fs::write(copy.join(UPLOADER_FILE), &file).unwrap();
        let copied = load_or_create(&copy).unwrap();
        assert!(valid(&copied), "{copied}");
        assert_ne!(copied, id, "a copy uploads under an id of its own");
        assert_eq!(load_or_create(&copy).unwrap(), copied, "and keeps it");
        assert_eq!(
            load_or_create(&tier).unwrap(),
            id,
            "the original keeps its id"
        );
        // A moved directory is the same directory (rename keeps the inode).
        let moved = dir.path().join("moved");
        std::fs::rename(&tier, &moved).unwrap();
        assert_eq!(load_or_create(&moved).unwrap(), id);
    }

    #[test]
    fn a_file_without_the_directory_keeps_its_id() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(UPLOADER_FILE), "00112233445566aa\n").unwrap();
        assert_eq!(load_or_create(dir.path()).unwrap(), "00112233445566aa");
        let file = std::fs::read_to_string(dir.path().join(UPLOADER_FILE)).unwrap();
        assert_eq!(file.lines().count(), 2, "the directory was added: {file:?}");
        assert_eq!(load_or_create(dir.path()).unwrap(), "00112233445566aa");
        std::fs::write(
            dir.path().join(UPLOADER_FILE),
            "00112233445566aa\n1:2\nmore\n",
        )
        .unwrap();
        assert!(load_or_create(dir.path()).is_err());
    }
}
