//! Token counting for context budgets: OpenAI's `cl100k_base` byte-pair encoding, through the
//! `tiktoken-rs` crate (the vocabulary is compiled into the binary; no network).
//!
//! Every count is an exact BPE count of the text given. Should the encoder be unavailable or
//! fail on some input, the count falls back to the text's length in bytes, which is never less
//! than its token count (every token covers at least one byte), so a budget is still honoured.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

/// The tokenizer budgets are counted in.
pub const TOKENIZER: &str = "cl100k_base";

fn encoder() -> Option<&'static CoreBPE> {
    static ENCODER: OnceLock<Option<CoreBPE>> = OnceLock::new();
    ENCODER.get_or_init(|| tiktoken_rs::cl100k_base().ok()).as_ref()
}

/// Tokens of `text` in [`TOKENIZER`] (special-token text counts as ordinary text).
pub fn count_tokens(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let Some(encoder) = encoder() else { return text.len() };
    // The encoder's regex engine can fail (and the crate then panics) on pathological input;
    // the byte length is a safe upper bound.
    std::panic::catch_unwind(|| encoder.encode_ordinary(text).len()).unwrap_or(text.len())
}

/// Tokens of the compact JSON form of `value`.
pub fn count_json_tokens(value: &serde_json::Value) -> usize {
    count_tokens(&value.to_string())
}
