//! `Location[]` answers (LSP 3.17 `textDocument/references`) read in one pass over the text the
//! server sent.
//!
//! serde's derived code reads an answer's `Location`s through a visitor per object and a field
//! identifier per key: for gopls's 22 KB answer of 147 locations that is about 490 k
//! instructions, more than anything filepuff does with the locations after. Servers write these
//! objects in one of a few plain shapes (`{"uri":"…","range":{"start":{"line":N,"character":N},
//! "end":{…}}}`, keys in either order: gopls and the Node servers put `uri` first, clangd sorts
//! keys), so [`read_locations`] reads that shape with a byte scanner, and hands anything else —
//! an escape in a string, another key, a number that is not a plain `u32`, a repeated key — to
//! serde_json, whose answer (the locations, or its error) stands. What the scanner accepts it
//! reads as serde_json would: `read_locations_agrees_with_serde_json` holds it to that.

use async_lsp::AnyResult;
use serde::{Deserialize, Serialize};

/// A `Location` (LSP 3.17) with its `uri` unparsed, as the server sent it (a
/// [`crate::workspace::Resolver`] parses each file's URI once, not once per location). The
/// scanner shares one `uri` among a file's consecutive locations (servers list them together).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentLocation {
    pub uri: std::sync::Arc<str>,
    pub range: lsp_types::Range,
}

/// `textDocument/references` (LSP 3.17) answered as [`SentLocation`]s; ask it with
/// [`super::LspClient::request_read`] and [`read_locations`].
pub enum ReferencesAsSent {}

impl lsp_types::request::Request for ReferencesAsSent {
    type Params = lsp_types::ReferenceParams;
    type Result = Option<Vec<SentLocation>>;
    const METHOD: &'static str = lsp_types::request::References::METHOD;
}

/// A `Location[] | null` result as serde_json reads it into `Option<Vec<SentLocation>>`, read
/// by the scanner when it has one of the plain shapes (module documentation).
///
/// Errors: serde_json's, for a result that is not `Location[] | null`.
pub fn read_locations(result: AnyResult) -> serde_json::Result<Option<Vec<SentLocation>>> {
    // The scanner takes only JSON, so it may read text not yet validated (`AnyResult::Unchecked`).
    if let Some(text) = result.text()
        && let Some(read) = Scanner::new(text).answer()
    {
        return Ok(read);
    }
    result.into_typed()
}

