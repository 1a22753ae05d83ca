#!/usr/bin/env bash
# The systemd units, udev rules, pam-auth-update profile and man pages: checked with the system's tools where
# this machine has them (systemd-analyze verify, udevadm verify), and with parsers of ours everywhere.
. "$(dirname "$0")/lib.sh"

# systemd: the real verifier on a copy whose ExecStart names the built binary.
if command -v systemd-analyze >/dev/null; then
    mkdir -p "$WORK/units"
    sed "s#/usr/local/sbin/tokenpind#$TOKENPIND#" "$ROOT/systemd/tokenpind.service" > "$WORK/units/tokenpind.service"
    cp "$ROOT/systemd/tokenpind.socket" "$WORK/units/"
    expect_code "systemd-analyze verify" 0 systemd-analyze verify --man=no "$WORK/units/tokenpind.service" "$WORK/units/tokenpind.socket"
fi

# Ours: sections, Key=Value lines, known keys, and the hardening the issue asks for.
check "unit files parse (ours)" python3 - "$ROOT/systemd/tokenpind.service" "$ROOT/systemd/tokenpind.socket" <<'PY'
import re, sys
known = {
 "Unit": {"Description", "Documentation", "Requires", "After", "Wants", "Before"},
 "Service": {"Type", "ExecStart", "ExecReload", "KillSignal", "TimeoutStopSec", "Restart", "StateDirectory",
   "StateDirectoryMode", "RuntimeDirectory", "RuntimeDirectoryMode", "RuntimeDirectoryPreserve", "UMask", "LimitCORE",
   "NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "PrivateNetwork",
   "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock",
   "ProtectHostname", "RestrictAddressFamilies", "RestrictNamespaces", "RestrictRealtime", "RestrictSUIDSGID",
   "LockPersonality", "SystemCallArchitectures", "CapabilityBoundingSet", "ReadWritePaths"},
 "Socket": {"ListenStream", "SocketMode", "DirectoryMode", "RemoveOnStop"},
 "Install": {"WantedBy", "Also"},
}
for path in sys.argv[1:]:
    section, keys = None, {}
    for number, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"): continue
        m = re.fullmatch(r"\[(\w+)\]", line)
        if m:
            section = m.group(1); assert section in known, f"{path}:{number}: unknown section {section}"; continue
        m = re.fullmatch(r"([A-Za-z]+)=(.*)", line)
        assert m and section, f"{path}:{number}: not Key=Value in a section"
        assert m.group(1) in known[section], f"{path}:{number}: unknown key {m.group(1)}"
        keys[m.group(1)] = m.group(2)
    if path.endswith(".service"):
        for key, value in {"ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes", "NoNewPrivileges": "yes",
                           "StateDirectory": "tokenpin", "RuntimeDirectory": "tokenpin"}.items():
            assert keys.get(key) == value, f"{path}: {key} must be {value}"
        assert "pcscd.socket" in keys.get("After", ""), "After= must name pcscd.socket"
    else:
        assert keys.get("ListenStream") == "/run/tokenpin/socket"
PY

# udev: udevadm verify where it exists (systemd >= 254); our parser everywhere.
if udevadm verify --help >/dev/null 2>&1; then
    expect_code "udevadm verify" 0 udevadm verify "$ROOT/udev/70-tokenpin.rules"
fi
check "udev rules parse, each rule has a comment, ids are hex, GOTOs land (ours)" python3 - "$ROOT/udev/70-tokenpin.rules" <<'PY'
import re, sys
keys = {"ACTION", "SUBSYSTEM", "ENV", "ATTRS", "TAG", "GOTO", "LABEL"}
token = re.compile(r'([A-Z]+)(\{[A-Za-z_]+\})?(==|!=|\+=|=)"([^"]*)"')
labels, gotos, previous = set(), set(), ""
for number, line in enumerate(open(sys.argv[1]), 1):
    line = line.rstrip("\n")
    if not line.strip(): previous = ""; continue
    if line.startswith("#"): previous = line; continue
    parts = line.split(", ")
    for part in parts:
        m = token.fullmatch(part)
        assert m, f"line {number}: cannot parse `{part}`"
        key, attr, op, value = m.groups()
        assert key in keys, f"line {number}: unknown key {key}"
        if key == "LABEL": labels.add(value)
        if key == "GOTO": gotos.add(value)
        if key == "ATTRS" and attr in ("{idVendor}", "{idProduct}"):
            assert all(re.fullmatch(r"[0-9a-f]{4}", v) for v in value.split("|")), f"line {number}: bad id {value}"
    if any(p.startswith("TAG") for p in parts):
        assert previous.startswith("#"), f"line {number}: a rule without a comment"
    previous = ""
assert gotos <= labels, f"GOTO without LABEL: {gotos - labels}"
PY

# pam-auth-update profile: the fields pam-auth-update needs.
check "pam-auth-update profile has its fields" bash -c "for f in Name Default Priority Auth-Type Auth: Auth-Initial:; do grep -q \"^\$f\" '$ROOT/pam-configs/tokenpin' || exit 1; done"
# passwd changes the password only: the profile registers no password line (pam_tokenpin's `pin` option is the admin's).
check "pam-auth-update profile registers no password line" bash -c "! grep -qi '^Password' '$ROOT/pam-configs/tokenpin'"
check "profile never makes the module sufficient by default" bash -c "grep -q 'default=ignore' '$ROOT/pam-configs/tokenpin'"

# Man pages: scdoc builds each one into a page with a title header.
if command -v scdoc >/dev/null; then
    for page in tokenpin.1 tokenpin-bench.1 age-plugin-tokenpin.1 tokenpind.8 tokenpin.conf.5 pam_tokenpin.8; do
        check "man page $page builds" bash -c "scdoc < '$ROOT/docs/man/$page.scd' | grep -q '^\.TH'"
    done
fi
# make install pieces into a DESTDIR (the daemon binary needs a release build; `make install` does that).
if command -v scdoc >/dev/null; then
    DEST=$WORK/dest
    expect_code "make install-pam install-units install-udev install-man" 0 \
        make -s -C "$ROOT" install-pam install-units install-udev install-man DESTDIR="$DEST" PREFIX=/usr PAM_DIR=/usr/lib/security
    for file in usr/lib/security/pam_tokenpin.so usr/share/pam-configs/tokenpin usr/lib/systemd/system/tokenpind.service \
        usr/lib/systemd/system/tokenpind.socket usr/lib/udev/rules.d/70-tokenpin.rules usr/share/man/man8/tokenpind.8 \
        usr/share/man/man8/pam_tokenpin.8 usr/share/man/man1/tokenpin.1 usr/share/man/man1/age-plugin-tokenpin.1 usr/share/man/man5/tokenpin.conf.5; do
        check "installed $file" [ -f "$DEST/$file" ]
    done
    check "installed unit names the installed daemon" grep -q "^ExecStart=/usr/sbin/tokenpind$" "$DEST/usr/lib/systemd/system/tokenpind.service"
fi
finish
