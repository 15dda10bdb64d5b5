//! Cancellation of a tool call's work: a flag the face raises (MCP `notifications/cancelled`,
//! a client gone) and the long loops check (the walks of searches and structural queries, per
//! file), so that a cancelled call stops using CPU instead of finishing unseen.
//!
//! Tools are plain functions `(&Engine, Params) -> Result`; rather than threading a flag
//! through every signature, the face runs the call inside [`CancelFlag::scope`] on the tool's
//! thread, and a loop takes [`CancelFlag::current`] when it starts (on that thread) and hands it
//! to its worker threads. Outside a scope (the CLI, the LSP face) the current flag is never
//! raised.

use std::cell::RefCell;

use tokio_util::sync::CancellationToken;

/// A cancellation flag shared by a call's face and its loops. Cloning is O(1); all clones see
/// one flag. A request to a language server awaits [`CancelFlag::cancelled`] beside its answer,
/// so a cancelled call cancels it at the server at once (`Backends::ask`).
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(CancellationToken);

thread_local! {
    static CURRENT: RefCell<Option<CancelFlag>> = const { RefCell::new(None) };
}

impl CancelFlag {
    /// A flag not raised yet.
    pub fn new() -> CancelFlag {
        CancelFlag::default()
    }

    /// Raises the flag: loops checking it stop at their next check.
    pub fn cancel(&self) {
        self.0.cancel();
    }

    /// Whether the flag was raised.
    pub fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Completes when the flag is raised (at once if it was already).
    pub async fn cancelled(&self) {
        self.0.cancelled().await;
    }

    /// The flag of the call running on this thread ([`CancelFlag::scope`]), or a flag nobody
    /// raises.
    pub fn current() -> CancelFlag {
        CURRENT.with(|current| current.borrow().clone()).unwrap_or_default()
    }

    /// Runs `work` with `self` as this thread's [`CancelFlag::current`], restoring the previous
    /// one afterwards (also when `work` panics).
    pub fn scope<R>(&self, work: impl FnOnce() -> R) -> R {
        struct Restore(Option<CancelFlag>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|current| *current.borrow_mut() = previous);
            }
        }
        let previous = CURRENT.with(|current| current.replace(Some(self.clone())));
        let _restore = Restore(previous);
        work()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scope_sets_and_restores_the_current_flag() {
        assert!(!CancelFlag::current().is_cancelled());
        let flag = CancelFlag::new();
        flag.scope(|| {
            let seen = CancelFlag::current();
            assert!(!seen.is_cancelled());
            flag.cancel();
            assert!(seen.is_cancelled());
        });
        assert!(!CancelFlag::current().is_cancelled());
    }
}
