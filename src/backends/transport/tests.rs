//! Tables for the framing cases met in the wild and in issue 16, and property tests (proptest:
//! arbitrary bytes in arbitrary pieces) for the decoder's bounds and the server-side reader.
//! Failing inputs proptest finds are kept in `proptest-regressions/` and replayed first.

use proptest::prelude::*;

use super::*;

const SMALL: FrameLimits = FrameLimits { max_header_bytes: 64, max_body_bytes: 1024 };

fn decode_all(limits: FrameLimits, pieces: &[&[u8]]) -> Vec<Decoded> {
    let mut decoder = Decoder::new(limits);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece);
        out.extend(std::iter::from_fn(|| decoder.next()));
    }
    out.extend(decoder.finish());
    out
}

fn body(text: &str) -> Decoded {
    Decoded::Body(text.as_bytes().to_vec())
}

#[test]
fn frames_junk_and_bad_headers_decode_as_the_table_says() {
    let cases: Vec<(&str, Vec<u8>, Vec<Decoded>)> = vec![
        ("one frame", encode(b"{}"), vec![body("{}")]),
        ("an empty body", b"Content-Length: 0\r\n\r\n".to_vec(), vec![body("")]),
        (
            "Content-Type and a lower-case name",
            b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}".to_vec(),
            vec![body("{}")],
        ),
        ("bare LF line breaks", b"Content-Length: 2\n\n{}".to_vec(), vec![body("{}")]),
        ("junk lines between frames", [b"hello from stdout\n\n".as_slice(), &encode(b"{}")].concat(), vec![body("{}")]),
        (
            "junk before the header on the same line",
            b"tail of a broken body}Content-Length: 2\r\n\r\n{}".to_vec(),
            vec![body("{}")],
        ),
        (
            "a bad length, then the stream resynchronises",
            [b"Content-Length: abc\r\n\r\n{}".as_slice(), &encode(b"[1]")].concat(),
            vec![Decoded::BadHeader("bad Content-Length \"abc\"".into()), body("[1]")],
        ),
        (
            "a negative length",
            b"Content-Length: -5\r\n\r\n".to_vec(),
            vec![Decoded::BadHeader("bad Content-Length \"-5\"".into())],
        ),
        ("a header section without length", b"Content-Type: x\r\n\r\n".to_vec(), vec![]),
        (
            "a non-header line inside the headers",
            b"Content-Length: 2\r\nnonsense\r\n\r\n".to_vec(),
            vec![Decoded::BadHeader("bad header line \"nonsense\"".into())],
        ),
        (
            "issue 16: a declared length of 99999999999 is refused unread",
            b"Content-Length: 99999999999\r\n\r\n{\"jsonrpc\":".to_vec(),
            vec![
                Decoded::BodyTooLarge { declared: 99_999_999_999, limit: 1024 },
                Decoded::BadHeader("the input ended inside a message".into()),
            ],
        ),
        (
            "a declared length beyond 64 bits",
            b"Content-Length: 999999999999999999999999\r\n\r\n".to_vec(),
            vec![Decoded::BadHeader("bad Content-Length \"999999999999999999999999\"".into())],
        ),
        (
            "the input ends inside a body",
            b"Content-Length: 10\r\n\r\n{\"a\"".to_vec(),
            vec![Decoded::BadHeader("the input ended inside a message".into())],
        ),
        ("a partial line of junk at the end", b"junk without end".to_vec(), vec![]),
    ];
    for (name, input, expected) in cases {
        assert_eq!(decode_all(SMALL, &[&input]), expected, "{name}");
        // Byte by byte, the same.
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(decode_all(SMALL, &bytes), expected, "{name}, byte by byte");
    }
}

