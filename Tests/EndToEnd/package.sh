#!/usr/bin/env bash
# The Debian package (make deb) and make install DESTDIR=..., each installed into a throwaway root: a private
# mount namespace with overlays over /usr, /etc and /var that vanish at exit, and a tmpfs over the Swift
# toolchain. There the installed binaries run (--version, demo), the installed tokenpind enrols and verifies
# on a private socket, pamtester loads the installed module by name, and dpkg -r / dpkg -P leave only what
# Debian policy keeps. Needs root (the namespace, dpkg, users); make test installs DEB_PACKAGES first.
. "$(dirname "$0")/lib.sh"

VERSION=$(sed -n 's/^public let tokenpinVersion = "\(.*\)"$/\1/p' "$ROOT/Sources/Core/Version.swift")
ARCH=$(dpkg --print-architecture)
DEB=$ROOT/.build/deb/tokenpin_${VERSION}_${ARCH}.deb
SWIFT_DIR=${TOKENPIN_SWIFT_DIR:-$(cd "$(dirname "$(readlink -f "$(command -v swift || echo /opt/swift/usr/bin/swift)")")/../.." && pwd)}
PIN=482916

# ---------------------------------------------------------------------------------------------------------
# Inside the throwaway root (this script again, under unshare): run MODE's checks, print their results.
if [ "${1:-}" = --inside ]; then
    MODE=$2 OUTER=$3
    [ "$(id -u)" = 0 ] && [ -d "$OUTER" ] || { echo "not ok - throwaway root: bad arguments"; exit 1; }
    mount -t tmpfs tmpfs "$OUTER/overlay" || exit 1
    for dir in usr etc var; do
        mkdir -p "$OUTER/overlay/$dir/upper" "$OUTER/overlay/$dir/work"
        mount -t overlay overlay -o "lowerdir=/$dir,upperdir=$OUTER/overlay/$dir/upper,workdir=$OUTER/overlay/$dir/work" "/$dir" \
            || { echo "not ok - overlay over /$dir"; exit 1; }
    done
    mount -t tmpfs tmpfs "$SWIFT_DIR" || exit 1
    export HOME=$WORK/home PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    mkdir -p "$HOME"
    check "the Swift toolchain is hidden ($SWIFT_DIR)" bash -c "! command -v swift && [ ! -e '$SWIFT_DIR/usr/lib/swift' ]"

    # Set up what the checks need before the snapshot, so that only the install's traces differ after purge.
    new_user ALICE && new_user NOREC || { echo "not ok - cannot create a user"; exit 1; }
    pam_service SERVICE "auth required pam_tokenpin.so socket=$SOCKET timeout=10" "account required pam_permit.so"
    snapshot() { (cd "$OUTER/overlay" && find usr/upper etc/upper var/upper \( -type f -o -type l -o -type c \) -printf '%p %s %T@\n' | sort); }
    snapshot > "$WORK/before"
    mkdir "$WORK/pam.d" && cp -a /etc/pam.d/common-* "$WORK/pam.d/"

    # runtime_checks PREFIX: the installed binaries, man pages, daemon and PAM module.
    runtime_checks() {
        local prefix=$1 sbin=$1/sbin bin=$1/bin
        check "tokenpin --version: tokenpin $VERSION" [ "$("$bin/tokenpin" --version 2>&1)" = "tokenpin $VERSION" ]
        check "tokenpin-askpass --version: tokenpin-askpass $VERSION" \
            [ "$("$bin/tokenpin-askpass" --version 2>&1)" = "tokenpin-askpass $VERSION" ]
        check "age-plugin-tokenpin --version: age-plugin-tokenpin $VERSION" \
            [ "$("$bin/age-plugin-tokenpin" --version 2>&1)" = "age-plugin-tokenpin $VERSION" ]
        check "tokenpind --version: tokenpind $VERSION" bash -c "'$sbin/tokenpind' --version 2>&1 | grep -qx 'tokenpind $VERSION (protocol 3)'"
        check "binaries need no Swift library and find every library" \
            bash -c "! ldd '$bin/tokenpin' '$bin/tokenpin-bench' '$bin/tokenpin-askpass' '$bin/age-plugin-tokenpin' '$sbin/tokenpind' '$prefix/libexec/tokenpin/tokenpin-pkcs11' | grep -Ei 'swift|Foundation|dispatch|not found'"
        check "binaries are stripped" bash -c "! readelf -S '$bin/tokenpin' '$bin/tokenpin-bench' '$bin/tokenpin-askpass' '$bin/age-plugin-tokenpin' '$sbin/tokenpind' '$prefix/libexec/tokenpin/tokenpin-pkcs11' | grep -Eq '\.symtab|\.debug_info'"
        # demo runs in tokenpin-bench, installed beside tokenpin (which runs it in its place).
        expect_code "tokenpin demo" 0 "$bin/tokenpin" demo
        # Every tokenpin path a man page names under PREFIX or /etc is there (and no placeholder is left).
        local pages missing=
        pages=$(find "$prefix/share/man" -name 'tokenpin*' -o -name 'pam_tokenpin*' | sort)
        check "six man pages" [ "$(echo "$pages" | wc -l)" = 6 ]
        for path in $(for p in $pages; do zcat -f "$p"; done | sed 's/\\&//g' | grep -o '\\fI/[^\\]*\\fR' | sed 's/^\\fI//; s/\\fR$//' | sort -u); do
            case "$path" in *'*'* | *USER* | */run/* | /var/*) continue ;; esac
            case "$path" in "$prefix"/* | /etc/tokenpin* | /etc/pam.d/tokenpin*) [ -e "${path%/}" ] || missing="$missing $path" ;; esac
        done
        check "man pages name installed paths (missing:${missing:- none})" [ -z "$missing" ]
        check "no @PREFIX@ left in the man pages" bash -c "! zcat -f $(echo $pages) | grep -q @PREFIX@"
        check "tokenpind(8) names $prefix/share/doc/tokenpin/protocol.md" \
            bash -c "zcat -f '$prefix/share/man/man8/tokenpind.8'* | sed 's/\\\\&//g' | grep -q '$prefix/share/doc/tokenpin/protocol.md'"
        check "/etc/pam.d/tokenpin-enrol is the daemon's password-only service" cmp -s /etc/pam.d/tokenpin-enrol "$ROOT/pam/tokenpin-enrol"

        # The installed daemon on a private socket, the installed CLI as its client, the installed module.
        "$sbin/tokenpind" --socket "$SOCKET" --state-dir "$STATE" --config "$CONFIG" --no-readers --journal-socket none \
            >>"$WORK/daemon.log" 2>&1 &
        DAEMON_PID=$!
        for _ in $(seq 100); do [ -S "$SOCKET" ] && break; sleep 0.05; done
        check "installed tokenpind listens on its private socket" [ -S "$SOCKET" ]
        tp() { "$bin/tokenpin" --socket "$SOCKET" --user "$ALICE" "$@"; }
        expect_code "enrol through the installed daemon" 0 tp enrol --pin-stdin < <(printf '%s\n%s\n' $PIN $PIN)
        expect_code "verify through the installed daemon" 0 tp verify --pin-stdin <<<$PIN
        expect_code "a wrong PIN through the installed daemon: 1" 1 tp verify --pin-stdin <<<000000
        expect_code "pamtester, module by name: the PIN authenticates" 0 pamtester "$SERVICE" "$ALICE" authenticate <<<$PIN
        expect_code "pamtester, module by name: a wrong PIN fails" 1 pamtester "$SERVICE" "$ALICE" authenticate <<<000000
        stop_daemon
        rm -rf "$STATE" "$SOCKET"
    }

    # leftovers: files the install left in the overlays, beyond the package manager's and PAM's own records.
    leftovers() {
        snapshot > "$WORK/after"
        comm -13 "$WORK/before" "$WORK/after" | cut -d' ' -f1 | sed 's#^\([a-z]*\)/upper/#/\1/#' | while read -r path; do
            case "$path" in
                /var/lib/dpkg/* | /var/log/* | /var/cache/debconf/* | /var/lib/pam/* | /var/cache/man/* | /etc/ld.so.cache) ;;
                /etc/pam.d/common-*) cmp -s "$WORK/pam.d/${path##*/}" "$path" || echo "$path" ;;  # rewritten, same text
                *) echo "$path" ;;
            esac
        done
    }

    case "$MODE" in
    deb)
        expect_code "dpkg -i with the toolchain hidden" 0 dpkg -i "$DEB"
        cp "$WORK/out" "$WORK/dpkg-i.log"
        check "installed" [ "$(dpkg-query -W -f='${Status}' tokenpin)" = "install ok installed" ]
        check "no systemd here: the maintainer scripts skip start quietly" bash -c "! grep -qi 'systemctl\|failed' '$WORK/dpkg-i.log'"
        check "/var/lib/tokenpin exists, 0700 root" [ "$(stat -c '%a %U' /var/lib/tokenpin 2>/dev/null)" = "700 root" ]
        check "the socket is enabled for when systemd runs" [ -L /etc/systemd/system/sockets.target.wants/tokenpind.socket ]
        check "the PAM profile is registered (pam-auth-update --package)" grep -qx tokenpin /var/lib/pam/seen
        check "... and off by default (Default: no)" bash -c "! grep -q pam_tokenpin /etc/pam.d/common-auth /etc/pam.d/common-password"
        check "both conffiles are registered" bash -c "dpkg-query -W -f='\${Conffiles}' tokenpin | grep -q ' /etc/tokenpin/tokenpin.conf ' \
            && dpkg-query -W -f='\${Conffiles}' tokenpin | grep -q ' /etc/pam.d/tokenpin-enrol '"
        check "the module is where PAM looks" [ -f "/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/security/pam_tokenpin.so" ]
        runtime_checks /usr
        expect_code "pam-auth-update --enable tokenpin works on the registered profile" 0 pam-auth-update --package --enable tokenpin
        check "... and puts pam_tokenpin in common-auth" grep -q pam_tokenpin /etc/pam.d/common-auth
        check "... and no password line: passwd is not taken over" bash -c "! grep -q pam_tokenpin /etc/pam.d/common-password"
        # The package installed and tokenpind not running: the CLI says so instead of going local.
        expect_code "the package's CLI without a running tokenpind: exit 69" 69 tokenpin status
        check "... naming --local" grep -q -- "--local" "$WORK/err"
        expect_code "... and --local still works" 0 tokenpin --local status
        expect_code "doctor says tokenpind is expected (69)" 69 tokenpin doctor
        # The stack pam-auth-update rendered, with the installed tokenpind on its default socket. /run is the host's
        # (only /usr, /etc and /var are overlays): a tmpfs of this namespace over all of it, so that /run/tokenpin
        # is made there and not left behind on the host.
        mount -t tmpfs -o mode=0755 tmpfs /run && mkdir /run/tokenpin
        /usr/sbin/tokenpind --state-dir "$WORK/rendered-state" --config "$CONFIG" --no-readers >>"$WORK/daemon.log" 2>&1 &
        DAEMON_PID=$!
        for _ in $(seq 100); do [ -S /run/tokenpin/socket ] && break; sleep 0.05; done
        expect_code "tokenpind without options listens on /run/tokenpin/socket" 0 tokenpin status
        expect_code "alice enrols through it" 0 tokenpin --user "$ALICE" enrol --pin-stdin < <(printf '%s\n%s\n' $PIN $PIN)
        pam_service RENDERED "@include common-auth" "account required pam_permit.so"
        expect_code "the rendered profile: the PIN logs in" 0 pamtester "$RENDERED" "$ALICE" authenticate <<<$PIN
        expect_code "the rendered profile: Enter, then the password" 0 pamtester "$RENDERED" "$ALICE" authenticate \
            < <(printf '\n%s\n' "$(password_of "$ALICE")")
        expect_code "the rendered profile: the password at the PIN prompt (try_first_pass)" 0 \
            pamtester "$RENDERED" "$ALICE" authenticate <<<"$(password_of "$ALICE")"
        expect_code "the rendered profile: no record, the password" 0 pamtester "$RENDERED" "$NOREC" authenticate \
            <<<"$(password_of "$NOREC")"
        expect_code "the rendered profile: a wrong PIN and a wrong password fail" 1 pamtester "$RENDERED" "$ALICE" \
            authenticate < <(printf '000000\nwrong\n')
        tokenpin doctor --json > "$WORK/doctor.json"
        check "doctor finds the rendered stack sound" python3 -c '
