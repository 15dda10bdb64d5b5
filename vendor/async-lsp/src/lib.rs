//! Asynchronous [Language Server Protocol (LSP)][lsp] framework based on [tower].
//!
//! See project [README] for a general overview.
//!
//! [README]: https://github.com/oxalica/async-lsp#readme
//! [lsp]: https://microsoft.github.io/language-server-protocol/overviews/lsp/overview/
//! [tower]: https://github.com/tower-rs/tower
//!
//! This project is centered at a core service trait [`LspService`] for either Language Servers or
//! Language Clients. The main loop driver [`MainLoop`] executes the service. The additional
//! features, called middleware, are pluggable can be layered using the [`tower_layer`]
//! abstraction. This crate defines several common middlewares for various mandatory or optional
//! LSP functionalities, see their documentations for details.
//! - [`concurrency::Concurrency`]: Incoming request multiplexing and cancellation.
//! - [`panic::CatchUnwind`]: Turn panics into errors.
//! - [`tracing::Tracing`]: Logger spans with methods instrumenting handlers.
//! - [`server::Lifecycle`]: Server initialization, shutting down, and exit handling.
//! - [`client_monitor::ClientProcessMonitor`]: Client process monitor.
//! - [`router::Router`]: "Root" service to dispatch requests, notifications and events.
//!
//! Users are free to select and layer middlewares to run a Language Server or Language Client.
//! They can also implement their own middlewares for like timeout, metering, request
//! transformation and etc.
//!
//! ## Usages
//!
//! There are two main ways to define a [`Router`](router::Router) root service: one is via its
//! builder API, and the other is to construct via implementing the omnitrait [`LanguageServer`] or
//! [`LanguageClient`] for a state struct. The former is more flexible, while the latter has a
//! more similar API as [`tower-lsp`](https://crates.io/crates/tower-lsp).
//!
//! The examples for both builder-API and omnitrait, cross Language Server and Language Client, can
//! be seen under
#![doc = concat!("[`examples`](https://github.com/oxalica/async-lsp/tree/v", env!("CARGO_PKG_VERSION") , "/examples)")]
//! directory.
//!
//! ## Cargo features
//!
//! - `client-monitor`: Client process monitor middleware [`client_monitor`].
//!   *Enabled by default.*
//! - `omni-trait`: Mega traits of all standard requests and notifications, namely
//!   [`LanguageServer`] and [`LanguageClient`].
//!   *Enabled by default.*
//! - `stdio`: Utilities to deal with pipe-like stdin/stdout communication channel for Language
//!   Servers.
//!   *Enabled by default.*
//! - `tracing`: Integration with crate [`tracing`][::tracing] and the [`tracing`] middleware.
//!   *Enabled by default.*
//! - `forward`: Impl [`LspService`] for `{Client,Server}Socket`. This collides some method names
//!   but allows easy service forwarding. See `examples/inspector.rs` for a possible use case.
//!   *Disabled by default.*
//! - `tokio`: Enable compatible methods for [`tokio`](https://crates.io/crates/tokio) runtime.
//!   *Disabled by default.*
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]
use std::any::{type_name, Any};
use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::{fmt, io};

use futures::channel::{mpsc, oneshot};
use futures::io::BufReader;
use futures::stream::FuturesUnordered;
use futures::{
    pin_mut, select_biased, AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite,
    AsyncWriteExt, FutureExt, SinkExt, StreamExt,
};
use lsp_types::notification::Notification;
use lsp_types::request::Request;
use lsp_types::NumberOrString;
use pin_project_lite::pin_project;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value as JsonValue;
use thiserror::Error;
use tower_service::Service;

/// Re-export of the [`lsp_types`] dependency of this crate.
pub use lsp_types;

macro_rules! define_getters {
    (impl[$($generic:tt)*] $ty:ty, $field:ident : $field_ty:ty) => {
        impl<$($generic)*> $ty {
            /// Get a reference to the inner service.
            #[must_use]
            pub fn get_ref(&self) -> &$field_ty {
                &self.$field
            }

            /// Get a mutable reference to the inner service.
            #[must_use]
            pub fn get_mut(&mut self) -> &mut $field_ty {
                &mut self.$field
            }

            /// Consume self, returning the inner service.
            #[must_use]
            pub fn into_inner(self) -> $field_ty {
                self.$field
            }
        }
    };
}

pub mod concurrency;
pub mod panic;
pub mod router;
pub mod server;

#[cfg(feature = "forward")]
#[cfg_attr(docsrs, doc(cfg(feature = "forward")))]
mod forward;

#[cfg(feature = "client-monitor")]
#[cfg_attr(docsrs, doc(cfg(feature = "client-monitor")))]
pub mod client_monitor;

#[cfg(all(feature = "stdio", unix))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "stdio", unix))))]
pub mod stdio;

#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub mod tracing;

#[cfg(feature = "omni-trait")]
mod omni_trait;
#[cfg(feature = "omni-trait")]
#[cfg_attr(docsrs, doc(cfg(feature = "omni-trait")))]
pub use omni_trait::{LanguageClient, LanguageServer};

/// A convenient type alias for `Result` with `E` = [`enum@crate::Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Possible errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The service main loop stopped.
    #[error("service stopped")]
    ServiceStopped,
    /// The peer replies undecodable or invalid responses.
    #[error("deserialization failed: {0}")]
    Deserialize(#[from] serde_json::Error),
    /// The peer replies an error.
    #[error("{0}")]
    Response(#[from] ResponseError),
    /// The peer violates the Language Server Protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// Input/output errors from the underlying channels.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The underlying channel reached EOF (end of file).
    #[error("the underlying channel reached EOF")]
    Eof,
    /// No handlers for events or mandatory notifications (not starting with `$/`).
    ///
    /// Will not occur when catch-all handlers ([`router::Router::unhandled_event`] and
    /// [`router::Router::unhandled_notification`]) are installed.
    #[error("{0}")]
    Routing(String),
}

/// The core service abstraction, representing either a Language Server or Language Client.
pub trait LspService: Service<AnyRequest> {
    /// The handler of [LSP notifications](https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#notificationMessage).
    ///
    /// Notifications are delivered in order and synchronously. This is mandatory since they can
    /// change the interpretation of later notifications or requests.
    ///
    /// # Return
    ///
    /// The return value decides the action to either break or continue the main loop.
    fn notify(&mut self, notif: AnyNotification) -> ControlFlow<Result<()>>;

    /// The handler of an arbitrary [`AnyEvent`].
    ///
    /// Events are emitted by users or middlewares via [`ClientSocket::emit`] or
    /// [`ServerSocket::emit`], for user-defined purposes. Events are delivered in order and
    /// synchronously.
    ///
    /// # Return
    ///
    /// The return value decides the action to either break or continue the main loop.
    fn emit(&mut self, event: AnyEvent) -> ControlFlow<Result<()>>;
}

/// A JSON-RPC error code.
///
/// Codes defined and/or used by LSP are defined as associated constants, eg.
/// [`ErrorCode::REQUEST_FAILED`].
///
/// See:
/// <https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#errorCodes>
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Error,
)]
#[error("jsonrpc error {0}")]
pub struct ErrorCode(pub i32);

