//! Extracting the pinned files of a plugin wheel (a zip archive), checking each file's SHA-256
//! as it is written. Only the named members are read, to paths fixed by [`crate::install`]'s
//! pins, so an archive cannot place files anywhere else.

use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::trust::hex;

/// One file to take out of a wheel.
pub(crate) struct Member<'a> {
    /// Its path inside the wheel, which is also its path under the install folder.
    pub path: &'a str,
    /// Its pinned SHA-256 (lowercase hex).
    pub sha256: &'a str,
    /// Whether to set the execute bit (wheels store `ptxas` as mode 644).
    pub executable: bool,
}

/// Extracts `members` of the wheel at `wheel` under `into`. Fails, naming the file, when a
/// member is missing, compressed with something other than deflate, or differs from its pin.
pub(crate) fn extract(wheel: &Path, members: &[Member<'_>], into: &Path) -> Result<(), String> {
    let file = std::fs::File::open(wheel).map_err(|e| format!("cannot open {}: {e}", wheel.display()))?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| format!("{} is not a readable wheel (zip archive): {e}", wheel.display()))?;
    for member in members {
        let mut entry = archive.by_name(member.path).map_err(|e| {
            format!("{} has no usable {} ({e}); is it the right wheel for this plugin?", wheel.display(), member.path)
        })?;
        let target = into.join(member.path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let mut out = std::fs::File::create(&target).map_err(|e| format!("cannot create {}: {e}", target.display()))?;
        let declared = entry.size();
        let mut hasher = Sha256::new();
        let mut chunk = vec![0u8; 1 << 20];
        let mut written = 0u64;
        // The declared size bounds what we write: a member that inflates past it is refused.
        let mut limited = (&mut entry).take(declared.saturating_add(1));
        loop {
            let n = limited
                .read(&mut chunk)
                .map_err(|e| format!("cannot read {} from {}: {e}", member.path, wheel.display()))?;
            if n == 0 {
                break;
            }
            written += n as u64;
            if written > declared {
                return Err(format!(
                    "{} in {} is larger than its zip entry says; refusing it",
                    member.path,
                    wheel.display()
                ));
            }
            hasher.update(&chunk[..n]);
            out.write_all(&chunk[..n]).map_err(|e| format!("cannot write {}: {e}", target.display()))?;
        }
        out.sync_all().map_err(|e| format!("cannot write {}: {e}", target.display()))?;
        let digest = hex(&hasher.finalize());
        if digest != member.sha256 {
            return Err(format!(
                "SHA-256 mismatch for {} in {}: expected {}, got {digest}; refusing to use it",
                member.path,
                wheel.display(),
                member.sha256
            ));
        }
        #[cfg(unix)]
        if member.executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("cannot make {} executable: {e}", target.display()))?;
        }
    }
    Ok(())
}
