"""LSP conformance from a third party: pytest-lsp (PyPI; its `LanguageClient` on pygls and
lsprotocol) drives `filepuff lsp` in front of real gopls and basedpyright (ruff formats Python,
which basedpyright does not), declaring the client capabilities pytest-lsp ships for Neovim
0.11.0, Visual Studio Code 1.65.2 and Emacs 29.1 (eglot).

Every request goes through pytest-lsp's own checks of results against the declared capabilities
(an `LspSpecificationWarning` is an error here, pytest.ini), and every answer is compared exactly:
positions (in the encoding negotiated with that client: utf-8 for Neovim and Emacs, which offer
it, utf-16 for VS Code, which does not), names, kinds and texts. The fixtures
(tests/fixtures/conformance/{go,py}) put an emoji and CJK before the symbols asked about, so a
wrong unit shows as a wrong column.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest
import pytest_asyncio

from conftest import REPO, filepuff_binary

try:
    import pytest_lsp
    from lsprotocol import types as lsp
    from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
except ImportError as error:  # pragma: no cover - the environment, not the code, is wrong
    if os.environ.get("FILEPUFF_CI"):
        raise ImportError(f"FILEPUFF_CI is set and pytest-lsp is not installed ({error}): "
                          "scripts/setup-test-env installs tests/e2e/requirements.txt") from error
    pytest.skip("not installed: pytest-lsp (scripts/setup-test-env)", allow_module_level=True)

FIXTURES = REPO / "tests" / "fixtures" / "conformance"
# pytest-lsp's profile names → the encoding filepuff must pick (utf-8 when offered, docs/lsp.md).
PROFILES = {
    "neovim@v0.11.0": "utf-8",
    "visual-studio-code@v1.65.2": "utf-16",
    "emacs@v29.1": "utf-8",
}
TIMEOUT = 90.0


pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    # pytest-lsp's own checks of each answer against the declared capabilities fail the test.
    pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning"),
]


def need(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/install-language-servers)")


def column(line: str, index: int, encoding: str) -> int:
    """The column of `line[index]` in `encoding` units (Python's own codecs, not filepuff's)."""
    prefix = line[:index]
    if encoding == "utf-8":
        return len(prefix.encode("utf-8"))
    if encoding == "utf-16":
        return len(prefix.encode("utf-16-le")) // 2
    return len(prefix)


def position(text: str, needle: str, encoding: str, occurrence: int = 0, offset: int = 0) -> lsp.Position:
    """The position of the `occurrence`-th `needle` in `text` (plus `offset` characters)."""
    index = -1
    for _ in range(occurrence + 1):
        index = text.index(needle, index + 1)
    index += offset
    line = text.count("\n", 0, index)
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return lsp.Position(line=line, character=column(text[start:end if end >= 0 else len(text)], index - start, encoding))


def word(text: str, context: str, name: str, encoding: str) -> lsp.Range:
    """The range of `name` inside the first occurrence of `context` in `text` (one line)."""
    start = position(text, context, encoding, offset=context.index(name))
    return lsp.Range(start=start, end=position(text, context, encoding, offset=context.index(name) + len(name)))


def apply_edits(text: str, edits: list[lsp.TextEdit], encoding: str) -> str:
    """Applies LSP text edits (non-overlapping, any order) the way an editor does."""
    lines = text.split("\n")

    def offset(pos: lsp.Position) -> int:
        before = sum(len(l) + 1 for l in lines[: pos.line])
        line = lines[pos.line] if pos.line < len(lines) else ""
        index = 0
        while index < len(line) and column(line, index, encoding) < pos.character:
            index += 1
        return before + index

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
        lines = text.split("\n")
    return text


async def within(awaitable):
    return await asyncio.wait_for(awaitable, TIMEOUT)


class Session:
    """One `filepuff lsp` over a private copy of a fixture, initialized as `profile` would."""

    def __init__(self, client: LanguageClient, root: Path, profile: str, result: lsp.InitializeResult):
        self.client = client
        self.root = root
        self.profile = profile
        self.result = result
        self.encoding = PROFILES[profile]
        self.opened: dict[str, str] = {}

    def uri(self, relative: str) -> str:
        return (self.root / relative).as_uri()

    def open(self, relative: str, language_id: str, text: str | None = None) -> str:
        text = (self.root / relative).read_text() if text is None else text
        self.opened[relative] = text
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=self.uri(relative), language_id=language_id, version=1, text=text)))
        return text

    def doc(self, relative: str) -> lsp.TextDocumentIdentifier:
        return lsp.TextDocumentIdentifier(uri=self.uri(relative))


async def start_session(tmp_path_factory, language: str, profile: str) -> Session:
    root = tmp_path_factory.mktemp(f"conformance-{language}") / "ws"
    shutil.copytree(FIXTURES / language, root)
    config = ClientServerConfig(server_command=[str(filepuff_binary()), "lsp"],
                                server_env={**os.environ, "FILEPUFF_LOG": "info"})
    client = await config.start()
    result = await within(client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities(profile),
        root_uri=root.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(uri=root.as_uri(), name="ws")],
    )))
    return Session(client, root, profile, result)


async def stop_session(session: Session) -> None:
    await within(session.client.shutdown_session())
    await session.client.stop()


async def open_and_settle(session: Session, files: dict[str, str]) -> None:
    """Opens `files` (relative path → language id) and waits for the first diagnostics of each:
    the server has then loaded them."""
    for relative, language_id in files.items():
        session.open(relative, language_id)
    for relative in files:
        uri = session.uri(relative)
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while uri not in session.client.diagnostics:
            assert asyncio.get_running_loop().time() < deadline, f"no diagnostics for {relative}"
            await asyncio.sleep(0.1)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=list(PROFILES))
async def go(request, tmp_path_factory):
    need("gopls")
    session = await start_session(tmp_path_factory, "go", request.param)
    await open_and_settle(session, {"main.go": "go", "shapes/shapes.go": "go"})
    yield session
    if not session.client.stopped:
        await stop_session(session)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=list(PROFILES))
async def py(request, tmp_path_factory):
    need("basedpyright-langserver", "ruff")
    session = await start_session(tmp_path_factory, "py", request.param)
    await open_and_settle(session, {"main.py": "python", "shapes/square.py": "python"})
    yield session
    if not session.client.stopped:
        await stop_session(session)


# ---- shared checks ------------------------------------------------------------------------------

def cargo_version() -> str:
    import tomllib

    return tomllib.loads((REPO / "Cargo.toml").read_text())["package"]["version"]


def declared(session: Session, pointer: str):
    """A field of the client capabilities this profile declared (`a/b/c`), or None."""
    value = session.client.capabilities
    for part in pointer.split("/"):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


def check_initialize(session: Session, trigger_characters: list[str], token_types: list[str],
                     formatting: bool = True) -> None:
    result = session.result
    assert result.server_info == lsp.ServerInfo(name="filepuff", version=cargo_version())
    caps = result.capabilities
    # utf-8 when the client offers it, else LSP's default utf-16 (docs/lsp.md, LSP 3.17 §positionEncoding).
    assert caps.position_encoding == session.encoding
    assert caps.text_document_sync.open_close is True
    assert caps.text_document_sync.change == lsp.TextDocumentSyncKind.Incremental
    for name in ("definition_provider", "hover_provider", "references_provider", "document_symbol_provider"):
        assert getattr(caps, name) not in (None, False), name
    assert (caps.document_formatting_provider not in (None, False)) is formatting
    assert caps.rename_provider not in (None, False)
    assert list(caps.completion_provider.trigger_characters or []) == trigger_characters
    assert list(caps.semantic_tokens_provider.legend.token_types) == token_types
    assert caps.semantic_tokens_provider.full in (True, lsp.SemanticTokensFullDelta(delta=False),
                                                  lsp.SemanticTokensFullDelta(delta=True))


def decode_tokens(session: Session, data: list[int], line: int) -> list[tuple]:
    """Semantic tokens on `line`: (start character, length, type, sorted modifiers), LSP 3.17
    §semanticTokens' relative encoding decoded with the legend filepuff gave this client."""
    legend = session.result.capabilities.semantic_tokens_provider.legend
    assert len(data) % 5 == 0
    out, current, start = [], 0, 0
    for i in range(0, len(data), 5):
        delta_line, delta_start, length, kind, modifiers = data[i:i + 5]
        current += delta_line
        start = start + delta_start if delta_line == 0 else delta_start
        if current == line:
            names = sorted(m for bit, m in enumerate(legend.token_modifiers) if modifiers & (1 << bit))
            out.append((start, length, legend.token_types[kind], names))
    return out


