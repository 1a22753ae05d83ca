#!/usr/bin/env python3
"""The hostile local user of Tests/EndToEnd/adversary.sh: speaks tokenpind's protocol badly on purpose.

Each subcommand is one attack; it prints one JSON line saying what it saw and exits 0 unless the attack
itself could not be carried out. Run it as an unprivileged user (runuser) against a private socket.

  attack.py SOCKET pipeline PINGS USER PIN HOLD   pipeline PINGS pings, a verify and its PIN; never read; hold HOLD s
  attack.py SOCKET park OP USER HOLD              start OP (verify-token: verify with the card), say "parked"
                                                  at its first prompt and sit there for HOLD s (or until the
                                                  daemon closes the connection)
  attack.py SOCKET garbage KIND                   send one kind of garbage and report the answer
  attack.py SOCKET flood COUNT HOLD               open COUNT connections and hold them HOLD s
  attack.py SOCKET trickle SECONDS                send a request one byte a second
  attack.py SOCKET numbers                        requests whose numbers are out of every range
  attack.py SOCKET su TARGET ANSWER...            real `su TARGET` on a pseudo-terminal (a root peer acting for
                                                  the invoking user), answering each prompt with the next ANSWER
  attack.py SOCKET su-park TARGET COUNT HOLD      COUNT `su TARGET` on pseudo-terminals, each left at its first
                                                  prompt; says "parked" once they are there, holds HOLD s
  attack.py SOCKET guess SECONDS THREADS          wrong login passwords through `enrol` for SECONDS from THREADS
                                                  connections at once: how many reached PAM, how many were delayed
"""
import json
import os
import pty
import select
import signal
import socket
import sys
import threading
import time