import json, sys
pam = [c for c in json.load(open(sys.argv[1]))["checks"] if c["check"] == "pam"]
bad = [c for c in pam if c["level"] == "error" and (sys.argv[2] in c["summary"] or "common-auth" in c["summary"])]
good = [c for c in pam if c["level"] == "ok" and any(sys.argv[2] in d for d in c["details"])]
sys.exit(0 if good and not bad else 1)' "$WORK/doctor.json" "$RENDERED"
        stop_daemon
        expect_code "the rendered profile, tokenpind stopped: the password" 0 pamtester "$RENDERED" "$ALICE" authenticate \
            <<<"$(password_of "$ALICE")"
        umount /run
        rm -f "/etc/pam.d/$RENDERED"

        expect_code "dpkg -r" 0 dpkg -r tokenpin
        check "remove: the profile is unregistered from common-auth" bash -c "! grep -q pam_tokenpin /etc/pam.d/common-auth"
        check "remove: binaries, module, units, rules, man pages and docs are gone" bash -c "[ ! -e /usr/bin/tokenpin ] && [ ! -e /usr/bin/tokenpin-bench ] && [ ! -e /usr/bin/tokenpin-askpass ] && [ ! -e /usr/bin/age-plugin-tokenpin ] && \
            [ ! -e /usr/sbin/tokenpind ] && [ ! -e /usr/libexec/tokenpin ] && ! find /lib /usr/lib -name pam_tokenpin.so | grep -q . && \
            [ ! -e /lib/systemd/system/tokenpind.socket ] && [ ! -e /lib/udev/rules.d/70-tokenpin.rules ] && \
            [ ! -e /usr/share/pam-configs/tokenpin ] && [ ! -e /usr/share/man/man8/tokenpind.8.gz ] && [ ! -e /usr/share/doc/tokenpin ]"
        check "remove: conffiles and records stay" [ -f /etc/tokenpin/tokenpin.conf -a -f /etc/pam.d/tokenpin-enrol -a -d /var/lib/tokenpin ]
        expect_code "dpkg -P" 0 dpkg -P tokenpin
        check "purge: /etc/tokenpin, the PAM service and /var/lib/tokenpin are gone" \
            [ ! -e /etc/tokenpin -a ! -e /etc/pam.d/tokenpin-enrol -a ! -e /var/lib/tokenpin ]
        LEFT=$(leftovers)
        check "purge: nothing else left behind (${LEFT:-nothing})" [ -z "$LEFT" ]
        ;;
    destdir)
        # tar keeps /lib a link to usr/lib where the tree has a real lib/ (PAM_DIR from pkg-config).
        expect_code "copy the DESTDIR tree into the throwaway root" 0 \
            bash -c "tar -C '$OUTER/dest' -cf - . | tar -C / -xf - --keep-directory-symlink --no-overwrite-dir"
        runtime_checks /usr/local
        expect_code "make uninstall" 0 make -C "$ROOT" -s uninstall
        LEFT=$(leftovers | grep -v -x -e /etc/tokenpin/tokenpin.conf -e /etc/pam.d/tokenpin-enrol)
        check "make uninstall leaves only the configuration (${LEFT:-nothing else})" [ -z "$LEFT" ]
        ;;
    esac
    finish
    exit
