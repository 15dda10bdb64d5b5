//! The page rule of list-returning tools: skip `offset` items, keep at most `max_results`, and
//! stop where the JSON of what is kept would pass the output budget (`max_chars`, default
//! `[limits] max_output_chars`) — the budget `file_search`, `ast_query` and the local tools
//! count, in characters of compact JSON ([`super::local::json_len`]). The result says how many
//! items the whole answer has, how many were returned, and the offset to continue from, so the
//! pages of one answer, asked one after the other, add up to the whole of it.
//!
//! The language-server tools page the server's whole answer (the server has no paging of its
//! own: LSP 3.17 partial results stream, they do not page), in a stable order each tool states.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::local::json_len;

/// Characters set aside for a result's fields other than its list (server, completeness,
/// totals, hint).
pub(crate) const RESERVED_CHARS: usize = 600;

/// Paging parameters of a list-returning tool.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct PageParams {
    /// Items to skip first, in the result's order: continue from a previous page's
    /// `next_offset` (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// Most items to return in this page (default: as many as the output budget holds; 100 for
    /// workspace_symbols). A large value does not lift the budget; 0 returns no items, only the
    /// totals.
    #[serde(default)]
    pub max_results: Option<usize>,
    /// Most characters of JSON to return (default `[limits] max_output_chars`, 40000). Past it the
    /// page ends and `next_offset` says where to continue.
    #[serde(default)]
    pub max_chars: Option<usize>,
}

/// Where a page sits in the whole answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PageInfo {
    /// Items in the whole answer.
    pub total: usize,
    /// Items skipped before this page (the `offset` given).
    pub offset: usize,
    /// Items in this page.
    pub returned: usize,
    /// Whether items after this page were left out (by `max_results` or the output budget).
    pub truncated: bool,
    /// The `offset` of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// How to get the rest, when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl PageInfo {
    /// A page holding the whole answer of `total` items.
    pub fn whole(total: usize) -> PageInfo {
        PageInfo { total, offset: 0, returned: total, truncated: false, next_offset: None, hint: None }
    }

    /// The line a text rendering ends a page with: `None` for a whole answer.
    pub fn text_line(&self, items: &str) -> Option<String> {
        if !self.truncated && self.offset == 0 {
            return None;
        }
        let range = if self.returned == 0 {
            "none".to_owned()
        } else {
            format!("{}-{}", self.offset + 1, self.offset + self.returned)
        };
        let next = self.next_offset.map(|n| format!("; continue with offset={n}")).unwrap_or_default();
        Some(format!("page: {items} {range} of {}{next}\n", self.total))
    }
}

/// The limits of one page: `params` with the tool's default page size and the configured budget.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub offset: usize,
    pub max_results: usize,
    pub max_chars: usize,
}

impl Limits {
    /// `params` over a tool's `default_max` page size and the configured `budget`.
    pub(crate) fn new(params: &PageParams, default_max: usize, budget: usize) -> Limits {
        Limits {
            offset: params.offset.unwrap_or(0),
            max_results: params.max_results.unwrap_or(default_max),
            max_chars: params.max_chars.unwrap_or(budget).max(1),
        }
    }
}

/// One page of `items` (already in the result's order): skips `limits.offset`, then keeps items
/// while there are fewer than `max_results` and the characters counted so far —
/// [`RESERVED_CHARS`] plus, per item, its JSON length and whatever `extra` adds for it (a file
/// header when a grouped list enters a new file) — stay within `max_chars`. A page past the
/// start always holds at least one item, so paging always advances.
pub(crate) fn page<T: Serialize>(
    items: Vec<T>,
    limits: Limits,
    unit: &str,
    mut extra: impl FnMut(&T) -> usize,
) -> (Vec<T>, PageInfo) {
    page_measured(items, limits, unit, |item| json_len(item) + extra(item))
}

/// [`page`] with each item's whole cost — its JSON length plus any extra — given by `cost`,
/// for items whose length is counted without writing them (a list of hundreds of references,
/// [`json_string_len`]); `cost` must answer what [`page`] would count.
pub(crate) fn page_measured<T>(
    items: Vec<T>,
    limits: Limits,
    unit: &str,
    mut cost: impl FnMut(&T) -> usize,
) -> (Vec<T>, PageInfo) {
    let total = items.len();
    let offset = limits.offset.min(total);
    let mut used = RESERVED_CHARS;
    let mut kept = Vec::new();
    let mut budget_cut = false;
    for item in items.into_iter().skip(offset) {
        if kept.len() >= limits.max_results {
            break;
        }
        let cost = cost(&item) + 1;
        if used.saturating_add(cost) > limits.max_chars && !kept.is_empty() {
            budget_cut = true;
            break;
        }
        used += cost;
        kept.push(item);
    }
    let returned = kept.len();
    let next = offset + returned;
    let truncated = next < total;
    let hint = truncated.then(|| {
        let why = if budget_cut {
            format!("the output budget ({} characters) ended this page", limits.max_chars)
        } else {
            format!("max_results={} ended this page", limits.max_results)
        };
        let left = total - next;
        // "1 more reference", "2 more references" (every unit is a plural in -s).
        let unit = if left == 1 { unit.strip_suffix('s').unwrap_or(unit) } else { unit };
        format!("{left} more {unit}: {why}; continue with offset={next}")
    });
    let info =
        PageInfo { total, offset: limits.offset, returned, truncated, next_offset: truncated.then_some(next), hint };
    (kept, info)
}

