//! How the faces meet without importing each other: the LSP face (`proxy`) hosts agents through
//! an [`AgentDoor`] that the composition root (`cli.rs`) builds from the MCP face
//! (`mcp::attach::SocketDoor`, the workspace's Unix socket).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;

use super::Engine;

/// Where agents meet an editor session: given to the LSP face (`proxy`) by the composition
/// root (`cli.rs` wires the MCP face's Unix socket, `mcp::attach::SocketDoor`), so neither face
/// imports the other. The LSP face announces its session at `initialize` and opens the door
/// once the editor has settled.
pub trait AgentDoor: Send + Sync + 'static {
    /// Announces an editor session of `engine` (agents of a previous session wait for it).
    fn announce(&self, engine: Arc<Engine>) -> Box<dyn AnnouncedDoor>;
    /// Where agents attach for the workspace `root` (shown in `filepuff/status`).
    fn address(&self, root: &Path) -> PathBuf;
}

/// An announced session's door, not open yet.
pub trait AnnouncedDoor: Send + 'static {
    /// Opens it: serves agents (taking the address over from a previous session when needed)
    /// until the returned door is dropped.
    fn open(self: Box<Self>) -> BoxFuture<'static, Box<dyn OpenDoor>>;
}

/// A door serving agents; dropping it closes it.
pub trait OpenDoor: Send + Sync + 'static {
    /// Whether this session serves agents now (it may have lost the address to another).
    fn is_serving(&self) -> bool;
}
