//! The editor frame guard: a table of malformed messages (the ones issue 16 found among them)
//! and property tests against async-lsp's own decoder and main loop — whatever the guard lets
//! through, async-lsp decodes, into the very message the guard built.

use std::ops::ControlFlow;

use async_lsp::{AnyEvent, AnyNotification, AnyRequest, LspService, MainLoop, ResponseError};
use proptest::prelude::*;

use super::*;

fn frames(input: &[u8]) -> Vec<String> {
    let mut reader = FrameReader::new(input);
    let mut out = Vec::new();
    while let Some(frame) = reader.next().unwrap() {
        out.push(describe(frame));
    }
    out
}

fn describe(frame: Frame) -> String {
    match frame {
        Frame::Message(message) => format!("{message:?}"),
        Frame::Invalid { id, code, .. } => format!("error {code} id {id}"),
        Frame::Dropped { replacement: None, .. } => "dropped".to_owned(),
        Frame::Dropped { replacement: Some(message), .. } => {
            let json = serde_json::to_value(&message).unwrap();
            format!("dropped, error {} to id {}", json["error"]["code"], json["id"])
        }
    }
}

/// How [`describe`] shows the message async-lsp decodes from `body`.
fn decoded(body: &str) -> String {
    format!("{:?}", Message::decode(body.as_bytes()).unwrap())
}

#[test]
fn bad_frames_are_answered_and_the_stream_recovers() {
    let good = r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#;
    let bad_method = r#"{"jsonrpc":"2.0","id":7,"method":42}"#;
    let input = format!(
        "Content-Length: abc\r\n\r\n{{\"x\":1}}Content-Length: {}\r\n\r\n{good}\
         Content-Length: 5\r\n\r\n{{bad}}\
         Content-Length: 9\r\n\r\n[1, 2, 3]\
         Content-Length: {}\r\n\r\n{bad_method}  \
         Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{good}",
        good.len(),
        bad_method.len(),
        good.len()
    );
    assert_eq!(
        frames(input.as_bytes()),
        [
            "error -32700 id null".to_owned(),
            decoded(good),
            "error -32700 id null".to_owned(),
            "error -32600 id null".to_owned(),
            "error -32600 id 7".to_owned(),
            decoded(good),
        ]
    );
}

#[test]
fn responses_and_notifications_pass() {
    let response = r#"{"jsonrpc":"2.0","id":"a","result":null}"#;
    let error = r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no","data":[1]}}"#;
    let notification = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;
    let input = [encode(response.as_bytes()), encode(error.as_bytes()), encode(notification.as_bytes())].concat();
    assert_eq!(frames(&input), [decoded(response), decoded(error), decoded(notification)]);
}