/// The length of `text` as a JSON string, quotes included, in the bytes `serde_json` writes:
/// `"`, `\` and the control characters with a short escape (`\b \f \n \r \t`) take 2,
/// the other control characters (below U+0020) 6 (`\u00XX`), every other byte 1 (non-ASCII
/// characters are written as their UTF-8 bytes). Equals [`json_len`] of `text`.
pub(crate) fn json_string_len(text: &str) -> usize {
    text.len() + 2 + text.bytes().map(|b| usize::from(ESCAPE_EXTRA[usize::from(b)])).sum::<usize>()
}

/// The bytes serde_json's escape of a string byte adds to it (see [`json_string_len`]): one
/// table lookup a byte, where a `match` cost about five times as much (docs/performance.md).
const ESCAPE_EXTRA: [u8; 256] = {
    let mut extra = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        extra[b] = 5;
        b += 1;
    }
    let mut short = [b'"', b'\\', 0x08, 0x0c, b'\n', b'\r', b'\t'].as_slice();
    while let [first, rest @ ..] = short {
        extra[*first as usize] = 1;
        short = rest;
    }
    extra
};

/// The length of `n` in decimal digits, as `serde_json` writes it ([`json_len`] of `n`).
pub(crate) fn decimal_len(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |digits| digits as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(offset: usize, max_results: usize, max_chars: usize) -> Limits {
        Limits { offset, max_results, max_chars }
    }

    /// Every page, asked from the previous page's `next_offset`, in order.
    fn all_pages(items: &[String], max_results: usize, max_chars: usize) -> Vec<(Vec<String>, PageInfo)> {
        let mut pages = Vec::new();
        let mut offset = 0;
        loop {
            let (kept, info) = page(items.to_vec(), limits(offset, max_results, max_chars), "items", |_| 0);
            let next = info.next_offset;
            pages.push((kept, info));
            match next {
                Some(next) => offset = next,
                None => return pages,
            }
        }
    }

    #[test]
    fn pages_add_up_to_the_whole_list_and_each_fits_the_budget() {
        let items: Vec<String> = (0..1500).map(|i| format!("item number {i:05} {}", "x".repeat(i % 37))).collect();
        for (max_results, max_chars) in [(usize::MAX, 4000), (usize::MAX, 40_000), (7, 40_000), (100, 2000)] {
            let pages = all_pages(&items, max_results, max_chars);
            let union: Vec<String> = pages.iter().flat_map(|(kept, _)| kept.clone()).collect();
            assert_eq!(union, items, "max_results={max_results} max_chars={max_chars}");
            for (kept, info) in &pages {
                assert_eq!(info.total, 1500);
                assert_eq!(info.returned, kept.len());
                assert!(kept.len() <= max_results);
                let chars: usize = RESERVED_CHARS + kept.iter().map(|k| json_len(k) + 1).sum::<usize>();
                assert!(chars <= max_chars || kept.len() == 1, "{chars} > {max_chars}");
            }
            let last = &pages.last().unwrap().1;
            assert!(!last.truncated && last.hint.is_none() && last.next_offset.is_none());
            assert!(pages[..pages.len() - 1].iter().all(|(_, info)| info.truncated && info.hint.is_some()));
        }
    }

    #[test]
    fn one_item_over_the_budget_still_advances_and_an_offset_past_the_end_is_empty() {
        let items = vec!["y".repeat(5000), "z".to_owned()];
        let (kept, info) = page(items.clone(), limits(0, 10, 1000), "items", |_| 0);
        assert_eq!((kept.len(), info.next_offset), (1, Some(1)));
        assert!(info.hint.as_deref().unwrap().contains("output budget"), "{info:?}");
        let (kept, info) = page(items, limits(9, 10, 1000), "items", |_| 0);
        assert!(kept.is_empty());
        assert_eq!((info.total, info.offset, info.returned, info.truncated), (2, 9, 0, false));
        assert_eq!(info.text_line("items").unwrap(), "page: items none of 2\n");
    }

    #[test]
    fn max_results_zero_gives_the_totals_and_one_more_item_is_singular() {
        let items: Vec<String> = (0..3).map(|i| i.to_string()).collect();
        let (kept, info) = page(items.clone(), limits(0, 0, 1000), "references", |_| 0);
        assert!(kept.is_empty());
        assert_eq!((info.total, info.returned, info.next_offset), (3, 0, Some(0)));
        assert!(info.hint.as_deref().unwrap().starts_with("3 more references: max_results=0"), "{info:?}");
        let (_, info) = page(items, limits(0, 2, 1000), "references", |_| 0);
        assert!(info.hint.as_deref().unwrap().starts_with("1 more reference: "), "{info:?}");
    }

    proptest::proptest! {
        #[test]
        fn counted_lengths_are_what_serde_json_writes(text in "(?s).{0,40}", control in 0u8..0x20, n: usize) {
            proptest::prop_assert_eq!(json_string_len(&text), json_len(&text));
            let text = format!("{text}{}\"\\\u{7f}é😀", char::from(control));
            proptest::prop_assert_eq!(json_string_len(&text), json_len(&text));
            proptest::prop_assert_eq!(decimal_len(n), json_len(&n));
            proptest::prop_assert_eq!(decimal_len(n % 1000), json_len(&(n % 1000)));
        }
    }

    #[test]
    fn extra_costs_count_against_the_budget() {
        let items: Vec<String> = (0..100).map(|i| format!("{i:03}")).collect();
        let (plain, _) = page(items.clone(), limits(0, usize::MAX, 2000), "items", |_| 0);
        let (headed, info) = page(items, limits(0, usize::MAX, 2000), "items", |_| 20);
        assert!(headed.len() < plain.len());
        assert_eq!(
            info.text_line("references").unwrap(),
            format!("page: references 1-{} of 100; continue with offset={}\n", headed.len(), headed.len())
        );
    }
}
