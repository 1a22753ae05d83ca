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
"""
import json
import select
import socket
import sys
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


if __name__ == "__main__":
    socket_path, kind, *rest = sys.argv[1:]
    {"pipeline": pipeline, "park": park, "garbage": garbage, "flood": flood, "trickle": trickle,
     "numbers": numbers}[kind](socket_path, *rest)
