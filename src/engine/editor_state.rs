//! What the person is looking at, and the changes agents subscribe to.
//!
//! The editor's focus — the focused document, its cursor, selection and visible range — as the
//! editor reports it with filepuff's `filepuff/editorFocus` notification (docs/lsp.md; the VS
//! Code extension and the Neovim plugin send it, debounced; plain LSP editors never do, and then
//! the focus is [`EditorFocus::Unreported`]). It is kept here, in the Engine, so the tools of
//! every face and every attached agent see the one state the editor face fed.
//!
//! Positions arrive in the editor's negotiated `positionEncoding` (0-based lines, code units)
//! and are converted at once, against the text they were reported on (the editor's `didChange`s
//! precede its report in the same ordered stream), into the MCP/CLI unit: 1-based lines and
//! 1-based character columns ([`OneBased`]), through [`crate::documents::position`].
//!
//! [`EngineEvent`]s say what changed (the open documents or the focus, a commit's files) to
//! whoever subscribed ([`super::Engine::subscribe_events`]): the MCP face's resource
//! subscriptions (`notifications/resources/updated`).

use crate::documents::position::{self, OneBased, Position};
use crate::documents::{Encoding, Origin};
use crate::workspace::DocumentId;

/// A focus report as the editor sent it: positions in the editor's encoding, 0-based.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FocusReport {
    /// The focused document; `None` when the focus is on no file (a terminal, a settings page).
    pub id: Option<DocumentId>,
    /// The editor's version of that document when it reported (LSP document version).
    pub version: Option<i32>,
    /// The cursor (the selection's active end).
    pub cursor: Option<Position>,
    /// The primary selection, start before end; `None` or empty when nothing is selected.
    pub selection: Option<(Position, Position)>,
    /// The first and last visible lines' range (the end is exclusive).
    pub visible_range: Option<(Position, Position)>,
}

/// The focused document in the MCP/CLI unit (1-based lines, character columns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Focus {
    pub id: DocumentId,
    /// The document's version the positions were reported for.
    pub version: Option<i32>,
    pub cursor: Option<OneBased>,
    /// Start and end (exclusive); `None` when nothing is selected.
    pub selection: Option<(OneBased, OneBased)>,
    /// First and last visible position (end exclusive).
    pub visible_range: Option<(OneBased, OneBased)>,
    /// Some positions were out of range of the text and were clamped to it.
    pub clamped: bool,
}

/// What is known of the editor's focus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum EditorFocus {
    /// The editor never reported its focus (a plain LSP editor, or none attached).
    #[default]
    Unreported,
    /// The editor reports that no file has the focus.
    NoDocument,
    /// The focused document.
    Document(Focus),
}

/// A change agents may want to hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineEvent {
    /// The editor opened, closed or saved a document, or its focus changed.
    EditorChanged,
    /// An agent's edit landed in these files ([`super::Engine::commit`]).
    Committed(Vec<DocumentId>),
}

/// Capacity of the event channel: a subscriber that falls further behind sees `Lagged` and
/// must treat everything as changed.
pub(super) const EVENT_CAPACITY: usize = 256;

impl FocusReport {
    /// Converts the report's positions, counted in `encoding`, into the MCP/CLI unit against
    /// `text`, the document's text the editor reported them on (`None` when it could not be
    /// read: positions are then unknown). Out-of-range positions clamp and set
    /// [`Focus::clamped`].
    pub fn into_focus(self, text: Option<&ropey::Rope>, encoding: Encoding) -> EditorFocus {
        let Some(id) = self.id else { return EditorFocus::NoDocument };
        let mut clamped = false;
        let mut convert = |at: Position| -> Option<OneBased> {
            let text = text?;
            let (utf32, fidelity) = position::convert_position(text, at, encoding, Encoding::Utf32);
            clamped |= fidelity != position::Fidelity::Exact;
            Some(OneBased::from_position(utf32))
        };
        let cursor = self.cursor.and_then(&mut convert);
        let selection = self
            .selection
            .filter(|(start, end)| start != end)
            .and_then(|(start, end)| Some((convert(start)?, convert(end)?)));
        let visible_range = self.visible_range.and_then(|(start, end)| Some((convert(start)?, convert(end)?)));
        EditorFocus::Document(Focus { id, version: self.version, cursor, selection, visible_range, clamped })
    }
}

