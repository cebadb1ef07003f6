//! Which folders may hold what this crate trusts without checking again: the plugin cache's
//! `.pjrt-verified` markers (a recorded hash instead of hashing again), python's remembered
//! answer, and the compile cache's serialized executables (native code).
//!
//! A folder is trusted when no other user can change what it holds: after resolving symlinks,
//! every folder from `/` down to it is owned by this process's effective user or by root and is
//! writable by neither its group nor others. Two exceptions, both as safe:
//!
//! - An *ancestor* owned by root with the sticky bit (`/tmp`, mode 1777) may be writable by
//!   everyone: others can add entries there but can neither rename nor remove ours, so a folder
//!   of ours inside stays ours. The folder itself never gets this exception (others could
//!   plant entries in it).
//! - A folder of ours that is writable by its group when that group is our own private group
//!   (our primary group, whose database entry lists no member but us): what a `umask` of 002
//!   gives on systems with user private groups (Debian, Ubuntu, Fedora), as Debian's OpenSSH
//!   accepts for `~/.ssh`.
//!
//! A symlink along the way (a `~/.cache` that points to a scratch disk, common on clusters) is
//! fine when its target passes; callers use the resolved path from then on, so a symlink swapped
//! later does not redirect them.
//!
//! Files in a trusted folder are checked the same way (owned by us or root, not writable by
//! others), so a file written with a permissive `umask` is not trusted either.
//!
//! On platforms other than Unix there are no owners and modes to read: every folder counts as
//! trusted, as before.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Who we are, for [`judge`]: the effective uid, and our private group when we have one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Me {
    pub(crate) euid: u32,
    pub(crate) private_gid: Option<u32>,
}

/// The owner and mode of one path component, as `stat` reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) mode: u32,
}

/// Where a component stands relative to the folder being checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// A folder above it (`/`, `/home`, ...).
    Ancestor,
    /// The folder itself, or a file in it.
    Itself,
}

const STICKY: u32 = 0o1000;
const GROUP_WRITE: u32 = 0o020;
const OTHER_WRITE: u32 = 0o002;

/// Whether another user could change what a component holds; `Err` says why, for the message.
/// Pure, so the owner logic is tested on synthetic values without being root.
pub(crate) fn judge(owner: Owner, place: Place, me: Me) -> std::result::Result<(), String> {
    if owner.uid != me.euid && owner.uid != 0 {
        return Err(format!("is owned by uid {}, neither you (uid {}) nor root", owner.uid, me.euid));
    }
    // /tmp and the like: others cannot rename or remove entries that are not theirs.
    let sticky_root_ancestor = place == Place::Ancestor && owner.uid == 0 && owner.mode & STICKY != 0;
    if owner.mode & OTHER_WRITE != 0 && !sticky_root_ancestor {
        return Err(format!("is writable by other users (mode {:o})", owner.mode & 0o7777));
    }
    let our_private_group = owner.uid == me.euid && me.private_gid == Some(owner.gid);
    if owner.mode & GROUP_WRITE != 0 && !sticky_root_ancestor && !our_private_group {
        return Err(format!("is writable by its group, gid {} (mode {:o})", owner.gid, owner.mode & 0o7777));
    }
    Ok(())
}

/// Checks that no other user can change what `dir` holds (see the crate's
/// "Trust"), and returns its resolved path, which callers then use.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use pjrt_plugins::Error;
///
/// let dir = std::env::temp_dir().join(format!("pjrt-doc-trusted-{}", std::process::id()));
/// let resolved = pjrt_plugins::create_trusted_dir(&dir)?;
/// assert_eq!(pjrt_plugins::check_trusted_dir(&dir)?, resolved);
/// # #[cfg(unix)] {
/// // A folder that other users may write is refused.
/// use std::os::unix::fs::PermissionsExt;
/// std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777))?;
/// let e = pjrt_plugins::check_trusted_dir(&dir).unwrap_err();
/// assert!(matches!(e, Error::UntrustedFolder { .. }), "{e}");
/// # }
/// std::fs::remove_dir(&dir)?;
/// # Ok(()) }
/// ```
pub fn check_trusted_dir(dir: &Path) -> Result<PathBuf> {
    let resolved = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    #[cfg(unix)]
    {
        let me = me();
        let mut components: Vec<&Path> = resolved.ancestors().collect();
        components.reverse();
        let last = components.len() - 1;
        for (i, component) in components.into_iter().enumerate() {
            let place = if i == last { Place::Itself } else { Place::Ancestor };
            check_component(dir, component, place, me)?;
        }
    }
    Ok(resolved)
}

