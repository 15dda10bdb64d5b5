//! Ranked search over paths and names: terms from path segments, camelCase and snake_case,
//! scored with BM25's IDF and length-normalised term frequency, plus prefix/fuzzy/subsequence
//! matches, normalised to 0–1.
//!
//! The score of a file `d` for query terms `q1..qn` is
//!
//! ```text
//! score(d) = Σ w(q) · best_t [ m(q,t) · f(t,d) · sat(t,d) ]  /  Σ w(q)
//! ```
//!
//! - `t` ranges over the index terms matching `q`: `m` = 1 exact, 0.9 `t` starts with `q`,
//!   0.8 `q` starts with `t` (≥ 3 letters), 0.7 `t` contains `q` or is one edit away (≥ 4
//!   letters), 0.5 `q`'s letters appear in order in `t` (a subsequence);
//! - `f` = 1 when `t` is in the file name, 0.8 when only in a directory name;
//! - `sat` = BM25's term-frequency saturation `tf·(k1+1) / (tf + k1·(1−b+b·len/avglen))`
//!   (k1 = 1.2, b = 0.75), capped at 1: a shorter path than average scores 1, a longer one less;
//! - `w(q)` = BM25's IDF `ln(1 + (N − df + 0.5)/(df + 0.5))`, `df` the files containing `q`
//!   exactly or as a prefix (1 when none do, so an unmatched rare word still weighs).
//!
//! So 1.0 means every query word is, exactly, in a short file name; a file matching half the
//! (equally rare) words scores at most 0.5. It is lexical, not an embedding.

use std::collections::HashMap;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Splits a path (or a query) into lower-case terms: at `/`, every non-alphanumeric character,
/// lower→upper case changes (`parseHTTPRequest` → parse, http, request) and letter↔digit changes.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let chars: Vec<char> = word.chars().collect();
        let mut start = 0;
        for idx in 1..chars.len() {
            let (prev, cur) = (chars[idx - 1], chars[idx]);
            let next_lower = chars.get(idx + 1).is_some_and(|c| c.is_lowercase());
            let boundary = (prev.is_lowercase() && cur.is_uppercase())
                || (prev.is_uppercase() && cur.is_uppercase() && next_lower)
                || (prev.is_alphabetic() && cur.is_ascii_digit())
                || (prev.is_ascii_digit() && cur.is_alphabetic());
            if boundary {
                out.push(chars[start..idx].iter().collect::<String>().to_lowercase());
                start = idx;
            }
        }
        out.push(chars[start..].iter().collect::<String>().to_lowercase());
    }
    out
}

/// The term index over a list of file paths (position = document id).
#[derive(Debug, Default)]
pub struct TermIndex {
    vocabulary: HashMap<String, u32>,
    words: Vec<String>,
    /// Per term: (document, occurrences, whether in the file name).
    postings: Vec<Vec<(u32, u16, bool)>>,
    /// Terms in each document (0 for a removed one).
    lengths: Vec<u16>,
    /// Each document's distinct terms, to remove it.
    doc_terms: Vec<Vec<u32>>,
    live_docs: usize,
    total_length: usize,
}

impl TermIndex {
    /// Indexes `paths` (root-relative, `/`-separated); document ids are their positions.
    pub fn build<'a>(paths: impl Iterator<Item = &'a str>) -> TermIndex {
        let mut index = TermIndex::default();
        for path in paths {
            index.add(path);
        }
        index
    }

    /// Adds a document; returns its id (the next position).
    pub fn add(&mut self, path: &str) -> u32 {
        let index = self;
        let doc = index.lengths.len();
        {
            let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
            let mut counts: HashMap<u32, (u16, bool)> = HashMap::new();
            let mut length = 0u16;
            for (term, in_name) in
                terms(dir).into_iter().map(|t| (t, false)).chain(terms(name).into_iter().map(|t| (t, true)))
            {
                length = length.saturating_add(1);
                let id = match index.vocabulary.get(&term) {
                    Some(&id) => id,
                    None => {
                        let id = index.words.len() as u32;
                        index.vocabulary.insert(term.clone(), id);
                        index.words.push(term);
                        index.postings.push(Vec::new());
                        id
                    }
                };
                let entry = counts.entry(id).or_insert((0, false));
                entry.0 = entry.0.saturating_add(1);
                entry.1 |= in_name;
            }
            let mut ids = Vec::with_capacity(counts.len());
            for (id, (tf, in_name)) in counts {
                index.postings[id as usize].push((doc as u32, tf, in_name));
                ids.push(id);
            }
            index.total_length += usize::from(length);
            index.lengths.push(length);
            index.doc_terms.push(ids);
            index.live_docs += 1;
        }
        doc as u32
    }

    /// Removes a document (its id is not reused).
    pub fn remove(&mut self, doc: u32) {
        let Some(ids) = self.doc_terms.get_mut(doc as usize).map(std::mem::take) else { return };
        if ids.is_empty() && self.lengths[doc as usize] == 0 {
            return;
        }
        for id in ids {
            self.postings[id as usize].retain(|p| p.0 != doc);
        }
        self.total_length -= usize::from(self.lengths[doc as usize]);
        self.lengths[doc as usize] = 0;
        self.live_docs -= 1;
    }

    fn average_length(&self) -> f64 {
        if self.live_docs == 0 { 1.0 } else { self.total_length as f64 / self.live_docs as f64 }
    }

    /// Scores every document matching at least one query term: (document, score in 0–1).
    /// `None` when the query has no term.
    pub fn search(&self, query: &str) -> Option<Vec<(u32, f64)>> {
        let query_terms = terms(query);
        if query_terms.is_empty() {
            return None;
        }
        let n = self.live_docs as f64;
        let average_length = self.average_length();
        let mut scores: HashMap<u32, f64> = HashMap::new();
        let mut total_weight = 0.0;
        for q in &query_terms {
            let candidates: Vec<(u32, f64)> = self
                .words
                .iter()
                .enumerate()
                .filter_map(|(id, t)| match_quality(q, t).map(|m| (id as u32, m)))
                .collect();
            let mut matched_docs: Vec<u32> = candidates
                .iter()
                .filter(|(_, m)| *m >= 0.9)
                .flat_map(|(id, _)| self.postings[*id as usize].iter().map(|p| p.0))
                .collect();
            matched_docs.sort_unstable();
            matched_docs.dedup();
            let df = matched_docs.len().max(1) as f64;
            let weight = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            total_weight += weight;
            let mut best: HashMap<u32, f64> = HashMap::new();
            for (id, quality) in candidates {
                for &(doc, tf, in_name) in &self.postings[id as usize] {
                    let length = f64::from(self.lengths[doc as usize]);
                    let tf = f64::from(tf);
                    let sat = (tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average_length))).min(1.0);
                    let field = if in_name { 1.0 } else { 0.8 };
                    let value = quality * field * sat;
                    let slot = best.entry(doc).or_insert(0.0);
                    if value > *slot {
                        *slot = value;
                    }
                }
            }
            for (doc, value) in best {
                *scores.entry(doc).or_insert(0.0) += weight * value;
            }
        }
        if total_weight <= 0.0 {
            return Some(Vec::new());
        }
        Some(scores.into_iter().map(|(doc, s)| (doc, (s / total_weight).clamp(0.0, 1.0))).collect())
    }
}