def workspace_edit_texts(session: Session, edit: lsp.WorkspaceEdit) -> dict[str, str]:
    """Applies a rename's WorkspaceEdit to the files' texts; checks its shape is one the client
    declared (`documentChanges` only for a client with workspaceEdit.documentChanges)."""
    per_uri: dict[str, list] = {}
    if declared(session, "workspace/workspace_edit/document_changes"):
        assert edit.changes is None and edit.document_changes is not None
        for change in edit.document_changes:
            assert isinstance(change, lsp.TextDocumentEdit), change
            per_uri.setdefault(change.text_document.uri, []).extend(change.edits)
    else:
        assert edit.document_changes is None and edit.changes is not None, edit
        per_uri = {uri: list(edits) for uri, edits in edit.changes.items()}
    out = {}
    for uri, edits in per_uri.items():
        relative = Path(uri.removeprefix("file://")).relative_to(session.root).as_posix()
        out[relative] = apply_edits(session.opened[relative], edits, session.encoding)
    return out


async def check_formatting(session: Session, relative: str, language_id: str, ugly: str, oracle: list[str]) -> None:
    """Formats an unformatted file and compares with the formatter run directly (`oracle`)."""
    import subprocess

    (session.root / relative).write_text(ugly)
    expected = subprocess.run(oracle, input=ugly, capture_output=True, text=True, check=True).stdout
    assert expected != ugly
    session.open(relative, language_id, ugly)
    edits = await within(session.client.text_document_formatting_async(lsp.DocumentFormattingParams(
        text_document=session.doc(relative), options=lsp.FormattingOptions(tab_size=4, insert_spaces=True))))
    assert edits, "no formatting edits for an unformatted file"
    assert apply_edits(ugly, edits, session.encoding) == expected
    session.client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=session.doc(relative)))


