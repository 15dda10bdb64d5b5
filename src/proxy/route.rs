//! Request routing: which server answers an editor request, and how answers are merged.
//!
//! - A request about a document (`params.textDocument.uri`, or a hierarchy item's `uri`) goes
//!   to the servers of that document's language. Completion and code actions are asked of every
//!   server that offers them and merged; every other method goes to the servers that offer it
//!   (its capability, LSP 3.17 "Server Capabilities", or a registration it made later, as ruff
//!   does for formatting) in the order `backends::route` decides (full servers before linters,
//!   or `[languages.NAME] navigation`), the next one asked on `MethodNotFound` and, for a
//!   single-answer method (definition, hover, rename, …), on an error or an empty answer.
//! - `workspace/symbol` is asked of every running server and merged;
//!   `workspace/executeCommand` goes to the server that offered or registered the command.
//! - Items a later request hands back (completion items, code actions, code lenses, inlay hints,
//!   document links, workspace symbols, call/type hierarchy items) get their `data` wrapped as
//!   `{"filepuff": SERIAL, "data": ORIGINAL}`, so `*/resolve` and the hierarchy requests go back
//!   to the server instance that made them, with the original `data`. A completion list's
//!   `itemDefaults.data` is wrapped in place of the items relying on it, and merged lists
//!   follow `super::completion`.
//! - An answer is translated to the editor's position encoding, its URIs respelt as the editor
//!   spells them, its items tagged and its shapes fitted to what the editor accepts
//!   (`super::fit`). When none of these would change anything (the server speaks the editor's
//!   encoding, the editor's spelling is the canonical one, the method has neither tagged items
//!   nor fitted shapes), the server's JSON text goes to the editor as it came, unparsed
//!   ([`async_lsp::AnyResult::Raw`]).
//! - `$/cancelRequest` from the editor drops the request's future (async-lsp's concurrency
//!   layer), and dropping it sends `$/cancelRequest` for the forwarded request to the server.
//! - A server that does not answer within `[lsp] request_timeout_ms` gets `$/cancelRequest`
//!   and the editor a `RequestFailed` (-32803) error; a server that dies with the request in
//!   flight is asked once more after its restart, then the editor gets `RequestFailed`. Such
//!   errors carry `data: {"filepuff": KIND, "server": NAME, …}` with KIND `timeout`, `crashed`
//!   or `broken` (a crash loop, see `backends`).

use std::sync::Arc;
use std::time::Duration;

use async_lsp::{AnyRequest, AnyResult, ErrorCode, ResponseError};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::translate::{self, Translator};
use super::{Session, Shared, error, internal, ready};
use crate::backends::{BackendError, LspClient, route as backend_route};
use crate::documents::{Encoding, Language};
use crate::engine::Engine;

/// Methods answered by every server of the language, merged.
const MERGED: &[&str] = &["textDocument/completion", "textDocument/codeAction"];

/// Resolve requests: the params are an item a server made.
const RESOLVE: &[&str] = &[
    "completionItem/resolve",
    "codeAction/resolve",
    "codeLens/resolve",
    "inlayHint/resolve",
    "documentLink/resolve",
    "workspaceSymbol/resolve",
];

/// Requests whose params carry a hierarchy `item` a server made.
const ITEM: &[&str] = &[
    "callHierarchy/incomingCalls",
    "callHierarchy/outgoingCalls",
    "typeHierarchy/supertypes",
    "typeHierarchy/subtypes",
];

/// Whether `client` offers `method` (unknown methods: yes), by its `initialize` answer.
fn offers(client: &LspClient, method: &str) -> bool {
    backend_route::offers(&client.capabilities_json, method)
}

/// Whether `client` offers `method` now: in its `initialize` answer, or by a registration still
/// in force that it made later with `client/registerCapability` (LSP 3.17 §registerCapability;
/// ruff registers its formatting that way).
fn offers_now(shared: &Shared, client: &LspClient, method: &str) -> bool {
    if offers(client, method) {
        return true;
    }
    let state = shared.upstream.lock();
    state.registrations.get(&client.serial).is_some_and(|list| list.iter().any(|(_, m)| m == method))
}

