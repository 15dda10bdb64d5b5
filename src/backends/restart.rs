//! Restart and the crash-loop guard: every start of a (server, project root) is recorded in a
//! [`StartHistory`], whether it failed or the server initialized and exited later. The first
//! restart is immediate, later ones within [`START_WINDOW`] wait 0.2 s doubling to 2 s, and a
//! start past [`MAX_STARTS`] within the window is refused — the server is reported broken
//! ([`BackendError::Broken`], once to the editor) until `[lsp] broken_cooldown_secs` pass or
//! [`Backends::reset`] is called. [`Backends::restart`] replaces a client whose process died.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Acquired, BackendError, Backends, ClientKey, LspClient, ServerSpec};

/// Starts of one (server, root) allowed within [`START_WINDOW`] before it is reported broken.
pub const MAX_STARTS: usize = 10;
/// The window over which starts are counted (see [`MAX_STARTS`]).
pub const START_WINDOW: Duration = Duration::from_secs(30);

/// The starts of one (server, root): the crash-loop guard.
#[derive(Debug, Default)]
pub(super) struct StartHistory {
    /// When each start within the last [`START_WINDOW`] began, oldest first.
    starts: std::collections::VecDeque<Instant>,
    /// Reported broken until then.
    broken_until: Option<Instant>,
    /// The last failure: a start error, or why the last process stopped.
    last: Option<String>,
}

impl StartHistory {
    /// How long to wait before the next start (0 for the first and the first restart, then
    /// 0.2 s doubling to 2 s, counted from the previous start), or `None` when this start would
    /// be one too many: the server is then broken until `now + cooldown`.
    fn next_start(&mut self, now: Instant, cooldown: Duration) -> Option<Duration> {
        self.starts.retain(|at| now.duration_since(*at) < START_WINDOW);
        if self.starts.len() >= MAX_STARTS {
            self.broken_until = Some(now + cooldown);
            return None;
        }
        let backoff = match self.starts.len() {
            0 | 1 => Duration::ZERO,
            n => Duration::from_millis(200 << (n - 2).min(4)).min(Duration::from_secs(2)),
        };
        Some(backoff.saturating_sub(self.starts.back().map_or(backoff, |last| now.duration_since(*last))))
    }
}

/// A server reported broken (see [`BackendError::Broken`]), for `filepuff/status`.
#[derive(Debug, Clone)]
pub struct BrokenServer {
    /// The server's name (`gopls`, `[servers.NAME]`).
    pub name: String,
    /// The project root it was started in.
    pub root: PathBuf,
    /// Until it is tried again.
    pub retry_in: Duration,
    /// The last failure.
    pub last: String,
}

/// The error for a broken `spec` whose history is `entry`, tried again in `retry_in`.
fn broken(spec: &ServerSpec, entry: &StartHistory, retry_in: Duration) -> BackendError {
    BackendError::Broken {
        server: spec.name.clone(),
        starts: MAX_STARTS,
        window_secs: START_WINDOW.as_secs(),
        retry_in_secs: retry_in.as_secs_f64().ceil() as u64,
        last: entry.last.clone().unwrap_or_else(|| "it exited".to_owned()),
    }
}

impl Backends {
    /// Starts `client`'s server again in the same project root (after it died), unless it was
    /// already replaced or stopped on purpose. Returns the new client, or `None` when there is
    /// nothing to restart.
    pub fn restart(&self, client: &Arc<LspClient>) -> Option<Result<Acquired, BackendError>> {
        let key = (client.name.clone(), client.root.clone());
        {
            let mut clients = self.clients.lock();
            match clients.get(&key) {
                Some(current) if Arc::ptr_eq(current, client) => {
                    clients.remove(&key);
                }
                _ => return None,
            }
        }
        let reason = client.exit_reason().unwrap_or_else(|| "the process exited".to_owned());
        self.history.lock().entry(key).or_default().last = Some(reason);
        let spec = self.specs.iter().find(|s| s.name == client.name)?;
        let Some(program) = self.program(&spec.command[0]) else {
            return Some(Err(BackendError::NotInstalled {
                server: spec.name.clone(),
                command: spec.command[0].clone(),
                install_hint: spec.install_hint.clone(),
            }));
        };
        Some(
            self.acquire_spec(spec, program, client.root.clone())
                .map(|acquired| Acquired { restarted: true, ..acquired }),
        )
    }

    /// The servers reported broken now (see [`BackendError::Broken`]).
    pub fn broken(&self) -> Vec<BrokenServer> {
        let now = Instant::now();
        let history = self.history.lock();
        let mut out: Vec<BrokenServer> = history
            .iter()
            .filter_map(|((name, root), entry)| {
                let until = entry.broken_until.filter(|until| *until > now)?;
                Some(BrokenServer {
                    name: name.clone(),
                    root: root.clone(),
                    retry_in: until - now,
                    last: entry.last.clone().unwrap_or_default(),
                })
            })
            .collect();
        out.sort_by(|a, b| (&a.name, &a.root).cmp(&(&b.name, &b.root)));
        out
    }

