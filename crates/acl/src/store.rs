//! The ACL in force, reloaded when its files change: a reader takes the
//! current [`AclConfig`] without a lock once it has it (compare a version
//! number, fetch again only when it moved).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::config::{acl_files, AclConfig};
use crate::AclError;

/// The ACL files under one RocketMQ home and what they said last.
pub struct AclStore {
    home: PathBuf,
    current: Mutex<Loaded>,
    version: AtomicU64,
}

struct Loaded {
    config: Arc<AclConfig>,
    /// Each file read and its modification time and length then.
    files: Vec<(PathBuf, Stamp)>,
}

impl AclStore {
    /// Loads the files under `home`; an error names the file and the fault.
    pub fn open(home: &Path) -> Result<AclStore, AclError> {
        let loaded = load(home)?;
        Ok(AclStore {
            home: home.to_path_buf(),
            current: Mutex::new(loaded),
            version: AtomicU64::new(1),
        })
    }

    /// Bumped on every reload that changed something.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// The ACL in force now.
    pub fn current(&self) -> Arc<AclConfig> {
        let loaded = self.current.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(&loaded.config)
    }

    /// Reads the files again if any was added, removed or modified. A file
    /// that no longer loads keeps the old ACL in force (and is reported).
    pub fn reload_if_changed(&self) -> Result<bool, AclError> {
        let unchanged = {
            let loaded = self.current.lock().unwrap_or_else(|p| p.into_inner());
            let now = acl_files(&self.home)?;
            now.len() == loaded.files.len()
                && now
                    .iter()
                    .zip(&loaded.files)
                    .all(|(path, (old, mtime))| path == old && modified(path) == *mtime)
        };
        if unchanged {
            return Ok(false);
        }
        let fresh = load(&self.home)?;
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = fresh;
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(true)
    }
}

/// What tells a changed file: its modification time and length (a write
/// within one tick of a coarse clock still changes the length, mostly).
type Stamp = Option<(SystemTime, u64)>;

fn modified(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

fn load(home: &Path) -> Result<Loaded, AclError> {
    let paths = acl_files(home)?;
    let files = paths.iter().map(|p| (p.clone(), modified(p))).collect();
    let config = AclConfig::load(&paths)?;
    Ok(Loaded {
        config: Arc::new(config),
        files,
    })
}
