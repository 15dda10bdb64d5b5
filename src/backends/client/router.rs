//! The client's side of server→client traffic (LSP 3.17): the requests servers send —
//! `workspace/configuration` (from `[servers.NAME] settings`), `client/registerCapability`,
//! `client/unregisterCapability`, `window/workDoneProgress/create`,
//! `workspace/workspaceFolders`, `window/showMessageRequest` — answered here or by the attached
//! editor ([`Relay`]); `$/progress`, rust-analyzer's `experimental/serverStatus` and clangd's
//! `textDocument/clangd.fileStatus` tracked for readiness; `publishDiagnostics` kept; logs and
//! messages logged; everything else handed to the editor when one is attached.

use parking_lot::Mutex;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use async_lsp::router::Router;
use lsp_types::notification::{LogMessage, Progress, PublishDiagnostics, ShowMessage};
use lsp_types::request::{
    RegisterCapability, ShowMessageRequest, UnregisterCapability, WorkDoneProgressCreate, WorkspaceConfiguration,
    WorkspaceFoldersRequest,
};
use lsp_types::{NumberOrString, ProgressParamsValue, WorkDoneProgress};
use serde_json::Value;

use super::{ClientRef, Lenient, Shared, Work, decode, lock};

/// rust-analyzer's status notification (its `experimental/serverStatus` extension).
enum ServerStatus {}

impl lsp_types::notification::Notification for ServerStatus {
    type Params = Value;
    const METHOD: &'static str = "experimental/serverStatus";
}

/// clangd's per-file status notification (its `textDocument/clangd.fileStatus` extension).
enum ClangdFileStatus {}

impl lsp_types::notification::Notification for ClangdFileStatus {
    type Params = Value;
    const METHOD: &'static str = "textDocument/clangd.fileStatus";
}

/// The router's handle on the editor side: hands server→client traffic to the attached
/// [`crate::backends::Upstream`], or does nothing when none is attached.
#[derive(Clone)]
pub(super) struct Relay {
    pub(super) link: Option<Arc<dyn crate::backends::Upstream>>,
    pub(super) me: ClientRef,
}

pub(super) type Answer<T> = futures::future::BoxFuture<'static, Result<T, async_lsp::ResponseError>>;

fn ok<T: Send + 'static>(value: T) -> Answer<T> {
    Box::pin(std::future::ready(Ok(value)))
}

impl Relay {
    fn notify<N: lsp_types::notification::Notification>(&self, params: &N::Params) {
        if let Some(link) = &self.link {
            match serde_json::to_value(params) {
                Ok(params) => link.notification(&self.me, N::METHOD, params),
                Err(err) => tracing::warn!("cannot relay {}: {err}", N::METHOD),
            }
        }
    }

    fn notify_any(&self, method: &str, params: Value) {
        if let Some(link) = &self.link {
            link.notification(&self.me, method, params);
        }
    }

    /// The editor's answer to a typed request, or `None` without an editor.
    fn request<R>(&self, params: R::Params) -> Option<Answer<R::Result>>
    where
        R: lsp_types::request::Request,
        R::Result: Send + 'static,
    {
        let params = serde_json::to_value(params).ok()?;
        let answer = self.request_any(R::METHOD.to_owned(), params)?;
        Some(Box::pin(async move {
            let value = answer.await?;
            serde_json::from_value(value).map_err(|err| {
                async_lsp::ResponseError::new(
                    async_lsp::ErrorCode::INTERNAL_ERROR,
                    format!("the editor's answer to {} is malformed: {err}", R::METHOD),
                )
            })
        }))
    }

    fn request_any(&self, method: String, params: Value) -> Option<Answer<Value>> {
        let link = self.link.as_ref()?;
        Some(link.request(&self.me, &method, params))
    }
}

const WATCHED_FILES: &str = "workspace/didChangeWatchedFiles";

/// Keeps the `workspace/didChangeWatchedFiles` registrations of `params` for filepuff's watcher
/// (the editor side absorbs them). One that cannot be used is logged and skipped; the
/// registration is still answered with success (gopls aborts on an error reply).
fn keep_watched_files(state: &Arc<Mutex<Shared>>, server: &str, params: &lsp_types::RegistrationParams) {
    let mut shared = lock(state);
    for registration in params.registrations.iter().filter(|r| r.method == WATCHED_FILES) {
        let options = registration.register_options.clone().unwrap_or(Value::Null);
        match shared.watched.register(&registration.id, &options) {
            Ok(()) => tracing::debug!(server, id = %registration.id, %options, "watched files registered"),
            Err(err) => tracing::warn!(server, id = %registration.id, "{err}"),
        }
    }
}