    /// Whether server `name` in project `root` is reported broken now.
    pub fn is_broken(&self, name: &str, root: &Path) -> bool {
        let key = (name.to_owned(), root.to_path_buf());
        let history = self.history.lock();
        history.get(&key).and_then(|entry| entry.broken_until).is_some_and(|until| until > Instant::now())
    }

    /// An explicit restart: forgets the recent starts of server `name` (every server when
    /// `None`), broken or not, and starts again those that were broken, in the same project
    /// roots. Returns what each of them gave.
    pub fn reset(&self, name: Option<&str>) -> Vec<Result<Acquired, BackendError>> {
        let was_broken: Vec<ClientKey> = {
            let mut history = self.history.lock();
            let now = Instant::now();
            let keys: Vec<ClientKey> =
                history.keys().filter(|(n, _)| name.is_none_or(|name| n == name)).cloned().collect();
            keys.into_iter()
                .filter(|key| {
                    let entry = history.remove(key).unwrap_or_default();
                    entry.broken_until.is_some_and(|until| until > now)
                })
                .collect()
        };
        was_broken
            .into_iter()
            .filter_map(|(name, root)| {
                let spec = self.specs.iter().find(|s| s.name == name)?;
                let program = self.program(&spec.command[0])?;
                Some(self.acquire_spec(spec, program, root))
            })
            .collect()
    }

    /// The crash-loop guard, run before every start of `key` (`spec` in `root`): waits the
    /// backoff ([`StartHistory::next_start`]; a timer, so the thread of an async ask is not
    /// held) and records the start. A server started [`MAX_STARTS`] times within
    /// [`START_WINDOW`] is not started: the editor is told once ([`super::Upstream::broken`]).
    ///
    /// Errors: [`BackendError::Broken`] while the server is reported broken.
    pub(super) async fn guard_start(
        &self,
        spec: &ServerSpec,
        root: &Path,
        key: &ClientKey,
    ) -> Result<(), BackendError> {
        // The crash-loop guard, and backoff between starts (see the module documentation).
        let wait = {
            let mut history = self.history.lock();
            let entry = history.entry(key.clone()).or_default();
            let now = Instant::now();
            let cooldown = Duration::from_secs(self.config.broken_cooldown_secs);
            match entry.broken_until {
                Some(until) if now < until => return Err(broken(spec, entry, until - now)),
                Some(_) => *entry = StartHistory::default(),
                None => {}
            }
            match entry.next_start(now, cooldown) {
                Some(wait) => wait,
                None => {
                    let err = broken(spec, entry, cooldown);
                    drop(history);
                    tracing::warn!("{err}");
                    if let Some(attached) = self.attached.get() {
                        attached.upstream.broken(&spec.name, root, &err);
                    }
                    return Err(err);
                }
            }
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        self.history.lock().entry(key.clone()).or_default().starts.push_back(Instant::now());
        Ok(())
    }

    /// Records why a start of `key` failed (the `last` of [`BackendError::Broken`]).
    pub(super) fn start_failed(&self, key: ClientKey, message: String) {
        self.history.lock().entry(key).or_default().last = Some(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 16 (4): a server that initializes and then exits at once was restarted 237 times
    /// in 30 s; each start now counts, whatever became of it.
    #[test]
    fn issue_16_a_crash_loop_gets_ten_starts_in_30_s_then_is_broken() {
        let cooldown = Duration::from_secs(300);
        let mut history = StartHistory::default();
        let begin = Instant::now();
        let mut now = begin;
        let mut waits = Vec::new();
        // Each process lives 50 ms, then the next start is asked for at once.
        while let Some(wait) = history.next_start(now, cooldown) {
            waits.push(wait.as_millis());
            now += wait;
            history.starts.push_back(now);
            now += Duration::from_millis(50);
        }
        assert_eq!(waits, [0, 0, 150, 350, 750, 1550, 1950, 1950, 1950, 1950]);
        assert_eq!(history.starts.len(), MAX_STARTS);
        assert!(now - begin < START_WINDOW, "broken within the window: {:?}", now - begin);
        assert_eq!(history.broken_until, Some(now + cooldown));
        // A server that ran for a while restarts at once, and the window forgets old starts.
        let mut steady = StartHistory::default();
        steady.starts.push_back(begin);
        assert_eq!(steady.next_start(begin + Duration::from_secs(3600), cooldown), Some(Duration::ZERO));
        assert!(steady.starts.is_empty());
    }
}
