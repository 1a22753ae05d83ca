#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal and types into it, as a person at the keyboard would.

Usage: keyboard.py KEYS -- COMMAND [ARG...]
KEYS is a list of steps separated by '|': 'wait:TEXT' waits until TEXT appeared on the terminal, any other step is
typed (escapes: \\x7f Backspace, \\x15 Ctrl-U, \\x03 Ctrl-C, \\x04 Ctrl-D, \\r Enter). Prints everything the
command wrote to the terminal, then 'EXIT <status>' on a line of its own.
"""
import os
import pty
import select
import sys
import time


def main():
    split = sys.argv.index("--")
    steps = sys.argv[1].split("|") if split > 1 else []
    command = sys.argv[split + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    seen = b""
    deadline = time.time() + 30

    def pump(timeout):
        nonlocal seen
        ready, _, _ = select.select([fd], [], [], timeout)
        if ready:
            try:
                data = os.read(fd, 4096)
            except OSError:
                return False
            if not data:
                return False
            seen += data
        return True

    for step in steps:
        if step.startswith("wait:"):
            text = step[5:].encode()
            while text not in seen and time.time() < deadline:
                if not pump(0.1):
                    break
        else:
            time.sleep(0.05)
            os.write(fd, step.encode().decode("unicode_escape").encode("latin-1"))
    while time.time() < deadline and pump(0.2):
        pass
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(seen.decode("utf-8", "replace"))
    sys.stdout.write("\nEXIT %d\n" % (os.waitstatus_to_exitcode(status)))


main()