/// Routes one editor request (after `initialize`).
pub(crate) fn request(
    shared: &Arc<Shared>,
    session: &Session,
    request: AnyRequest,
) -> BoxFuture<'static, Result<AnyResult, ResponseError>> {
    let method = request.method.clone();
    let mut params = request.params;
    let backends = session.engine.backends();
    // Servers see one spelling per document: the canonical one.
    session.spellings.to_servers(session.engine.workspace(), &mut params);

    // Items a server made go back to it.
    if RESOLVE.contains(&method.as_str()) || ITEM.contains(&method.as_str()) {
        let item = if RESOLVE.contains(&method.as_str()) { Some(&mut params) } else { params.get_mut("item") };
        if let Some(serial) = item.and_then(untag)
            && let Some(client) = backends.by_serial(serial)
        {
            let uri = document_uri(&method, &params);
            return send(session, &client, &method, params, uri);
        }
        if RESOLVE.contains(&method.as_str()) {
            // An item from a server that has restarted since: nothing can resolve it; the
            // editor keeps the item as it is.
            return ready(Ok(params.into()));
        }
    }

    match method.as_str() {
        "workspace/symbol" => {
            let clients: Vec<Arc<LspClient>> = backends.running().into_iter().filter(|c| offers(c, &method)).collect();
            let answers = fan_out(shared, session, &clients, &method, params, None);
            return Box::pin(async move { Ok(concat(futures::future::join_all(answers).await).into()) });
        }
        "workspace/executeCommand" => {
            let command = params.get("command").and_then(Value::as_str).unwrap_or_default().to_owned();
            let registered = shared.upstream.lock().command_server(&command);
            let client = backends.running().into_iter().find(|c| {
                registered.as_deref() == Some(c.name.as_str())
                    || c.capabilities.execute_command_provider.as_ref().is_some_and(|p| p.commands.contains(&command))
            });
            return match client {
                Some(client) => send(session, &client, &method, params, None),
                None => {
                    ready(Err(error(ErrorCode::INVALID_PARAMS, format!("no server offers the command {command:?}"))))
                }
            };
        }
        _ => {}
    }

    let Some(uri) = document_uri(&method, &params) else {
        // Not about a document: the running servers, in the routing order, until one knows
        // the method.
        let clients = backends.answer_order(None, &method, backends.running(), |c| c.name.as_str());
        return first_answer(session, clients, &method, params, None);
    };
    let engine = &session.engine;
    let (id, uri) = match session.spellings.resolve(engine.workspace(), &uri) {
        Ok((id, canonical)) => (id, canonical.to_string()),
        Err(err) => return ready(Err(error(ErrorCode::INVALID_PARAMS, err))),
    };
    let language = engine
        .documents()
        .get(&id)
        .and_then(|d| Language::from_name(&d.language_id))
        .or_else(|| Language::from_path(id.path()));
    if engine.backends().serving(&id, language).is_empty() {
        // No server serves this language (Markdown, a language without one configured).
        return ready(Ok(Value::Null.into()));
    }
    let (clients, missing) = engine.backends().clients_of(&id, language);
    if missing {
        // Some server of this document is not running (still starting, or just crashed):
        // start it, then route.
        let Some(language) = language else { return ready(Ok(Value::Null.into())) };
        let me = shared.clone();
        let engine = engine.clone();
        return Box::pin(async move {
            let path = id.path().to_path_buf();
            let started = tokio::task::spawn_blocking({
                let engine = engine.clone();
                move || engine.backends().acquire_all(&path, language)
            })
            .await
            .map_err(internal)?;
            if let Err(err) = started {
                return Err(err.into());
            }
            let Some(session) = me.ready_session() else { return Ok(Value::Null.into()) };
            let (clients, _) = engine.backends().clients_of(&id, Some(language));
            dispatch(&me, session, clients, Some(language), &method, params, uri).await
        });
    }
    dispatch(shared, session, clients, language, &method, params, uri)
}

