"""Independent oracles for the end-to-end tests.

Everything here computes what filepuff *should* answer without asking filepuff: from the files
themselves (Python's ``re`` and ``ast``), from GNU grep, from the ``ast-grep`` CLI, or from Go's
own ``go/parser`` (see ``go_outline/main.go``). The tests compare these against the server's answers.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable

import pytest

# filepuff's defaults (filepuff.toml `[search] max_line_chars`, `[limits] max_file_bytes`).
MAX_LINE_CHARS = 300
MAX_FILE_BYTES = 16 * 1024 * 1024


# ---- files and lines ----------------------------------------------------------------------------


def file_lines(path: Path) -> list[str]:
    """The lines of a file as grep sees them: split on LF only, final LF does not open a line.

    Each line keeps any CR it carries; invalid UTF-8 becomes U+FFFD (as in the tool's output).
    """
    text = path.read_bytes().decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def lines_with_ends(path: Path) -> list[str]:
    """The lines of a file with their LF (split on LF only), for comparing `content` ranges."""
    text = path.read_bytes().decode("utf-8", "replace")
    parts = text.split("\n")
    out = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def grep_line_numbers(path: Path, fixed: str) -> list[int]:
    """`grep -nF FIXED FILE`: the 1-based numbers of the lines containing `fixed`."""
    # Bytes, not text: the lines may hold invalid UTF-8 or a lone CR (which text mode would
    # turn into a line break).
    proc = subprocess.run(["grep", "-nF", "--", fixed, str(path)], capture_output=True, env=_c_locale())
    assert proc.returncode in (0, 1), proc.stderr
    return [int(line.split(b":", 1)[0]) for line in proc.stdout.split(b"\n") if line]


def grep_count_lines(path: Path) -> int:
    """`grep -c '' FILE`: lines in a file as grep (and wc -l, plus an unterminated last line) count them."""
    proc = subprocess.run(["grep", "-c", "", str(path)], capture_output=True, text=True, env=_c_locale())
    assert proc.returncode in (0, 1), proc.stderr
    return int(proc.stdout.strip())


def grep_recursive_counts(
    root: Path, pattern: str, paths: Iterable[str] = (".",), *, fixed: bool = False, ignore_case: bool = False,
    include: str | None = None,
) -> dict[str, int]:
    """GNU `grep -rc` over `paths` (relative to `root`): matching-line count per file with >= 1 match.

    Hidden files and directories are excluded and binary files skipped (-I), as a ripgrep walk does.
    Keys are root-relative paths with '/' separators.
    """
    args = ["grep", "-r", "-c", "-I", "--exclude=.*", "--exclude-dir=.?*"]
    args.append("-F" if fixed else "-E")
    if ignore_case:
        args.append("-i")
    if include:
        args.append(f"--include={include}")
    args += ["--", pattern, *paths]
    proc = subprocess.run(args, cwd=root, capture_output=True, text=True, env=_c_locale())
    assert proc.returncode in (0, 1), proc.stderr
    counts: dict[str, int] = {}
    for line in proc.stdout.splitlines():
        name, _, count = line.rpartition(":")
        if int(count) > 0:
            counts[os.path.normpath(name).replace(os.sep, "/")] = int(count)
    return counts


def _c_locale() -> dict[str, str]:
    return {**os.environ, "LC_ALL": "C"}


def walk_files(root: Path, under: str = "", suffixes: tuple[str, ...] | None = None) -> list[str]:
    """Regular files under root/under as a ripgrep-style walk visits them (no hidden entries, no
    symlinks followed), as sorted root-relative '/'-paths. Assumes no .gitignore applies."""
    out = []
    base = root / under if under else root
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.startswith("."):
                continue
            full = Path(dirpath) / name
            if full.is_symlink() or not full.is_file():
                continue
            if suffixes is not None and not name.endswith(suffixes):
                continue
            if full.stat().st_size > MAX_FILE_BYTES:
                continue
            out.append(full.relative_to(root).as_posix())
    return sorted(out)


# ---- search -------------------------------------------------------------------------------------


def _cut(text: str) -> tuple[str, bool]:
    text = text.rstrip("\r\n")
    if len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS], True
    return text, False


def expected_search(
    root: Path,
    files: Iterable[str],
    pattern: str,
    *,
    regex: bool = True,
    ignore_case: bool = False,
    context_lines: int = 2,
    max_results: int = 100,
) -> dict[str, Any]:
    """The file_search result computed with Python's `re`, line by line, over `files`.

    Follows the contract: files ordered by path, matching lines counted once (grep -c), the first
    `max_results` matching lines returned with `context_lines` lines around each, columns 1-based
    in characters, text cut at MAX_LINE_CHARS characters. `hint` is not produced (checked apart).
    Binary files (a NUL byte) are counted as searched but never match.
    """
    rx = re.compile(pattern if regex else re.escape(pattern), re.IGNORECASE if ignore_case else 0)
    files = sorted(files)
    per_file: list[tuple[str, list[str], list[tuple[int, int]]]] = []
    for rel in files:
        data = (root / rel).read_bytes()
        if b"\0" in data:
            continue
        lines = file_lines(root / rel)
        hits = []
        for idx, line in enumerate(lines):
            m = rx.search(line)
            if m:
                hits.append((idx + 1, m.start() + 1))
        if hits:
            per_file.append((rel, lines, hits))

    total = sum(len(h) for _, _, h in per_file)
    remaining = max_results
    out_files = []
    for rel, lines, hits in per_file:
        if remaining == 0:
            break
        kept = hits[:remaining]
        remaining -= len(kept)
        matches = []
        for line_no, column in kept:
            text, cut = _cut(lines[line_no - 1])
            match: dict[str, Any] = {"line": line_no, "column": column, "text": text}
            if cut:
                match["text_truncated"] = True
            if context_lines:
                before = [
                    {"line": n, "text": _cut(lines[n - 1])[0]}
                    for n in range(max(1, line_no - context_lines), line_no)
                ]
                after = [
                    {"line": n, "text": _cut(lines[n - 1])[0]}
                    for n in range(line_no + 1, min(len(lines), line_no + context_lines) + 1)
                ]
                if before:
                    match["before"] = before
                if after:
                    match["after"] = after
            matches.append(match)
        out_files.append({"path": rel, "total_matches": len(hits), "matches": matches})
    returned = sum(len(f["matches"]) for f in out_files)
    return {
        "pattern": pattern,
        "total_matches": total,
        "total_files": len(per_file),
        "files_searched": len(files),
        "returned_matches": returned,
        "truncated": returned < total,
        "files": out_files,
    }


def without_hint(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "hint"}


# ---- Python outlines ----------------------------------------------------------------------------


def _start_line(node: ast.AST) -> int:
    """A definition starts at its first decorator, if any."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def _end_line(node: ast.stmt, lines: list[str]) -> int:
    """ast's end_lineno, extended over trailing comment lines still indented inside the body.

    `ast` drops comments; a parser that keeps them (tree-sitter, editors' folding) ends a `def`
    or `class` at the last comment that is still indented deeper than the `def` itself.
    """
    last = node.end_lineno
    idx = node.end_lineno  # 0-based index of the line after the node
    while idx < len(lines):
        line = lines[idx]
        stripped = line.lstrip(" \t")
        if not stripped.strip():
            idx += 1
            continue
        if stripped.startswith("#") and len(line) - len(stripped) > node.col_offset:
            last = idx + 1
            idx += 1
            continue
        break
    return last


def _is_constant_name(name: str) -> bool:
    return (
        name.isascii()
        and any(c.isupper() for c in name)
        and all(c.isupper() or c.isdigit() or c == "_" for c in name)
    )


def python_outline(source: str) -> list[dict[str, Any]]:
    """The expected outline of a Python module, from `ast`.

    Top level: functions, classes, and UPPER_CASE constants (PEP 8), also inside module-level
    `if`/`try` blocks (`if TYPE_CHECKING:`, `try: import x except ImportError: def x(): ...`).
    Class bodies: methods and nested classes. Function bodies are not entered.
    """
    lines = source.split("\n")

    def walk(body: list[ast.stmt], in_class: bool) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append({
                    "name": node.name,
                    "kind": "method" if in_class else "function",
                    "start_line": _start_line(node),
                    "end_line": _end_line(node, lines),
                })
            elif isinstance(node, ast.ClassDef):
                symbol = {
                    "name": node.name,
                    "kind": "class",
                    "start_line": _start_line(node),
                    "end_line": _end_line(node, lines),
                }
                children = walk(node.body, True)
                if children:
                    symbol["children"] = children
                out.append(symbol)
            elif in_class:
                continue
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                if isinstance(target, ast.Name) and _is_constant_name(target.id):
                    out.append({
                        "name": target.id,
                        "kind": "constant",
                        "start_line": node.lineno,
                        "end_line": node.end_lineno,
                    })
            elif isinstance(node, ast.If):
                out += walk(node.body, False) + walk(node.orelse, False)
            elif isinstance(node, ast.Try):
                out += walk(node.body, False)
                for handler in node.handlers:
                    out += walk(handler.body, False)
                out += walk(node.orelse, False) + walk(node.finalbody, False)
        return out

    return walk(ast.parse(source).body, False)


def normalise_symbols(symbols: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """Symbols reduced to `keys` (plus `children`, recursively), for comparison with an oracle."""
    out = []
    for symbol in symbols:
        item = {k: symbol[k] for k in keys if k in symbol}
        children = normalise_symbols(symbol.get("children", []), keys)
        if children:
            item["children"] = children
        out.append(item)
    return out


def first_line_after(lines: list[str], start: int, equals: str) -> int:
    """1-based number of the first line after `start` (1-based) whose text is exactly `equals`."""
    for idx in range(start, len(lines)):
        if lines[idx] == equals:
            return idx + 1
    raise AssertionError(f"no line {equals!r} after line {start}")


# ---- disk snapshots -----------------------------------------------------------------------------


def snapshot(*roots: Path) -> dict[str, tuple]:
    """Everything observable about the trees under `roots` (not following symlinks): kind, size,
    mtime, content hash or link target, permissions. Equal snapshots mean nothing changed."""
    state: dict[str, tuple] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in sorted(dirnames + filenames):
                full = Path(dirpath) / name
                st = full.lstat()
                if full.is_symlink():
                    entry: tuple = ("link", os.readlink(full))
                elif full.is_dir():
                    entry = ("dir", st.st_mode, st.st_mtime_ns)
                else:
                    digest = hashlib.sha256(full.read_bytes()).hexdigest()
                    entry = ("file", st.st_mode, st.st_size, st.st_mtime_ns, digest)
                state[str(full)] = entry
        st = root.lstat()
        state[str(root)] = ("root", st.st_mode, st.st_mtime_ns)
    return state


# ---- structural search --------------------------------------------------------------------------


def ast_grep() -> str:
    found = Path(sys.executable).parent / "ast-grep"
    if found.is_file():
        return str(found)
    which = shutil.which("ast-grep")
    if not which:
        pytest.skip("the ast-grep CLI (pip install ast-grep-cli) is not installed")
    return which


def ast_grep_matches(root: Path, pattern: str, lang: str, paths: list[str]) -> set[tuple[str, int, int]]:
    """(file, 1-based start line, 1-based start column) of every match the ast-grep CLI reports."""
    proc = subprocess.run(
        [ast_grep(), "run", "-p", pattern, "--lang", lang, "--json=compact", *paths],
        cwd=root, capture_output=True, text=True, check=True,
    )
    return {
        (m["file"], m["range"]["start"]["line"] + 1, m["range"]["start"]["column"] + 1) for m in json.loads(proc.stdout)
    }
