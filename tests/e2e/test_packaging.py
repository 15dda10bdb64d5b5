"""Install paths and generated files (issue 21): shell completions and the man page from the
clap definition, checked by each shell's own syntax check; the PyPI wheel, the npm packages and
`cargo package`, each built by its script in scripts/ from the binary under test
(FILEPUFF_BIN), installed the way its users install it, and driven through a real MCP client.

Under FILEPUFF_CI a missing shell, npm or pip fails instead of skipping (conftest.py).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, filepuff_binary


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=kwargs.pop("timeout", 300), **kwargs)


# -- completions and the man page ---------------------------------------------------------------

SHELL_CHECKS = {
    "bash": ["bash", "-n"],
    "zsh": ["zsh", "-n"],
    "fish": ["fish", "--no-execute"],
}


@pytest.mark.parametrize("shell", sorted(SHELL_CHECKS))
def test_completions_pass_the_shells_syntax_check(shell: str, tmp_path: Path) -> None:
    check = SHELL_CHECKS[shell]
    if shutil.which(check[0]) is None:
        pytest.skip(f"{check[0]} is not installed")
    generated = run([str(filepuff_binary()), "completions", shell])
    assert generated.returncode == 0, generated.stderr
    assert "doctor" in generated.stdout and "root" in generated.stdout
    script = tmp_path / f"filepuff.{shell}"
    script.write_text(generated.stdout)
    checked = run(check + [str(script)])
    assert checked.returncode == 0, f"{shell} rejects the script: {checked.stderr}"
    # The check can fail: a script with a syntax error is refused by the same command.
    script.write_text(generated.stdout + "\nif then fi end (\n")
    assert run(check + [str(script)]).returncode != 0


def test_completions_in_bash_complete_a_subcommand(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    script = tmp_path / "filepuff.bash"
    script.write_text(run([str(filepuff_binary()), "completions", "bash"]).stdout)
    # What bash does on `filepuff do<TAB>`: call the registered function, read COMPREPLY.
    probe = (
        f"source {script}; COMP_WORDS=(filepuff do); COMP_CWORD=1; COMP_LINE='filepuff do'; COMP_POINT=11; "
        "_filepuff filepuff do filepuff; printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    completed = run(["bash", "-c", probe])
    assert completed.stdout.split() == ["doctor"], completed.stdout + completed.stderr


def test_man_page_renders_with_man(tmp_path: Path) -> None:
    generated = run([str(filepuff_binary()), "man"])
    assert generated.returncode == 0, generated.stderr
    page = tmp_path / "filepuff.1"
    page.write_text(generated.stdout)
    if shutil.which("man") is None:
        pytest.skip("man is not installed")
    rendered = run(["man", "-l", str(page)], env={"MANPAGER": "cat", "MANWIDTH": "100", "PATH": "/usr/bin:/bin"})
    assert rendered.returncode == 0, rendered.stderr
    text = rendered.stdout
    assert "NAME" in text and "SUBCOMMANDS" in text
    assert "filepuff-doctor" in text and "filepuff-completions" in text


# -- crates.io ----------------------------------------------------------------------------------

def test_cargo_package_ships_sources_not_corpora() -> None:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    listed = run(["cargo", "package", "--list", "--allow-dirty", "--offline"], cwd=REPO)
    assert listed.returncode == 0, listed.stderr
    files = listed.stdout.split()
    assert {"Cargo.toml", "Cargo.lock", "README.md", "src/main.rs", "src/lib.rs"} <= set(files)
    shipped_elsewhere = ("tests/", "editors/", "bench/", "scripts/", ".ci/", "proptest-regressions/", "docs/images/")
    assert [f for f in files if f.startswith(shipped_elsewhere)] == []
    size = sum((REPO / f).stat().st_size for f in files if (REPO / f).is_file())
    assert size < 4 * 1024 * 1024, f"the crate's files add up to {size} bytes"
    # The metadata crates.io shows.
    manifest = (REPO / "Cargo.toml").read_text()
    for key in ("description", "license", "readme", "keywords", "categories", "rust-version"):
        assert f"\n{key} = " in manifest, f"Cargo.toml lacks {key}"