/// Sends a document request to the right ones of `clients` (the document's servers, in order).
fn dispatch(
    shared: &Arc<Shared>,
    session: &Session,
    clients: Vec<Arc<LspClient>>,
    language: Option<Language>,
    method: &str,
    params: Value,
    uri: String,
) -> BoxFuture<'static, Result<AnyResult, ResponseError>> {
    if MERGED.contains(&method) {
        let chosen: Vec<&Arc<LspClient>> = clients.iter().filter(|c| offers_now(shared, c, method)).collect();
        if chosen.len() == 1 {
            return send(session, chosen[0], method, params, Some(uri));
        }
        let chosen: Vec<Arc<LspClient>> = chosen.into_iter().cloned().collect();
        let answers = fan_out(shared, session, &chosen, method, params, Some(uri));
        let completion = method == "textDocument/completion";
        return Box::pin(async move {
            let answers = futures::future::join_all(answers).await;
            Ok(if completion { super::completion::merge(answers) } else { concat(answers) }.into())
        });
    }
    let offering: Vec<Arc<LspClient>> = clients.into_iter().filter(|c| offers_now(shared, c, method)).collect();
    let offering = session.engine.backends().answer_order(language, method, offering, |c| c.name.as_str());
    if offering.is_empty() {
        return ready(Ok(Value::Null.into()));
    }
    first_answer(session, offering, method, params, Some(uri))
}

/// Sends one request to each of `clients` (several servers). With the editor's
/// `workDoneToken` in `params`, each server gets a token of its own and their progress reaches
/// the editor's token as one piece of work ([`super::fan`]).
fn fan_out(
    shared: &Arc<Shared>,
    session: &Session,
    clients: &[Arc<LspClient>],
    method: &str,
    params: Value,
    uri: Option<String>,
) -> Vec<BoxFuture<'static, Result<Value, ResponseError>>> {
    let editor_token = params.get("workDoneToken").filter(|t| t.is_string() || t.is_number()).cloned();
    let Some(editor_token) = editor_token.filter(|_| clients.len() > 1) else {
        return clients.iter().map(|c| values(send(session, c, method, params.clone(), uri.clone()))).collect();
    };
    let serials: Vec<u64> = clients.iter().map(|c| c.serial).collect();
    let (id, tokens) = shared.upstream.lock().fans.start(editor_token, &serials);
    clients
        .iter()
        .zip(tokens)
        .map(|(client, token)| {
            let mut params = params.clone();
            params["workDoneToken"] = json!(token);
            let answer = values(send(session, client, method, params, uri.clone()));
            let mut done = FanDone { shared: shared.clone(), id, serial: client.serial, answered: false };
            Box::pin(async move {
                let result = answer.await;
                done.answered = true;
                drop(done);
                result
            }) as BoxFuture<'static, Result<Value, ResponseError>>
        })
        .collect()
}

/// Tells the fan its server answered (or, dropped unanswered — the editor cancelled — that it
/// is abandoned), and sends the editor's `end` when that settles it.
struct FanDone {
    shared: Arc<Shared>,
    id: u64,
    serial: u64,
    answered: bool,
}

impl Drop for FanDone {
    fn drop(&mut self) {
        let end = {
            let mut state = self.shared.upstream.lock();
            if self.answered { state.fans.answered(self.id, self.serial) } else { state.fans.abandon(self.id) }
        };
        if let Some(end) = end {
            self.shared.notify_editor("$/progress", end);
        }
    }
}

