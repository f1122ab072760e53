"""The `ima` program: Ctrl-C at any moment, start-up included, ends with one line and exit
code 130.

Loading the command line takes a second or two (LangGraph, LangChain, rich); a Ctrl-C in
those imports used to print a long KeyboardInterrupt traceback. This module imports nothing
heavy and, when imported (by the `ima` script or `python -m ima`), makes SIGINT exit at
once until the commands are loaded; from then on Ctrl-C is a KeyboardInterrupt again,
which each command turns into its own line (`ima resume THREAD` where a run exists).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys

INTERRUPTED = 130


def _interrupted_while_starting(signum: int, frame: object) -> None:
    os.write(2, b"interrupted while starting: nothing was done\n")
    os._exit(INTERRUPTED)


# A SIGINT the parent made us ignore (a background job of a script) stays ignored.
HANDLE_SIGINT = signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
if HANDLE_SIGINT:
    with contextlib.suppress(ValueError):  # imported outside the main thread: no Ctrl-C there
        signal.signal(signal.SIGINT, _interrupted_while_starting)


def main() -> None:
    """Load the commands, then run the one the arguments name."""
    from ima.cli.app import run_command

    try:
        if HANDLE_SIGINT:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        code = run_command()
    except KeyboardInterrupt:  # between the commands' own handlers: still one line
        sys.stderr.write("interrupted\n")
        code = INTERRUPTED
    # The command has ended and said what it had to say: a Ctrl-C while the interpreter
    # shuts down (threads, connection pools) ends it at once, with the command's own code.
    if HANDLE_SIGINT:
        signal.signal(signal.SIGINT, lambda signum, frame: os._exit(code))
    sys.stdout.flush()
    if code == INTERRUPTED:
        # A Ctrl-C that lands while a thread pool starts a worker (`Thread.start` waits for
        # it, longest on a loaded machine) leaves a worker nobody will stop, and the
        # interpreter would wait for it forever. The command has cleaned up and said its
        # line: run the exit handlers (they stop model servers and database pools) and end.
        sys.stderr.flush()
        atexit._run_exitfuncs()
        os._exit(code)
    sys.exit(code)
