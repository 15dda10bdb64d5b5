//! The bounded, path-ordered collection both searches (text and structural) share: walker
//! threads add whole files in any order; only files that can still be among the first
//! `max_results` items, in path order, are kept, so memory stays bounded and the result is the
//! same on every run whatever the thread interleaving.

use parking_lot::Mutex;
use std::collections::BTreeMap;

/// A file's results: a list that can be counted and cut.
pub(crate) trait Items {
    /// Items held (hits, matches).
    fn len(&self) -> usize;
    /// Keeps the first `n` items.
    fn truncate(&mut self, n: usize);
}

/// Files by workspace-relative path, holding at most what `max_results` can return.
pub(crate) struct BoundedByPath<T> {
    max_results: usize,
    state: Mutex<State<T>>,
}

struct State<T> {
    kept: BTreeMap<String, T>,
    kept_items: usize,
    dropped_any: bool,
}

impl<T: Items> BoundedByPath<T> {
    pub(crate) fn new(max_results: usize) -> BoundedByPath<T> {
        BoundedByPath {
            max_results,
            state: Mutex::new(State { kept: BTreeMap::new(), kept_items: 0, dropped_any: false }),
        }
    }

    /// Adds one file's results under `path`; `partial` says the file already left items out.
    pub(crate) fn add(&self, path: String, file: T, partial: bool) {
        let mut state = self.state.lock();
        state.dropped_any |= partial;
        state.kept_items += file.len();
        state.kept.insert(path, file);
        // Drop whole files from the end (by path) while the rest still hold `max_results` items.
        while let Some((_, last)) = state.kept.last_key_value() {
            let last_len = last.len();
            if state.kept_items - last_len < self.max_results {
                break;
            }
            state.kept.pop_last();
            state.kept_items -= last_len;
            state.dropped_any = true;
        }
    }

    /// The first `max_results` items in path order, and whether anything was left out.
    pub(crate) fn finish(self) -> (Vec<T>, bool) {
        let state = self.state.into_inner();
        let mut remaining = self.max_results;
        let mut truncated = state.dropped_any;
        let mut files = Vec::new();
        for (_, mut file) in state.kept {
            if remaining == 0 {
                truncated = true;
                break;
            }
            if file.len() > remaining {
                file.truncate(remaining);
                truncated = true;
            }
            remaining -= file.len();
            files.push(file);
        }
        (files, truncated)
    }
}
