"""Real corpora the benchmarks share: where they are on this machine and how to copy them."""

import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / ".tools" / "bin"

# gopls resolves x/tools' dependencies from the module cache only (no network), with the local Go.
GO_ENV = {"GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local"}


def gopls_tools_module() -> Path | None:
    """golang.org/x/tools at the version the installed gopls was built from, in the module cache
    (a real Go module of 300+ packages whose dependencies are all in the cache), or None."""
    gopls = shutil.which("gopls", path=f"{TOOLS}{os.pathsep}{os.environ.get('PATH', '')}")
    if not gopls:
        return None
    info = subprocess.run(["go", "version", "-m", gopls], capture_output=True, text=True).stdout
    version = re.search(r"^\s*dep\s+golang\.org/x/tools\s+(\S+)", info, re.M)
    cache = subprocess.check_output(["go", "env", "GOMODCACHE"], text=True).strip()
    path = Path(cache) / f"golang.org/x/tools@{version.group(1)}" if version else None
    return path if path and path.is_dir() else None


def writable_copy(source: Path, target: Path) -> Path:
    """`source` copied to `target` without `testdata` directories, every entry made writable (the
    module cache is read-only, and the copy must be removable)."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("testdata"))
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    return target


def go_mod_download(root: Path) -> None:
    """Fetches the module at `root`'s dependencies into the module cache (from the Go module
    proxy, once; later runs find them cached), so gopls can then load it with [`GO_ENV`]."""
    subprocess.run(["go", "mod", "download"], cwd=root, check=True, env={**os.environ, "GOTOOLCHAIN": "local"})


def go_packages(root: Path) -> int:
    """Directories holding .go files under `root` (outside testdata)."""
    return len({p.parent for p in root.rglob("*.go") if "testdata" not in p.parts})
