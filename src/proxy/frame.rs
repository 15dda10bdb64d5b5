//! LSP base-protocol framing (`Content-Length: N\r\n\r\n` + N bytes of JSON, LSP 3.17 "Base
//! Protocol") with recovery, for the editor side of `filepuff lsp`.
//!
//! async-lsp's main loop ends the session on the first undecodable frame. An editor, or a
//! person typing into the pipe, must not be able to kill every language server that way, so
//! frames are checked here first: a frame with a bad or missing `Content-Length`, a body that is
//! not JSON, or JSON that is not a JSON-RPC 2.0 message is answered with the JSON-RPC error the
//! spec names (-32700 parse error, -32600 invalid request; `id` null unless the message had a
//! usable one) and the stream resynchronises at the next `Content-Length` header.

use std::io::{BufRead, Read};

use serde_json::Value;

/// Largest body accepted (bytes); a larger one is skipped and answered with an error.
pub const MAX_BODY: usize = 512 << 20;

/// One frame read from the editor.
#[derive(Debug)]
pub enum Frame {
    /// A well-formed JSON-RPC message: the body bytes, unchanged.
    Message(Vec<u8>),
    /// Something that cannot be dispatched: answer with this error.
    Invalid { id: Value, code: i64, message: String },
}

impl Frame {
    /// The JSON-RPC error response for an invalid frame, framed.
    pub fn error_response(id: &Value, code: i64, message: &str) -> Vec<u8> {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": code, "message": message }
        })
        .to_string();
        encode(body.as_bytes())
    }
}

/// `body` with its `Content-Length` header.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

const HEADER: &str = "content-length:";

/// Reads the next frame (blocking); `None` at the end of the input.
pub fn read<R: BufRead>(reader: &mut R) -> std::io::Result<Option<Frame>> {
    let mut length: Option<Result<usize, String>> = None;
    let mut saw_header = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(match (saw_header, length) {
                (false, _) => None,
                _ => Some(invalid(Value::Null, -32700, "the input ended inside a message header")),
            });
        }
        let text = String::from_utf8_lossy(&line);
        let trimmed = text.trim_end_matches(['\r', '\n']);
        if trimmed.is_empty() {
            if !saw_header {
                continue; // stray blank line between frames
            }
            break;
        }
        // Resynchronise: junk (the rest of a broken body) may precede the next header on the
        // same line.
        let lower = trimmed.to_ascii_lowercase();
        let header = match lower.find(HEADER) {
            Some(at) if !saw_header => &trimmed[at..],
            _ => trimmed,
        };
        if header.to_ascii_lowercase().starts_with(HEADER) {
            saw_header = true;
            let value = header[HEADER.len()..].trim();
            length = Some(value.parse::<usize>().map_err(|_| format!("bad Content-Length {value:?}")));
        } else if header.contains(':') && saw_header {
            // Content-Type or another header: accepted and ignored.
        } else if !saw_header {
            // Junk between frames: skip it.
            continue;
        } else {
            length = Some(Err(format!("bad header line {header:?}")));
        }
    }
    let length = match length {
        Some(Ok(length)) => length,
        Some(Err(message)) => return Ok(Some(invalid(Value::Null, -32700, &message))),
        None => return Ok(Some(invalid(Value::Null, -32700, "missing Content-Length header"))),
    };
    if length > MAX_BODY {
        std::io::copy(&mut reader.take(length as u64), &mut std::io::sink())?;
        return Ok(Some(invalid(Value::Null, -32700, &format!("message of {length} bytes is over the limit"))));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(check(body)))
}

fn invalid(id: Value, code: i64, message: &str) -> Frame {
    Frame::Invalid { id, code, message: message.to_owned() }
}

/// Whether `body` is a message the main loop can dispatch.
fn check(body: Vec<u8>) -> Frame {
    let message = match serde_json::from_slice::<Value>(&body) {
        Err(err) => return invalid(Value::Null, -32700, &format!("invalid JSON: {err}")),
        Ok(Value::Object(map)) => map,
        Ok(_) => return invalid(Value::Null, -32600, "a message must be a JSON object (batches are not part of LSP)"),
    };
    let usable_id = match message.get("id") {
        None => None,
        Some(id @ (Value::Number(_) | Value::String(_))) => Some(id.clone()),
        Some(_) => return invalid(Value::Null, -32600, "id must be a number or a string"),
    };
    let id = usable_id.clone().unwrap_or(Value::Null);
    match message.get("method") {
        Some(Value::String(_)) => match message.get("params") {
            None | Some(Value::Object(_) | Value::Array(_) | Value::Null) => Frame::Message(body),
            Some(_) => invalid(id, -32602, "params must be an object or an array"),
        },
        Some(_) => invalid(id, -32600, "method must be a string"),
        None if usable_id.is_some() && (message.contains_key("result") || message.contains_key("error")) => {
            Frame::Message(body)
        }
        None => {
            let excerpt: String = String::from_utf8_lossy(&body).chars().take(200).collect();
            invalid(id, -32600, &format!("neither a request, a notification nor a response: {excerpt}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(mut input: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(frame) = read(&mut input).unwrap() {
            out.push(match frame {
                Frame::Message(body) => String::from_utf8(body).unwrap(),
                Frame::Invalid { id, code, .. } => format!("error {code} id {id}"),
            });
        }
        out
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
        let got = frames(input.as_bytes());
        assert_eq!(
            got,
            [
                "error -32700 id null".to_owned(),
                good.to_owned(),
                "error -32700 id null".to_owned(),
                "error -32600 id null".to_owned(),
                "error -32600 id 7".to_owned(),
                good.to_owned(),
            ]
        );
    }

    #[test]
    fn responses_and_notifications_pass() {
        let response = r#"{"jsonrpc":"2.0","id":"a","result":null}"#;
        let notification = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;
        let input = [encode(response.as_bytes()), encode(notification.as_bytes())].concat();
        assert_eq!(frames(&input), [response, notification]);
    }
}
