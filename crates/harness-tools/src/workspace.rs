//! `Workspace`: the one directory a tool may touch.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use harness_core::{Error, Result};

use crate::error;

/// The one directory a tool may touch.
///
/// Every path a model sends is resolved here first: one that lands outside the root (`..`,
/// an absolute path elsewhere, a symlink inside pointing out, a symlinked directory) is
/// an error of kind [`Workspace`](harness_core::ErrorKind::Workspace) before any read or write
/// happens.
///
/// The check is not the only guard. Every read, write and listing then goes through a
/// directory handle on the root (`cap-std`, which on Linux opens with `RESOLVE_BENEATH`), so a
/// symlink swapped in between the check and the open cannot escape either.
///
/// What it does not do: a hard link inside the root to a file elsewhere is the same file, so
/// it can be read and written through the workspace (making one needs access outside the
/// root in the first place). The workspace bounds paths, not inodes, and the shell tool
/// bounds nothing but its starting directory.
///
/// ```
/// use harness_tools::Workspace;
///
/// let dir = std::env::temp_dir();
/// let workspace = Workspace::new(&dir)?;
/// let refused = workspace.resolve("../../etc/passwd").unwrap_err();
/// assert_eq!(refused.kind(), harness_core::ErrorKind::Workspace);
/// # Ok::<(), harness_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    dir: Arc<Dir>,
}

impl Workspace {
    /// A workspace rooted at `root`, which must be an existing directory.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error when it is not.
    pub fn new(root: impl AsRef<Path>) -> Result<Self> {
        let given = root.as_ref();
        let root = std::fs::canonicalize(given)
            .ok()
            .filter(|r| r.is_dir())
            .ok_or_else(|| {
                Error::configuration(format!(
                    "workspace root {} is not an existing directory",
                    given.display()
                ))
            })?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority()).map_err(|e| {
            Error::configuration(format!(
                "cannot open workspace root {}: {e}",
                root.display()
            ))
        })?;
        Ok(Self {
            root,
            dir: Arc::new(dir),
        })
    }

    /// The root, absolute and with symlinks resolved.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path `path` names inside the workspace.
    ///
    /// # Errors
    /// A [`Workspace`](harness_core::ErrorKind::Workspace) error when it lands outside; an
    /// [`Io`](harness_core::ErrorKind::Io) error for a symlink loop.
    pub fn resolve(&self, path: &str) -> Result<PathBuf> {
        self.inside(path).map(|rel| self.root.join(rel))
    }

    /// A path as the model should see it: relative to the root, with `/` separators, `.` for
    /// the root itself.
    pub fn relative(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        let shown = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if shown.is_empty() {
            ".".to_owned()
        } else {
            shown
        }
    }

    /// The path relative to the root, with symlinks of its existing part resolved; refused
    /// when it leaves the root.
    pub(crate) fn inside(&self, path: &str) -> Result<PathBuf> {
        let outside = || error::outside(path, &self.root);
        let given = Path::new(path);
        let relative = if given.is_absolute() {
            given.strip_prefix(&self.root).map_err(|_| outside())?
        } else {
            given
        };
        // Lexically first: `..` may not climb above the root.
        let mut lexical = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => lexical.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !lexical.pop() {
                        return Err(outside());
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(outside()),
            }
        }
        // Then through the file system: the longest existing prefix is canonicalised beneath
        // the root (cap-std refuses a symlink that leads out); the rest is appended.
        let mut existing = lexical.clone();
        let mut rest = Vec::new();
        loop {
            if existing.as_os_str().is_empty() {
                break;
            }
            match self.dir.canonicalize(&existing) {
                Ok(canonical) => {
                    let mut resolved = canonical;
                    resolved.extend(rest.iter().rev());
                    return Ok(resolved);
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let Some(name) = existing.file_name().map(ToOwned::to_owned) else {
                        break;
                    };
                    rest.push(name);
                    existing.pop();
                }
                Err(e) if escapes(&e) => return Err(outside()),
                Err(source) => return Err(error::io(path, source)),
            }
        }
        let mut resolved = PathBuf::new();
        resolved.extend(rest.iter().rev());
        Ok(resolved)
    }

    /// The directory handle every operation goes through.
    pub(crate) fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Reads a file's bytes.
    ///
    /// # Errors
    /// A [`Workspace`](harness_core::ErrorKind::Workspace) or [`Io`](harness_core::ErrorKind::Io)
    /// error.
    pub fn read(&self, path: &str) -> Result<Vec<u8>> {
        let rel = self.inside(path)?;
        self.dir.read(&rel).map_err(|e| self.io(path, e))
    }

    /// Writes a file, creating its parent directories; returns whether it existed before.
    ///
    /// # Errors
    /// A [`Workspace`](harness_core::ErrorKind::Workspace) or [`Io`](harness_core::ErrorKind::Io)
    /// error.
    pub fn write(&self, path: &str, contents: &[u8]) -> Result<bool> {
        let rel = self.inside(path)?;
        if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.dir
                .create_dir_all(parent)
                .map_err(|e| self.io(path, e))?;
        }
        let existed = self.dir.exists(&rel);
        self.dir
            .write(&rel, contents)
            .map_err(|e| self.io(path, e))?;
        Ok(existed)
    }

    /// An I/O error on `path`; one that means a path escaped at open time is a
    /// [`Workspace`](harness_core::ErrorKind::Workspace) error.
    pub(crate) fn io(&self, path: &str, source: io::Error) -> Error {
        if escapes(&source) {
            error::outside(path, &self.root)
        } else {
            error::io(path, source)
        }
    }
}

/// True for cap-std's refusal of a path that leads outside the directory.
fn escapes(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::PermissionDenied
        && error.to_string().contains("outside of the filesystem")
}
