//! Whether writing to a target could destroy someone's data.

use std::fs::File;
use std::path::Path;

/// The extended attribute that marks a file the tool created.
pub(crate) const SCRATCH_XATTR: &str = "user.elevator.scratch";

/// What makes writing to the block device at `path` unsafe, one phrase each (empty: safe).
pub(crate) fn block_device_hazards(path: &Path) -> Vec<String> {
    let _ = path;
    vec!["safety checks for block devices are not built yet".into()]
}

/// Marks `file` as created by the tool.
pub(crate) fn mark_scratch(file: &File) -> std::io::Result<()> {
    rustix::fs::fsetxattr(file, SCRATCH_XATTR, b"1", rustix::fs::XattrFlags::empty())
        .map_err(Into::into)
}

/// Whether the file at `path` carries the tool's mark.
pub(crate) fn is_scratch(path: &Path) -> bool {
    let mut value = [0u8; 8];
    rustix::fs::getxattr(path, SCRATCH_XATTR, &mut value).is_ok()
}