fi

# ---------------------------------------------------------------------------------------------------------
[ "$(id -u)" = 0 ] || { echo "package.sh needs root (a mount namespace, dpkg, users)"; exit 1; }
command -v pamtester >/dev/null && command -v dpkg-buildpackage >/dev/null && command -v lintian >/dev/null \
    || { echo "pamtester, dpkg-dev or lintian missing: make test-deps deb-deps"; exit 1; }

# throwaway MODE: runs this script's --inside MODE in a private mount namespace; its counts join ours.
throwaway() {
    mkdir -p "$WORK/overlay"
    unshare -m --propagation private -- bash "$0" --inside "$1" "$WORK" > "$WORK/inside.log" 2>&1
    grep -E '^(not )?ok - ' "$WORK/inside.log"
    local passed failed
    read -r passed failed < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$WORK/inside.log" | tail -1)
    if [ -z "$passed" ]; then not_ok "throwaway root ($1) did not finish: $(tail -5 "$WORK/inside.log")"; return; fi
    PASSED=$((PASSED + passed)) FAILED=$((FAILED + failed))
}

expect_code "make install with nothing built fails" 2 make -C "$ROOT" -s install DESTDIR="$WORK/empty" RELEASE_DIR="$WORK/none"
check "... and says to run make first" grep -q "make && sudo make install" "$WORK/err"