def connect(path, timeout=10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def line(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def read_line(s):
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = s.recv(1)
        except (socket.timeout, OSError):
            return None
        if not chunk:
            return data.decode(errors="replace") or None
        data += chunk
    return data.decode(errors="replace").strip()


def answer(s):
    """The first error or result line, or what ended the connection."""
    while True:
        text = read_line(s)
        if text is None:
            return {"closed": True}
        try:
            message = json.loads(text)
        except ValueError:
            return {"unparsable": text[:200]}
        if message.get("type") in ("error", "result"):
            return message


def pipeline(path, pings, user, pin, hold):
    s = connect(path)
    s.setblocking(False)
    payload = b"".join(line({"v": 1, "type": "request", "op": "ping"}) for _ in range(int(pings)))
    payload += line({"v": 1, "type": "request", "op": "verify", "user": user, "method": "pin"})
    payload += line({"v": 1, "type": "secret", "prompt": "pin", "value": pin})
    sent, end = 0, time.time() + float(hold)
    while time.time() < end:
        if sent < len(payload):
            try:
                sent += s.send(payload[sent:])
            except BlockingIOError:
                pass
            except OSError:
                break
        time.sleep(0.01)
    print(json.dumps({"attack": "pipeline", "pings": int(pings), "sent": sent, "of": len(payload)}))


def park(path, op, user, hold):
    s = connect(path)
    request = {"v": 1, "type": "request", "op": op, "user": user}
    if op == "verify":
        request["method"] = "pin"
    elif op == "verify-token":
        request.update(op="verify", method="token")
    s.sendall(line(request))
    first = read_line(s)
    # Said at once, so the script acts while the operation is parked, not after a guessed pause.
    print(json.dumps({"parked": op, "first": json.loads(first) if first else None}), flush=True)
    # Sits for HOLD s, or until the daemon closes the connection (it is ending).
    end = time.time() + float(hold)
    while time.time() < end:
        ready, _, _ = select.select([s], [], [], end - time.time())
        if ready:
            try:
                if not s.recv(4096):
                    break
            except OSError:
                break
    print(json.dumps({"attack": "park", "op": op, "first": json.loads(first) if first else None}))


GARBAGE = {
    "binary": bytes(range(256)) * 4 + b"\n",
    "invalid-utf8-secret": b'{"v":1,"type":"request","op":"verify","method":"pin"}\n{"v":1,"type":"secret","prompt":"pin","value":"\xff"}\n',
    "nul": b'{"v":1,"type":"request","op":"ping"}\x00\n',
    "huge-line": b"{" + b" " * (2 << 20) + b"}\n",
    "deep-nesting": b"[" * 100000 + b"]" * 100000 + b"\n",
    "half-line": b'{"v":1,"type":"requ',
    "secret-first": b'{"v":1,"type":"secret","prompt":"pin","value":"482916"}\n',
    "unknown-op": b'{"v":1,"type":"request","op":"format-disk"}\n',
    "dup-keys": b'{"v":1,"v":2,"type":"request","op":"ping"}\n',
}


def garbage(path, kind):
    s = connect(path)
    try:
        s.sendall(GARBAGE[kind])
        if kind == "half-line":
            s.shutdown(socket.SHUT_WR)
    except OSError as error:
        print(json.dumps({"attack": "garbage", "kind": kind, "send": str(error)}))
        return
    print(json.dumps({"attack": "garbage", "kind": kind, "answer": answer(s)}))


def numbers(path):
    results = []
    for extra in ({"newPINAttempts": 9223372036854775807}, {"newPINAttempts": -9223372036854775808},
                  {"newPINAttempts": 1e308}, {"v": 18446744073709551617}, {"on": 1}, {"v": -1},
                  {"newPINAttempts": 0.5}, {"newPINAttempts": "5"}):
        request = {"v": 1, "type": "request", "op": "enrol"}
        request.update(extra)
        s = connect(path)
        s.sendall((json.dumps(request) + "\n").encode())
        results.append(answer(s).get("code"))
        s.close()
    print(json.dumps({"attack": "numbers", "codes": results}))


def flood(path, count, hold):
    held = []
    refused = 0
    for _ in range(int(count)):
        try:
            held.append(connect(path, timeout=2))
        except OSError:
            refused += 1
    time.sleep(float(hold))
    print(json.dumps({"attack": "flood", "held": len(held), "refused": refused}))


def trickle(path, seconds):
    s = connect(path)
    data = line({"v": 1, "type": "request", "op": "ping"})
    end = time.time() + float(seconds)
    index = 0
    try:
        while time.time() < end and index < len(data):
            s.send(data[index:index + 1])
            index += 1
            time.sleep(1)
    except OSError:
        pass
    print(json.dumps({"attack": "trickle", "sentBytes": index, "answer": answer(s)}))


class Su:
    """One `su TARGET -c true` on a pseudo-terminal of its own, as a person at a terminal runs it."""

    def __init__(self, target):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvp("su", ["su", target, "-c", "true"])
        self.output = b""
        self.prompts = []

    def read(self, timeout):
        """Reads what su writes for up to `timeout` s; False once it ended."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:
            return False
        self.output += chunk
        return bool(chunk)

    def at_prompt(self):
        """Whether su waits for an answer: its last line ends in ": " (PIN: , Card PIN ... left): , Password: ) and
        is not one of su's own messages (`su: ` and the rest of it come in pieces), and nothing more came for 0.2 s."""
        last = self.output.replace(b"\r", b"").split(b"\n")[-1]
        if not last.endswith(b": ") or last.startswith(b"su:"):
            return False
        ready, _, _ = select.select([self.fd], [], [], 0.2)
        return not ready

    def wait_prompt(self, timeout):
        """Waits until su asks something (True) or ends (False)."""
        end = time.time() + timeout
        while time.time() < end:
            if self.at_prompt():
                return True
            if not self.read(min(0.2, max(0.01, end - time.time()))):
                return False
        return self.at_prompt()

    def answer(self, text):
        self.prompts.append(self.output.replace(b"\r", b"").split(b"\n")[-1].decode(errors="replace").strip())
        self.output += b"\n"
        os.write(self.fd, text.encode() + b"\n")

    def finish(self, timeout=15):
        """Reads until su ends (killing it after `timeout` s); its exit code."""
        end = time.time() + timeout
        while time.time() < end and self.read(0.2):
            pass
        if time.time() >= end:
            os.kill(self.pid, signal.SIGKILL)
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError, PermissionError):
            pass  # su is setuid root: a user may not signal it; closing the terminal below hangs it up instead
        try:
            os.close(self.fd)
        except OSError:
            pass