/// Asks `clients` (in the routing order, [`backend_route`]) until one answers with something
/// other than `MethodNotFound` — for a single-answer method, until one answers without an
/// error and not empty; when none does, the first empty answer, else the first error.
fn first_answer(
    session: &Session,
    clients: Vec<Arc<LspClient>>,
    method: &str,
    params: Value,
    uri: Option<String>,
) -> BoxFuture<'static, Result<AnyResult, ResponseError>> {
    let Some(first) = clients.first() else {
        return ready(Err(error(ErrorCode::METHOD_NOT_FOUND, format!("no language server handles {method}"))));
    };
    if clients.len() == 1 {
        return send(session, first, method, params, uri);
    }
    let answer = values(send(session, first, method, params.clone(), uri.clone()));
    let fallbacks: Vec<(Ctx, Arc<LspClient>)> =
        clients[1..].iter().map(|c| (context(session, c, method), c.clone())).collect();
    let method = method.to_owned();
    let single = backend_route::is_single_answer(&method);
    Box::pin(async move {
        let mut result = answer.await;
        // When no server answers well: the first empty answer, else the first error that is
        // not `MethodNotFound`, else the last answer.
        let mut fallback: Option<Result<Value, ResponseError>> = None;
        for (ctx, client) in fallbacks {
            let (next, rank) = match &result {
                Err(err) if err.code == ErrorCode::METHOD_NOT_FOUND => (true, 0),
                Err(_) => (single, 1),
                Ok(value) => (single && backend_route::is_empty_answer(value), 2),
            };
            if !next {
                return result.map(AnyResult::from);
            }
            let kept_rank = match &fallback {
                None => -1,
                Some(Err(err)) if err.code == ErrorCode::METHOD_NOT_FOUND => 0,
                Some(Err(_)) => 1,
                Some(Ok(_)) => 2,
            };
            if rank > kept_rank {
                fallback = Some(result);
            }
            result = forward(ctx, client, method.clone(), params.clone(), uri.clone(), false)
                .await
                .map(AnyResult::into_value);
        }
        let rank = |answer: &Result<Value, ResponseError>| match answer {
            Err(err) if err.code == ErrorCode::METHOD_NOT_FOUND => 0,
            Err(_) => 1,
            Ok(value) if single && backend_route::is_empty_answer(value) => 2,
            Ok(_) => 3,
        };
        match fallback {
            Some(kept) if rank(&kept) > rank(&result) => kept,
            _ => result,
        }
        .map(AnyResult::from)
    })
}

/// What [`forward`] needs of the session, owned (for futures that outlive the borrow).
#[derive(Clone)]
struct Ctx {
    engine: Arc<Engine>,
    encoding: Encoding,
    /// The editor's semantic-token legend and `client`'s map onto it, when known.
    legend: Option<(Value, Option<translate::LegendMap>)>,
    spellings: Arc<super::spelling::Spellings>,
    /// What the editor declared it accepts (answers are fitted to it, `fit`).
    accepts: super::fit::Accepts,
    /// `[lsp] request_timeout_ms`.
    timeout: Duration,
}

fn context(session: &Session, client: &LspClient, method: &str) -> Ctx {
    let tokens = method.starts_with("textDocument/semanticTokens/");
    Ctx {
        engine: session.engine.clone(),
        encoding: session.encoding,
        spellings: session.spellings.clone(),
        accepts: session.accepts,
        timeout: Duration::from_millis(session.engine.backends().config().request_timeout_ms.max(1)),
        legend: session.legend.get().filter(|_| tokens).map(|legend| {
            let map = session.legend_maps.lock().get(&client.name).cloned();
            (legend.clone(), map)
        }),
    }
}

/// Forwards one request to `client`: params translated to its encoding and queued now (so it
/// follows every notification already sent), the answer translated back, semantic tokens
/// re-mapped, items tagged with the client's serial. If the server dies before answering,
/// the request is sent once more to its replacement; without an answer within the timeout,
/// it is cancelled at the server and the editor gets a `timeout` error.
fn send(
    session: &Session,
    client: &Arc<LspClient>,
    method: &str,
    params: Value,
    uri: Option<String>,
) -> BoxFuture<'static, Result<AnyResult, ResponseError>> {
    forward(context(session, client, method), client.clone(), method.to_owned(), params, uri, false)
}

/// An answer as a `Value` tree, for the callers that read or merge it.
fn values(
    answer: BoxFuture<'static, Result<AnyResult, ResponseError>>,
) -> BoxFuture<'static, Result<Value, ResponseError>> {
    Box::pin(async move { answer.await.map(AnyResult::into_value) })
}