if ! make -C "$ROOT" -s deb >"$WORK/make-deb.log" 2>&1; then
    not_ok "make deb"; tail -30 "$WORK/make-deb.log"; finish; exit 1
fi
ok "make deb: $(basename "$DEB") ($(stat -c %s "$DEB") bytes)"
field() { dpkg-deb -f "$DEB" "$1"; }
check "version from the sources: $VERSION" [ "$(field Version)" = "$VERSION" ]
check "Depends computed: libc6, libsodium23, libpcsclite1, libpam-runtime, and libssl3, libp11-kit0 (loaded with dlopen)" bash -c \
    "dpkg-deb -f '$DEB' Depends | grep -q libc6 && dpkg-deb -f '$DEB' Depends | grep -q libsodium && \
     dpkg-deb -f '$DEB' Depends | grep -q libpcsclite1 && dpkg-deb -f '$DEB' Depends | grep -q libpam-runtime && \
     dpkg-deb -f '$DEB' Depends | grep -q 'libssl3 (>= 3' && dpkg-deb -f '$DEB' Depends | grep -q 'libp11-kit0 (>= 0.23'"
check "Recommends: pcscd" [ "$(field Recommends)" = pcscd ]
dpkg-deb -c "$DEB" | awk '{print $6}' > "$WORK/contents"
for path in ./usr/bin/tokenpin ./usr/bin/tokenpin-bench ./usr/bin/tokenpin-askpass ./usr/bin/age-plugin-tokenpin ./usr/sbin/tokenpind ./usr/libexec/tokenpin/tokenpin-pkcs11 ./lib/systemd/system/tokenpind.service ./lib/systemd/system/tokenpind.socket \
    ./lib/udev/rules.d/70-tokenpin.rules ./usr/share/pam-configs/tokenpin ./etc/pam.d/tokenpin-enrol ./etc/tokenpin/tokenpin.conf \
    ./usr/share/man/man1/tokenpin.1.gz ./usr/share/man/man1/tokenpin-bench.1.gz ./usr/share/man/man1/tokenpin-askpass.1.gz ./usr/share/man/man1/age-plugin-tokenpin.1.gz ./usr/share/man/man5/tokenpin.conf.5.gz ./usr/share/man/man8/pam_tokenpin.8.gz \
    ./usr/share/doc/tokenpin/protocol.md ./usr/share/doc/tokenpin/copyright; do
    check "the package holds $path" grep -qx "$path" "$WORK/contents"
done
check "the package holds the PAM module" grep -q '/security/pam_tokenpin.so$' "$WORK/contents"
check "the unit starts /usr/sbin/tokenpind" bash -c "dpkg-deb --fsys-tarfile '$DEB' | tar -xO ./lib/systemd/system/tokenpind.service | grep -qx 'ExecStart=/usr/sbin/tokenpind'"
lintian --fail-on error --tag-display-limit 0 "$DEB" > "$WORK/lintian.log" 2>&1
LINTIAN=$?
check "lintian: no errors ($(grep -c '^W:' "$WORK/lintian.log") warnings)" [ "$LINTIAN" = 0 ]
grep -E '^[EW]:' "$WORK/lintian.log" | sed 's/^/    /'

throwaway deb

expect_code "make install DESTDIR=... (PREFIX=/usr/local)" 0 make -C "$ROOT" -s install DESTDIR="$WORK/dest"
check "DESTDIR: the unit starts /usr/local/sbin/tokenpind" grep -qx 'ExecStart=/usr/local/sbin/tokenpind' \
    "$WORK/dest/usr/lib/systemd/system/tokenpind.service"
throwaway destdir
finish