def su(path, target, *answers):
    start = time.time()
    run = Su(target)
    pending = list(answers)
    first_prompt = None
    while run.wait_prompt(60) and pending:
        first_prompt = first_prompt or time.time() - start
        run.answer(pending.pop(0))
    if run.at_prompt():  # more prompts than answers: give up at this one (ctrl-D counts nothing)
        first_prompt = first_prompt or time.time() - start
        run.prompts.append(run.output.replace(b"\r", b"").split(b"\n")[-1].decode(errors="replace").strip())
        os.write(run.fd, b"\x04")
    code = run.finish()
    text = run.output.replace(b"\r", b"").decode(errors="replace")
    print(json.dumps({"attack": "su", "target": target, "prompts": run.prompts, "exit": code,
                      "firstPromptAfter": round(first_prompt, 2) if first_prompt else None, "output": text[-2000:]}))


def su_park(path, target, count, hold):
    """Starts COUNT su at once; says how many sit at a prompt as soon as one does (or after 20 s), then holds."""
    runs = []

    def stop(signum, frame):  # the suite ends a park with SIGTERM: every su goes with it
        for run in runs:
            run.kill()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    runs.extend(Su(target) for _ in range(int(count)))
    end = time.time() + 20
    while time.time() < end and not any(run.at_prompt() for run in runs):
        ready, _, _ = select.select([run.fd for run in runs], [], [], 0.2)
        for run in runs:
            if run.fd in ready:
                run.read(0)
    parked = sum(1 for run in runs if run.at_prompt())
    print(json.dumps({"parked": parked, "of": int(count)}), flush=True)
    end = time.time() + float(hold)
    while time.time() < end:  # keep reading, so no terminal's buffer fills
        ready, _, _ = select.select([run.fd for run in runs], [], [], 0.5)
        for run in runs:
            if run.fd in ready:
                run.read(0)
    parked = sum(1 for run in runs if run.at_prompt())
    for run in runs:
        run.kill()
    print(json.dumps({"attack": "su-park", "parked": parked, "of": int(count)}))


def guess(path, seconds, threads):
    """Each thread asks to enrol and answers the password prompt wrongly, again and again, for `seconds`."""
    counts = {"rejected": 0, "delayed": 0, "other": 0}
    retry_after = []
    lock = threading.Lock()
    end = time.time() + float(seconds)

    def run(index):
        while time.time() < end:
            try:
                s = connect(path, timeout=70)
                s.sendall(line({"v": 1, "type": "request", "op": "enrol"}))
                first = json.loads(read_line(s) or "{}")
                if first.get("type") == "prompt" and first.get("prompt") == "password":
                    s.sendall(line({"v": 1, "type": "secret", "prompt": "password", "value": "wrong-%d" % index}))
                    first = answer(s)
                s.close()
            except (OSError, ValueError):
                first = {}
            with lock:
                if first.get("code") == "password-rejected":
                    counts["rejected"] += 1
                elif first.get("code") == "delayed":
                    counts["delayed"] += 1
                    retry_after.append(first.get("retryAfter"))
                else:
                    counts["other"] += 1
                    counts.setdefault("codes", []).append(first.get("code"))
            if first.get("code") != "password-rejected":  # delayed, or a connection refused: do not spin
                time.sleep(0.05)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(int(threads))]
    start = time.time()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    took = time.time() - start
    print(json.dumps({"attack": "guess", "seconds": round(took, 2), "perSecond": round(counts["rejected"] / took, 2),
                      "retryAfter": sorted(set(r for r in retry_after if r is not None)), **counts}))


if __name__ == "__main__":
    socket_path, kind, *rest = sys.argv[1:]
    {"pipeline": pipeline, "park": park, "garbage": garbage, "flood": flood, "trickle": trickle,
     "numbers": numbers, "su": su, "su-park": su_park, "guess": guess}[kind](socket_path, *rest)
