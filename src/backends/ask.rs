//! [`Backends::ask`]: the one way a tool asks a language server about a document (issue 15,
//! DESIGN.md "The Engine API").
//!
//! In order: the server for the document's language and project root is acquired (started or
//! restarted if needed); the document is synced with the text the tool read (the open buffer,
//! else the disk) under its canonical URI, with every other open document that server serves;
//! a request that needs the server's index waits until the server reports none of the work it
//! would wait for ([`LspClient::wait_ready`]: background progress, rust-analyzer's
//! `serverStatus`, clangd's `fileStatus` — never a request's own progress pair, and no fixed
//! quiet wait once the server has settled after its start); the request is sent; it is sent once
//! more when the answer was `ContentModified`, or when background work began during it and
//! outlived it (the answer may be partial); a crash or a timeout (the timed-out request is
//! cancelled by the client) discards the server and asks a fresh one, once.
//!
//! The path is async ([`Backends::ask_async`]): a tool may await it on the MCP session's own
//! thread, which (for `filepuff mcp`) also reads the servers' answers, so nothing on it waits by
//! blocking: a running server is had at once, a start is awaited, the crash-loop backoff is a
//! timer. [`Backends::ask`] and [`Backends::ask_within`] are its synchronous face.
//!
//! Which of the language's servers is asked is [`super::route`]'s rule (issue 20); a cancelled
//! call ([`crate::cancel::CancelFlag`]) cancels its request at the server at once and is
//! neither retried nor a reason to restart the server.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lsp_types::Url;
use ropey::Rope;

use super::{Acquired, BackendError, Backends, LspClient, route};
use crate::cancel::CancelFlag;
use crate::documents::Language;
use crate::workspace::DocumentId;

/// What a request needs of the server before it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// The document synced (hover, definition of a symbol in the file, document symbols).
    Document,
    /// The project indexed (references, definitions in other files, call hierarchy, workspace
    /// symbols, diagnostics).
    Index,
}

/// A question about one document.
#[derive(Debug, Clone)]
pub struct Question<'a> {
    pub id: &'a DocumentId,
    pub language: Language,
    /// The LSP method asked (`textDocument/definition`, …): which server answers it is decided
    /// by [`super::route`]. A method without a capability field (`textDocument/publishDiagnostics`
    /// for the pushed diagnostics) goes to the first server of the routing order.
    pub method: &'static str,
    /// The document's current text (what the tool read: the open buffer, else the disk).
    pub text: &'a Rope,
    pub needs: Needs,
}

/// How complete an answer is known to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completeness {
    /// The server reported no work in progress that the request needed.
    Complete,
    /// The server reported work in progress when it answered.
    Indexing,
    /// The server was still busy when `[lsp] ready_timeout_ms` ran out; it was asked anyway.
    TimedOut,
}

impl Completeness {
    /// `complete`, `indexing` or `timed_out`: the `completeness` of tool results.
    pub fn as_str(self) -> &'static str {
        match self {
            Completeness::Complete => "complete",
            Completeness::Indexing => "indexing",
            Completeness::TimedOut => "timed_out",
        }
    }
}

/// The part of the ask path on the backends' runtime, for a client already had (the graph's
/// calls pass asks many files of one server concurrently): syncs `documents`, waits for
/// readiness when `needs` the index (at most `ready_limit`), awaits `first`, and awaits `second`
/// (the same request built again) when the answer was `ContentModified` or background work began
/// during it and outlived it. Returns the value and its completeness.
///
/// Errors: the sync's and the request's [`BackendError`]s (a crash or timeout is the caller's to
/// retry on a fresh server).
pub async fn ask_on<T, Fut>(
    client: &LspClient,
    documents: Vec<(Url, String, Rope)>,
    target: &Url,
    needs: Needs,
    ready_limit: Duration,
    first: Fut,
    second: Fut,
) -> Result<(T, Completeness), BackendError>
where
    Fut: Future<Output = Result<T, BackendError>>,
{
    let needs_index = needs == Needs::Index;
    let deadline = tokio::time::Instant::now() + ready_limit;
    for (uri, language_id, text) in documents {
        client.sync(&uri, &language_id, &text).await?;
    }
    let mut ready = !needs_index || client.wait_ready(Some(target), ready_limit).await;
    let mark = client.progress_mark();
    let mut result = first.await;
    let modified = matches!(result, Err(BackendError::ContentModified { .. }));
    let outlived = needs_index && result.is_ok() && client.work_began_since(mark);
    if modified || outlived {
        if outlived {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            ready = client.wait_ready(Some(target), left).await;
        }
        if modified || ready {
            result = second.await;
        }
    }
    let value = result?;
    let completeness = if !ready {
        Completeness::TimedOut
    } else if needs_index && client.busy_for(Some(target)) {
        Completeness::Indexing
    } else {
        Completeness::Complete
    };
    Ok((value, completeness))
}