/// Issue 16 (3): each of these ended `filepuff lsp`; each is now answered or dropped.
#[test]
fn issue_16_malformed_json_rpc_is_answered_or_dropped() {
    let cases = [
        (r#"{"id":1,"method":"x"}"#, "error -32600 id 1"),
        (r#"{"jsonrpc":"1.0","id":2,"method":"x"}"#, "error -32600 id 2"),
        (r#"{"jsonrpc":2.0,"method":"x"}"#, "error -32600 id null"),
        (r#"{"jsonrpc":"2.0","id":3.5,"method":"x"}"#, "error -32600 id 3.5"),
        (r#"{"jsonrpc":"2.0","id":9000000000,"method":"x"}"#, "error -32600 id 9000000000"),
        (r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#, "error -32600 id null"),
        (r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":4,"method":"x"}"#, "error -32600 id 4"),
        (r#"{"jsonrpc":"2.0","method":"x","method":"y"}"#, "error -32600 id null"),
        (r#"{"jsonrpc":"2.0","id":5,"method":"x","params":7}"#, "error -32602 id 5"),
        (r#"{"jsonrpc":"2.0","id":1.5,"result":null}"#, "dropped"),
        (r#"{"jsonrpc":"2.0","id":9000000000,"result":null}"#, "dropped"),
        (r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#, "dropped"),
        (r#"{"jsonrpc":"2.0","result":1}"#, "dropped"),
        (r#"{"jsonrpc":"2.0","id":6,"error":"boom"}"#, "dropped, error -32603 to id 6"),
        (r#"{"jsonrpc":"2.0","id":7,"error":{"code":1.5,"message":"x"}}"#, "dropped, error -32603 to id 7"),
        (r#"{"jsonrpc":"2.0","id":8,"error":{"code":4294967296,"message":"x"}}"#, "dropped, error -32603 to id 8"),
        (r#"{"jsonrpc":"2.0","id":9,"error":{"message":"no code"}}"#, "dropped, error -32603 to id 9"),
        (r#"{"jsonrpc":"2.0","id":10,"error":{"code":1,"code":2,"message":"x"}}"#, "dropped, error -32603 to id 10"),
        (r#"{"jsonrpc":"2.0","id":11}"#, "dropped, error -32603 to id 11"),
        (r#"{"id":12,"result":null}"#, "dropped, error -32603 to id 12"),
        (r#"{"jsonrpc":"2.0","id":13,"result":1,"error":{"code":1,"message":"x"}}"#, "dropped, error -32603 to id 13"),
        (r#"{"jsonrpc":"2.0","id":"s","result":1,"error":null}"#, "passes"),
    ];
    for (body, expected) in cases {
        let expected = if expected == "passes" { decoded(body) } else { expected.to_owned() };
        assert_eq!(frames(&encode(body.as_bytes())), [expected], "{body}");
    }
}

#[test]
fn a_header_line_without_end_is_answered_once_and_skipped() {
    let input =
        [vec![b'x'; 200 << 10], b"\r\n".to_vec(), encode(br#"{"jsonrpc":"2.0","method":"initialized"}"#)].concat();
    assert_eq!(
        frames(&input),
        ["error -32700 id null".to_owned(), decoded(r#"{"jsonrpc":"2.0","method":"initialized"}"#)]
    );
}

/// A service that answers every request with null and takes every notification.
struct Accept;

impl tower::Service<AnyRequest> for Accept {
    type Response = Value;
    type Error = ResponseError;
    type Future = std::future::Ready<Result<Value, ResponseError>>;
    fn poll_ready(&mut self, _cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), ResponseError>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn call(&mut self, _request: AnyRequest) -> Self::Future {
        std::future::ready(Ok(Value::Null))
    }
}

impl LspService for Accept {
    fn notify(&mut self, _notification: AnyNotification) -> ControlFlow<async_lsp::Result<()>> {
        ControlFlow::Continue(())
    }
    fn emit(&mut self, _event: AnyEvent) -> ControlFlow<async_lsp::Result<()>> {
        ControlFlow::Continue(())
    }
}

/// Whether async-lsp's own main loop decodes `body` (it ends at the end of input, not before).
fn async_lsp_accepts(body: &[u8]) -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let (mainloop, socket) = MainLoop::new_server(|_| Accept);
        let input = futures::io::Cursor::new(encode(body));
        let result = mainloop.run_buffered(input, futures::io::sink()).await;
        drop(socket);
        matches!(result, Err(async_lsp::Error::Eof))
    })
}

#[test]
fn the_oracle_rejects_what_ended_the_session() {
    assert!(async_lsp_accepts(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#));
    assert!(!async_lsp_accepts(br#"{"id":1,"method":"x"}"#));
    assert!(!async_lsp_accepts(br#"{"jsonrpc":"2.0","id":6,"error":"boom"}"#));
    assert!(!async_lsp_accepts(br#"{"jsonrpc":"2.0","jsonrpc":"2.0","method":"x"}"#));
}

/// A JSON-RPC-like object: keys from the message shapes (repeated at times) with valid and
/// invalid values, in any order; now and then not an object at all.
fn message() -> impl Strategy<Value = String> {
    let pair = prop_oneof![
        prop::sample::select(vec![r#""2.0""#, r#""1.0""#, "2.0", "null"]).prop_map(|v| format!(r#""jsonrpc":{v}"#)),
        prop::sample::select(vec![
            "1",
            "-7",
            "2147483647",
            "2147483648",
            "-2147483649",
            "9000000000",
            "1.5",
            "1e3",
            r#""abc""#,
            "null",
            "true",
            "{}",
            "[]"
        ])
        .prop_map(|v| format!(r#""id":{v}"#)),
        prop::sample::select(vec![r#""m""#, r#""$/cancelRequest""#, "5", "null", "{}"])
            .prop_map(|v| format!(r#""method":{v}"#)),
        prop::sample::select(vec!["{}", "[]", "null", "3", r#""s""#, r#"{"a":[1,2,{"b":null}],"a":2}"#])
            .prop_map(|v| format!(r#""params":{v}"#)),
        prop::sample::select(vec!["null", "1", "{}", "[1]", r#""r""#]).prop_map(|v| format!(r#""result":{v}"#)),
        prop::sample::select(vec![
            r#"{"code":1,"message":"m"}"#,
            r#"{"code":1,"message":"m","data":{"x":[]}}"#,
            r#"{"code":1.5,"message":"m"}"#,
            r#"{"code":9000000000,"message":"m"}"#,
            r#"{"message":"m"}"#,
            r#"{"code":1}"#,
            r#"{"code":1,"message":5}"#,
            r#"{"code":1,"code":2,"message":"m"}"#,
            r#"{"code":1,"message":"m","message":"n"}"#,
            r#""boom""#,
            "null",
            "[]"
        ])
        .prop_map(|v| format!(r#""error":{v}"#)),
        prop::sample::select(vec![r#""x":1"#, r#""Id":2"#, r#""i\u0064":3"#]).prop_map(str::to_owned),
    ];
    prop_oneof![
        20 => prop::collection::vec(pair, 0..7).prop_map(|pairs| format!("{{{}}}", pairs.join(","))),
        1 => prop::sample::select(vec!["[]", "1", "\"s\"", "null", "{", "{}}"]).prop_map(str::to_owned),
    ]
}

/// `default` cases, or `PROPTEST_CASES` for a longer run.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(512)))]

    /// Whatever the guard passes to the main loop, async-lsp's main loop would have taken
    /// (no message ends the session), and the message the guard built is the one async-lsp's
    /// decoder reads from the body: the main loop gets the guard's, parsed once.
    #[test]
    fn what_the_guard_builds_is_what_async_lsp_decodes(body in message()) {
        if let Frame::Message(passed) = check(body.clone().into_bytes()) {
            prop_assert!(async_lsp_accepts(body.as_bytes()), "passed but fatal: {}", body);
            let theirs = Message::decode(body.as_bytes()).map(|m| format!("{m:?}")).unwrap_or_default();
            prop_assert_eq!(format!("{passed:?}"), theirs, "{}", body);
        }
    }

    /// Arbitrary bytes on the editor's stream, in any pieces: no panic; and messages framed one
    /// after another come out as `check` says, in order.
    #[test]
    fn any_bytes_from_the_editor_pass_only_decodable_messages(
        noise in prop::collection::vec(any::<u8>(), 0..400),
        bodies in prop::collection::vec(message(), 0..4),
    ) {
        let mut input = noise;
        for (i, body) in bodies.iter().enumerate() {
            let at = (i * 131) % (input.len() + 1);
            input.splice(at..at, encode(body.as_bytes()));
        }
        let mut reader = FrameReader::new(input.as_slice());
        while reader.next().unwrap().is_some() {}
        let framed: Vec<u8> = bodies.iter().flat_map(|body| encode(body.as_bytes())).collect();
        let each: Vec<String> = bodies.iter().map(|body| describe(check(body.clone().into_bytes()))).collect();
        prop_assert_eq!(frames(&framed), each);
    }
}
