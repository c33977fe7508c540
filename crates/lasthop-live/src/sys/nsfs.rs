//! Network namespaces by identity: the nsfs inode of a namespace file (namespaces(7)), which
//! names a namespace for as long as it exists. The emulator names its AP host's telemetry
//! socket after it; a tool finds that socket, and keys its restore records, by its own.

use std::path::Path;

/// The nsfs inode of a named namespace (`/run/netns/<name>`) or of a namespace file.
pub fn netns_inode(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata(path)?.ino())
}

/// The inode of this process's network namespace.
pub fn own_netns_inode() -> std::io::Result<u64> {
    netns_inode(Path::new("/proc/self/ns/net"))
}