impl From<i32> for ErrorCode {
    fn from(i: i32) -> Self {
        Self(i)
    }
}

impl ErrorCode {
    /// Invalid JSON was received by the server. An error occurred on the server while parsing the
    /// JSON text.
    ///
    /// Defined by [JSON-RPC](https://www.jsonrpc.org/specification#error_object).
    pub const PARSE_ERROR: Self = Self(-32700);

    /// The JSON sent is not a valid Request object.
    ///
    /// Defined by [JSON-RPC](https://www.jsonrpc.org/specification#error_object).
    pub const INVALID_REQUEST: Self = Self(-32600);

    /// The method does not exist / is not available.
    ///
    /// Defined by [JSON-RPC](https://www.jsonrpc.org/specification#error_object).
    pub const METHOD_NOT_FOUND: Self = Self(-32601);

    /// Invalid method parameter(s).
    ///
    /// Defined by [JSON-RPC](https://www.jsonrpc.org/specification#error_object).
    pub const INVALID_PARAMS: Self = Self(-32602);

    /// Internal JSON-RPC error.
    ///
    /// Defined by [JSON-RPC](https://www.jsonrpc.org/specification#error_object).
    pub const INTERNAL_ERROR: Self = Self(-32603);

    /// This is the start range of JSON-RPC reserved error codes.
    /// It doesn't denote a real error code. No LSP error codes should
    /// be defined between the start and end range. For backwards
    /// compatibility the `ServerNotInitialized` and the `UnknownErrorCode`
    /// are left in the range.
    ///
    /// @since 3.16.0
    pub const JSONRPC_RESERVED_ERROR_RANGE_START: Self = Self(-32099);

    /// Error code indicating that a server received a notification or
    /// request before the server has received the `initialize` request.
    pub const SERVER_NOT_INITIALIZED: Self = Self(-32002);

    /// (Defined by LSP specification without description)
    pub const UNKNOWN_ERROR_CODE: Self = Self(-32001);

    /// This is the end range of JSON-RPC reserved error codes.
    /// It doesn't denote a real error code.
    ///
    /// @since 3.16.0
    pub const JSONRPC_RESERVED_ERROR_RANGE_END: Self = Self(-32000);

    /// This is the start range of LSP reserved error codes.
    /// It doesn't denote a real error code.
    ///
    /// @since 3.16.0
    pub const LSP_RESERVED_ERROR_RANGE_START: Self = Self(-32899);

    /// A request failed but it was syntactically correct, e.g the
    /// method name was known and the parameters were valid. The error
    /// message should contain human readable information about why
    /// the request failed.
    ///
    /// @since 3.17.0
    pub const REQUEST_FAILED: Self = Self(-32803);

    /// The server cancelled the request. This error code should
    /// only be used for requests that explicitly support being
    /// server cancellable.
    ///
    /// @since 3.17.0
    pub const SERVER_CANCELLED: Self = Self(-32802);

    /// The server detected that the content of a document got
    /// modified outside normal conditions. A server should
    /// NOT send this error code if it detects a content change
    /// in it unprocessed messages. The result even computed
    /// on an older state might still be useful for the client.
    ///
    /// If a client decides that a result is not of any use anymore
    /// the client should cancel the request.
    pub const CONTENT_MODIFIED: Self = Self(-32801);

    /// The client has canceled a request and a server as detected
    /// the cancel.
    pub const REQUEST_CANCELLED: Self = Self(-32800);

    /// This is the end range of LSP reserved error codes.
    /// It doesn't denote a real error code.
    ///
    /// @since 3.16.0
    pub const LSP_RESERVED_ERROR_RANGE_END: Self = Self(-32800);
}

/// The identifier of requests and responses.
///
/// Though `null` is technically a valid id for responses, we reject it since it hardly makes sense
/// for valid communication.
pub type RequestId = NumberOrString;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct RawMessage<T> {
    jsonrpc: RpcVersion,
    #[serde(flatten)]
    inner: T,
}

impl<T> RawMessage<T> {
    fn new(inner: T) -> Self {
        Self {
            jsonrpc: RpcVersion::V2,
            inner,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum RpcVersion {
    #[serde(rename = "2.0")]
    V2,
}

/// One JSON-RPC message, as [`Message::decode`] reads it (public in filepuff's patch, see
/// `vendor/README.md`: a caller that has already framed and decoded the peer's stream hands
/// messages to [`MainLoop::run_messages`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Message {
    /// A request: it has an `id` and a `method`.
    Request(AnyRequest),
    /// A response to one of this side's requests.
    Response(AnyResponse),
    /// A notification: a `method` without an `id`.
    Notification(AnyNotification),
}

/// A dynamic runtime [LSP request](https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#requestMessage).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AnyRequest {
    /// The request id.
    pub id: RequestId,
    /// The method to be invoked.
    pub method: String,
    /// The method's params.
    #[serde(default)]
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub params: serde_json::Value,
}

/// A dynamic runtime [LSP notification](https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#notificationMessage).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AnyNotification {
    /// The method to be invoked.
    pub method: String,
    /// The notification's params.
    #[serde(default)]
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub params: JsonValue,
}

/// A dynamic runtime response (its members are the main loop's).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AnyResponse {
    id: RequestId,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<AnyResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ResponseError>,
}

/// A request's result (filepuff's patch, see `vendor/README.md`): a value made here, or JSON
/// text as a peer sent it.
///
/// A response read from a peer keeps its `result` as text until the request's caller reads
/// it: [`ServerSocket::request`] parses it once, straight into the request's result type,
/// instead of building a `serde_json::Value` tree and walking it; a proxy can take it as it
/// is ([`ServerSocket::call_raw`]) and give it back as its own service's answer, which the
/// main loop writes out verbatim. Services may answer with a [`JsonValue`] or an `AnyResult`
/// (the main loop takes any `Into<AnyResult>`).
#[derive(Debug, Clone)]
pub enum AnyResult {
    /// A value made here.
    Value(JsonValue),
    /// Valid JSON text, written as it is.
    Raw(Box<serde_json::value::RawValue>),
    /// JSON text a peer sent whose extent was found by its brackets and quotes alone, not yet
    /// validated ([`Message::decode`]'s plain responses): reading it validates it
    /// ([`AnyResult::into_typed`], [`AnyResult::checked`]), and it is written out only once
    /// it is valid.
    Unchecked(Box<str>),
}

impl AnyResult {
    /// The result read into `T`.
    ///
    /// # Errors
    /// The result does not have `T`'s shape.
    pub fn into_typed<T: DeserializeOwned>(self) -> serde_json::Result<T> {
        match self {
            AnyResult::Raw(raw) => serde_json::from_str(raw.get()),
            AnyResult::Unchecked(text) => serde_json::from_str(&text),
            AnyResult::Value(value) => serde_json::from_value(value),
        }
    }