#[test]
fn issue_16_output_without_a_line_break_is_held_to_the_header_limit() {
    let limits = FrameLimits { max_header_bytes: 64 << 10, max_body_bytes: 64 << 20 };
    let mut decoder = Decoder::new(limits);
    let chunk = vec![b'x'; 1 << 20];
    let mut reported = Vec::new();
    for _ in 0..64 {
        decoder.push(&chunk);
        reported.extend(std::iter::from_fn(|| decoder.next()));
        assert!(decoder.buffered() <= limits.max_header_bytes);
    }
    assert_eq!(reported, [Decoded::HeaderTooLong { limit: 64 << 10 }]);
    // The line ends: the stream goes on.
    decoder.push(b"\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(decoder.next(), Some(body("{}")));
}

/// A reader handing out `input` in pieces of the given sizes (cycled), as a pipe does.
struct Pieces {
    input: Vec<u8>,
    at: usize,
    sizes: Vec<usize>,
    turn: usize,
}

impl AsyncRead for Pieces {
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let size = self.sizes[self.turn % self.sizes.len()].max(1);
        self.turn += 1;
        let n = size.min(buf.remaining()).min(self.input.len() - self.at);
        let at = self.at;
        buf.put_slice(&self.input[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

/// The messages `BoundedReader` yields from `input` read in pieces of `sizes`, as `Debug`
/// text, up to the end of the stream or its first error.
fn read_through(input: Vec<u8>, sizes: Vec<usize>, limits: FrameLimits) -> (Vec<String>, Option<async_lsp::Error>) {
    use futures::StreamExt;
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let mut reader = BoundedReader::new(Pieces { input, at: 0, sizes, turn: 0 }, limits, "test");
        let mut messages = Vec::new();
        while let Some(item) = reader.next().await {
            match item {
                Ok(message) => messages.push(format!("{message:?}")),
                Err(err) => return (messages, Some(err)),
            }
        }
        (messages, None)
    })
}

const NOTIFICATION: &[u8] = br#"{"jsonrpc":"2.0","method":"m"}"#;

fn decoded(body: &[u8]) -> String {
    format!("{:?}", async_lsp::Message::decode(body).unwrap())
}

#[test]
fn the_server_reader_refuses_a_huge_declared_frame() {
    let input = [encode(NOTIFICATION), b"Content-Length: 99999999999\r\n\r\n{".to_vec()].concat();
    let (messages, err) = read_through(input, vec![7], SMALL);
    assert_eq!(messages, [decoded(NOTIFICATION)], "what came before the frame goes out");
    let Some(async_lsp::Error::Io(err)) = err else { panic!("an I/O error, not {err:?}") };
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("Content-Length: 99999999999"), "{err}");
}

#[test]
fn the_server_reader_decodes_frames_and_skips_junk() {
    let framed = b"Content-Length:   30 \r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}";
    let input = [b"log line on stdout\r\n".as_slice(), framed, b"Content-Length: x\r\n\r\n"].concat();
    let (messages, err) = read_through(input, vec![3, 100], SMALL);
    assert_eq!(messages, [decoded(NOTIFICATION)]);
    assert!(err.is_none(), "the output's end ends the stream: {err:?}");
}

#[test]
fn a_body_that_is_not_a_message_ends_the_stream_with_its_decode_error() {
    let input = [encode(NOTIFICATION), encode(b"{}"), encode(NOTIFICATION)].concat();
    let (messages, err) = read_through(input, vec![64], SMALL);
    assert_eq!(messages, [decoded(NOTIFICATION)]);
    assert!(matches!(err, Some(async_lsp::Error::Deserialize(_))), "{err:?}");
}

/// Frames as a well-behaved peer sends them (bodies within the small limits).
fn frames() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..8)
}

/// Sizes of the pieces the input arrives in.
fn pieces() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..300, 1..20)
}

fn split<'a>(input: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let (mut at, mut turn) = (0, 0);
    while at < input.len() {
        let n = sizes[turn % sizes.len()].min(input.len() - at);
        out.push(&input[at..at + n]);
        at += n;
        turn += 1;
    }
    out
}

/// Junk a server may print between frames: lines without a `Content-Length` header.
fn junk() -> impl Strategy<Value = Vec<u8>> {
    "[a-zA-Z0-9 {}:\"]{0,40}\n"
        .prop_map(String::into_bytes)
        .prop_filter("no header", |line| find_ascii_case_insensitive(line, CONTENT_LENGTH).is_none())
}