/// Whether an open buffer differs from its file on disk (unsaved changes): `Some(true)` also
/// when the file does not exist; `None` when the disk could not be read (too large, binary,
/// unreadable).
pub fn unsaved(
    buffer: &ropey::Rope,
    disk: Result<crate::documents::SourceText, crate::documents::ReadError>,
) -> Option<bool> {
    match disk {
        Ok(source) => Some(match source.origin {
            Origin::Disk { lossy: true, .. } => true,
            _ => source.text != *buffer,
        }),
        Err(crate::documents::ReadError::NotFound { .. }) => Some(true),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ropey::Rope;

    fn at(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    fn one(line: u32, column: u32) -> OneBased {
        OneBased { line, column }
    }

    /// A report in UTF-16 on a line with a non-BMP character (2 UTF-16 units, 1 character) and
    /// a 2-byte character: the columns come out in characters, 1-based.
    #[test]
    fn positions_convert_from_the_editors_encoding_to_one_based_characters() {
        let text = Rope::from_str("package a\n// 𝄞é x\nfunc A() {}\n");
        let id = DocumentId::from_canonical(std::path::Path::new("/w/a.go"));
        let report = FocusReport {
            id: Some(id.clone()),
            version: Some(3),
            cursor: Some(at(1, 6)),                // after "// 𝄞é" in UTF-16: 3 + 2 + 1
            selection: Some((at(1, 3), at(1, 6))), // "𝄞é"
            visible_range: Some((at(0, 0), at(2, 11))),
        };
        let EditorFocus::Document(focus) = report.clone().into_focus(Some(&text), Encoding::Utf16) else {
            panic!("a document focus")
        };
        assert_eq!(focus.cursor, Some(one(2, 6)));
        assert_eq!(focus.selection, Some((one(2, 4), one(2, 6))));
        assert_eq!(focus.visible_range, Some((one(1, 1), one(3, 12))));
        assert!(!focus.clamped);
        assert_eq!(focus.version, Some(3));

        // A column past the end of the line clamps to its end, and says so.
        let past = FocusReport { cursor: Some(at(1, 99)), ..report.clone() };
        let EditorFocus::Document(focus) = past.into_focus(Some(&text), Encoding::Utf16) else { panic!() };
        assert_eq!(focus.cursor, Some(one(2, 8)));
        assert!(focus.clamped);

        // The same place counted in UTF-8 bytes: 3 + 4 + 2.
        let utf8 = FocusReport { cursor: Some(at(1, 9)), selection: None, visible_range: None, ..report.clone() };
        let EditorFocus::Document(focus) = utf8.into_focus(Some(&text), Encoding::Utf8) else { panic!() };
        assert_eq!(focus.cursor, Some(one(2, 6)));
        assert!(!focus.clamped);

        // An empty selection is no selection; unreadable text leaves the positions unknown.
        let empty = FocusReport { selection: Some((at(1, 3), at(1, 3))), ..report.clone() };
        let EditorFocus::Document(focus) = empty.into_focus(Some(&text), Encoding::Utf16) else { panic!() };
        assert_eq!(focus.selection, None);
        let EditorFocus::Document(focus) = report.into_focus(None, Encoding::Utf16) else { panic!() };
        assert_eq!((focus.cursor, focus.selection, focus.visible_range), (None, None, None));

        assert_eq!(FocusReport::default().into_focus(Some(&text), Encoding::Utf16), EditorFocus::NoDocument);
    }

    #[test]
    fn unsaved_compares_the_buffer_with_the_disk() {
        let buffer = Rope::from_str("a\n");
        let disk = |text: &str, lossy| {
            Ok(crate::documents::SourceText {
                text: Rope::from_str(text),
                origin: Origin::Disk { modified: None, lossy },
                language: None,
                lines: None,
            })
        };
        assert_eq!(unsaved(&buffer, disk("a\n", false)), Some(false));
        assert_eq!(unsaved(&buffer, disk("b\n", false)), Some(true));
        assert_eq!(unsaved(&buffer, disk("a\n", true)), Some(true));
        let missing = crate::documents::ReadError::NotFound { path: "/w/a".into() };
        assert_eq!(unsaved(&buffer, Err(missing)), Some(true));
        let large = crate::documents::ReadError::TooLarge { path: "/w/a".into(), size: 9, limit: 1 };
        assert_eq!(unsaved(&buffer, Err(large)), None);
    }
}