    /// The result with its text validated: an [`AnyResult::Unchecked`] becomes
    /// [`AnyResult::Raw`], the others are returned as they are.
    ///
    /// # Errors
    /// The unchecked text is not JSON.
    pub fn checked(self) -> serde_json::Result<AnyResult> {
        match self {
            AnyResult::Unchecked(text) => serde_json::value::RawValue::from_string(text.into()).map(AnyResult::Raw),
            other => Ok(other),
        }
    }

    /// The result's JSON text as the peer sent it, when it is kept as text (validated or not).
    #[must_use]
    pub fn text(&self) -> Option<&str> {
        match self {
            AnyResult::Raw(raw) => Some(raw.get()),
            AnyResult::Unchecked(text) => Some(text),
            AnyResult::Value(_) => None,
        }
    }

    /// The result as a `serde_json::Value` tree (raw text is parsed).
    #[must_use]
    pub fn into_value(self) -> JsonValue {
        match self {
            AnyResult::Value(value) => value,
            // Raw text is valid JSON (it was read as such), and any JSON reads as a `Value`.
            AnyResult::Raw(raw) => serde_json::from_str(raw.get()).unwrap_or(JsonValue::Null),
            // Callers that may hold text that is not JSON check it first ([`AnyResult::checked`]).
            AnyResult::Unchecked(text) => serde_json::from_str(&text).unwrap_or(JsonValue::Null),
        }
    }
}

impl From<JsonValue> for AnyResult {
    fn from(value: JsonValue) -> Self {
        AnyResult::Value(value)
    }
}

impl Serialize for AnyResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            AnyResult::Raw(raw) => raw.serialize(serializer),
            AnyResult::Unchecked(text) => serde_json::value::RawValue::from_string(text.to_string())
                .map_err(serde::ser::Error::custom)?
                .serialize(serializer),
            AnyResult::Value(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for AnyResult {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        JsonValue::deserialize(deserializer).map(AnyResult::Value)
    }
}

/// One member of a message as [`Message::decode`] read it: absent, valid for its use, or not
/// (malformed, or given twice).
enum Member<T> {
    Absent,
    Valid(T),
    Invalid,
}

impl<T> Member<T> {
    /// Takes the member's value as read (`None`: malformed); a second one makes it invalid.
    fn give(&mut self, value: Option<T>) {
        *self = match (&*self, value) {
            (Member::Absent, Some(value)) => Member::Valid(value),
            _ => Member::Invalid,
        };
    }

    /// The value, `absent` when the member was not given, `None` when it is invalid.
    fn or_absent(self, absent: T) -> Option<T> {
        match self {
            Member::Absent => Some(absent),
            Member::Valid(value) => Some(value),
            Member::Invalid => None,
        }
    }

    fn valid(self) -> Option<T> {
        match self {
            Member::Valid(value) => Some(value),
            Member::Absent | Member::Invalid => None,
        }
    }
}

/// A message's members, each read once ([`Message::decode`]).
struct Wire {
    id: Member<RequestId>,
    method: Member<String>,
    params: Member<JsonValue>,
    /// `None` for `null`.
    result: Member<Option<Box<serde_json::value::RawValue>>>,
    error: Member<Option<ResponseError>>,
}