/// A cursor over JSON text that reads only the plain shapes; every method answers `None`
/// ("not plain: let serde_json read it") at the first byte it does not expect.
struct Scanner<'a> {
    text: &'a str,
    at: usize,
    /// The last location's `uri`, shared with the next when it is the same.
    last_uri: Option<std::sync::Arc<str>>,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Scanner<'a> {
        Scanner { text, at: 0, last_uri: None }
    }

    /// The next byte after JSON whitespace (RFC 8259 §2: space, tab, LF, CR), not consumed.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(self.at) {
            self.at += 1;
        }
        bytes.get(self.at).copied()
    }

    #[inline]
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// `null` or an array of locations, and nothing after it.
    fn answer(&mut self) -> Option<Option<Vec<SentLocation>>> {
        let answer = if self.peek()? == b'n' {
            self.text[self.at..].starts_with("null").then(|| self.at += 4)?;
            None
        } else {
            self.eat(b'[')?;
            let mut locations = Vec::new();
            if self.peek()? == b']' {
                self.at += 1;
            } else {
                loop {
                    locations.push(self.location()?);
                    match self.peek()? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
            Some(locations)
        };
        (self.peek().is_none()).then_some(answer)
    }

    /// An object of exactly the two keys `names` (each written with its quotes, in either
    /// order, each once), their values read by `first` and `second`.
    #[inline]
    fn pair<A, B, const N: usize, const M: usize>(
        &mut self,
        names: (&[u8; N], &[u8; M]),
        mut first: impl FnMut(&mut Self) -> Option<A>,
        mut second: impl FnMut(&mut Self) -> Option<B>,
    ) -> Option<(A, B)> {
        self.eat(b'{')?;
        let (mut a, mut b) = (None, None);
        for index in 0..2 {
            if index == 1 {
                self.eat(b',')?;
            }
            if self.key(names.0) && a.is_none() {
                a = Some(first(self)?);
            } else if self.key(names.1) && b.is_none() {
                b = Some(second(self)?);
            } else {
                return None;
            }
        }
        self.eat(b'}')?;
        Some((a?, b?))
    }

    /// Whether the next token is the key `name` (with its quotes), then its `:`; consumed when it is.
    #[inline]
    fn key<const N: usize>(&mut self, name: &[u8; N]) -> bool {
        // A comparison of N bytes known when compiled: no call to `memcmp`.
        if self.peek() != Some(b'"') || self.text.as_bytes().get(self.at..self.at + N) != Some(name.as_slice()) {
            return false;
        }
        self.at += N;
        self.eat(b':').is_some()
    }

    fn location(&mut self) -> Option<SentLocation> {
        let (uri, range) = self.pair((br#""uri""#, br#""range""#), Self::uri, Self::range)?;
        Some(SentLocation { uri, range })
    }

    fn uri(&mut self) -> Option<std::sync::Arc<str>> {
        let text = self.string()?;
        match &self.last_uri {
            Some(last) if **last == *text => Some(last.clone()),
            _ => Some(self.last_uri.insert(text.into()).clone()),
        }
    }

    fn range(&mut self) -> Option<lsp_types::Range> {
        let (start, end) = self.pair((br#""start""#, br#""end""#), Self::position, Self::position)?;
        Some(lsp_types::Range { start, end })
    }

    fn position(&mut self) -> Option<lsp_types::Position> {
        let (line, character) = self.pair((br#""line""#, br#""character""#), Self::number, Self::number)?;
        Some(lsp_types::Position { line, character })
    }

    /// A string without escapes or control characters, as its text.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let rest = &self.text.as_bytes()[self.at..];
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        // A control character (U+0000–U+001F) is not allowed unescaped (RFC 8259 §7): serde_json
        // refuses it, and so must this.
        if rest[end] != b'"' || has_control(&rest[..end]) {
            return None;
        }
        // `end` is an ASCII quote's index, so both ends are character boundaries.
        let string = &self.text[self.at..self.at + end];
        self.at += end + 1;
        Some(string)
    }

    /// A `u32` in plain decimal digits (no sign, fraction, exponent or leading zero).
    #[inline]
    fn number(&mut self) -> Option<u32> {
        self.peek()?;
        let bytes = &self.text.as_bytes()[self.at..];
        let mut value: u64 = 0;
        let mut digits = 0;
        while let Some(&byte @ b'0'..=b'9') = bytes.get(digits) {
            value = value * 10 + u64::from(byte - b'0');
            digits += 1;
            if digits > 10 {
                return None;
            }
        }
        if digits == 0 || (digits > 1 && bytes[0] == b'0') || matches!(bytes.get(digits), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.at += digits;
        u32::try_from(value).ok()
    }
}

/// Whether `bytes` holds a byte below 0x20, eight at a time: a byte `b` of a word `x` is below
/// `n` ≤ 128 exactly when the high bit of `(x - n·0x01…01) & !x` is set in its place (Anderson,
/// "Bit Twiddling Hacks", "Determine if a word has a byte less than n").
fn has_control(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut words = bytes.chunks_exact(8);
    let below = |word: u64| word.wrapping_sub(0x20 * ONES) & !word & HIGH != 0;
    if words.by_ref().any(|word| below(u64::from_ne_bytes(word.try_into().expect("8 bytes")))) {
        return true;
    }
    words.remainder().iter().any(|&byte| byte < 0x20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read(text: &str) -> serde_json::Result<Option<Vec<SentLocation>>> {
        read_locations(AnyResult::Raw(serde_json::value::RawValue::from_string(text.to_owned()).unwrap()))
    }

    fn scanned(text: &str) -> Option<Option<Vec<SentLocation>>> {
        Scanner::new(text).answer()
    }

    #[test]
    fn control_characters_are_found_in_any_place() {
        for length in 0..20 {
            for at in 0..length {
                for byte in [0x00, 0x1f, 0x20, 0x7f, 0x80, 0xff] {
                    let mut bytes = vec![b'a'; length];
                    bytes[at] = byte;
                    assert_eq!(has_control(&bytes), byte < 0x20, "{bytes:?}");
                }
            }
        }
    }

    #[test]
    fn the_servers_shapes_are_scanned() {
        // gopls (Go's encoding/json: struct order, compact).
        let gopls =
            r#"[{"uri":"file:///w/a.go","range":{"start":{"line":3,"character":5},"end":{"line":3,"character":9}}}]"#;
        // clangd (llvm::json: keys sorted).
        let clangd =
            r#"[{"range":{"end":{"character":9,"line":3},"start":{"character":5,"line":3}},"uri":"file:///w/a.go"}]"#;
        let expected = vec![SentLocation {
            uri: "file:///w/a.go".into(),
            range: lsp_types::Range::new(lsp_types::Position::new(3, 5), lsp_types::Position::new(3, 9)),
        }];
        for text in [gopls, clangd, &format!(" {}\n", gopls.replace(',', " ,\r\n\t"))] {
            assert_eq!(scanned(text), Some(Some(expected.clone())), "{text}");
        }
        assert_eq!(scanned("null"), Some(None));
        assert_eq!(scanned(" [ ] "), Some(Some(Vec::new())));
    }

    #[test]
    fn anything_else_is_serde_jsons_to_read() {
        let plain = r#"{"uri":"file:///a","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":3}}}"#;
        for text in [
            plain.replace("file:///a", r"file:\/\/\/a"),            // an escape
            plain.replace(r#""line":1,"#, r#""line":1.0,"#),        // a fraction
            plain.replace(r#""line":1,"#, r#""line":01,"#),         // a leading zero
            plain.replace(r#""line":1,"#, r#""line":4294967296,"#), // past u32
            plain.replace(r#""line":1,"#, r#""line":-1,"#),         // a sign
            plain.replace(r#"}}}"#, r#"}},"extra":true}"#),         // another key
            plain.replace(r#""character":2"#, r#""line":2"#),       // a repeated key
            plain.replace('}', ""),                                 // cut short
        ] {
            let text = format!("[{text}]");
            assert_eq!(scanned(&text), None, "{text}");
            // Text that is not JSON never gets here (the frame was read as JSON first).
            if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok() {
                assert_eq!(
                    read(&text).map_err(|e| e.to_string()),
                    serde_json::from_str::<Option<Vec<SentLocation>>>(&text).map_err(|e| e.to_string())
                );
            }
        }
        // serde_json ignores the unknown key and reads the escape: so does `read_locations`.
        let extra = format!("[{}]", plain.replace(r#"}}}"#, r#"}},"extra":true}"#));
        assert_eq!(read(&extra).unwrap().unwrap()[0].uri, "file:///a".into());
    }

    /// One location in a plain shape: keys in the given orders, the given whitespace between
    /// tokens.
    fn plain_text(location: &SentLocation, swap: [bool; 4], space: &str) -> String {
        let pair =
            |swap: bool, a: String, b: String| if swap { format!("{b},{space}{a}") } else { format!("{a},{space}{b}") };
        let position = |p: &lsp_types::Position, swap: bool| {
            format!(
                "{{{space}{}{space}}}",
                pair(swap, format!(r#""line"{space}:{space}{}"#, p.line), format!(r#""character":{}"#, p.character))
            )
        };
        let range = format!(
            "{{{}}}",
            pair(
                swap[1],
                format!(r#""start":{}"#, position(&location.range.start, swap[2])),
                format!(r#""end":{}"#, position(&location.range.end, swap[3]))
            )
        );
        format!(
            "{{{}}}",
            pair(
                swap[0],
                format!(r#""uri":{}"#, serde_json::to_string(&location.uri).unwrap()),
                format!(r#""range":{range}"#)
            )
        )
    }

    fn location() -> impl Strategy<Value = SentLocation> {
        ("[ -~é🦀\\n\"\\\\]{0,12}", any::<[u32; 4]>()).prop_map(|(uri, [a, b, c, d])| SentLocation {
            uri: uri.into(),
            range: lsp_types::Range::new(lsp_types::Position::new(a, b), lsp_types::Position::new(c, d)),
        })
    }

    mod proptests {
        use super::*;
        proptest! {
            /// Whatever the scanner accepts, serde_json reads the same way; and it accepts every
            /// plain shape whose strings need no escape.
            #[test]
            fn read_locations_agrees_with_serde_json(
                locations in prop::collection::vec(location(), 0..4),
                swaps in prop::collection::vec(any::<[bool; 4]>(), 4),
                space in "[ \t\r\n]{0,2}",
                cut in any::<prop::sample::Index>(),
                byte in prop::sample::select(b"{}[],:\"\\ 0123456789-.eEnul\x01x".to_vec()),
            ) {
                let items: Vec<String> =
                    locations.iter().zip(&swaps).map(|(location, swap)| plain_text(location, *swap, &space)).collect();
                let text = format!("[{space}{}{space}]", items.join(&format!(",{space}")));
                let serde = serde_json::from_str::<Option<Vec<SentLocation>>>(&text).map_err(|e| e.to_string());
                prop_assert_eq!(read(&text).map_err(|e| e.to_string()), serde.clone());
                let escaped = locations.iter().any(|l| serde_json::to_string(&l.uri).unwrap().contains('\\'));
                prop_assert_eq!(scanned(&text).is_some(), !escaped, "{}", text);
                // One byte changed anywhere: still serde_json's answer, whichever reads it.
                let mut mutated = text.into_bytes();
                let at = cut.index(mutated.len());
                mutated[at] = byte;
                if let Ok(mutated) = String::from_utf8(mutated)
                    && let Some(read) = scanned(&mutated)
                {
                    let serde = serde_json::from_str::<Option<Vec<SentLocation>>>(&mutated);
                    prop_assert_eq!(Some(read), serde.ok(), "{}", mutated);
                }
            }
        }
    }
}
