//! The name of a data directory's pitcrew among others on one Docker engine: eight hex digits made
//! at first start and kept in `data_dir/instance`. Job sandboxes are named `<instance>-<job>`, so
//! servers, Action runs and tests sharing an engine never collide or reap each other.

use std::path::{Path, PathBuf};

/// The file holding [`instance_id`], in the data directory.
pub const INSTANCE_FILE: &str = "instance";

/// The instance file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the data directory {}: {source}", path.display())]
pub struct InstanceError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// This data directory's instance id: read from [`INSTANCE_FILE`], or made and stored there.
pub fn instance_id(data_dir: &Path) -> Result<String, InstanceError> {
    let path = data_dir.join(INSTANCE_FILE);
    let io = |source| InstanceError {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) if is_instance_id(text.trim()) => return Ok(text.trim().to_owned()),
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io(error)),
    }
    std::fs::create_dir_all(data_dir).map_err(io)?;
    let id = format!("{:08x}", fastrand::u32(..));
    // Written whole then renamed: a crash never leaves half an id.
    let temporary = data_dir.join(format!("{INSTANCE_FILE}.tmp"));
    std::fs::write(&temporary, format!("{id}\n")).map_err(io)?;
    std::fs::rename(&temporary, &path).map_err(io)?;
    Ok(id)
}

fn is_instance_id(text: &str) -> bool {
    text.len() == 8 && text.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_id_is_made_once_and_kept() -> Result<(), InstanceError> {
        let dir = tempfile::tempdir().map_err(|source| InstanceError {
            path: PathBuf::new(),
            source,
        })?;
        let first = instance_id(dir.path())?;
        assert!(is_instance_id(&first), "{first}");
        assert_eq!(instance_id(dir.path())?, first);
        // A damaged file is replaced rather than trusted.
        std::fs::write(dir.path().join(INSTANCE_FILE), "../../etc\n").map_err(|source| InstanceError {
            path: PathBuf::new(),
            source,
        })?;
        let replaced = instance_id(dir.path())?;
        assert!(is_instance_id(&replaced), "{replaced}");
        Ok(())
    }
}
