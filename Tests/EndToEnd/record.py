"""Test-only reader and writer of tokenpin record files, in either format (docs/security.md, "The record file").

A record file is the legacy single JSON document, or two halves of equal size, each able to hold one copy:
"TPRC", layout version 1, three zero bytes, sequence (u64 LE), half size (u32 LE), JSON length (u32 LE), the JSON,
and a 32-byte BLAKE2b checksum (keyed with "tokenpin record copy v1") of everything before it. The current copy is
the intact one with the highest sequence number.

    python3 record.py json FILE             prints the record's JSON (exits 1 when no copy is intact)
    python3 record.py write FORMAT OUT      writes the JSON on stdin as a new record file (FORMAT json or copies)

or, from Python, load(path) -> dict and dump(obj, path, fmt).
"""

import hashlib
import json
import struct
import sys

MAGIC = b"TPRC"
HEADER = 24
CHECKSUM = 32
PAGE = 4096
KEY = b"tokenpin record copy v1"


def _checksum(data):
    return hashlib.blake2b(data, digest_size=CHECKSUM, key=KEY).digest()


def copies(data):
    """The intact copies of a two-copy file, as (sequence, json bytes)."""
    found = []
    if len(data) % 2 or len(data) < 2 * (HEADER + CHECKSUM):
        return found
    half = len(data) // 2
    for start in (0, half):
        part = data[start:start + half]
        if part[:4] != MAGIC or part[4] != 1 or part[5:8] != b"\0\0\0":
            continue
        sequence, declared, length = struct.unpack_from("<QII", part, 8)
        if declared != half or HEADER + length + CHECKSUM > half:
            continue
        end = HEADER + length
        if part[end:end + CHECKSUM] == _checksum(part[:end]):
            found.append((sequence, part[HEADER:end]))
    return found


def json_bytes(data):
    """The record's JSON in a record file's bytes (either format); None when no copy is intact."""
    if not data or data[:1] in (b"{", b" ", b"\t", b"\n", b"\r"):
        return data
    found = copies(data)
    return max(found)[1] if found else None


def load(path):
    with open(path, "rb") as file:
        data = json_bytes(file.read())
    if data is None:
        raise ValueError(path + ": no intact record copy")
    return json.loads(data)


def encode(json_data, fmt="copies", sequence=1):
    """A new record file holding json_data (bytes) in fmt: the copy in the first half, the second blank."""
    if fmt == "json":
        return json_data
    needed = 2 * (HEADER + len(json_data) + CHECKSUM)
    half = max(PAGE, (needed + PAGE - 1) // PAGE * PAGE)
    copy = MAGIC + bytes([1, 0, 0, 0]) + struct.pack("<QII", sequence, half, len(json_data)) + json_data
    copy += _checksum(copy)
    return copy + bytes(2 * half - len(copy))


def dump(obj, path, fmt="copies"):
    with open(path, "wb") as file:
        file.write(encode(json.dumps(obj).encode(), fmt))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "json":
        with open(sys.argv[2], "rb") as f:
            out = json_bytes(f.read())
        if out is None:
            sys.exit(sys.argv[2] + ": no intact record copy")
        sys.stdout.buffer.write(out)
    elif len(sys.argv) == 4 and sys.argv[1] == "write" and sys.argv[2] in ("json", "copies"):
        with open(sys.argv[3], "wb") as f:
            f.write(encode(sys.stdin.buffer.read(), sys.argv[2]))
    else:
        sys.exit(__doc__)