async def check_shutdown(session: Session) -> None:
    assert await within(session.client.shutdown_async(None)) is None
    session.client.exit(None)
    code = await within(session.client._server.wait())
    assert code == 0
    await session.client.stop()


# ---- Go: filepuff in front of gopls -------------------------------------------------------------

GO_TOKEN_TYPES = ["namespace", "type", "typeParameter", "parameter", "property", "variable", "function", "method",
                  "macro", "keyword", "comment", "string", "number", "operator", "label"]


async def test_go_initialize(go):
    check_initialize(go, ["."], GO_TOKEN_TYPES)


async def test_go_definition_after_emoji_and_cjk(go):
    main, shapes = go.opened["main.go"], go.opened["shapes/shapes.go"]
    at = position(main, "NewSquare", go.encoding, offset=1)
    result = await within(go.client.text_document_definition_async(
        lsp.DefinitionParams(text_document=go.doc("main.go"), position=at)))
    assert result == [lsp.Location(uri=go.uri("shapes/shapes.go"),
                                   range=word(shapes, "func NewSquare(", "NewSquare", go.encoding))]


async def test_go_hover(go):
    main = go.opened["main.go"]
    result = await within(go.client.text_document_hover_async(
        lsp.HoverParams(text_document=go.doc("main.go"), position=position(main, "NewSquare", go.encoding, offset=4))))
    assert result.contents == lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=(
        "```go\nfunc shapes.NewSquare(side float64) shapes.Square\n```\n\n---\n\n"
        "NewSquare makes a Square of side side.\n\n\n---\n\n"
        "[`shapes.NewSquare` on pkg.go.dev](https://pkg.go.dev/example.com/conformance/shapes#NewSquare)"))
    assert result.range == word(main, "shapes.NewSquare(2)", "NewSquare", go.encoding)


def symbol_tree(symbols) -> list[tuple]:
    return [(s.name, s.kind, s.detail, s.selection_range, symbol_tree(s.children or [])) for s in symbols]


async def test_go_document_symbols(go):
    shapes = go.opened["shapes/shapes.go"]
    result = await within(go.client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=go.doc("shapes/shapes.go"))))
    assert all(isinstance(s, lsp.DocumentSymbol) for s in result)  # every profile declares hierarchy support
    K = lsp.SymbolKind
    assert symbol_tree(result) == [
        ("Square", K.Struct, "struct{...}", word(shapes, "type Square struct", "Square", go.encoding),
         [("Side", K.Field, "float64", word(shapes, "\tSide float64", "Side", go.encoding), [])]),
        ("(Square).Area", K.Method, "func() float64", word(shapes, "Area() float64", "Area", go.encoding), []),
        ("NewSquare", K.Function, "func(side float64) Square",
         word(shapes, "func NewSquare(", "NewSquare", go.encoding), []),
    ]