/// Creates `dir` where it is missing (each new folder owner-only, 0700) and checks it like
/// [`check_trusted_dir`]; returns its resolved path.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("pjrt-doc-create-trusted-{}", std::process::id()));
/// let resolved = pjrt_plugins::create_trusted_dir(&dir.join("a/b"))?;
/// assert!(resolved.is_dir());
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn create_trusted_dir(dir: &Path) -> Result<PathBuf> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| Error::io(dir, e))?;
    check_trusted_dir(dir)
}

/// Checks a file inside a trusted folder: a regular file (not a symlink), owned by you or
/// root, and writable by neither group nor others (your private group aside, as for folders).
/// The folder is the caller's to check ([`check_trusted_dir`]).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use pjrt_plugins;
///
/// let dir = pjrt_plugins::create_trusted_dir(&std::env::temp_dir().join(format!("pjrt-doc-file-{}", std::process::id())))?;
/// std::fs::write(dir.join("entry"), b"remembered")?;
/// # #[cfg(unix)] {
/// use std::os::unix::fs::PermissionsExt;
/// std::fs::set_permissions(dir.join("entry"), std::fs::Permissions::from_mode(0o600))?;
/// pjrt_plugins::check_trusted_file(&dir.join("entry"))?;
/// std::fs::set_permissions(dir.join("entry"), std::fs::Permissions::from_mode(0o666))?;
/// assert!(pjrt_plugins::check_trusted_file(&dir.join("entry")).is_err(), "anyone may rewrite it");
/// # }
/// std::fs::remove_dir_all(&dir)?;
/// # Ok(()) }
/// ```
pub fn check_trusted_file(path: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
    check_trusted_metadata(path, &meta)
}

/// [`check_trusted_file`] on what `stat` (or `fstat`, of a file already open) said of `path`.
pub(crate) fn check_trusted_metadata(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    if !meta.is_file() {
        return Err(untrusted(path, path, "is not a regular file".into()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let owner = Owner { uid: meta.uid(), gid: meta.gid(), mode: meta.mode() };
        judge(owner, Place::Itself, me()).map_err(|reason| untrusted(path, path, reason))?;
    }
    Ok(())
}

#[cfg(unix)]
fn check_component(checked: &Path, component: &Path, place: Place, me: Me) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    // A resolved path: no component is a symlink.
    let meta = std::fs::symlink_metadata(component).map_err(|e| Error::io(component, e))?;
    let owner = Owner { uid: meta.uid(), gid: meta.gid(), mode: meta.mode() };
    judge(owner, place, me).map_err(|reason| untrusted(checked, component, reason))
}

fn untrusted(folder: &Path, component: &Path, reason: String) -> Error {
    Error::UntrustedFolder { folder: folder.to_path_buf(), component: component.to_path_buf(), reason }
}

/// This process's effective uid, and its private group: the effective gid when the group
/// database lists no member of it but us (a user private group). Looked up once per process
/// (the group database may be a network service).
#[cfg(unix)]
fn me() -> Me {
    static ME: std::sync::OnceLock<Me> = std::sync::OnceLock::new();
    *ME.get_or_init(|| {
        // SAFETY: geteuid and getegid cannot fail and touch no memory of ours.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let private_gid = (euid != 0 && group_is_private(egid, euid)).then_some(egid);
        Me { euid, private_gid }
    })
}

/// Runs a reentrant lookup of the user and group databases (`getpwuid_r`, `getgrgid_r`) with a
/// buffer of its own, grown while the lookup answers `ERANGE` (up to 1 MiB). Returns the buffer,
/// which holds the strings the found entry points to, or `None` when the lookup failed or found
/// nothing.
#[cfg(unix)]
fn nss_lookup<T>(mut lookup: impl FnMut(&mut [u8], &mut *mut T) -> libc::c_int) -> Option<Vec<u8>> {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let mut result: *mut T = std::ptr::null_mut();
        let rc = lookup(&mut buffer, &mut result);
        if rc == libc::ERANGE && buffer.len() < 1 << 20 {
            buffer.resize(buffer.len() * 4, 0);
            continue;
        }
        return (rc == 0 && !result.is_null()).then_some(buffer);
    }
}

