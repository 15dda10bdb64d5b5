use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::channel::oneshot;
use futures::FutureExt;
use tower_service::Service;

use crate::{
    AnyEvent, AnyNotification, AnyRequest, AnyResponse, AnyResult, ClientSocket, ErrorCode, LspService,
    MainLoopEvent, Message, PeerSocket, ResponseError, Result, ServerSocket,
};

/// The answer to a forwarded request: its result in `T` (a `serde_json::Value` for the
/// `Service` impls, the [`AnyResult`] as read for `call_raw`), or the peer's error.
pub struct PeerSocketResponseFuture<T = serde_json::Value> {
    rx: oneshot::Receiver<AnyResponse>,
    result: fn(AnyResult) -> Result<T, ResponseError>,
}

impl<T> Future for PeerSocketResponseFuture<T> {
    type Output = Result<T, ResponseError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.rx.poll_unpin(cx) {
            Poll::Ready(Ok(resp)) => Poll::Ready(match resp.error {
                None => (self.result)(resp.result.unwrap_or(AnyResult::Value(serde_json::Value::Null))),
                Some(resp_err) => Err(resp_err),
            }),
            Poll::Ready(Err(_closed)) => Poll::Ready(Err(ResponseError::new(
                ErrorCode::INTERNAL_ERROR,
                "forwarding service stopped",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

fn into_value(result: AnyResult) -> Result<serde_json::Value, ResponseError> {
    result
        .into_typed()
        .map_err(|err| ResponseError::new(ErrorCode::PARSE_ERROR, format!("invalid result: {err}")))
}

impl PeerSocket {
    fn on_call<T>(&self, req: AnyRequest, result: fn(AnyResult) -> Result<T, ResponseError>) -> PeerSocketResponseFuture<T> {
        let (tx, rx) = oneshot::channel();
        // If this fails, the oneshot channel is closed too: the future answers with an error.
        let _: Result<_, _> = self.send(MainLoopEvent::OutgoingRequest(req, tx));
        PeerSocketResponseFuture { rx, result }
    }

    fn on_notify(&mut self, notif: AnyNotification) -> ControlFlow<Result<()>> {
        match self.send(MainLoopEvent::Outgoing(Message::Notification(notif))) {
            Ok(()) => ControlFlow::Continue(()),
            Err(err) => ControlFlow::Break(Err(err)),
        }
    }

    fn on_emit(&mut self, event: AnyEvent) -> ControlFlow<Result<()>> {
        match self.send(MainLoopEvent::Any(event)) {
            Ok(()) => ControlFlow::Continue(()),
            Err(err) => ControlFlow::Break(Err(err)),
        }
    }
}

macro_rules! define_socket_wrappers {
    ($($ty:ty),*) => {
        $(
        impl Service<AnyRequest> for $ty {
            type Response = serde_json::Value;
            type Error = ResponseError;
            type Future = PeerSocketResponseFuture;

            fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
                // `*Socket` has an unbounded buffer, thus is always ready.
                Poll::Ready(Ok(()))
            }

            fn call(&mut self, req: AnyRequest) -> Self::Future {
                self.0.on_call(req, into_value)
            }
        }

        impl $ty {
            /// Forwards `req` (its `id` is replaced by the main loop's) and answers with its
            /// result as the peer sent it (filepuff's patch, see `vendor/README.md`): JSON text
            /// a service can give back as its own answer, written out verbatim, or read with
            /// [`AnyResult::into_typed`]. A `null` or missing result is `AnyResult::Value(Null)`.
            pub fn call_raw(&self, req: AnyRequest) -> PeerSocketResponseFuture<AnyResult> {
                self.0.on_call(req, Ok)
            }
        }

        impl LspService for $ty {
            fn notify(&mut self, notif: AnyNotification) -> ControlFlow<Result<()>> {
                self.0.on_notify(notif)
            }

            fn emit(&mut self, event: AnyEvent) -> ControlFlow<Result<()>> {
                self.0.on_emit(event)
            }
        }
        )*
    };
}

define_socket_wrappers!(ClientSocket, ServerSocket);