async def test_go_references(go):
    main, shapes = go.opened["main.go"], go.opened["shapes/shapes.go"]
    result = await within(go.client.text_document_references_async(lsp.ReferenceParams(
        text_document=go.doc("main.go"), position=position(main, "NewSquare", go.encoding),
        context=lsp.ReferenceContext(include_declaration=True))))
    key = lambda l: (l.uri, l.range.start.line, l.range.start.character)  # noqa: E731
    assert sorted(result, key=key) == sorted([
        lsp.Location(uri=go.uri("shapes/shapes.go"), range=word(shapes, "func NewSquare(", "NewSquare", go.encoding)),
        lsp.Location(uri=go.uri("main.go"), range=word(main, "shapes.NewSquare(2)", "NewSquare", go.encoding)),
        lsp.Location(uri=go.uri("main.go"), range=word(main, "shapes.NewSquare(3)", "NewSquare", go.encoding)),
    ], key=key)


async def test_go_completion(go):
    main = go.opened["main.go"]
    result = await within(go.client.text_document_completion_async(lsp.CompletionParams(
        text_document=go.doc("main.go"), position=position(main, "sq.Area", go.encoding, offset=3))))
    items = result.items if isinstance(result, lsp.CompletionList) else result
    assert sorted((i.label, i.kind) for i in items) == [("Area", lsp.CompletionItemKind.Method),
                                                       ("Side", lsp.CompletionItemKind.Field)]


async def test_go_semantic_tokens(go):
    main = go.opened["main.go"]
    result = await within(go.client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=go.doc("main.go"))))
    line = position(main, "😀", go.encoding).line
    at = lambda context, name: word(main, context, name, go.encoding).start.character  # noqa: E731
    comment = word(main, "/* 😀 日本 */", "/* 😀 日本 */", go.encoding)
    assert decode_tokens(go, result.data, line) == [
        (comment.start.character, comment.end.character - comment.start.character, "comment", []),
        (at("sq :=", "sq"), 2, "variable", ["definition", "struct"]),
        (at("sq :=", ":="), 2, "operator", []),
        (at("shapes.NewSquare(2)", "shapes"), 6, "namespace", []),
        (at("shapes.NewSquare(2)", "NewSquare"), 9, "function", ["signature"]),
        (at("NewSquare(2)", "2"), 1, "number", []),
    ]


async def test_go_formatting(go):
    need("gofmt")
    ugly = "package shapes\n\n// 😀 日本\nfunc  ugly( a int)int{\nreturn a+1}\n"
    await check_formatting(go, "shapes/ugly.go", "go", ugly, ["gofmt"])


async def test_go_rename_across_files(go):
    main = go.opened["main.go"]
    edit = await within(go.client.text_document_rename_async(lsp.RenameParams(
        text_document=go.doc("main.go"), position=position(main, "NewSquare", go.encoding), new_name="MakeSquare")))
    assert workspace_edit_texts(go, edit) == {
        "main.go": main.replace("NewSquare", "MakeSquare"),
        "shapes/shapes.go": go.opened["shapes/shapes.go"].replace("NewSquare", "MakeSquare"),
    }


async def test_go_shutdown_and_exit(go):
    await check_shutdown(go)


# ---- Python: filepuff in front of basedpyright (and ruff, which formats) -------------------------

PY_TOKEN_TYPES = ["namespace", "type", "class", "enum", "typeParameter", "parameter", "variable", "property",
                  "enumMember", "function", "method", "keyword", "decorator", "selfParameter", "clsParameter"]


async def test_py_initialize(py):
    # ruff registers its formatting after `initialized` (client/registerCapability) when the
    # client takes formatting registrations (Neovim's and VS Code's profiles): the `initialize`
    # answer then cannot promise it. To Emacs, which takes none, ruff and filepuff offer it at once.
    # test_py_formatting shows it reaches ruff either way.
    dynamic = bool(declared(py, "text_document/formatting/dynamic_registration"))
    check_initialize(py, [".", "[", '"', "'"], PY_TOKEN_TYPES, formatting=not dynamic)


async def test_py_definition_after_emoji_and_cjk(py):
    main, square = py.opened["main.py"], py.opened["shapes/square.py"]
    result = await within(py.client.text_document_definition_async(lsp.DefinitionParams(
        text_document=py.doc("main.py"), position=position(main, "new_square(2)", py.encoding, offset=1))))
    assert result == [lsp.Location(uri=py.uri("shapes/square.py"),
                                   range=word(square, "def new_square(", "new_square", py.encoding))]