/// Whether the group `gid` lists no member but the user `uid` (and exists).
#[cfg(unix)]
fn group_is_private(gid: u32, uid: u32) -> bool {
    let Some(user) = passwd_entry(uid).map(|p| p.name) else { return false };
    // SAFETY: an all-zero `group` is a valid value of the C struct (pointers NULL).
    let mut group: libc::group = unsafe { std::mem::zeroed() };
    // The returned buffer holds what `group` points to (moving a `Vec` leaves its bytes in
    // place): it lives until the end of this function.
    let Some(_buffer) = nss_lookup(|buffer, result: &mut *mut libc::group| {
        // SAFETY: every pointer refers to memory we own, `buffer.len()` bytes at `buffer`.
        unsafe { libc::getgrgid_r(gid, &mut group, buffer.as_mut_ptr().cast(), buffer.len(), result) }
    }) else {
        return false;
    };
    let mut member = group.gr_mem;
    if member.is_null() {
        return true;
    }
    loop {
        // SAFETY: `gr_mem` is a NULL-terminated array of C strings inside `buffer`, which
        // getgrgid_r filled and which is still alive.
        let name = unsafe { *member };
        if name.is_null() {
            return true;
        }
        // SAFETY: a NUL-terminated string in `buffer` (as above).
        if unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes() != user.as_bytes() {
            return false;
        }
        // SAFETY: not past the terminating NULL, which was not reached yet.
        member = unsafe { member.add(1) };
    }
}

/// What the password database says about a user.
#[cfg(unix)]
struct PasswdEntry {
    name: String,
    home: PathBuf,
}

#[cfg(unix)]
fn passwd_entry(uid: u32) -> Option<PasswdEntry> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: an all-zero `passwd` is a valid value of the C struct (pointers NULL).
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    // The returned buffer holds what `entry` points to (moving a `Vec` leaves its bytes in
    // place): it lives until the end of this function.
    let _buffer = nss_lookup(|buffer, result: &mut *mut libc::passwd| {
        // SAFETY: every pointer refers to memory we own, `buffer.len()` bytes at `buffer`.
        unsafe { libc::getpwuid_r(uid, &mut entry, buffer.as_mut_ptr().cast(), buffer.len(), result) }
    })?;
    if entry.pw_name.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: NUL-terminated strings inside `buffer`, filled by getpwuid_r, still alive.
    let (name, home) = unsafe { (std::ffi::CStr::from_ptr(entry.pw_name), std::ffi::CStr::from_ptr(entry.pw_dir)) };
    Some(PasswdEntry {
        name: String::from_utf8_lossy(name.to_bytes()).into_owned(),
        home: PathBuf::from(std::ffi::OsStr::from_bytes(home.to_bytes())),
    })
}

/// The user's home: `$HOME` when set and not empty, else (Unix) the home folder of the password
/// database's entry for the effective user. Never a temporary folder.
pub(crate) fn home_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home));
    }
    #[cfg(unix)]
    {
        // SAFETY: geteuid cannot fail.
        let euid = unsafe { libc::geteuid() };
        passwd_entry(euid).map(|p| p.home).filter(|h| h.is_absolute())
    }
    #[cfg(not(unix))]
    None
}

