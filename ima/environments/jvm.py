"""One Java virtual machine per process for the Java-based games, started on first use,
shared by every game object and stopped at exit.

TextWorldExpress runs on the JVM through py4j. Its own `TextWorldExpressEnv` starts a JVM
per environment object; here one JVM (per jar) serves every game of the process: each game
is a separate Java object on the same gateway. The JVM is started with py4j's `die_on_exit`,
so it also ends when this process dies without running `atexit` (its stdin closes). A forked
child never uses its parent's JVM: it starts its own.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass

from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

from ima.core.errors import UserError


@dataclass
class _Jvm:
    gateway: JavaGateway
    process: subprocess.Popen[bytes]
    owner: int  # the pid of the process that started it
    start_seconds: float


_lock = threading.Lock()
_jvms: dict[str, _Jvm] = {}
_at_exit: list[bool] = []  # whether `shutdown` is registered with atexit


def gateway(classpath: str, cwd: str | None = None) -> JavaGateway:
    """The gateway of this process's JVM running `classpath`, started on first use in the
    folder `cwd` (where the jar reads its data files)."""
    with _lock:
        jvm = _jvms.get(classpath)
        if jvm is None or jvm.owner != os.getpid() or jvm.process.poll() is not None:
            if jvm is not None and jvm.owner == os.getpid():
                _stop(jvm)  # it died: clean up before starting another
            jvm = _jvms[classpath] = _start(classpath, cwd)
        return jvm.gateway


def _start(classpath: str, cwd: str | None) -> _Jvm:
    if shutil.which("java") is None:
        raise UserError(
            "the Java games need a Java runtime and `java` is not on PATH: install one "
            "(Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless)"
        )
    started = time.perf_counter()
    port, process = launch_gateway(classpath=classpath, cwd=cwd, die_on_exit=True, return_proc=True)
    bridge = JavaGateway(
        gateway_parameters=GatewayParameters(port=port, auto_field=True), java_process=process
    )
    if not _at_exit:
        atexit.register(shutdown)
        _at_exit.append(True)
    return _Jvm(bridge, process, os.getpid(), time.perf_counter() - started)


def _stop(jvm: _Jvm) -> None:
    process = jvm.process
    with contextlib.suppress(Exception):  # a dead gateway has nothing left to close
        jvm.gateway.shutdown()
    # die_on_exit: the JVM ends on a line (or the end) of its standard input.
    try:
        if process.poll() is None and process.stdin is not None:
            process.stdin.write(b"\n")
            process.stdin.close()
    except OSError:
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def shutdown() -> None:
    """Stop this process's JVMs (registered with `atexit`; call it to stop them sooner).
    Games started before can no longer be played; the next game started starts a new JVM."""
    with _lock:
        mine = [jvm for jvm in _jvms.values() if jvm.owner == os.getpid()]
        _jvms.clear()
    for jvm in mine:
        _stop(jvm)


def running() -> dict[str, int]:
    """The pid of each running JVM this process started, by classpath."""
    with _lock:
        return {
            path: jvm.process.pid
            for path, jvm in _jvms.items()
            if jvm.owner == os.getpid() and jvm.process.poll() is None
        }


def start_seconds(classpath: str) -> float | None:
    """How long starting this process's JVM for `classpath` took (None: not started)."""
    with _lock:
        jvm = _jvms.get(classpath)
        return jvm.start_seconds if jvm is not None else None