fn forward(
    ctx: Ctx,
    client: Arc<LspClient>,
    method: String,
    params: Value,
    uri: Option<String>,
    retried: bool,
) -> BoxFuture<'static, Result<AnyResult, ResponseError>> {
    let workspace = ctx.engine.workspace();
    let mut outgoing = params.clone();
    let documents = ctx.engine.documents();
    Translator::new(ctx.encoding, client.encoding, workspace, documents).value(&mut outgoing, uri.as_deref());
    let legend_map = legend_map(&ctx, &client);
    let mut sent_method = method.clone();
    if method == "textDocument/semanticTokens/full/delta" && !tokens_pass_through(&ctx, &client, &legend_map) {
        // Deltas are over the server's encoding and legend: ask for the whole set instead
        // (a `SemanticTokens` result is a valid answer to a delta request).
        sent_method = "textDocument/semanticTokens/full".to_owned();
        if let Some(map) = outgoing.as_object_mut() {
            map.remove("previousResultId");
        }
    }
    let sent = client.forward(&sent_method, outgoing);
    Box::pin(async move {
        let (id, answer) = sent;
        let mut guard = CancelOnDrop { client: Some(client.clone()), id };
        let Ok(result) = tokio::time::timeout(ctx.timeout, answer).await else {
            // `guard` cancels the request at the server.
            let ms = ctx.timeout.as_millis() as u64;
            let message = format!("language server {} did not answer {method} within {ms} ms", client.name);
            return Err(failure("timeout", &client.name, message, json!({ "method": method, "timeout_ms": ms })));
        };
        guard.client = None;
        let answer = match result {
            Ok(answer) => answer,
            Err(_) if !client.is_alive() => {
                // The server died with the request in flight: wait for its replacement (the
                // upstream restarts it) and ask once more.
                let crashed = BackendError::Crashed {
                    server: client.name.clone(),
                    message: client.exit_reason().unwrap_or_else(|| "it exited".to_owned()),
                };
                if retried {
                    return Err(crashed.into());
                }
                let Some(replacement) = replacement(&ctx.engine, &client).await else { return Err(crashed.into()) };
                return Box::pin(forward(ctx, replacement, method, params, uri, true)).await;
            }
            Err(err) => return Err(err),
        };
        if passes_through(&ctx, &client, &method) {
            // Nothing below would change it: the server's JSON text goes to the editor as it is.
            return Ok(answer);
        }
        let mut value = answer.into_value();
        let (workspace, documents) = (ctx.engine.workspace(), ctx.engine.documents());
        Translator::new(client.encoding, ctx.encoding, workspace, documents).value(&mut value, uri.as_deref());
        if method.starts_with("textDocument/semanticTokens/") && !tokens_pass_through(&ctx, &client, &legend_map) {
            let text =
                uri.as_deref().and_then(|u| Translator::new(ctx.encoding, ctx.encoding, workspace, documents).text(u));
            if let (Some(text), Some(map)) = (text, legend_map.as_ref()) {
                translate::semantic_tokens(&mut value, &text, client.encoding, ctx.encoding, map);
            }
        }
        tag(&method, &mut value, client.serial);
        ctx.accepts.fit(&method, &mut value);
        ctx.spellings.to_editor(&mut value);
        Ok(value.into())
    })
}

/// Whether [`forward`] leaves `client`'s answers to `method` as they are: the same position
/// encoding on both sides, no semantic tokens (re-mapped to the editor's legend), no items to
/// tag, nothing to fit to what the editor accepts, and every URI spelt as the editor spells
/// it. Decided when the answer comes (a document opened under another spelling meanwhile
/// makes [`super::spelling::Spellings::is_identity`] false).
fn passes_through(ctx: &Ctx, client: &LspClient, method: &str) -> bool {
    ctx.encoding == client.encoding
        && !method.starts_with("textDocument/semanticTokens/")
        && !is_tagged(method)
        && !ctx.accepts.fits(method)
        && ctx.spellings.is_identity()
}

fn legend_map(ctx: &Ctx, client: &LspClient) -> Option<translate::LegendMap> {
    let (legend, known) = ctx.legend.as_ref()?;
    if let Some(map) = known {
        return Some(map.clone());
    }
    Some(translate::LegendMap::new(client.capabilities_json.pointer("/semanticTokensProvider/legend")?, legend))
}

fn tokens_pass_through(ctx: &Ctx, client: &LspClient, map: &Option<translate::LegendMap>) -> bool {
    client.encoding == ctx.encoding && map.as_ref().is_none_or(translate::LegendMap::is_identity)
}