/// The router of a client's main loop over `state` (shared with the client handle).
/// `published` is told the URI of a document whose published diagnostics changed.
pub(super) fn server_router(
    state: Arc<Mutex<Shared>>,
    up: Relay,
    published: Option<tokio::sync::broadcast::Sender<lsp_types::Url>>,
) -> Router<Arc<Mutex<Shared>>> {
    let mut router = Router::new(state);
    router
        .request::<WorkspaceConfiguration, _>({
            let up = up.clone();
            move |state, params| {
                let settings = lock(state).settings.clone();
                if settings.is_null()
                    && let Some(forward) = up.request::<WorkspaceConfiguration>(params.clone())
                {
                    return forward;
                }
                let answers: Vec<Value> = params
                    .items
                    .iter()
                    .map(|item| match &item.section {
                        Some(section) => lookup(&settings, section),
                        None => settings.clone(),
                    })
                    .collect();
                Box::pin(std::future::ready(Ok(answers)))
            }
        })
        .request::<RegisterCapability, _>({
            let up = up.clone();
            move |state, params| {
                keep_watched_files(state, &up.me.name, &params);
                up.request::<RegisterCapability>(params).unwrap_or_else(|| ok(()))
            }
        })
        .request::<UnregisterCapability, _>({
            let up = up.clone();
            move |state, params| {
                {
                    let mut shared = lock(state);
                    for gone in &params.unregisterations {
                        if gone.method == WATCHED_FILES {
                            shared.watched.unregister(&gone.id);
                        }
                    }
                }
                up.request::<UnregisterCapability>(params).unwrap_or_else(|| ok(()))
            }
        })
        .request::<WorkDoneProgressCreate, _>({
            let up = up.clone();
            move |_, params| up.request::<WorkDoneProgressCreate>(params).unwrap_or_else(|| ok(()))
        })
        .request::<WorkspaceFoldersRequest, _>(|state, _| std::future::ready(Ok(Some(lock(state).folders.clone()))))
        .request::<ShowMessageRequest, _>({
            let up = up.clone();
            move |_, params| {
                up.request::<ShowMessageRequest>(params.clone()).unwrap_or_else(|| {
                    tracing::info!("server asks: {}", params.message);
                    ok(None)
                })
            }
        })
        .notification::<Lenient<Progress>>({
            let up = up.clone();
            move |state, params| {
                let Some(params) = decode::<Progress>(params) else { return ControlFlow::Continue(()) };
                let token = match &params.token {
                    NumberOrString::Number(n) => n.to_string(),
                    NumberOrString::String(s) => s.clone(),
                };
                // The progress of one of filepuff's own requests: not background work, and
                // no editor knows the token.
                if token.starts_with(super::ASK_TOKEN_PREFIX) {
                    return ControlFlow::Continue(());
                }
                {
                    let mut shared = lock(state);
                    match &params.value {
                        ProgressParamsValue::WorkDone(WorkDoneProgress::Begin(_)) => {
                            shared.progress_begun += 1;
                            let work = Work { seq: shared.progress_begun, background: shared.in_flight == 0 };
                            shared.active_progress.insert(token, work);
                        }
                        ProgressParamsValue::WorkDone(WorkDoneProgress::End(_)) => {
                            shared.active_progress.remove(&token);
                        }
                        ProgressParamsValue::WorkDone(WorkDoneProgress::Report(_)) => {}
                    }
                    shared.last_progress = Some(Instant::now());
                    shared.signal.bump();
                }
                up.notify::<Progress>(&params);
                ControlFlow::Continue(())
            }
        })
        .notification::<Lenient<PublishDiagnostics>>({
            let up = up.clone();
            move |state, params| {
                let Some(params) = decode::<PublishDiagnostics>(params) else {
                    return ControlFlow::Continue(());
                };
                up.notify::<PublishDiagnostics>(&params);
                tracing::debug!(
                    uri = %params.uri,
                    version = ?params.version,
                    count = params.diagnostics.len(),
                    "publishDiagnostics"
                );
                let uri = params.uri.clone();
                let mut shared = lock(state);
                let now = Instant::now();
                if params.version.is_some() {
                    shared.versioned_at.insert(params.uri.clone(), now);
                }
                let previous = shared.diagnostics.insert(params.uri, (params.version, params.diagnostics.clone(), now));
                drop(shared);
                if let Some(published) = &published
                    && previous.is_none_or(|(_, before, _)| before != params.diagnostics)
                {
                    let _ = published.send(uri);
                }
                ControlFlow::Continue(())
            }
        })
        .notification::<ServerStatus>(|state, params| {
            let mut shared = lock(state);
            shared.quiescent = params.get("quiescent").and_then(Value::as_bool);
            shared.last_progress = Some(Instant::now());
            shared.signal.bump();
            ControlFlow::Continue(())
        })
        .notification::<ClangdFileStatus>(|state, params| {
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or_default().to_owned();
            let status = params.get("state").and_then(Value::as_str).unwrap_or("idle").to_owned();
            let mut shared = lock(state);
            if status == "idle" {
                shared.file_status.remove(&uri);
            } else {
                shared.file_status.insert(uri, status);
            }
            shared.last_progress = Some(Instant::now());
            shared.signal.bump();
            ControlFlow::Continue(())
        })
        .notification::<Lenient<LogMessage>>({
            let up = up.clone();
            move |_, params| {
                let Some(params) = decode::<LogMessage>(params) else { return ControlFlow::Continue(()) };
                tracing::debug!("server log: {}", params.message);
                up.notify::<LogMessage>(&params);
                ControlFlow::Continue(())
            }
        })
        .notification::<Lenient<ShowMessage>>({
            let up = up.clone();
            move |_, params| {
                let Some(params) = decode::<ShowMessage>(params) else { return ControlFlow::Continue(()) };
                tracing::info!("server message: {}", params.message);
                up.notify::<ShowMessage>(&params);
                ControlFlow::Continue(())
            }
        })
        .unhandled_notification({
            let up = up.clone();
            move |_, notification| {
                tracing::trace!("notification {}", notification.method);
                up.notify_any(&notification.method, notification.params);
                ControlFlow::Continue(())
            }
        })
        .unhandled_request(move |_, request| {
            let method = request.method.clone();
            up.request_any(request.method, request.params).unwrap_or_else(|| {
                Box::pin(std::future::ready(Err(async_lsp::ResponseError::new(
                    async_lsp::ErrorCode::METHOD_NOT_FOUND,
                    format!("filepuff does not handle {method}"),
                ))))
            })
        });
    router
}

/// `settings` at a dotted `section` (`gopls`, `python.analysis`), or null.
fn lookup(settings: &Value, section: &str) -> Value {
    let mut current = settings;
    for part in section.split('.') {
        match current.get(part) {
            Some(next) => current = next,
            None => return Value::Null,
        }
    }
    current.clone()
}
