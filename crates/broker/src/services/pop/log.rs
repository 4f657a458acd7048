//! The pop state's durable form: an append-only file per shard,
//! `{storePathRootDir}/pop/shard-{n}.log`, one JSON line per pop
//! (checkpoint), per ack, and per revived checkpoint. Lines are written as
//! they happen (a process crash keeps them: they are in the page cache) and
//! fdatasync'd every revive tick (a power loss keeps all but the last
//! second's, as async flush does for messages). A start replays the file,
//! then rewrites it with only what is still open.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::order::OrderPop;
use super::{Checkpoint, CkKey, PopQueueKey, PopState};

/// Past this many bytes written since the last rewrite, the log is
/// rewritten with only the open checkpoints.
pub const LOG_COMPACT_BYTES: u64 = 64 * 1024 * 1024;
const _: () = assert!(LOG_COMPACT_BYTES > 0);

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Line {
    /// A pop's checkpoint.
    Ck {
        #[serde(flatten)]
        key: CkKey,
        #[serde(flatten)]
        ck: Checkpoint,
    },
    /// `offset` of checkpoint `key` acked.
    Ack {
        #[serde(flatten)]
        key: CkKey,
        #[serde(rename = "ao")]
        offset: i64,
    },
    /// Several offsets of checkpoint `key` acked at once (a batch ack).
    Acks {
        #[serde(flatten)]
        key: CkKey,
        #[serde(rename = "aol")]
        offsets: Vec<i64>,
    },
    /// Checkpoint `key` revived (its un-acked messages re-put) or dropped.
    Done {
        #[serde(flatten)]
        key: CkKey,
    },
    /// Where the next pop of a queue starts (written by a rewrite).
    Next {
        g: String,
        t: String,
        q: i32,
        o: i64,
    },
    /// A queue's ordered pop, replacing the one before (`p: None` ends it).
    Order {
        g: String,
        t: String,
        q: i32,
        p: Option<OrderPop>,
    },
}

/// One shard's pop log.
pub(crate) struct PopLog {
    path: PathBuf,
    file: File,
    written: u64,
    dirty: bool,
}

impl PopLog {
    /// Opens (creating) the shard's log, replays it into a state, and
    /// rewrites it compactly.
    pub fn open(root: &Path, shard: usize) -> Result<(Self, PopState), String> {
        let dir = root.join("pop");
        fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let path = dir.join(format!("shard-{shard}.log"));
        let state = replay(&path)?;
        let log = Self::rewrite(&path, &state)?;
        Ok((log, state))
    }

    fn rewrite(path: &Path, state: &PopState) -> Result<Self, String> {
        let tmp = path.with_extension("log.tmp");
        let mut out = Vec::new();
        let snapshot = state.snapshot();
        for ((g, t, q), o) in snapshot.next {
            push_line(&mut out, &Line::Next { g, t, q, o });
        }
        for ((g, t, q), p) in snapshot.orders {
            push_line(
                &mut out,
                &Line::Order {
                    g,
                    t,
                    q,
                    p: Some(p),
                },
            );
        }
        for (key, ck) in snapshot.checkpoints {
            push_line(&mut out, &Line::Ck { key, ck });
        }
        let fail = |what: &str, e: std::io::Error| format!("{what} {}: {e}", tmp.display());
        let mut file = File::create(&tmp).map_err(|e| fail("create", e))?;
        file.write_all(&out).map_err(|e| fail("write", e))?;
        file.sync_data().map_err(|e| fail("fdatasync", e))?;
        fs::rename(&tmp, path).map_err(|e| fail("rename", e))?;
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| format!("open {}: {e}", path.display()))?;
        Ok(PopLog {
            path: path.to_path_buf(),
            file,
            written: 0,
            dirty: false,
        })
    }

    pub fn checkpoint(&mut self, key: &CkKey, ck: &Checkpoint) {
        self.append(&Line::Ck {
            key: key.clone(),
            ck: ck.clone(),
        });
    }

    pub fn ack(&mut self, key: &CkKey, offset: i64) {
        self.append(&Line::Ack {
            key: key.clone(),
            offset,
        });
    }

    /// Several offsets of one checkpoint acked: one line.
    pub fn acks(&mut self, key: &CkKey, offsets: &[i64]) {
        match offsets {
            [] => {}
            [offset] => self.ack(key, *offset),
            _ => self.append(&Line::Acks {
                key: key.clone(),
                offsets: offsets.to_vec(),
            }),
        }
    }

    pub fn order(&mut self, key: &PopQueueKey, pop: Option<&OrderPop>) {
        let (g, t, q) = key.clone();
        self.append(&Line::Order {
            g,
            t,
            q,
            p: pop.cloned(),
        });
    }

    pub fn done(&mut self, key: &CkKey) {
        self.append(&Line::Done { key: key.clone() });
    }

    fn append(&mut self, line: &Line) {
        let mut out = Vec::with_capacity(160);
        push_line(&mut out, line);
        self.written += out.len() as u64;
        self.dirty = true;
        if let Err(e) = self.file.write_all(&out) {
            tracing::error!(path = %self.path.display(), error = %e, "pop log write failed");
        }
    }

    /// Bytes appended since the last rewrite.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// A handle for an fdatasync off the executor, when there is anything
    /// new to sync.
    pub fn take_sync(&mut self) -> Option<File> {
        if !std::mem::take(&mut self.dirty) {
            return None;
        }
        self.file.try_clone().ok()
    }

    /// Rewrites the log with `state` only (when it grew past
    /// [`LOG_COMPACT_BYTES`]).
    pub fn compact(&mut self, state: &PopState) -> Result<(), String> {
        *self = Self::rewrite(&self.path.clone(), state)?;
        Ok(())
    }
}