/// Waits (at most 30 s) for the server that replaces `client` after a crash.
async fn replacement(engine: &Arc<Engine>, client: &Arc<LspClient>) -> Option<Arc<LspClient>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(next) = engine.backends().running_client(&client.name, &client.root)
            && next.serial != client.serial
            && next.is_alive()
        {
            return Some(next);
        }
        if tokio::time::Instant::now() >= deadline || engine.backends().is_broken(&client.name, &client.root) {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Cancels the forwarded request at the server when the editor's request is dropped
/// (cancelled) before the answer came.
struct CancelOnDrop {
    client: Option<Arc<LspClient>>,
    id: i32,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            client.cancel(self.id);
        }
    }
}

/// The document a request is about.
fn document_uri(method: &str, params: &Value) -> Option<String> {
    let holder = if ITEM.contains(&method) { params.get("item") } else { params.get("textDocument") };
    holder.and_then(|holder| holder.get("uri")).and_then(Value::as_str).map(str::to_owned)
}

/// The key under which an item's `data` is wrapped.
const TAG: &str = "filepuff";

/// Methods whose answers hold items a later request may hand back (besides the [`RESOLVE`]
/// methods, whose answer is the item): [`tag`] wraps their `data`.
const TAGGED: &[&str] = &[
    "textDocument/completion",
    "textDocument/codeAction",
    "textDocument/codeLens",
    "textDocument/inlayHint",
    "textDocument/documentLink",
    "workspace/symbol",
    "textDocument/prepareCallHierarchy",
    "textDocument/prepareTypeHierarchy",
    "typeHierarchy/supertypes",
    "typeHierarchy/subtypes",
    "callHierarchy/incomingCalls",
    "callHierarchy/outgoingCalls",
];

/// Whether [`tag`] may change an answer to `method`.
fn is_tagged(method: &str) -> bool {
    TAGGED.contains(&method) || RESOLVE.contains(&method)
}

/// Wraps the `data` of every item in `value` that a later request may hand back.
fn tag(method: &str, value: &mut Value, serial: u64) {
    let wrap_map = |map: &mut serde_json::Map<String, Value>| {
        let mut wrapped = json!({ TAG: serial });
        if let Some(data) = map.remove("data") {
            wrapped["data"] = data;
        }
        map.insert("data".to_owned(), wrapped);
    };
    let wrap = |item: &mut Value| {
        if let Some(map) = item.as_object_mut() {
            wrap_map(map);
        }
    };
    match method {
        "textDocument/completion" => super::completion::tag(value, wrap_map),
        "textDocument/codeAction" => {
            for item in value.as_array_mut().into_iter().flatten() {
                // A bare `Command` (its `command` is a string) is not resolved.
                if !item.get("command").is_some_and(Value::is_string) {
                    wrap(item);
                }
            }
        }
        "textDocument/codeLens"
        | "textDocument/inlayHint"
        | "textDocument/documentLink"
        | "workspace/symbol"
        | "textDocument/prepareCallHierarchy"
        | "textDocument/prepareTypeHierarchy"
        | "typeHierarchy/supertypes"
        | "typeHierarchy/subtypes" => {
            for item in value.as_array_mut().into_iter().flatten() {
                wrap(item);
            }
        }
        "callHierarchy/incomingCalls" | "callHierarchy/outgoingCalls" => {
            let key = if method.ends_with("incomingCalls") { "from" } else { "to" };
            for call in value.as_array_mut().into_iter().flatten() {
                if let Some(item) = call.get_mut(key) {
                    wrap(item);
                }
            }
        }
        m if RESOLVE.contains(&m) => wrap(value),
        _ => {}
    }
}

/// Unwraps an item's `data` (see [`tag`]) and returns the serial of the client that made it.
fn untag(item: &mut Value) -> Option<u64> {
    let map = item.as_object_mut()?;
    let serial = map.get("data")?.get(TAG)?.as_u64()?;
    let wrapped = map.remove("data")?;
    if let Some(data) = wrapped.get("data") {
        map.insert("data".to_owned(), data.clone());
    }
    Some(serial)
}

