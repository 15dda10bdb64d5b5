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
    # Subcommands as typed, not as pages of their own (only filepuff(1) is generated).
    assert "filepuff doctor" in text and "filepuff completions" in text
    assert "filepuff-doctor(1)" not in text


# -- crates.io ----------------------------------------------------------------------------------

def test_cargo_package_ships_sources_not_corpora() -> None:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    listed = run(["cargo", "package", "--list", "--allow-dirty", "--offline"], cwd=REPO)
    assert listed.returncode == 0, listed.stderr
    files = listed.stdout.split()
    assert {"Cargo.toml", "Cargo.lock", "README.md", "LICENSE-APACHE", "LICENSE-MIT", "src/main.rs", "src/lib.rs"} <= set(files)
    shipped_elsewhere = ("tests/", "editors/", "bench/", "scripts/", ".ci/", "proptest-regressions/", "docs/images/")
    assert [f for f in files if f.startswith(shipped_elsewhere)] == []
    size = sum((REPO / f).stat().st_size for f in files if (REPO / f).is_file())
    assert size < 4 * 1024 * 1024, f"the crate's files add up to {size} bytes"
    # The metadata crates.io shows.
    manifest = (REPO / "Cargo.toml").read_text()
    for key in ("description", "license", "readme", "keywords", "categories", "rust-version"):
        assert f"\n{key} = " in manifest, f"Cargo.toml lacks {key}"


# -- installed packages, driven by real MCP clients ---------------------------------------------

def small_workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "greet.py").write_text("def greet(name):\n    return f'hello {name}'  # puff-marker\n")
    return root


