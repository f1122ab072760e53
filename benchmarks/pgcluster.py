"""A private PostgreSQL server for tests and benchmarks: `initdb` in a temporary directory,
a free loopback port, stopped and deleted at the end.

Needs the PostgreSQL server binaries (Debian: `apt-get install postgresql`, which puts them
in /usr/lib/postgresql/VERSION/bin; `make test` installs it when missing). As root, the
server runs as the `postgres` system user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PASSWORD_USER, PASSWORD = "ima_pw", "right-password"  # for the bad-password test


def server_bin(name: str) -> str | None:
    """A PostgreSQL server program: on PATH, else in Debian's versioned directory."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    return candidates[-1] if candidates else None


def free_port() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port != 2024:  # taken by something else on the project's machines
            return port


class Cluster:
    def __init__(self, base: Path, port: int, run_as: list[str]) -> None:
        self.base = base
        self.port = port
        self.run_as = run_as
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def database_url(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def new_database(self, prefix: str = "t") -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)


def _pg(run_as: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*run_as, *args], capture_output=True, text=True, timeout=120, check=False
    )


@contextmanager
def private_cluster() -> Iterator[Cluster]:
    """Start a throwaway server (about 2 s); RuntimeError if it cannot start."""
    initdb, pg_ctl = server_bin("initdb"), server_bin("pg_ctl")
    if not initdb or not pg_ctl:
        raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) not found")
    base = Path(tempfile.mkdtemp(prefix="ima-pg-"))
    run_as: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses root: run it as the postgres user
        user = pwd.getpwnam("postgres")
        os.chown(base, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    data, port = base / "data", free_port()
    try:
        made = _pg(run_as, initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "-N")
        if made.returncode:
            raise RuntimeError(f"initdb failed: {made.stderr.strip()[-500:]}")
        hba = data / "pg_hba.conf"  # one user that must give a password (the others: trust)
        hba.write_text(f"host all {PASSWORD_USER} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        options = (
            f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c max_connections=400 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        started = _pg(
            run_as, pg_ctl, "-D", str(data), "-o", options, "-l", str(base / "log"), "-w", "start"
        )
        if started.returncode:
            log = (base / "log").read_text() if (base / "log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {started.stderr.strip()} {log[-500:]}")
        cluster = Cluster(base, port, run_as)
        _add_password_user(cluster)
        yield cluster
    finally:
        if (data / "postmaster.pid").exists():
            _pg(run_as, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop")
        time.sleep(0.1)
        shutil.rmtree(base, ignore_errors=True)


def _add_password_user(cluster: Cluster) -> None:
    import psycopg

    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {PASSWORD_USER} LOGIN PASSWORD '{PASSWORD}'")
        conn.execute(f"CREATE DATABASE {PASSWORD_USER} OWNER {PASSWORD_USER}")
