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
pub fn load_or_create(dir: &Path) -> Result<String, StoreError> {
    let path = dir.join(UPLOADER_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let id = text.trim();
            if !valid(id) {
                return Err(StoreError::Corrupt(format!(
                    "{}: not an uploader id ({ID_LEN} hex digits): {id:?}",
                    path.display()
                )));
            }
            Ok(id.to_string())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).io_context("create dir", dir)?;
            let id = fresh();
            crate::json_file::write_atomic(&path, id.as_bytes(), false)?;
            Ok(id)
        }
        Err(e) => Ok(Err(e).io_context("read", &path)?),
    }
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
}
