//! The local outbox of `tally dev`: one JSON file per message, named by the
//! time it was written, read back newest first.

use crate::{MailError, Message};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The outbox's directory under a data directory.
pub const OUTBOX_DIR: &str = "outbox";

/// A message written to the outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// The file's name without `.json` (`20260105T123000.123Z-0`); unique in
    /// the outbox and sorting by time.
    pub id: String,
    /// When it was written, Unix milliseconds.
    pub sent_at: i64,
    /// The message.
    #[serde(flatten)]
    pub message: Message,
}

/// The file's content (the id is its name).
#[derive(Serialize, Deserialize)]
struct File {
    sent_at: i64,
    #[serde(flatten)]
    message: Message,
}

/// A directory of sent mail, one `{timestamp}-{n}.json` file per message.
#[derive(Debug, Clone)]
pub struct Outbox {
    dir: PathBuf,
}

impl Outbox {
    /// The outbox in `dir` (created on the first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The outbox of a data directory: `{data_dir}/outbox/`.
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self::new(data_dir.join(OUTBOX_DIR))
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `message` now (the system clock).
    pub fn send(&self, message: &Message) -> Result<StoredMessage, MailError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        self.write(message, now)
    }

    /// Writes `message` as sent at `now` (Unix ms) into a new file; two
    /// messages of the same millisecond get different names.
    pub fn write(&self, message: &Message, now: i64) -> Result<StoredMessage, MailError> {
        std::fs::create_dir_all(&self.dir).map_err(|source| MailError::Io {
            path: self.dir.clone(),
            source,
        })?;
        let body = serde_json::to_vec_pretty(&File {
            sent_at: now,
            message: message.clone(),
        })
        .map_err(|source| MailError::Corrupt {
            path: self.dir.clone(),
            source,
        })?;
        let stamp = timestamp(now);
        for n in 0u32.. {
            let id = format!("{stamp}-{n}");
            let path = self.dir.join(format!("{id}.json"));
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path);
            match file {
                Ok(mut file) => {
                    use std::io::Write;
                    file.write_all(&body)
                        .map_err(|source| MailError::Io { path, source })?;
                    tracing::debug!(id = %id, "mail written to the outbox");
                    return Ok(StoredMessage {
                        id,
                        sent_at: now,
                        message: message.clone(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(MailError::Io { path, source }),
            }
        }
        unreachable!("an unbounded range always yields")
    }

    /// Every message in the outbox, newest first (an outbox never written
    /// to is empty). Files that are not messages are skipped.
    pub fn list(&self) -> Result<Vec<StoredMessage>, MailError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(MailError::Io {
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| MailError::Io {
                path: self.dir.clone(),
                source,
            })?;
            let name = entry.file_name();
            if let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) {
                ids.push(id.to_owned());
            }
        }
        ids.sort_by(|a, b| order_key(b).cmp(&order_key(a)));
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            match self.read(&id) {
                Ok(Some(message)) => out.push(message),
                Ok(None) => {}
                Err(MailError::Corrupt { path, .. }) => {
                    tracing::debug!(path = %path.display(), "not a stored message: skipped");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// One message by its id; `None` if there is no such file.
    pub fn read(&self, id: &str) -> Result<Option<StoredMessage>, MailError> {
        if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') {
            return Ok(None);
        }
        let path = self.dir.join(format!("{id}.json"));
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(MailError::Io { path, source }),
        };
        let file: File =
            serde_json::from_slice(&bytes).map_err(|source| MailError::Corrupt { path, source })?;
        Ok(Some(StoredMessage {
            id: id.to_owned(),
            sent_at: file.sent_at,
            message: file.message,
        }))
    }
}

/// A file's place in time: its stamp, then its counter as a number (so
/// `-10` follows `-9`).
fn order_key(id: &str) -> (&str, u64) {
    match id.rsplit_once('-') {
        Some((stamp, n)) => (stamp, n.parse().unwrap_or(0)),
        None => (id, 0),
    }
}

/// `20260105T123000.123Z`: UTC, sorting as text in time order.
fn timestamp(ms: i64) -> String {
    let format = time::macros::format_description!(
        "[year][month][day]T[hour][minute][second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(format).ok())
        .unwrap_or_else(|| format!("{ms:013}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "tally-mail-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn names_sort_in_time_order() {
        assert_eq!(timestamp(1_767_616_200_123), "20260105T123000.123Z");
        assert_eq!(timestamp(0), "19700101T000000.000Z");
        assert!(order_key("20260105T123000.123Z-10") > order_key("20260105T123000.123Z-9"));
        assert!(order_key("20260105T123000.124Z-0") > order_key("20260105T123000.123Z-9"));
    }

    #[test]
    fn an_outbox_never_written_is_empty() {
        let outbox = Outbox::new(temp_dir("empty"));
        assert!(outbox.list().unwrap().is_empty());
        assert_eq!(outbox.read("nothing").unwrap(), None);
    }

    #[test]
    fn messages_of_one_millisecond_get_their_own_files() {
        let dir = temp_dir("same-ms");
        let outbox = Outbox::new(&dir);
        let ids: Vec<String> = (0..12)
            .map(|i| {
                outbox
                    .write(&Message::new("a@example.com", format!("s{i}"), "t"), 5)
                    .unwrap()
                    .id
            })
            .collect();
        let listed = outbox.list().unwrap();
        assert_eq!(listed.len(), 12);
        let subjects: Vec<&str> = listed.iter().map(|m| m.message.subject.as_str()).collect();
        assert_eq!(subjects[0], "s11");
        assert_eq!(subjects[11], "s0");
        assert_eq!(listed[0].id, ids[11]);
        std::fs::write(dir.join("junk.json"), "not json").unwrap();
        std::fs::write(dir.join("notes.txt"), "x").unwrap();
        assert_eq!(outbox.list().unwrap().len(), 12);
        assert_eq!(outbox.read("../x").unwrap(), None);
        let _ = std::fs::remove_dir_all(dir);
    }
}