/// Several servers' list answers as one list (failed or empty answers left out).
fn concat(answers: Vec<Result<Value, ResponseError>>) -> Value {
    let mut all = Vec::new();
    for answer in answers {
        match answer {
            Ok(Value::Array(items)) => all.extend(items),
            Ok(_) => {}
            Err(err) => tracing::debug!("one server's answer failed: {}", err.message),
        }
    }
    Value::Array(all)
}

/// A `RequestFailed` (-32803) error about server `server`, with `data: {"filepuff": kind,
/// "server": server, …extra}`.
fn failure(kind: &str, server: &str, message: impl std::fmt::Display, extra: Value) -> ResponseError {
    let mut data = json!({ "filepuff": kind, "server": server });
    if let (Some(data), Value::Object(extra)) = (data.as_object_mut(), extra) {
        data.extend(extra);
    }
    ResponseError::new_with_data(ErrorCode::REQUEST_FAILED, message, data)
}

impl From<BackendError> for ResponseError {
    fn from(err: BackendError) -> ResponseError {
        let message = err.to_string();
        match err {
            BackendError::Crashed { server, .. } => failure("crashed", &server, message, Value::Null),
            BackendError::Broken { server, retry_in_secs, .. } => {
                failure("broken", &server, message, json!({ "retry_in_secs": retry_in_secs }))
            }
            BackendError::Timeout { server, method, ms } => {
                failure("timeout", &server, message, json!({ "method": method, "timeout_ms": ms }))
            }
            BackendError::NotInstalled { server, .. } | BackendError::StartFailed { server, .. } => {
                failure("start_failed", &server, message, Value::Null)
            }
            other => error(ErrorCode::REQUEST_FAILED, other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the proxy relies on to pass answers on unparsed: `tag` changes answers only to the
    /// methods `is_tagged` names.
    #[test]
    fn tag_changes_nothing_that_is_tagged_does_not_name() {
        let item = json!({"label": "a", "title": "t", "name": "n", "data": {"k": 1}});
        let answers = [
            json!(null),
            item.clone(),
            json!([item.clone()]),
            json!({"isIncomplete": false, "items": [item.clone()], "itemDefaults": {"data": 2}}),
            json!([{"from": item.clone(), "to": item.clone(), "fromRanges": []}]),
        ];
        let mut methods: Vec<&str> = TAGGED.iter().chain(RESOLVE).copied().collect();
        methods.extend([
            "textDocument/hover",
            "textDocument/definition",
            "textDocument/references",
            "textDocument/documentSymbol",
            "textDocument/rename",
            "textDocument/signatureHelp",
            "workspace/executeCommand",
        ]);
        let mut changed_any = Vec::new();
        for method in methods {
            for answer in &answers {
                let mut tagged = answer.clone();
                tag(method, &mut tagged, 9);
                if &tagged != answer {
                    assert!(is_tagged(method), "{method}: tag changed {answer} but is_tagged says no");
                    changed_any.push(method);
                }
            }
        }
        for method in TAGGED.iter().chain(RESOLVE) {
            assert!(changed_any.contains(method), "{method} is listed as tagged but tag changed none of its answers");
        }
    }

    #[test]
    fn items_are_tagged_and_untagged() {
        let mut answer =
            json!({ "isIncomplete": false, "items": [ { "label": "a", "data": { "k": 1 } }, { "label": "b" } ] });
        tag("textDocument/completion", &mut answer, 7);
        assert_eq!(answer["items"][0]["data"], json!({ "filepuff": 7, "data": { "k": 1 } }));
        let mut item = answer["items"][0].clone();
        assert_eq!(untag(&mut item), Some(7));
        assert_eq!(item, json!({ "label": "a", "data": { "k": 1 } }));
        let mut bare = answer["items"][1].clone();
        assert_eq!(untag(&mut bare), Some(7));
        assert_eq!(bare, json!({ "label": "b" }));
        let mut actions = json!([ { "title": "fix", "kind": "quickfix" }, { "title": "run", "command": "x.run" } ]);
        tag("textDocument/codeAction", &mut actions, 3);
        assert_eq!(actions[0]["data"]["filepuff"], 3);
        assert!(actions[1].get("data").is_none());
    }
}