fn push_line(out: &mut Vec<u8>, line: &Line) {
    // Serializing these plain structs cannot fail.
    if serde_json::to_writer(&mut *out, line).is_ok() {
        out.push(b'\n');
    }
}

/// Rebuilds the state the log describes; a torn last line is ignored.
fn replay(path: &Path) -> Result<PopState, String> {
    let mut state = PopState::default();
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(state),
        Err(e) => return Err(format!("open {}: {e}", path.display())),
    };
    let mut bad = 0usize;
    for line in BufReader::new(file).lines() {
        let Ok(line) = line else {
            bad += 1;
            continue;
        };
        match serde_json::from_str::<Line>(&line) {
            Ok(Line::Ck { key, ck }) => state.add(key, ck),
            Ok(Line::Ack { key, offset }) => {
                state.ack(&key, offset);
            }
            Ok(Line::Acks { key, offsets }) => {
                for offset in offsets {
                    state.ack(&key, offset);
                }
            }
            Ok(Line::Done { key }) => {
                state.remove(&key);
            }
            Ok(Line::Next { g, t, q, o }) => state.set_next(&g, &t, q, o),
            Ok(Line::Order { g, t, q, p }) => state.set_order((g, t, q), p),
            Err(_) => bad += 1,
        }
    }
    if bad > 0 {
        tracing::warn!(path = %path.display(), lines = bad, "pop log lines not understood (a torn last write?); skipped");
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replayed_log_holds_only_the_open_checkpoints() {
        let dir = tempfile::tempdir().unwrap();
        let key = |start| CkKey {
            group: "G".into(),
            topic: "T".into(),
            queue_id: 1,
            start_offset: start,
            pop_time_ms: 5,
        };
        {
            let (mut log, mut state) = PopLog::open(dir.path(), 0).unwrap();
            for start in [0, 2, 4] {
                let ck = Checkpoint {
                    invisible_time_ms: 100,
                    offsets: vec![start, start + 1],
                    acked: 0,

                    reput_times: 0,
                };
                log.checkpoint(&key(start), &ck);
                state.add(key(start), ck);
            }
            log.ack(&key(0), 0);
            log.ack(&key(0), 1);
            log.acks(&key(2), &[]);
            log.acks(&key(2), &[3]);
            log.done(&key(4));
            let queue = ("G".to_string(), "O".to_string(), 0);
            let order = OrderPop {
                pop_time_ms: 1,
                invisible_time_ms: 10,
                offsets: vec![3, 4],
                acked: 1,
                counts: vec![0, 0],
                attempt_id: None,
            };
            log.order(&queue, Some(&order));
            log.order(&("G".to_string(), "O".to_string(), 1), Some(&order));
            log.order(&("G".to_string(), "O".to_string(), 1), None);
        }
        let (_, state) = PopLog::open(dir.path(), 0).unwrap();
        assert_eq!(state.len(), 1);
        assert_eq!(state.next_offset("G", "T", 1), Some(6));
        let held = state.order(&("G".to_string(), "O".to_string(), 0));
        assert_eq!(held.map(|p| p.acked), Some(1), "an ordered pop survives");
        assert!(state
            .order(&("G".to_string(), "O".to_string(), 1))
            .is_none());
        // The rewrite kept the same state.
        let (_, again) = PopLog::open(dir.path(), 0).unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again.snapshot().checkpoints[0].1.pending(), vec![2]);
    }
}