/// The user's cache folder: `$XDG_CACHE_HOME` when set and not empty, else `~/.cache`, with the
/// home from `$HOME`, else from the password database. `None` when there is no home: this
/// crate's caches are then off, never in a shared temporary folder.
///
/// ```
/// if let Some(dir) = pjrt_plugins::user_cache_dir() {
///     println!("caches live under {}", dir.display());
/// }
/// ```
pub fn user_cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| home_dir().map(|h| h.join(".cache")))
}

/// Lowercase hex of a digest.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates `dir` (and what is missing above it, owner-only too) and makes it owner-only.
pub(crate) fn create_private_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| Error::io(dir, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}

/// The plugin cache: `$PJRT_PLUGIN_CACHE`, else [`user_cache_dir`]`/pjrt-client/plugins`
/// (`$XDG_CACHE_HOME/pjrt-client/plugins`, else `~/.cache/pjrt-client/plugins`). `None` when
/// none of these is known (no `HOME` and no home in the password database): nothing is then
/// installed or remembered, never in a shared temporary folder.
///
/// ```
/// if let Some(dir) = pjrt_plugins::cache_dir() {
///     assert!(dir.ends_with("pjrt-client/plugins") || std::env::var_os("PJRT_PLUGIN_CACHE").is_some());
/// }
/// ```
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PJRT_PLUGIN_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    user_cache_dir().map(|base| base.join("pjrt-client").join("plugins"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Me = Me { euid: 1000, private_gid: Some(1000) };

    fn owner(uid: u32, gid: u32, mode: u32) -> Owner {
        Owner { uid, gid, mode }
    }

    #[test]
    fn only_folders_of_ours_or_roots_that_others_cannot_write_are_trusted() {
        use Place::*;
        // Ours or root's, 0755 / 0700: trusted anywhere.
        for place in [Ancestor, Itself] {
            assert_eq!(judge(owner(1000, 1000, 0o40700), place, ME), Ok(()));
            assert_eq!(judge(owner(0, 0, 0o40755), place, ME), Ok(()));
        }
        // Another user's folder, however strict its mode.
        for place in [Ancestor, Itself] {
            let e = judge(owner(65534, 65534, 0o40700), place, ME).unwrap_err();
            assert!(e.contains("owned by uid 65534"), "{e}");
        }
        // Writable by others or by a shared group.
        for place in [Ancestor, Itself] {
            assert!(judge(owner(1000, 1000, 0o40757), place, ME).unwrap_err().contains("other users"));
            assert!(judge(owner(1000, 100, 0o40775), place, ME).unwrap_err().contains("group, gid 100"));
            assert!(judge(owner(0, 0, 0o40775), place, ME).is_err(), "root's group-writable folder");
        }
        // Our private group (umask 002) may write; not when we have none.
        assert_eq!(judge(owner(1000, 1000, 0o40775), Itself, ME), Ok(()));
        let no_private = Me { euid: 1000, private_gid: None };
        assert!(judge(owner(1000, 1000, 0o40775), Itself, no_private).is_err());
        // /tmp (root, 1777) may be above a folder of ours, but is never the folder itself.
        assert_eq!(judge(owner(0, 0, 0o41777), Ancestor, ME), Ok(()));
        assert!(judge(owner(0, 0, 0o41777), Itself, ME).is_err());
        // A sticky folder of another user is not /tmp.
        assert!(judge(owner(65534, 65534, 0o41777), Ancestor, ME).is_err());
        // Root sees root's folders as its own.
        assert_eq!(judge(owner(0, 0, 0o40700), Itself, Me { euid: 0, private_gid: None }), Ok(()));
    }
}

/// Folders planted as another user would plant them, for the tests of every cache.
#[cfg(all(test, unix))]
pub(crate) mod planted {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    /// `nobody` on most systems; any uid other than ours and root's does.
    pub(crate) const OTHER_UID: u32 = 65534;

    pub(crate) fn is_root() -> bool {
        // SAFETY: geteuid cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    fn folder(path: &Path, mode: u32) -> PathBuf {
        std::fs::create_dir_all(path).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        path.to_path_buf()
    }

    /// A fresh folder of ours (0700) under the temporary folder.
    pub(crate) fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pjrt-trust-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        folder(&dir, 0o700)
    }

    /// Folders under `base` that another user could change, each with what makes it so:
    /// writable by others, writable by a group that is not ours alone, owned by another user
    /// (when we are root: `chown`; otherwise the owner rule is tested on synthetic values in
    /// `tests`), a folder of ours under one writable by others, and a symlink to such a folder.
    pub(crate) fn untrusted_folders(base: &Path) -> Vec<(&'static str, PathBuf)> {
        let mut folders = vec![("writable by others", folder(&base.join("o+w"), 0o757))];
        let group = folder(&base.join("g+w"), 0o775);
        if is_root() {
            std::os::unix::fs::chown(&group, None, Some(OTHER_UID)).unwrap();
        }
        // Not root: the folder's group is ours; refused unless it is our private group.
        if is_root() || super::me().private_gid.is_none() {
            folders.push(("writable by a shared group", group));
        }
        if is_root() {
            let other = folder(&base.join("others"), 0o755);
            std::os::unix::fs::chown(&other, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
            folders.push(("owned by another user", other));
        } else {
            eprintln!("not root: the owner case is checked on synthetic metadata (trust::tests)");
        }
        let parent = folder(&base.join("open-parent"), 0o777);
        folders.push(("under a folder writable by others", folder(&parent.join("ours"), 0o700)));
        let link = base.join("link-to-o+w");
        std::os::unix::fs::symlink(base.join("o+w"), &link).unwrap();
        folders.push(("a symlink to a folder writable by others", link));
        folders
    }

    /// A folder of ours, and a symlink to it (a `~/.cache` on a scratch disk): both trusted.
    pub(crate) fn trusted_folders(base: &Path) -> Vec<(&'static str, PathBuf)> {
        let ours = folder(&base.join("ours"), 0o700);
        let link = base.join("link-to-ours");
        std::os::unix::fs::symlink(&ours, &link).unwrap();
        vec![("a folder of ours", ours), ("a symlink to a folder of ours", link)]
    }
}

#[cfg(all(test, unix))]
mod folder_tests {
    use super::planted::*;
    use super::*;

    #[test]
    fn folders_another_user_could_change_are_refused_and_symlinks_are_judged_by_their_target() {
        let base = scratch("check");
        for (what, dir) in untrusted_folders(&base) {
            match check_trusted_dir(&dir) {
                Err(Error::UntrustedFolder { reason, .. }) => eprintln!("{what}: refused, {reason}"),
                other => panic!("{what} ({}): {other:?}", dir.display()),
            }
        }
        for (what, dir) in trusted_folders(&base) {
            let resolved = check_trusted_dir(&dir).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(resolved, base.canonicalize().unwrap().join("ours"), "{what}: the resolved path");
        }
        // /tmp (root's, 1777) may be above a cache, but is none itself.
        if std::fs::metadata("/tmp").is_ok_and(|m| std::os::unix::fs::MetadataExt::mode(&m) & 0o1777 == 0o1777) {
            assert!(matches!(check_trusted_dir(Path::new("/tmp")), Err(Error::UntrustedFolder { .. })));
        }
        // A folder created where another user could change it is refused too.
        let e = create_trusted_dir(&base.join("o+w/new")).unwrap_err();
        assert!(matches!(e, Error::UntrustedFolder { .. }), "{e}");
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn files_of_others_or_writable_by_others_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let base = scratch("files");
        let file = base.join("entry");
        std::fs::write(&file, b"x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        check_trusted_file(&file).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o646)).unwrap();
        assert!(check_trusted_file(&file).is_err(), "writable by others");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        if is_root() {
            std::os::unix::fs::chown(&file, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
            assert!(check_trusted_file(&file).is_err(), "another user's");
        }
        let link = base.join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(check_trusted_file(&link).is_err(), "a symlink");
        let _ = std::fs::remove_dir_all(&base);
    }
}
