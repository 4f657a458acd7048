//! One process per data directory: an exclusive lock on a lock file, held
//! for as long as the process uses the directory (RocketMQ's
//! `{storePathRootDir}/lock`, taken by `DefaultMessageStore.load` with
//! `FileChannel.tryLock`).
//!
//! The lock is an open-file-description record lock (`F_OFD_SETLK`) on the
//! file's first byte: it conflicts with another process's lock, with a
//! second lock taken in this process (tests open stores twice), and with the
//! POSIX record lock a Java broker takes on the same file. The kernel drops
//! it when the process dies, so a broker killed with `kill -9` leaves no
//! stale lock behind. The holder writes its pid into the file, so a refused
//! process can say who holds the directory.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Name of the lock file inside a locked directory.
pub const LOCK_FILE: &str = "lock";
/// Most bytes read from a lock file to learn the holder's pid.
const LOCK_FILE_READ_BYTES_MAX: u64 = 64;

/// Why a directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "{path} is locked by another process{}: is a broker or name server already using it? \
         (stop it, or give this one its own directory)",
        holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Held { path: PathBuf, holder: Option<u32> },
    #[error("cannot lock {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("cannot use {path} as a data directory: {}", dir_problem(source))]
    Dir { path: PathBuf, source: io::Error },
}

/// What a failed `create_dir_all` of a data directory means to its user.
fn dir_problem(source: &io::Error) -> String {
    match source.kind() {
        io::ErrorKind::PermissionDenied => {
            "permission denied (choose a directory this user may create and write, or create it \
             and give this user write access)"
                .into()
        }
        io::ErrorKind::AlreadyExists | io::ErrorKind::NotADirectory => {
            "it, or a path above it, is a file, not a directory (choose another path)".into()
        }
        _ => source.to_string(),
    }
}

/// An exclusive lock on one lock file; released when dropped (or when the
/// process ends, however it ends).
#[derive(Debug)]
pub struct ProcessLock {
    path: PathBuf,
    /// Keeps the open file description, and so the lock, alive.
    _file: File,
}

/// Creates the data directory `dir` when missing and checks that this
/// process may create files in it: a path that is (or lies under) a file,
/// or a directory this user may not create or write, is named with what is
/// wrong before anything is written there.
pub fn prepare_data_dir(dir: &Path) -> Result<(), LockError> {
    let dir_error = |source| LockError::Dir {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(dir_error)?;
    let c_path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|e| dir_error(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
    // SAFETY: `c_path` is a NUL-terminated string that outlives the call;
    // access(2) only reads it.
    if unsafe { libc::access(c_path.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(dir_error(io::Error::last_os_error()));
    }
    Ok(())
}

impl ProcessLock {
    /// Locks `dir/lock`, creating `dir` ([`prepare_data_dir`]) and the file
    /// when missing.
    pub fn acquire_dir(dir: &Path) -> Result<Self, LockError> {
        prepare_data_dir(dir)?;
        Self::acquire(&dir.join(LOCK_FILE))
    }

    /// Locks the file at `path` (created when missing; its directory must
    /// exist). Fails at once, without waiting, when another holds it.
    pub fn acquire(path: &Path) -> Result<Self, LockError> {
        let io_err = |source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io_err)?;
        if let Err(err) = try_lock(&file) {
            if matches!(err.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EACCES)) {
                return Err(LockError::Held {
                    path: path.to_path_buf(),
                    holder: holder_pid(&mut file),
                });
            }
            return Err(io_err(err));
        }
        write_pid(&mut file).map_err(io_err)?;
        Ok(Self {
            path: path.to_path_buf(),
            _file: file,
        })
    }

    /// The locked file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn try_lock(file: &File) -> io::Result<()> {
    // SAFETY: an all-zero `flock` is a valid value of this plain C struct.
    let mut range: libc::flock = unsafe { std::mem::zeroed() };
    range.l_type = libc::F_WRLCK as libc::c_short;
    range.l_whence = libc::SEEK_SET as libc::c_short;
    range.l_start = 0;
    range.l_len = 1;
    // SAFETY: the descriptor is open for the call's duration and `range`
    // is a valid `flock` that outlives it.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &range) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn write_pid(file: &mut File) -> io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    writeln!(file, "{}", std::process::id())?;
    file.sync_data()
}

fn holder_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(LOCK_FILE_READ_BYTES_MAX)
        .read_to_string(&mut text)
        .ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_directory_is_refused_with_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let first = ProcessLock::acquire_dir(&root).unwrap();
        assert_eq!(first.path(), root.join(LOCK_FILE));
        let err = ProcessLock::acquire_dir(&root).unwrap_err();
        match &err {
            LockError::Held { path, holder } => {
                assert_eq!(path, &root.join(LOCK_FILE));
                assert_eq!(*holder, Some(std::process::id()));
            }
            other => panic!("expected Held, got {other:?}"),
        }
        let text = err.to_string();
        assert!(text.contains(&root.display().to_string()), "{text}");
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        drop(first);
        let again = ProcessLock::acquire_dir(&root).unwrap();
        drop(again);
    }

    #[test]
    fn a_lock_file_that_cannot_be_opened_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = ProcessLock::acquire(&dir.path().join("missing/lock")).unwrap_err();
        assert!(matches!(err, LockError::Io { .. }), "{err:?}");
    }

    #[test]
    fn a_data_directory_that_is_a_file_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("store");
        std::fs::write(&file, b"not a directory").unwrap();
        for path in [file.clone(), file.join("below")] {
            let err = ProcessLock::acquire_dir(&path).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, LockError::Dir { .. }), "{err:?}");
            assert!(text.contains("is a file, not a directory"), "{text}");
        }
    }
}
