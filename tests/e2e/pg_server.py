"""A throwaway PostgreSQL server for the graph tests: `initdb` + `pg_ctl start` on a free
loopback port, data directory under the test's temp dir (see below for root), password (SCRAM) authentication on
127.0.0.1 only, stopped at the end.

As root, the server runs as the `postgres` user (initdb refuses root): its directory is then one
of its own under the system temp dir (removed at exit), chowned to that user, not the test's
temp dir: every pytest session that starts makes `/tmp/pytest-of-root` 0700 again, which locked
the `postgres` user out of a running test's data directory whenever two pytest runs overlapped.

Debian's `postgresql` package (scripts/setup-test-env installs it) puts the programs under
/usr/lib/postgresql/VERSION/bin, which is not on PATH.
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def bin_dir() -> Path | None:
    """The directory holding initdb and pg_ctl, or None when PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found and (Path(found).resolve().parent / "pg_ctl").exists():
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PgServer:
    """With `tls=True` the server accepts only TLS connections (`hostssl` in pg_hba.conf) with a
    certificate for 127.0.0.1 issued by a throwaway CA (`ca_cert`, for `sslrootcert`)."""

    def __init__(self, base: Path, tls: bool = False):
        self.tls = tls
        self.bin = bin_dir()
        if self.bin is None:
            raise FileNotFoundError("PostgreSQL is not installed (initdb not found; scripts/setup-test-env)")
        self.as_root = os.geteuid() == 0
        if self.as_root:
            base = Path(tempfile.mkdtemp(prefix="filepuff-pg-"))
            atexit.register(shutil.rmtree, base, ignore_errors=True)
        self.ca_cert = base / "tls" / "ca.crt"
        self.base = base
        self.data = base / "data"
        self.port = _free_port()
        self.password = "pw-" + secrets.token_hex(12)
        self.user = "postgres"
        self._databases = 0

    def _run(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)

    def start(self) -> PgServer:
        self.base.mkdir(parents=True, exist_ok=True)
        pwfile = self.base / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.as_root:
            account = pwd.getpwnam("postgres")
            # The postgres user must reach its directory: search bit on every parent.
            for parent in [self.base, *self.base.parents]:
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    os.chmod(parent, mode | 0o001)
            os.chown(self.base, account.pw_uid, account.pw_gid)
            os.chown(pwfile, account.pw_uid, account.pw_gid)
        done = self._run("initdb", "-D", str(self.data), "-U", self.user, "--pwfile", str(pwfile),
                         "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C.UTF-8")
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr}")
        return self._launch()

    def resume(self) -> PgServer:
        """Starts the server again after `stop()` (same data, port and password)."""
        return self._launch()

    def _launch(self) -> PgServer:
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data} -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        if self.tls:
            cert, key = self.base / "tls" / "server.crt", self.base / "tls" / "server.key"
            if not cert.exists():
                cert, key = self._make_certificates()
            options += f" -c ssl=on -c ssl_cert_file={cert} -c ssl_key_file={key}"
            (self.data / "pg_hba.conf").write_text(
                "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n")
        done = self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.base / "server.log"),
                         "-w", "-t", "60", "start")
        if done.returncode != 0:
            log = (self.base / "server.log").read_text() if (self.base / "server.log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stderr}\n{log}")
        return self

    def _make_certificates(self) -> tuple[Path, Path]:
        """A CA and a server certificate for 127.0.0.1 signed by it (openssl CLI)."""
        tls = self.base / "tls"
        tls.mkdir(exist_ok=True)

        def openssl(*args: str) -> None:
            done = subprocess.run(["openssl", *args], capture_output=True, text=True, cwd=tls, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"openssl {args[0]} failed: {done.stderr}")

        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                "-subj", "/CN=filepuff test CA")
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
                "-subj", "/CN=127.0.0.1")
        (tls / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                                     "extendedKeyUsage=serverAuth\n")
        openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "server.crt", "-days", "2", "-extfile", "ext.cnf")
        os.chmod(tls / "server.key", 0o600)
        if self.as_root:
            account = pwd.getpwnam("postgres")
            for name in ("server.key", "server.crt"):
                os.chown(tls / name, account.pw_uid, account.pw_gid)
        return tls / "server.crt", tls / "server.key"

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgres://{self.user}:{self.password}@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Runs `sql` over TCP with the password; rows as tab-separated lines."""
        env = {**os.environ, "PGPASSWORD": self.password, "PGSSLMODE": "require" if self.tls else "prefer"}
        done = subprocess.run([str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
                               "-d", database, "-v", "ON_ERROR_STOP=1", "-At", "-F", "\t", "-c", sql],
                              capture_output=True, text=True, timeout=120, env=env, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr}")
        return done.stdout

    def new_database(self, prefix: str = "graph") -> str:
        """A fresh, empty database; returns its URL."""
        self._databases += 1
        name = f"{prefix}_{os.getpid()}_{self._databases}"
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)