async def test_py_hover(py):
    main = py.opened["main.py"]
    result = await within(py.client.text_document_hover_async(lsp.HoverParams(
        text_document=py.doc("main.py"), position=position(main, "new_square(2)", py.encoding, offset=4))))
    assert result.contents == lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=(
        "```python\n(function) def new_square(side: float) -> Square\n```\n---\nA Square of side `side`."))
    assert result.range == word(main, "new_square(2)", "new_square", py.encoding)


async def test_py_document_symbols(py):
    square = py.opened["shapes/square.py"]
    result = await within(py.client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=py.doc("shapes/square.py"))))
    K = lsp.SymbolKind
    w = lambda context, name: word(square, context, name, py.encoding)  # noqa: E731
    assert symbol_tree(result) == [
        ("Square", K.Class, None, w("class Square:", "Square"), [
            ("__init__", K.Method, None, w("def __init__(", "__init__"), [
                ("side", K.Variable, None, w("side: float) -> None", "side: float"), []),
            ]),
            ("area", K.Method, None, w("def area(", "area"), []),
            ("side", K.Variable, None, w("self.side = side", "side"), []),
        ]),
        ("new_square", K.Function, None, w("def new_square(", "new_square"), [
            ("side", K.Variable, None, w("side: float) -> Square", "side: float"), []),
        ]),
    ]


async def test_py_references(py):
    main, square = py.opened["main.py"], py.opened["shapes/square.py"]
    result = await within(py.client.text_document_references_async(lsp.ReferenceParams(
        text_document=py.doc("main.py"), position=position(main, "new_square(2)", py.encoding),
        context=lsp.ReferenceContext(include_declaration=True))))
    key = lambda l: (l.uri, l.range.start.line, l.range.start.character)  # noqa: E731
    assert sorted(result, key=key) == sorted([
        lsp.Location(uri=py.uri("shapes/square.py"), range=word(square, "def new_square(", "new_square", py.encoding)),
        lsp.Location(uri=py.uri("main.py"), range=word(main, "import new_square", "new_square", py.encoding)),
        lsp.Location(uri=py.uri("main.py"), range=word(main, "new_square(2)", "new_square", py.encoding)),
        lsp.Location(uri=py.uri("main.py"), range=word(main, "new_square(3)", "new_square", py.encoding)),
    ], key=key)


async def test_py_completion(py):
    main = py.opened["main.py"]
    result = await within(py.client.text_document_completion_async(lsp.CompletionParams(
        text_document=py.doc("main.py"), position=position(main, "sq.area", py.encoding, offset=3))))
    items = result.items if isinstance(result, lsp.CompletionList) else result
    public = sorted((i.label, i.kind) for i in items if not i.label.startswith("_"))
    assert public == [("area", lsp.CompletionItemKind.Method), ("side", lsp.CompletionItemKind.Variable)]


async def test_py_semantic_tokens(py):
    main = py.opened["main.py"]
    result = await within(py.client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=py.doc("main.py"))))
    line = position(main, "😀", py.encoding).line
    at = lambda context, name: word(main, context, name, py.encoding).start.character  # noqa: E731
    assert decode_tokens(py, result.data, line) == [
        (at("label =", "label"), 5, "variable", []),
        (at("sq =", "sq"), 2, "variable", []),
        (at("new_square(2)", "new_square"), 10, "function", []),
    ]


async def test_py_formatting(py):
    ugly = "def  ugly( a ):\n  return {'😀':a,  '日本' :a+1}\n"
    await check_formatting(py, "shapes/ugly.py", "python", ugly,
                           ["ruff", "format", "--stdin-filename", str(py.root / "shapes" / "ugly.py"), "-"])


async def test_py_rename_across_files(py):
    main = py.opened["main.py"]
    edit = await within(py.client.text_document_rename_async(lsp.RenameParams(
        text_document=py.doc("main.py"), position=position(main, "new_square(2)", py.encoding),
        new_name="make_square")))
    assert workspace_edit_texts(py, edit) == {
        "main.py": main.replace("new_square", "make_square"),
        "shapes/square.py": py.opened["shapes/square.py"].replace("new_square", "make_square"),
    }


async def test_py_shutdown_and_exit(py):
    await check_shutdown(py)


