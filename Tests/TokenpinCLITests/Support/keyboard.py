#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal and types into it, as a person at the keyboard would.

Usage: keyboard.py KEYS -- COMMAND [ARG...]
KEYS is a list of steps separated by '|': 'wait:TEXT' waits until TEXT appears on the terminal after what the
previous 'wait:' matched (so a prompt shown twice is waited for twice), any other step is
typed (escapes: \\x7f Backspace, \\x15 Ctrl-U, \\x03 Ctrl-C, \\x04 Ctrl-D, \\r Enter), 'kill:N' sends signal N
to the command, 'sleep:S' waits S seconds (reading what the command writes meanwhile). Prints everything the command wrote to the terminal, then the terminal's modes once it ended
('TERMIOS echo=1 icanon=1') and 'EXIT <status>' on lines of their own.
"""
import os
import pty
import select
import signal
import sys
import termios
import time


def main():
    split = sys.argv.index("--")
    steps = sys.argv[1].split("|") if split > 1 else []
    command = sys.argv[split + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        # A test runner may start us with signals blocked; a person's shell does not.
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.execvp(command[0], command)
    seen = b""
    matched = 0  # where the text the last 'wait:' found ends
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
            while seen.find(text, matched) < 0 and time.time() < deadline:
                if not pump(0.1):
                    break
            found = seen.find(text, matched)
            if found >= 0:
                matched = found + len(text)
        elif step.startswith("sleep:"):
            until = time.time() + float(step[6:])
            while time.time() < until and pump(0.05):
                pass
        elif step.startswith("kill:"):
            time.sleep(0.05)
            os.kill(pid, int(step[5:]))
        else:
            time.sleep(0.05)
            os.write(fd, step.encode().decode("unicode_escape").encode("latin-1"))
    while time.time() < deadline and pump(0.2):
        pass
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    sys.stdout.write(seen.decode("utf-8", "replace"))
    try:
        lflag = termios.tcgetattr(fd)[3]
        sys.stdout.write("\nTERMIOS echo=%d icanon=%d" % (bool(lflag & termios.ECHO), bool(lflag & termios.ICANON)))
    except termios.error:
        sys.stdout.write("\nTERMIOS unknown")
    sys.stdout.write("\nEXIT %d\n" % (os.waitstatus_to_exitcode(status)))


main()