async def python_sdk_session(command: Path, root: Path, stderr_log: Path, args: list[str] | None = None,
                             env: dict[str, str] | None = None) -> tuple[set[str], str]:
    """`COMMAND [ARGS] mcp` through the official Python SDK: the tool names and file_search's text."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=str(command), args=(args or []) + ["mcp"], cwd=str(root),
                                   env={"PATH": "/usr/bin:/bin", **(env or {})})
    with open(stderr_log, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                initialized = await session.initialize()
                assert initialized.server_info.name == "filepuff"
                tools = {tool.name for tool in (await session.list_tools()).tools}
                result = await session.call_tool("file_search", {"pattern": "puff-marker"})
                assert not result.is_error, result
                return tools, "".join(c.text for c in result.content if c.type == "text")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = run([str(REPO / "scripts" / "package-wheel"), "--binary", str(filepuff_binary()), "--out-dir", str(out)])
    assert built.returncode == 0, built.stderr
    return Path(built.stdout.strip())


def test_wheel_is_a_valid_platform_wheel(wheel: Path) -> None:
    import base64
    import hashlib
    import zipfile

    version = run([str(filepuff_binary()), "--version"]).stdout.split()[1]
    assert wheel.name.startswith(f"filepuff-{version}-py3-none-manylinux_2_")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert f"filepuff-{version}.data/scripts/filepuff" in names
        record = archive.read(f"filepuff-{version}.dist-info/RECORD").decode().splitlines()
        listed = {line.split(",")[0] for line in record}
        assert listed == set(names)
        for line in record:
            name, digest, size = line.split(",")
            if digest:
                data = archive.read(name)
                expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                assert (digest, int(size)) == (f"sha256={expected}", len(data)), name


def test_wheel_installs_with_pip_and_serves_mcp(wheel: Path, tmp_path: Path) -> None:
    import asyncio
    import sys

    venv = tmp_path / "venv"
    created = run([sys.executable, "-m", "venv", str(venv)])
    assert created.returncode == 0, created.stderr
    # No index: the wheel has no dependencies, and pip checks its platform tag against this glibc.
    installed = run([str(venv / "bin" / "pip"), "install", "--no-index", "--disable-pip-version-check", str(wheel)])
    assert installed.returncode == 0, installed.stdout + installed.stderr
    filepuff = venv / "bin" / "filepuff"
    version = run([str(filepuff), "--version"])
    assert version.stdout == run([str(filepuff_binary()), "--version"]).stdout
    root = small_workspace(tmp_path)
    doctor = run([str(filepuff), "doctor"], cwd=root)
    assert doctor.returncode == 0 and "basedpyright" in doctor.stdout, doctor.stdout + doctor.stderr
    tools, found = asyncio.run(python_sdk_session(filepuff, root, tmp_path / "mcp.stderr"))
    assert {"ping", "file_search", "file_read"} <= tools
    assert "greet.py" in found and "puff-marker" in found, found
    uninstalled = run([str(venv / "bin" / "pip"), "uninstall", "-y", "filepuff"])
    assert uninstalled.returncode == 0 and not filepuff.exists()


def test_uvx_runs_the_wheel_as_an_mcp_config_would(wheel: Path, tmp_path: Path) -> None:
    """`{"command": "uvx", "args": ["filepuff", "mcp"]}`, with the wheel as the only index (no
    network: --offline, an empty uv cache, no Python downloads)."""
    import asyncio
    import os

    uvx = shutil.which("uvx") or str(REPO / ".venv" / "bin" / "uvx")
    if not os.access(uvx, os.X_OK):
        pytest.skip("uv is not installed (tests/e2e/requirements.txt)")
    env = {"UV_CACHE_DIR": str(tmp_path / "uv-cache"), "UV_TOOL_DIR": str(tmp_path / "uv-tools"),
           "UV_PYTHON_DOWNLOADS": "never", "UV_OFFLINE": "1", "UV_NO_INDEX": "1",
           "UV_FIND_LINKS": str(wheel.parent), "HOME": str(tmp_path)}
    version = run([uvx, "filepuff", "--version"], env={"PATH": os.environ["PATH"], **env})
    assert version.stdout == run([str(filepuff_binary()), "--version"]).stdout, version.stderr
    root = small_workspace(tmp_path)
    tools, found = asyncio.run(python_sdk_session(Path(uvx), root, tmp_path / "mcp.stderr", ["filepuff"],
                                                  {**env, "PATH": os.environ["PATH"]}))
    assert {"ping", "file_search", "file_read"} <= tools
    assert "greet.py" in found and "puff-marker" in found, found


def test_npm_packages_install_offline_and_serve_mcp_through_npx(tmp_path: Path) -> None:
    import json
    import os

    if shutil.which("npm") is None or shutil.which("npx") is None:
        pytest.skip("npm is not installed")
    node = REPO / "tests" / "mcp-clients" / "node_modules" / ".bin" / "node"
    if not node.exists():
        pytest.skip("not installed: tests/mcp-clients (scripts/setup-test-env runs npm ci there)")
    out = tmp_path / "packages"
    built = run([str(REPO / "scripts" / "package-npm"), "--binary", str(filepuff_binary()), "--out-dir", str(out)])
    assert built.returncode == 0, built.stderr
    platform_tarball, main_tarball = (Path(line) for line in built.stdout.split())
    assert platform_tarball.name.startswith("filepuff-linux-") and main_tarball.name.startswith("filepuff-0")

    # A fresh prefix and an empty npm cache: nothing but the two tarballs, no network.
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    (prefix / "package.json").write_text('{"private": true}\n')
    env = {**os.environ, "npm_config_cache": str(tmp_path / "npm-cache"), "npm_config_offline": "true",
           "npm_config_update_notifier": "false"}
    installed = run(["npm", "install", "--offline", "--no-audit", "--no-fund", str(main_tarball), str(platform_tarball)],
                    cwd=prefix, env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    version = run(["npx", "-y", "filepuff", "--version"], cwd=prefix, env=env)
    assert version.stdout == run([str(filepuff_binary()), "--version"]).stdout, version.stderr
    root = small_workspace(tmp_path)
    session = run([str(node), str(REPO / "tests" / "mcp-clients" / "stdio-session.mjs"), str(prefix), "puff-marker",
                   "npx", "-y", "filepuff", "mcp", "--root", str(root)], env=env)
    assert session.returncode == 0, session.stderr
    answer = json.loads(session.stdout)
    assert answer["server"]["name"] == "filepuff"
    assert {"ping", "file_search", "file_read"} <= set(answer["tools"])
    assert "greet.py" in answer["text"] and "puff-marker" in answer["text"], answer["text"]

    # Without the platform package the shim says what is missing instead of failing obscurely.
    shutil.rmtree(prefix / "node_modules" / "@filepuff")
    missing = run(["npx", "-y", "filepuff", "--version"], cwd=prefix, env=env)
    assert missing.returncode == 1 and "@filepuff/linux-" in missing.stderr, missing.stderr