impl<'de> Deserialize<'de> for Wire {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(field_identifier, rename_all = "lowercase")]
        enum Key {
            Jsonrpc,
            Id,
            Method,
            Params,
            Result,
            Error,
            #[serde(other)]
            Other,
        }

        /// Reads a member whose wrong shape only disqualifies the variants that use it.
        fn lenient<'de, T: DeserializeOwned, A: serde::de::MapAccess<'de>>(
            map: &mut A,
            member: &mut Member<T>,
        ) -> std::result::Result<(), A::Error> {
            let raw: Box<serde_json::value::RawValue> = map.next_value()?;
            member.give(serde_json::from_str::<T>(raw.get()).ok());
            Ok(())
        }

        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Wire;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Wire, A::Error> {
                let mut jsonrpc = false;
                let mut wire = Wire {
                    id: Member::Absent,
                    method: Member::Absent,
                    params: Member::Absent,
                    result: Member::Absent,
                    error: Member::Absent,
                };
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Jsonrpc => {
                            if jsonrpc {
                                return Err(serde::de::Error::duplicate_field("jsonrpc"));
                            }
                            map.next_value::<RpcVersion>()?;
                            jsonrpc = true;
                        }
                        Key::Id => lenient(&mut map, &mut wire.id)?,
                        Key::Method => lenient(&mut map, &mut wire.method)?,
                        Key::Error => lenient(&mut map, &mut wire.error)?,
                        Key::Params => wire.params.give(Some(map.next_value()?)),
                        Key::Result => {
                            let raw: Box<serde_json::value::RawValue> = map.next_value()?;
                            wire.result.give(Some((raw.get() != "null").then_some(raw)));
                        }
                        Key::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                if !jsonrpc {
                    return Err(serde::de::Error::missing_field("jsonrpc"));
                }
                Ok(wire)
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// The error object in case a request fails.
///
/// See:
/// <https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#responseError>
#[derive(Debug, Clone, Serialize, Deserialize, Error)]
#[non_exhaustive]
#[error("{message} ({code})")]
pub struct ResponseError {
    /// A number indicating the error type that occurred.
    pub code: ErrorCode,
    /// A string providing a short description of the error.
    pub message: String,
    /// A primitive or structured value that contains additional
    /// information about the error. Can be omitted.
    pub data: Option<JsonValue>,
}

impl ResponseError {
    /// Create a new error object with a JSON-RPC error code and a message.
    #[must_use]
    pub fn new(code: ErrorCode, message: impl fmt::Display) -> Self {
        Self {
            code,
            message: message.to_string(),
            data: None,
        }
    }

    /// Create a new error object with a JSON-RPC error code, a message, and any additional data.
    #[must_use]
    pub fn new_with_data(code: ErrorCode, message: impl fmt::Display, data: JsonValue) -> Self {
        Self {
            code,
            message: message.to_string(),
            data: Some(data),
        }
    }
}

impl Message {
    const CONTENT_LENGTH: &'static str = "Content-Length";

    async fn read(mut reader: impl AsyncBufRead + Unpin) -> Result<Self> {
        let mut line = String::new();
        let mut content_len = None;
        loop {
            line.clear();
            reader.read_line(&mut line).await?;
            if line.is_empty() {
                return Err(Error::Eof);
            }
            if line == "\r\n" {
                break;
            }
            // NB. LSP spec is stricter than HTTP spec, the spaces here is required and it's not
            // explicitly permitted to include extra spaces. We reject them here.
            let (name, value) = line
                .strip_suffix("\r\n")
                .and_then(|line| line.split_once(": "))
                .ok_or_else(|| Error::Protocol(format!("Invalid header: {line:?}")))?;
            if name.eq_ignore_ascii_case(Self::CONTENT_LENGTH) {
                let value = value
                    .parse::<usize>()
                    .map_err(|_| Error::Protocol(format!("Invalid content-length: {value}")))?;
                content_len = Some(value);
            }
        }
        let content_len =
            content_len.ok_or_else(|| Error::Protocol("Missing content-length".into()))?;
        let mut buf = vec![0u8; content_len];
        reader.read_exact(&mut buf).await?;
        #[cfg(feature = "tracing")]
        ::tracing::trace!(msg = %String::from_utf8_lossy(&buf), "incoming");
        Self::decode(&buf)
    }

    /// Decodes one message body in a single pass (filepuff's patch, see `vendor/README.md`).
    ///
    /// Deriving `Deserialize` for `RawMessage<Message>` (`#[serde(flatten)]` over an
    /// `#[serde(untagged)]` enum) buffers every message as serde `Content` twice and then tries
    /// each variant in turn: 1.9x the cost of parsing the same bytes once. This reads each member
    /// once and then decides as the untagged enum did, in its order: a request needs a valid
    /// `id` and `method` (and `params` given at most once); else a response needs a valid `id`
    /// (and a valid `error` or none, `result` at most once); else a notification needs a valid
    /// `method`. A member that only another variant uses may be anything (the derive ignored
    /// unknown fields); `jsonrpc` must be `"2.0"`, once.
    ///
    /// # Errors
    /// `Error::Deserialize` when `buf` is not such a message.
    pub fn decode(buf: &[u8]) -> Result<Self> {
        if let Some(response) = plain_response(buf) {
            return Ok(Message::Response(response));
        }
        Self::decode_full(buf)
    }

    /// [`Message::decode`] of any frame, by serde_json's validating parse.
    fn decode_full(buf: &[u8]) -> Result<Self> {
        let wire = serde_json::from_slice::<Wire>(buf)?;
        let id = wire.id.valid();
        let method = wire.method.valid();
        let params = wire.params.or_absent(JsonValue::Null);
        let (id, method, params) = match (id, method, params) {
            (Some(id), Some(method), Some(params)) => {
                return Ok(Message::Request(AnyRequest { id, method, params }))
            }
            other => other,
        };
        if let Some(id) = id {
            if let (Some(result), Some(error)) = (wire.result.or_absent(None), wire.error.or_absent(None)) {
                let result = result.map(AnyResult::Raw);
                return Ok(Message::Response(AnyResponse { id, result, error }));
            }
        }
        if let (Some(method), Some(params)) = (method, params) {
            return Ok(Message::Notification(AnyNotification { method, params }));
        }
        Err(Error::Deserialize(<serde_json::Error as serde::de::Error>::custom(
            "not a JSON-RPC request, response or notification",
        )))
    }

    async fn write(&self, mut writer: impl AsyncWrite + Unpin) -> Result<()> {
        let buf = serde_json::to_string(&RawMessage::new(self))?;
        #[cfg(feature = "tracing")]
        ::tracing::trace!(msg = %buf, "outgoing");
        writer
            .write_all(format!("{}: {}\r\n\r\n", Self::CONTENT_LENGTH, buf.len()).as_bytes())
            .await?;
        writer.write_all(buf.as_bytes()).await?;
        writer.flush().await?;
        Ok(())
    }
}

/// A response written in one of the two plain shapes servers write,
/// `{"jsonrpc":"2.0","result":R,"id":N}` (gopls) or `{"jsonrpc":"2.0","id":N,"result":R}`, with
/// no whitespace outside `R`, `N` a plain `i32` and `R` UTF-8 (filepuff's patch, see
/// `vendor/README.md`). `R`'s extent is found by its quotes and brackets alone, so the frame is
/// read in one light pass instead of serde_json's validating one (355 k instructions for gopls's
/// 22 KB answer of 147 locations); `R` is kept as [`AnyResult::Unchecked`] and validated by
/// whoever reads it. For a frame that is JSON this reads what [`Message::decode`]'s full path
/// reads; a frame it takes that is not JSON has a result that is not JSON
/// (`plain_responses_read_as_the_full_decode_does`), whose reader gets the parse error where the
/// full path would have refused the frame. `None`: any other frame (the full path reads it).
fn plain_response(buf: &[u8]) -> Option<AnyResponse> {
    let rest = buf.strip_prefix(br#"{"jsonrpc":"2.0","#)?;
    let (id, result) = if let Some(rest) = rest.strip_prefix(br#""result":"#) {
        let (result, rest) = rest.split_at(json_value_len(rest)?);
        let (id, rest) = plain_i32(rest.strip_prefix(br#","id":"#)?)?;
        (rest == b"}").then_some((id, result))?
    } else {
        let (id, rest) = plain_i32(rest.strip_prefix(br#""id":"#)?)?;
        let rest = rest.strip_prefix(br#","result":"#)?;
        let (result, rest) = rest.split_at(json_value_len(rest)?);
        (rest == b"}").then_some((id, result))?
    };
    let text = std::str::from_utf8(result).ok()?;
    let result = (text != "null").then(|| AnyResult::Unchecked(text.into()));
    Some(AnyResponse { id: RequestId::Number(id), result, error: None })
}

/// A JSON-RPC id as serde_json reads an `i32`: an optional `-`, then digits without a leading
/// zero; and the bytes after it.
fn plain_i32(bytes: &[u8]) -> Option<(i32, &[u8])> {
    let sign = usize::from(bytes.first() == Some(&b'-'));
    let digits = bytes[sign..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 10 || (digits > 1 && bytes[sign] == b'0') {
        return None;
    }
    let end = sign + digits;
    let id = std::str::from_utf8(&bytes[..end]).ok()?.parse::<i32>().ok()?;
    Some((id, &bytes[end..]))
}

/// The length of the JSON value `bytes` starts with, by its quotes and brackets alone (no
/// validation): a string to its closing quote, an object or array to the bracket that closes
/// it (either kind counts), anything else to the next `,`, `}`, `]` or whitespace. `None` when
/// it does not end in `bytes`.
fn json_value_len(bytes: &[u8]) -> Option<usize> {
    /// What each byte is to the scan: 0 nothing, or one of these.
    const QUOTE: u8 = 1;
    const OPEN: u8 = 2;
    const CLOSE: u8 = 3;
    const ESCAPE: u8 = 4;
    const CLASS: [u8; 256] = {
        let mut table = [0u8; 256];
        table[b'"' as usize] = QUOTE;
        table[b'{' as usize] = OPEN;
        table[b'[' as usize] = OPEN;
        table[b'}' as usize] = CLOSE;
        table[b']' as usize] = CLOSE;
        table[b'\\' as usize] = ESCAPE;
        table
    };
    match *bytes.first()? {
        b'"' => string_end(bytes, 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = 0;
            while at < bytes.len() {
                match CLASS[usize::from(bytes[at])] {
                    QUOTE => {
                        at = string_end(bytes, at + 1)?;
                        continue;
                    }
                    OPEN => depth += 1,
                    CLOSE => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
            None
        }
        _ => {
            let end = bytes
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(bytes.len());
            (end > 0).then_some(end)
        }
    }
}

/// Just past the quote that closes the string whose text starts at `at` (a `\` takes the byte
/// after it with it). Its first 16 bytes are looked at one by one (an object's keys are
/// shorter: a call to `memchr2` would cost more than it skips); past them, `memchr2` skips the
/// text between quotes and backslashes a vector at a time (a `Location`'s URI).
fn string_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    let short = bytes.len().min(at + 16);
    while at < short {
        match bytes[at] {
            b'"' => return Some(at + 1),
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
    loop {
        let found = at + memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
        if bytes[found] == b'"' {
            return Some(found + 1);
        }
        at = found + 2;
    }
}

/// Service main loop driver for either Language Servers or Language Clients.
pub struct MainLoop<S: LspService> {
    service: S,
    rx: mpsc::UnboundedReceiver<MainLoopEvent>,
    outgoing_id: i32,
    outgoing: HashMap<RequestId, oneshot::Sender<AnyResponse>>,
    tasks: FuturesUnordered<RequestFuture<S::Future>>,
}

enum MainLoopEvent {
    Outgoing(Message),
    OutgoingRequest(AnyRequest, oneshot::Sender<AnyResponse>),
    Any(AnyEvent),
}

define_getters!(impl[S: LspService] MainLoop<S>, service: S);

impl<S> MainLoop<S>
where
    S: LspService,
    S::Response: Into<AnyResult>,
    ResponseError: From<S::Error>,
{
    /// Create a Language Server main loop.
    #[must_use]
    pub fn new_server(builder: impl FnOnce(ClientSocket) -> S) -> (Self, ClientSocket) {
        let (this, socket) = Self::new(|socket| builder(ClientSocket(socket)));
        (this, ClientSocket(socket))
    }

    /// Create a Language Client main loop.
    #[must_use]
    pub fn new_client(builder: impl FnOnce(ServerSocket) -> S) -> (Self, ServerSocket) {
        let (this, socket) = Self::new(|socket| builder(ServerSocket(socket)));
        (this, ServerSocket(socket))
    }

    fn new(builder: impl FnOnce(PeerSocket) -> S) -> (Self, PeerSocket) {
        let (tx, rx) = mpsc::unbounded();
        let socket = PeerSocket { tx };
        let this = Self {
            service: builder(socket.clone()),
            rx,
            outgoing_id: 0,
            outgoing: HashMap::new(),
            tasks: FuturesUnordered::new(),
        };
        (this, socket)
    }

    /// Drive the service main loop to provide the service.
    ///
    /// Shortcut to [`MainLoop::run`] that accept an `impl AsyncRead` and implicit wrap it in a
    /// [`BufReader`].
    // Documented in `Self::run`.
    #[allow(clippy::missing_errors_doc)]
    pub async fn run_buffered(self, input: impl AsyncRead, output: impl AsyncWrite) -> Result<()> {
        self.run(BufReader::new(input), output).await
    }

    /// Drive the service main loop to provide the service.
    ///
    /// # Errors
    ///
    /// - `Error::Io` when the underlying `input` or `output` raises an error.
    /// - `Error::Deserialize` when the peer sends undecodable or invalid message.
    /// - `Error::Protocol` when the peer violates Language Server Protocol.
    /// - Other errors raised from service handlers.
    pub async fn run(self, input: impl AsyncBufRead, output: impl AsyncWrite) -> Result<()> {
        pin_mut!(input);
        let incoming = futures::stream::unfold(input, |mut input| async move {
            Some((Message::read(&mut input).await, input))
        });
        self.run_messages(incoming, output).await
    }

    /// Drive the service main loop on messages already read and decoded (filepuff's patch, see
    /// `vendor/README.md`): `incoming` yields them in the peer's order, and its end is the end
    /// of the input (as [`Error::Eof`] from [`MainLoop::run`]).
    ///
    /// # Errors
    ///
    /// As [`MainLoop::run`]; `incoming`'s errors end the loop as a stream's read errors do.
    pub async fn run_messages(
        mut self,
        incoming: impl futures::Stream<Item = Result<Message>>,
        output: impl AsyncWrite,
    ) -> Result<()> {
        pin_mut!(output);
        let incoming = incoming.chain(futures::stream::once(async { Err(Error::Eof) }));
        let outgoing = futures::sink::unfold(output, |mut output, msg| async move {
            Message::write(&msg, &mut output).await.map(|()| output)
        });
        pin_mut!(incoming, outgoing);

        let mut flush_fut = futures::future::Fuse::terminated();
        let ret = loop {
            // Outgoing > internal > incoming.
            // Preference on outgoing data provides back pressure in case of
            // flooding incoming requests.
            let ctl = select_biased! {
                // Concurrently flush out the previous message.
                ret = flush_fut => { ret?; continue; }

                resp = self.tasks.select_next_some() => ControlFlow::Continue(Some(Message::Response(resp))),
                event = self.rx.next() => self.dispatch_event(event.expect("Sender is alive")),
                msg = incoming.next() => {
                    let dispatch_fut = self.dispatch_message(msg.expect("Never ends")?).fuse();
                    pin_mut!(dispatch_fut);
                    // NB. Concurrently wait for `poll_ready`, and write out the last message.
                    // If the service is waiting for client's response of the last request, while
                    // the last message is not delivered on the first write, it can deadlock.
                    loop {
                        select_biased! {
                            // Dispatch first. It usually succeeds immediately for non-requests,
                            // and the service is hardly busy.
                            ctl = dispatch_fut => break ctl,
                            ret = flush_fut => { ret?; continue }
                        }
                    }
                }
            };
            let msg = match ctl {
                ControlFlow::Continue(Some(msg)) => msg,
                ControlFlow::Continue(None) => continue,
                ControlFlow::Break(ret) => break ret,
            };
            // Flush the previous one and load a new message to send.
            outgoing.feed(msg).await?;
            flush_fut = outgoing.flush().fuse();
        };

        // Flush the last message. It is enqueued before the event returning `ControlFlow::Break`.
        // To preserve the order at best effort, we send it before exiting the main loop.
        // But the more significant `ControlFlow::Break` error will override the flushing error,
        // if there is any.
        let flush_ret = outgoing.close().await;
        ret.and(flush_ret)
    }

    async fn dispatch_message(&mut self, msg: Message) -> ControlFlow<Result<()>, Option<Message>> {
        match msg {
            Message::Request(req) => {
                if let Err(err) = poll_fn(|cx| self.service.poll_ready(cx)).await {
                    let resp = AnyResponse {
                        id: req.id,
                        result: None,
                        error: Some(err.into()),
                    };
                    return ControlFlow::Continue(Some(Message::Response(resp)));
                }
                let id = req.id.clone();
                let fut = self.service.call(req);
                self.tasks.push(RequestFuture { fut, id: Some(id) });
            }
            Message::Response(resp) => {
                if let Some(resp_tx) = self.outgoing.remove(&resp.id) {
                    // The result may be ignored.
                    let _: Result<_, _> = resp_tx.send(resp);
                }
            }
            Message::Notification(notif) => {
                self.service.notify(notif)?;
            }
        }
        ControlFlow::Continue(None)
    }

    fn dispatch_event(&mut self, event: MainLoopEvent) -> ControlFlow<Result<()>, Option<Message>> {
        match event {
            MainLoopEvent::OutgoingRequest(mut req, resp_tx) => {
                req.id = RequestId::Number(self.outgoing_id);
                assert!(self.outgoing.insert(req.id.clone(), resp_tx).is_none());
                self.outgoing_id += 1;
                ControlFlow::Continue(Some(Message::Request(req)))
            }
            MainLoopEvent::Outgoing(msg) => ControlFlow::Continue(Some(msg)),
            MainLoopEvent::Any(event) => {
                self.service.emit(event)?;
                ControlFlow::Continue(None)
            }
        }
    }
}

pin_project! {
    struct RequestFuture<Fut> {
        #[pin]
        fut: Fut,
        id: Option<RequestId>,
    }
}

impl<Fut, T, Error> Future for RequestFuture<Fut>
where
    Fut: Future<Output = Result<T, Error>>,
    T: Into<AnyResult>,
    ResponseError: From<Error>,
{
    type Output = AnyResponse;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let (mut result, mut error) = (None, None);
        match ready!(this.fut.poll(cx)) {
            Ok(v) => result = Some(v.into()),
            Err(err) => error = Some(err.into()),
        }
        Poll::Ready(AnyResponse {
            id: this.id.take().expect("Future is consumed"),
            result,
            error,
        })
    }
}

macro_rules! impl_socket_wrapper {
    ($name:ident) => {
        impl $name {
            /// Create a closed socket outside a main loop. Any interaction will immediately return
            /// an error of [`Error::ServiceStopped`].
            ///
            /// This works as a placeholder where a socket is required but actually unused.
            ///
            /// # Note
            ///
            /// To prevent accidental misusages, this method is NOT implemented as
            /// [`Default::default`] intentionally.
            #[must_use]
            pub fn new_closed() -> Self {
                Self(PeerSocket::new_closed())
            }

            /// Send a request to the peer and wait for its response.
            ///
            /// # Errors
            /// - [`Error::ServiceStopped`] when the service main loop stopped.
            /// - [`Error::Response`] when the peer replies an error.
            pub async fn request<R: Request>(&self, params: R::Params) -> Result<R::Result> {
                self.0.request::<R>(params).await
            }

            /// [`Self::request`], its result read by `read` (filepuff's patch, see
            /// `vendor/README.md`): given the result as the peer sent it (a `null` or missing
            /// one as `AnyResult::Value(Null)`), for a caller that reads some answers faster
            /// than serde's derived code, or keeps parts of them as text.
            ///
            /// # Errors
            /// As [`Self::request`]; what `read` returns as [`Error::Deserialize`].
            pub async fn request_read<R: Request>(
                &self,
                params: R::Params,
                read: fn(AnyResult) -> serde_json::Result<R::Result>,
            ) -> Result<R::Result> {
                self.0.request_read::<R>(params, read).await
            }

            /// Send a notification to the peer and wait for its response.
            ///
            /// This is done asynchronously. An `Ok` result indicates the message is successfully
            /// queued, but may not be sent to the peer yet.
            ///
            /// # Errors
            /// - [`Error::ServiceStopped`] when the service main loop stopped.
            pub fn notify<N: Notification>(&self, params: N::Params) -> Result<()> {
                self.0.notify::<N>(params)
            }

            /// Emit an arbitrary loopback event object to the service handler.
            ///
            /// This is done asynchronously. An `Ok` result indicates the message is successfully
            /// queued, but may not be processed yet.
            ///
            /// # Errors
            /// - [`Error::ServiceStopped`] when the service main loop stopped.
            pub fn emit<E: Send + 'static>(&self, event: E) -> Result<()> {
                self.0.emit::<E>(event)
            }
        }
    };
}

/// The socket for Language Server to communicate with the Language Client peer.
#[derive(Debug, Clone)]
pub struct ClientSocket(PeerSocket);
impl_socket_wrapper!(ClientSocket);

/// The socket for Language Client to communicate with the Language Server peer.
#[derive(Debug, Clone)]
pub struct ServerSocket(PeerSocket);
impl_socket_wrapper!(ServerSocket);

#[derive(Debug, Clone)]
struct PeerSocket {
    tx: mpsc::UnboundedSender<MainLoopEvent>,
}

impl PeerSocket {
    fn new_closed() -> Self {
        let (tx, _rx) = mpsc::unbounded();
        Self { tx }
    }

    fn send(&self, v: MainLoopEvent) -> Result<()> {
        self.tx.unbounded_send(v).map_err(|_| Error::ServiceStopped)
    }

    fn request<R: Request>(&self, params: R::Params) -> PeerSocketRequestFuture<R::Result> {
        self.request_read::<R>(params, AnyResult::into_typed)
    }

    fn request_read<R: Request>(
        &self,
        params: R::Params,
        read: fn(AnyResult) -> serde_json::Result<R::Result>,
    ) -> PeerSocketRequestFuture<R::Result> {
        let req = AnyRequest {
            id: RequestId::Number(0),
            method: R::METHOD.into(),
            params: serde_json::to_value(params).expect("Failed to serialize"),
        };
        let (tx, rx) = oneshot::channel();
        // If this fails, the oneshot channel will also be closed, and it is handled by
        // `PeerSocketRequestFuture`.
        let _: Result<_, _> = self.send(MainLoopEvent::OutgoingRequest(req, tx));
        PeerSocketRequestFuture { rx, read }
    }

    fn notify<N: Notification>(&self, params: N::Params) -> Result<()> {
        let notif = AnyNotification {
            method: N::METHOD.into(),
            params: serde_json::to_value(params).expect("Failed to serialize"),
        };
        self.send(MainLoopEvent::Outgoing(Message::Notification(notif)))
    }

    pub fn emit<E: Send + 'static>(&self, event: E) -> Result<()> {
        self.send(MainLoopEvent::Any(AnyEvent::new(event)))
    }
}

struct PeerSocketRequestFuture<T> {
    rx: oneshot::Receiver<AnyResponse>,
    read: fn(AnyResult) -> serde_json::Result<T>,
}

impl<T> Future for PeerSocketRequestFuture<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let resp = ready!(Pin::new(&mut self.rx)
            .poll(cx)
            .map_err(|_| Error::ServiceStopped))?;
        Poll::Ready(match resp.error {
            None => Ok((self.read)(resp.result.unwrap_or(AnyResult::Value(JsonValue::Null)))?),
            Some(err) => Err(Error::Response(err)),
        })
    }
}

/// A dynamic runtime event.
///
/// This is a wrapper of `Box<dyn Any + Send>`, but saves the underlying type name for better
/// `Debug` impl.
///
/// See [`LspService::emit`] for usages of this type.
pub struct AnyEvent {
    inner: Box<dyn Any + Send>,
    type_name: &'static str,
}

impl fmt::Debug for AnyEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnyEvent")
            .field("type_name", &self.type_name)
            .finish_non_exhaustive()
    }
}

impl AnyEvent {
    #[must_use]
    fn new<T: Send + 'static>(v: T) -> Self {
        AnyEvent {
            inner: Box::new(v),
            type_name: type_name::<T>(),
        }
    }

    /// Returns a reference to the inner `dyn Any + Send` value.
    #[must_use]
    pub fn inner(&self) -> &(dyn Any + Send) {
        &*self.inner
    }

    /// Consumes the event, returning the inner `Box<dyn Any + Send>`.
    #[must_use]
    pub fn into_inner(self) -> Box<dyn Any + Send> {
        self.inner
    }

    /// Get the underlying type name for debugging purpose.
    ///
    /// The result string is only meant for debugging. It is not stable and cannot be trusted.
    #[must_use]
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// Returns `true` if the inner type is the same as `T`.
    #[must_use]
    pub fn is<T: Send + 'static>(&self) -> bool {
        self.inner.is::<T>()
    }

    /// Returns some reference to the inner value if it is of type `T`, or `None` if it isn't.
    #[must_use]
    pub fn downcast_ref<T: Send + 'static>(&self) -> Option<&T> {
        self.inner.downcast_ref::<T>()
    }

    /// Returns some mutable reference to the inner value if it is of type `T`, or `None` if it
    /// isn't.
    #[must_use]
    pub fn downcast_mut<T: Send + 'static>(&mut self) -> Option<&mut T> {
        self.inner.downcast_mut::<T>()
    }

    /// Attempt to downcast it to a concrete type.
    ///
    /// # Errors
    ///
    /// Returns `self` if the type mismatches.
    pub fn downcast<T: Send + 'static>(self) -> Result<T, Self> {
        match self.inner.downcast::<T>() {
            Ok(v) => Ok(*v),
            Err(inner) => Err(Self {
                inner,
                type_name: self.type_name,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn _main_loop_future_is_send<S>(
        f: MainLoop<S>,
        input: impl AsyncBufRead + Send,
        output: impl AsyncWrite + Send,
    ) -> impl Send
    where
        S: LspService<Response = JsonValue> + Send,
        S::Future: Send,
        S::Error: From<Error> + Send,
        ResponseError: From<S::Error>,
    {
        f.run(input, output)
    }

    /// filepuff's patch: a service's [`AnyResult::Raw`] answer is written out as the text it
    /// holds (member order, spacing and number spelling kept), inside the response envelope.
    #[test]
    fn a_raw_answer_is_written_as_it_came() {
        struct Raw;
        impl Service<AnyRequest> for Raw {
            type Response = AnyResult;
            type Error = ResponseError;
            type Future = std::future::Ready<Result<AnyResult, ResponseError>>;
            fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ResponseError>> {
                Poll::Ready(Ok(()))
            }
            fn call(&mut self, _req: AnyRequest) -> Self::Future {
                let text = r#"{"z": 1, "a": [2.50]}"#.to_owned();
                std::future::ready(Ok(AnyResult::Raw(serde_json::value::RawValue::from_string(text).unwrap())))
            }
        }
        impl LspService for Raw {
            fn notify(&mut self, _notif: AnyNotification) -> ControlFlow<Result<()>> {
                ControlFlow::Continue(())
            }
            fn emit(&mut self, _event: AnyEvent) -> ControlFlow<Result<()>> {
                ControlFlow::Continue(())
            }
        }
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{}}"#;
        let input = format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes();
        // The loop panics if every socket is gone while it runs: keep one.
        let (main_loop, _client) = MainLoop::new_server(|_| Raw);
        let mut output = futures::io::Cursor::new(Vec::new());
        {
            let run = main_loop.run_buffered(futures::io::Cursor::new(input), &mut output);
            let mut run = std::pin::pin!(run);
            let polled = run.as_mut().poll(&mut Context::from_waker(std::task::Waker::noop()));
            assert!(polled.is_ready(), "in-memory input and output: the loop answers and meets the end at once");
        }
        let written = String::from_utf8(output.into_inner()).unwrap();
        assert!(written.contains(r#""id":7"#) && written.contains(r#""result":{"z": 1, "a": [2.50]}"#), "{written}");
    }

    // filepuff's vendored copy has no dev-dependencies: polled once instead of `#[tokio::test]`.
    #[test]
    fn closed_client_socket() {
        let socket = ClientSocket::new_closed();
        assert!(matches!(
            socket.notify::<lsp_types::notification::Exit>(()),
            Err(Error::ServiceStopped)
        ));
        assert!(matches!(
            futures::FutureExt::now_or_never(socket.request::<lsp_types::request::Shutdown>(()))
                .expect("a closed socket answers at once"),
            Err(Error::ServiceStopped)
        ));
        assert!(matches!(socket.emit(42i32), Err(Error::ServiceStopped)));
    }

    // filepuff's vendored copy has no dev-dependencies: polled once instead of `#[tokio::test]`.
    #[test]
    fn closed_server_socket() {
        let socket = ServerSocket::new_closed();
        assert!(matches!(
            socket.notify::<lsp_types::notification::Exit>(()),
            Err(Error::ServiceStopped)
        ));
        assert!(matches!(
            futures::FutureExt::now_or_never(socket.request::<lsp_types::request::Shutdown>(()))
                .expect("a closed socket answers at once"),
            Err(Error::ServiceStopped)
        ));
        assert!(matches!(socket.emit(42i32), Err(Error::ServiceStopped)));
    }

    /// A message with its response's `result` (if any) as a `serde_json::Value`.
    fn values(message: Message) -> Message {
        match message {
            Message::Response(mut response) => {
                response.result = response
                    .result
                    .map(|result| AnyResult::Value(result.into_typed().expect("a result reads as a Value")));
                Message::Response(response)
            }
            other => other,
        }
    }

    /// filepuff's patch: [`Message::decode`] accepts and rejects what the derived
    /// `RawMessage<Message>` did, and builds the same message.
    #[test]
    fn one_pass_decode_agrees_with_the_derived_one() {
        let cases = [
            r#"{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{"a":[1,2]}}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"shutdown"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"exit"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"n"}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":[{"uri":"file:///a","range":{}}]}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":7}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32801,"message":"modified"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32801,"message":"m","data":{"k":1}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"m","result":1}"#,
            r#"{"id":7,"extra":true,"jsonrpc":"2.0","result":{"nested":{"deep":[null,true]}}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":1}"#,
            r#"{"jsonrpc":"2.0","result":1}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":1}"#,
            r#"{"id":1,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"result":1}"#,
            r#"{"jsonrpc":"2.0","method":"m","error":{"code":1.5,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","error":{"code":1.5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}"#,
            r#"{"jsonrpc":"2.0","method":"m","method":"n"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":1,"params":2}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1,"result":2}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":1,"result":2}"#,
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","method":"m"}"#,
            r#"{"jsonrpc":"2.0","\u0069d":3,"result":true}"#,
            r#"{"jsonrpc":"2.0","id":"s","method":7}"#,
            r#"[1,2]"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1"#,
            r#""#,
        ];
        for case in cases {
            let derived = serde_json::from_slice::<RawMessage<Message>>(case.as_bytes()).map(|m| m.inner);
            let decoded = Message::decode(case.as_bytes());
            match (derived.map(values), decoded.map(values)) {
                (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{case}"),
                (Err(_), Err(_)) => {}
                (a, b) => panic!("{case}: derived {a:?}, one pass {b:?}"),
            }
        }
    }

    /// A JSON text from `seed` (an LCG): every kind of value, nested, strings with escapes and
    /// non-ASCII characters, numbers of every form.
    fn step(seed: &mut u64, n: u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 33) % n
    }

    fn json_text(seed: &mut u64, depth: u32) -> String {
        let kinds = if depth == 0 { 6 } else { 8 };
        match step(seed, kinds) {
            0 => "null".to_owned(),
            1 => ["true", "false"][step(seed, 2) as usize].to_owned(),
            2 => ["0", "-1", "17", "3.5", "-0.25e3", "1E-7", "2147483647"][step(seed, 7) as usize].to_owned(),
            3 | 4 | 5 => {
                let pieces = ["a", "\\\"", "\\\\", "\\n", "\\u00e9", "é", "🦀", "]", "}", ",", " ", "[", "{"];
                let n = step(seed, 5);
                let body: String = (0..n).map(|_| pieces[step(seed, pieces.len() as u64) as usize]).collect();
                format!("\"{body}\"")
            }
            6 => {
                let n = step(seed, 4);
                let items: Vec<String> = (0..n).map(|_| json_text(seed, depth - 1)).collect();
                format!("[{}]", items.join(","))
            }
            _ => {
                let n = step(seed, 4);
                let items: Vec<String> =
                    (0..n).map(|i| format!("\"k{i}\":{}", json_text(seed, depth - 1))).collect();
                format!("{{{}}}", items.join(","))
            }
        }
    }

    /// The response's id and result text (a validated copy of unchecked text), as compared.
    fn response_parts(message: &Message) -> Option<(RequestId, Option<JsonValue>)> {
        match message {
            Message::Response(response) => Some((
                response.id.clone(),
                response.result.clone().map(|result| result.into_typed::<JsonValue>().expect("valid")),
            )),
            _ => None,
        }
    }

    /// filepuff's patch: a plain response frame reads as the full decode reads it, with its
    /// result's text as sent; any frame the plain path takes that the full decode refuses has
    /// a result that is not JSON; and every other frame goes the full way.
    #[test]
    fn plain_responses_read_as_the_full_decode_does() {
        let mut seed = 7;
        for case in 0..3000 {
            let result = json_text(&mut seed, 4);
            let id = [0, 7, -3, 2147483647, -2147483648][case % 5];
            let frame = if case % 2 == 0 {
                format!(r#"{{"jsonrpc":"2.0","result":{result},"id":{id}}}"#)
            } else {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
            };
            let plain = plain_response(frame.as_bytes()).unwrap_or_else(|| panic!("not plain: {frame}"));
            let text = plain.result.as_ref().and_then(AnyResult::text);
            assert_eq!(text, (result != "null").then_some(result.as_str()), "{frame}");
            let fast = Message::Response(plain);
            let full = Message::decode_full(frame.as_bytes()).unwrap();
            assert_eq!(response_parts(&fast), response_parts(&full), "{frame}");
            // One byte changed anywhere.
            if case % 10 == 0 {
                for at in 0..frame.len() {
                    for byte in [b'"', b'\\', b'[', b']', b'{', b'}', b',', b'1', b' ', b'x'] {
                        let mut mutated = frame.clone().into_bytes();
                        mutated[at] = byte;
                        let Some(plain) = plain_response(&mutated) else { continue };
                        let fast = Message::Response(plain.clone());
                        let shown = String::from_utf8_lossy(&mutated);
                        match Message::decode_full(&mutated) {
                            Ok(full) => assert_eq!(response_parts(&fast), response_parts(&full), "{shown}"),
                            Err(_) => {
                                let text = plain.result.as_ref().and_then(AnyResult::text).expect("a result");
                                assert!(serde_json::from_str::<serde::de::IgnoredAny>(text).is_err(), "{shown}");
                                assert!(plain.result.unwrap().checked().is_err(), "{shown}");
                            }
                        }
                    }
                }
            }
        }
        for other in [
            r#"{"jsonrpc":"2.0", "result":1,"id":1}"#,
            r#"{"jsonrpc":"2.0","result":1,"id":1} "#,
            r#"{"jsonrpc":"2.0","result":1,"id":1,"x":1}"#,
            r#"{"jsonrpc":"2.0","result":1,"id":"s"}"#,
            r#"{"jsonrpc":"2.0","result":1,"id":01}"#,
            r#"{"jsonrpc":"2.0","result":1,"id":2147483648}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":1}"#,
            r#"{"jsonrpc":"2.0","result":"unterminated,"id":1}"#,
        ] {
            assert!(plain_response(other.as_bytes()).is_none(), "{other}");
        }
    }

    #[test]
    fn any_event() {
        #[derive(Debug, Clone, PartialEq, Eq)]
        struct MyEvent<T>(T);

        let event = MyEvent("hello".to_owned());
        let mut any_event = AnyEvent::new(event.clone());
        assert!(any_event.type_name().contains("MyEvent"));

        assert!(!any_event.is::<String>());
        assert!(!any_event.is::<MyEvent<i32>>());
        assert!(any_event.is::<MyEvent<String>>());

        assert_eq!(any_event.downcast_ref::<i32>(), None);
        assert_eq!(any_event.downcast_ref::<MyEvent<String>>(), Some(&event));

        assert_eq!(any_event.downcast_mut::<MyEvent<i32>>(), None);
        any_event.downcast_mut::<MyEvent<String>>().unwrap().0 += " world";

        let any_event = any_event.downcast::<()>().unwrap_err();
        let inner = any_event.downcast::<MyEvent<String>>().unwrap();
        assert_eq!(inner.0, "hello world");
    }
}