/// How well index term `t` matches query term `q` (see the module doc), `None` for not at all.
fn match_quality(q: &str, t: &str) -> Option<f64> {
    if q == t {
        return Some(1.0);
    }
    let (ql, tl) = (q.chars().count(), t.chars().count());
    if ql >= 2 && t.starts_with(q) {
        return Some(0.9);
    }
    if tl >= 3 && q.starts_with(t) {
        return Some(0.8);
    }
    if ql >= 3 && t.contains(q) {
        return Some(0.7);
    }
    if ql >= 4 && tl.abs_diff(ql) <= 1 && within_one_edit(q, t) {
        return Some(0.7);
    }
    if ql >= 3 && tl <= 2 * ql && is_subsequence(q, t) {
        return Some(0.5);
    }
    None
}

fn is_subsequence(q: &str, t: &str) -> bool {
    let mut rest = t.chars();
    q.chars().all(|c| rest.any(|d| d == c))
}

fn within_one_edit(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (short, long) = if a.len() <= b.len() { (&a, &b) } else { (&b, &a) };
    let prefix = short.iter().zip(long.iter()).take_while(|(x, y)| x == y).count();
    if short.len() == long.len() {
        short[prefix + 1..] == long[prefix + 1..]
    } else {
        short[prefix..] == long[prefix + 1..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_split_paths_camel_and_snake_case() {
        assert_eq!(terms("net/http/server.go"), ["net", "http", "server", "go"]);
        assert_eq!(terms("src/parseHTTPRequest_v2.rs"), ["src", "parse", "http", "request", "v", "2", "rs"]);
        assert_eq!(terms("json/decoder.py"), ["json", "decoder", "py"]);
        assert!(terms(" -/. ").is_empty());
    }

    #[test]
    fn quality_table() {
        assert_eq!(match_quality("server", "server"), Some(1.0));
        assert_eq!(match_quality("decode", "decoder"), Some(0.9));
        assert_eq!(match_quality("decoders", "decoder"), Some(0.8));
        assert_eq!(match_quality("serv", "httpserver"), Some(0.7));
        assert_eq!(match_quality("sever", "server"), Some(0.7));
        assert_eq!(match_quality("jsn", "json"), Some(0.5));
        assert_eq!(match_quality("xyz", "server"), None);
    }

    #[test]
    fn obvious_files_rank_first_and_scores_are_normalised() {
        let paths = [
            "net/http/server.go",
            "net/http/server_test.go",
            "net/http/httptest/server.go",
            "net/http/client.go",
            "encoding/json/decode.go",
            "net/rpc/server.go",
        ];
        let index = TermIndex::build(paths.iter().copied());
        let mut hits = index.search("http server").unwrap();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1));
        assert_eq!(paths[hits[0].0 as usize], "net/http/server.go");
        assert!(hits.iter().all(|(_, s)| (0.0..=1.0).contains(s)));
        assert!(hits[0].1 > 0.8, "{hits:?}");
        assert!(index.search("../").is_none());
    }

    #[test]
    fn removing_and_adding_documents_matches_a_fresh_build() {
        let mut index = TermIndex::build(["a/http/server.go", "b/rpc/server.go", "c/json/decode.go"].into_iter());
        index.remove(1);
        let added = index.add("d/http/client.go");
        let fresh = TermIndex::build(["a/http/server.go", "c/json/decode.go", "d/http/client.go"].into_iter());
        let mut got: Vec<(u32, f64)> = index.search("http server").unwrap();
        let mut want: Vec<(u32, f64)> = fresh.search("http server").unwrap();
        got.sort_by_key(|(doc, _)| *doc);
        want.sort_by_key(|(doc, _)| *doc);
        let remap = |doc: u32| match doc {
            0 => 0,
            2 => 1,
            d if d == added => 2,
            d => panic!("removed document {d} found"),
        };
        let got: Vec<(u32, String)> = got.into_iter().map(|(d, s)| (remap(d), format!("{s:.6}"))).collect();
        let want: Vec<(u32, String)> = want.into_iter().map(|(d, s)| (d, format!("{s:.6}"))).collect();
        assert_eq!(got, want);
    }
}