/// `default` cases, or `PROPTEST_CASES` for a longer run.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    /// Well-formed frames come out whole and in order, however the bytes are cut.
    #[test]
    fn frames_survive_any_chunking(bodies in frames(), sizes in pieces()) {
        let input: Vec<u8> = bodies.iter().flat_map(|b| encode(b)).collect();
        let got = decode_all(SMALL, &split(&input, &sizes));
        prop_assert_eq!(got, bodies.into_iter().map(Decoded::Body).collect::<Vec<_>>());
    }

    /// Junk lines between frames are skipped and every frame still comes out.
    #[test]
    fn junk_between_frames_is_skipped(bodies in frames(), junk in prop::collection::vec(junk(), 8), sizes in pieces()) {
        let input: Vec<u8> = bodies.iter().zip(&junk).flat_map(|(b, j)| [j.clone(), encode(b)].concat()).collect();
        let got = decode_all(SMALL, &split(&input, &sizes));
        prop_assert_eq!(got, bodies.into_iter().map(Decoded::Body).collect::<Vec<_>>());
    }

    /// Any bytes: no panic, never more held than one header line or one body, no body over the
    /// limit, and the same items whole or in pieces.
    #[test]
    fn any_input_is_bounded_and_chunking_does_not_matter(
        input in prop::collection::vec(prop_oneof![
            4 => any::<u8>(),
            1 => Just(b'\n'),
            1 => Just(b'\r'),
        ], 0..2000),
        headers in prop::collection::vec(prop_oneof![
            Just(b"Content-Length: 5\r\n\r\n".to_vec()),
            Just(b"Content-Length: 99999999999\r\n\r\n".to_vec()),
            Just(b"content-length:0\n\n".to_vec()),
            Just(b"Content-Length: 70000\r\n".to_vec()),
        ], 0..4),
        sizes in pieces(),
    ) {
        let mut input = input;
        for (i, header) in headers.iter().enumerate() {
            let at = (i * 397) % (input.len() + 1);
            input.splice(at..at, header.iter().copied());
        }
        let mut decoder = Decoder::new(SMALL);
        let mut pieced = Vec::new();
        for piece in split(&input, &sizes) {
            decoder.push(piece);
            prop_assert!(decoder.buffered() <= SMALL.max_header_bytes.max(SMALL.max_body_bytes));
            pieced.extend(std::iter::from_fn(|| decoder.next()));
        }
        pieced.extend(decoder.finish());
        for item in &pieced {
            if let Decoded::Body(body) = item {
                prop_assert!(body.len() <= SMALL.max_body_bytes);
            }
        }
        prop_assert_eq!(pieced, decode_all(SMALL, &[&input]));
    }

    /// The server-side reader hands the main loop only messages decoded from whole frames: on
    /// any input, messages until at most one error (a limit crossed, or a body that is not a
    /// message), then the end.
    #[test]
    fn the_server_reader_returns_only_whole_frames(
        bodies in frames(),
        noise in prop::collection::vec(any::<u8>(), 0..300),
        at in any::<prop::sample::Index>(),
        sizes in pieces(),
    ) {
        let mut input: Vec<u8> = bodies.iter().flat_map(|b| encode(b)).collect();
        let at = at.index(input.len() + 1);
        input.splice(at..at, noise);
        let (_, err) = read_through(input, sizes, SMALL);
        match err {
            None | Some(async_lsp::Error::Deserialize(_)) => {}
            Some(async_lsp::Error::Io(err)) => prop_assert_eq!(err.kind(), std::io::ErrorKind::InvalidData),
            Some(other) => prop_assert!(false, "{:?}", other),
        }
    }

    /// Messages framed one after another come out decoded, all of them, in order, however the
    /// bytes are cut.
    #[test]
    fn the_server_reader_yields_every_message_in_order(
        methods in prop::collection::vec("[a-z/$]{1,20}", 0..8),
        sizes in pieces(),
    ) {
        let bodies: Vec<String> =
            methods.iter().map(|m| format!(r#"{{"jsonrpc":"2.0","method":"{m}","params":{{"k":[1]}}}}"#)).collect();
        let input: Vec<u8> = bodies.iter().flat_map(|b| encode(b.as_bytes())).collect();
        let (messages, err) = read_through(input, sizes, SMALL);
        prop_assert!(err.is_none(), "{:?}", err);
        prop_assert_eq!(messages, bodies.iter().map(|b| decoded(b.as_bytes())).collect::<Vec<_>>());
    }
}

#[test]
fn messages_made_here_carry_their_method_and_params_unchanged() {
    let params =
        serde_json::json!({ "textDocument": { "uri": "file:///a.c" }, "position": { "line": 1, "character": 2 } });
    let request = any_request("textDocument/hover", params.clone());
    assert_eq!((request.method.as_str(), &request.params), ("textDocument/hover", &params));
    let notification = any_notification("textDocument/didSave", params.clone());
    assert_eq!((notification.method.as_str(), &notification.params), ("textDocument/didSave", &params));
    // Each is a new message: the template is not changed by the one made before.
    assert_eq!(any_request("shutdown", serde_json::Value::Null).params, serde_json::Value::Null);
}