/// A server's answer and how it was had.
#[derive(Debug)]
pub struct Answered<T> {
    pub value: T,
    /// The server that answered (its encoding converts the answer's positions).
    pub client: Arc<LspClient>,
    /// A dead server was replaced on the way.
    pub restarted: bool,
    pub completeness: Completeness,
}

/// Whether an answer says nothing ([`route::is_empty_answer`] of its JSON form).
fn is_empty<T: serde::Serialize>(value: &T) -> bool {
    serde_json::to_value(value).is_ok_and(|json| route::is_empty_answer(&json))
}

/// One server's name and its answer, from [`Backends::ask_each`].
pub type EachAnswer<T> = (String, Result<Answered<T>, BackendError>);

impl Backends {
    /// Asks the server for `question.id`'s language and project the request `make` builds
    /// (given the client, so positions can be converted to its encoding), as the module
    /// documentation describes. Blocks: call it from a tool's thread (never from a task of the
    /// backends' runtime; a task awaits [`Backends::ask_async`]).
    ///
    /// Errors: [`BackendError::NoServer`], [`BackendError::NotInstalled`],
    /// [`BackendError::StartFailed`]; [`BackendError::Crashed`] or [`BackendError::Timeout`]
    /// when a fresh server failed too; [`BackendError::Server`] (the server's own error),
    /// [`BackendError::ContentModified`] when it said so twice.
    pub fn ask<T, F, Fut>(&self, question: Question<'_>, make: F) -> Result<Answered<T>, BackendError>
    where
        T: serde::Serialize,
        F: Fn(Arc<LspClient>) -> Fut,
        Fut: Future<Output = Result<T, BackendError>>,
    {
        self.ask_within(question, Duration::from_millis(self.config.ready_timeout_ms), make)
    }

    /// [`Backends::ask`] with the wait for readiness bounded by `ready_limit` instead of
    /// `[lsp] ready_timeout_ms` (the diagnostics after an edit wait `[lsp]
    /// edit_diagnostics_timeout_ms`). Starting the server (spawn and `initialize`) is not part of
    /// that wait; it is bounded by `[lsp] request_timeout_ms`.
    ///
    /// Which server: the language's servers in the order [`super::route`] decides for
    /// `question.method`, skipping those that do not offer it (when none does, the last one is
    /// asked, and its own error says so); for a single-answer method, an error or an empty
    /// answer lets the next one answer (when none answers well: the first empty answer, else the
    /// first error). [`Answered::client`] is the server that answered.
    ///
    /// Cancellation: when the calling thread's [`CancelFlag`] is raised (an agent's
    /// `notifications/cancelled`), the request in flight is cancelled at the server at once
    /// (`$/cancelRequest`) and [`BackendError::Cancelled`] returned: not retried, and the
    /// server is not restarted.
    ///
    /// Errors: as [`Backends::ask`].
    pub fn ask_within<T, F, Fut>(
        &self,
        question: Question<'_>,
        ready_limit: Duration,
        make: F,
    ) -> Result<Answered<T>, BackendError>
    where
        T: serde::Serialize,
        F: Fn(Arc<LspClient>) -> Fut,
        Fut: Future<Output = Result<T, BackendError>>,
    {
        self.block_on(self.ask_async(question, ready_limit, &CancelFlag::current(), make))
    }

    /// [`Backends::ask_within`], awaited: the ask path itself. Polled on the session's thread by
    /// a tool that runs there (no thread is crossed but the servers' own), or by the sync
    /// wrapper on the caller's. Cancelled when `cancel` is raised.
    ///
    /// Errors: as [`Backends::ask`].
    pub async fn ask_async<T, F, Fut>(
        &self,
        question: Question<'_>,
        ready_limit: Duration,
        cancel: &CancelFlag,
        make: F,
    ) -> Result<Answered<T>, BackendError>
    where
        T: serde::Serialize,
        F: Fn(Arc<LspClient>) -> Fut,
        Fut: Future<Output = Result<T, BackendError>>,
    {
        let method = question.method;
        let servers = self.ordered_servers(&question)?;
        if servers.is_empty() {
            // `[languages.NAME] navigation` names no installed server.
            return Err(BackendError::NoServer { language: question.language.name() });
        }
        let single = route::is_single_answer(method);
        let mut fallback: Option<Result<Answered<T>, BackendError>> = None;
        let mut asked = false;
        let last = servers.len() - 1;
        for (index, (spec, program)) in servers.into_iter().enumerate() {
            let acquired = match self.acquire_for(spec, program, &question).await {
                Ok(acquired) => acquired,
                Err(err) => {
                    fallback.get_or_insert(Err(err));
                    continue;
                }
            };
            if !route::offers(&acquired.client.capabilities_json, method) && (asked || index < last) {
                continue;
            }
            asked = true;
            let answer = self.ask_server(&question, spec, acquired, ready_limit, cancel, &make).await;
            // Whether the answer is empty matters only when a later server may answer instead, or
            // an earlier empty answer would be returned before it (the first one is).
            let may_pass = index < last || matches!(fallback, Some(Ok(_)));
            match answer {
                Ok(answered) if single && may_pass && is_empty(&answered.value) => {
                    if !matches!(fallback, Some(Ok(_))) {
                        fallback = Some(Ok(answered));
                    }
                }
                Ok(answered) => return Ok(answered),
                Err(err @ BackendError::Cancelled { .. }) => return Err(err),
                Err(err) if single => {
                    if !matches!(fallback, Some(Ok(_)) | Some(Err(BackendError::Server { .. }))) {
                        fallback = Some(Err(err));
                    }
                }
                Err(err) => return Err(err),
            }
        }
        fallback.unwrap_or(Err(BackendError::NoServer { language: question.language.name() }))
    }

    /// Asks every server of `question.language` that offers `question.method` (a merged method:
    /// diagnostics, where each server — a type checker and a linter — reports its own), all at
    /// once within one `ready_limit` (a start, the wait for readiness and the answer of one do
    /// not wait for another's: the slowest sets the time, not their sum). Each answer or error
    /// is returned with its server's name, in the order [`super::route`] gives. Blocks as
    /// [`Backends::ask`] does.
    ///
    /// Errors: as [`Backends::ask`] when no server of the language can be started at all (the
    /// per-server errors are in the list otherwise); [`BackendError::Cancelled`] when the
    /// call was cancelled.
    pub fn ask_each<T, F, Fut>(
        &self,
        question: Question<'_>,
        ready_limit: Duration,
        make: F,
    ) -> Result<Vec<EachAnswer<T>>, BackendError>
    where
        F: Fn(Arc<LspClient>) -> Fut,
        Fut: Future<Output = Result<T, BackendError>>,
    {
        let method = question.method;
        let servers = self.ordered_servers(&question)?;
        let cancel = CancelFlag::current();
        let deadline = std::time::Instant::now() + ready_limit;
        let (question, cancel, make) = (&question, &cancel, &make);
        let asks = servers.into_iter().map(|(spec, program)| async move {
            let acquired = match self.acquire_for(spec, program, question).await {
                Ok(acquired) => acquired,
                Err(err) => return (spec.name.clone(), Err(err)),
            };
            if !route::offers(&acquired.client.capabilities_json, method) {
                return (spec.name.clone(), Ok(None));
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            (spec.name.clone(), self.ask_server(question, spec, acquired, left, cancel, make).await.map(Some))
        });
        let mut answers = Vec::new();
        for (name, answer) in self.block_on(futures::future::join_all(asks)) {
            match answer {
                Ok(None) => {}
                Ok(Some(answered)) => answers.push((name, Ok(answered))),
                Err(err @ BackendError::Cancelled { .. }) => return Err(err),
                Err(err) => answers.push((name, Err(err))),
            }
        }
        if answers.iter().all(|(_, answer)| answer.is_err()) {
            return match answers.into_iter().next() {
                Some((_, Err(err))) => Err(err),
                _ => Err(BackendError::NoServer { language: question.language.name() }),
            };
        }
        Ok(answers)
    }

    /// The installed servers of `question.language`, each with its program, in the order
    /// [`super::route`] gives for `question.method`.
    ///
    /// Errors: as [`Backends::specs_for`].
    fn ordered_servers(&self, question: &Question<'_>) -> Result<Vec<(&super::ServerSpec, PathBuf)>, BackendError> {
        let servers = self.specs_for(question.language)?;
        Ok(self.answer_order(Some(question.language), question.method, servers, |(spec, _)| spec.name.as_str()))
    }

    /// The running client of `spec` (its `program`) for the project `question`'s document
    /// belongs to, started if needed ([`Backends::acquire_async`]).
    async fn acquire_for(
        &self,
        spec: &super::ServerSpec,
        program: PathBuf,
        question: &Question<'_>,
    ) -> Result<Acquired, BackendError> {
        self.acquire_async(spec, program, self.project_root(spec, question.id.path())).await
    }

    /// Asks one server (`acquired`, started from `spec`): sync, readiness, the request; a crash
    /// or a timeout discards it and asks a fresh one, once; a raised `cancel` ends the request at
    /// the server and returns [`BackendError::Cancelled`].
    async fn ask_server<T, F, Fut>(
        &self,
        question: &Question<'_>,
        spec: &super::ServerSpec,
        acquired: Acquired,
        ready_limit: Duration,
        cancel: &CancelFlag,
        make: &F,
    ) -> Result<Answered<T>, BackendError>
    where
        F: Fn(Arc<LspClient>) -> Fut,
        Fut: Future<Output = Result<T, BackendError>>,
    {
        let mut acquired = Some(acquired);
        let mut restarted = false;
        let mut last_error = None;
        for attempt in 0..2 {
            let Acquired { client, restarted: was_restarted } = match acquired.take() {
                Some(acquired) => acquired,
                None => {
                    let program = self.program(&spec.command[0]).ok_or_else(|| BackendError::NotInstalled {
                        server: spec.name.clone(),
                        command: spec.command[0].clone(),
                        install_hint: spec.install_hint.clone(),
                    })?;
                    self.acquire_for(spec, program, question).await?
                }
            };
            restarted |= was_restarted || attempt > 0;
            let uri = question.id.uri();
            let documents = self.documents_to_sync(&client, question);
            let (first, second) = (make(client.clone()), make(client.clone()));
            let outcome = tokio::select! {
                // Dropping the ask drops the request's future, which sends `$/cancelRequest`.
                _ = cancel.cancelled() => Err(BackendError::Cancelled { server: client.name.clone() }),
                outcome = ask_on(&client, documents, &uri, question.needs, ready_limit, first, second) => outcome,
            };
            match outcome {
                Ok((value, completeness)) => return Ok(Answered { value, client, restarted, completeness }),
                Err(err @ (BackendError::Crashed { .. } | BackendError::Timeout { .. })) => {
                    if attempt == 0 {
                        tracing::warn!("{err}; restarting the server and asking once more");
                    }
                    self.discard_async(&client).await;
                    last_error = Some(err);
                }
                Err(err) => return Err(err),
            }
        }
        Err(last_error.unwrap_or(BackendError::Crashed { server: String::new(), message: String::new() }))
    }

    /// Waits (at most `[lsp] ready_timeout_ms`) until `client` is ready for a request that needs
    /// its index and not about one document (`workspace/symbol`); see
    /// [`LspClient::wait_ready`]. Returns whether it became ready.
    pub fn wait_ready(&self, client: &Arc<LspClient>) -> bool {
        let limit = Duration::from_millis(self.config.ready_timeout_ms);
        let worker = client.clone();
        self.run(async move { worker.wait_ready(None, limit).await })
    }

    /// The documents to sync before asking `client` about `question`: the document itself (its
    /// text as the tool read it) and every other open document that server serves (a server
    /// answers about a project from what it holds; an unsaved buffer elsewhere changes the
    /// answer), under their canonical URIs.
    fn documents_to_sync(&self, client: &LspClient, question: &Question<'_>) -> Vec<(Url, String, Rope)> {
        let mut out = vec![(question.id.uri(), question.language.lsp_id().to_owned(), question.text.clone())];
        let key = (client.name.clone(), client.root.clone());
        for id in self.documents.open_ids() {
            if id == *question.id {
                continue;
            }
            let Some(document) = self.documents.get(&id) else { continue };
            let language = Language::from_name(&document.language_id).or_else(|| Language::from_path(id.path()));
            if self.serving(&id, language).contains(&key) {
                out.push((id.uri(), document.language_id, document.text));
            }
        }
        out
    }
}
