//! Stopping cleanly on a signal: every face that leaves files behind (the agent socket and
//! presence file of `filepuff lsp`, the token file of `serve --http`) waits on [`stop_signal`]
//! beside its work and cleans up when it resolves.

/// Resolves when the process gets SIGTERM or SIGINT (or never, if they cannot be watched).
pub async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}
