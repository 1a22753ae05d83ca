#!/usr/bin/env bash
# A card another program holds exclusively, as gpg's scdaemon does without pcsc-shared: `verify`, a PAM login
# through tokenpind and `tokenpin doctor` name it the same way (program, pid, user, what to do), and nothing is
# counted. The holder is a small PC/SC client that connects exclusively, named scdaemon, run as a user of its own;
# a private pcscd (Simulator/pcscd-sandbox) with the simulated card in its first reader.
. "$(dirname "$0")/lib.sh"

enter_sandbox pamtester cc
SIM=${TOKENPIN_SIM_BIN:-$BIN/tokenpin-sim}
command -v pamtester >/dev/null || { echo "pamtester is not installed"; exit 1; }
if [ ! -f "$PAM_MODULE" ]; then make -C "$ROOT" -s pam >/dev/null || { echo "cannot build the PAM module"; exit 1; }; fi

# The holder: connects to READER exclusively, says so, and keeps the card until it is killed.
mkdir -p "$WORK/bin" && chmod 0755 "$WORK/bin"
cat > "$WORK/holder.c" <<'EOF'
#include <PCSC/winscard.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    SCARDCONTEXT context;
    SCARDHANDLE card;
    DWORD protocol;
    if (argc != 2 || SCardEstablishContext(SCARD_SCOPE_SYSTEM, NULL, NULL, &context) != SCARD_S_SUCCESS) return 2;
    LONG status = SCardConnect(context, argv[1], SCARD_SHARE_EXCLUSIVE, SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1, &card,
                               &protocol);
    if (status != SCARD_S_SUCCESS) { fprintf(stderr, "connect: %s\n", pcsc_stringify_error(status)); return 1; }
    printf("held\n");
    fflush(stdout);
    for (;;) pause();
}
EOF
cc -o "$WORK/bin/scdaemon" -I/usr/include/PCSC "$WORK/holder.c" -lpcsclite || { echo "cannot build the holder"; exit 1; }
chmod 0755 "$WORK/bin/scdaemon"

start_sim "$WORK/card.json" 0000CAFE || { echo "the simulated card did not come up"; exit 1; }
printf 'reader = %s\n' "$READER" >> "$CONFIG"
start_daemon || exit 1
new_user HOLDER && new_user ALICE || { echo "cannot create users"; exit 1; }
local_tp() { "$TOKENPIN" --local --store "$WORK/local" --config "$CONFIG" --reader "$READER" --pin-stdin "$@"; }
expect_code "a local record" 0 local_tp enrol < <(printf '482916\n482916\n')
expect_code "... binds the card" 0 local_tp toggle token on --generate-key --yes < <(printf '482916\n123456\n12345678\n')
expect_code "alice enrols through tokenpind" 0 client --user "$ALICE" enrol < <(printf '482916\n482916\n')
expect_code "... and binds the same card" 0 client --user "$ALICE" toggle token on < <(printf '482916\n123456\n')

# A second scdaemon that holds no card (as another user's gpg would leave running): both are named.
mkdir -p "$WORK/decoy" && ln -s "$(command -v sleep)" "$WORK/decoy/scdaemon"
"$WORK/decoy/scdaemon" 600 &
DECOY_PID=$!
setpriv --reuid="$(id -u "$HOLDER")" --regid="$(id -g "$HOLDER")" --clear-groups -- "$WORK/bin/scdaemon" "$READER" \
    >"$WORK/holder.out" 2>&1 &
HOLDER_PID=$!
for _ in $(seq 100); do grep -q held "$WORK/holder.out" && break; sleep 0.05; done
check "the holder holds the card exclusively" grep -q held "$WORK/holder.out"
# Other scdaemons may run on this machine (another suite's gpg): each is named; this one must be among them.
WANT="pid $HOLDER_PID, user $HOLDER"

expect_code "verify: the token is unavailable (6)" 6 local_tp verify --method token <<<123456
check "verify names the holder" bash -c "grep -F \"the card in $READER is held exclusively by another program: gpg's scdaemon (\" '$WORK/err' | grep -qF '$WANT'"
grep -o "the card in .*" "$WORK/err" | head -1 > "$WORK/verify.said"
check "verify says what to do" grep -qF "gpgconf --kill scdaemon" "$WORK/err"
check "... and names every scdaemon that does not share" grep -qF "pid $DECOY_PID, user root" "$WORK/err"

pam_service SERVICE "auth required $PAM_MODULE socket=$SOCKET timeout=10" "account required pam_permit.so"
expect_code "PAM: the PIN still logs in (fallback)" 0 pamtester "$SERVICE" "$ALICE" authenticate <<<482916
check "PAM names the holder, the same way" grep -qF "$WANT" "$WORK/out"
grep -o "the card in .*" "$WORK/out" | head -1 > "$WORK/pam.said"
check "... word for word" cmp -s "$WORK/verify.said" "$WORK/pam.said"

expect_code "doctor: an error for the held card (6)" 6 "$TOKENPIN" --local --store "$WORK/local" --config "$CONFIG" doctor
check "doctor names the holder, the same way" grep -qF "$WANT" "$WORK/out"
kill "$HOLDER_PID" "$DECOY_PID"; wait "$HOLDER_PID" "$DECOY_PID" 2>/dev/null
sleep 0.3
check "no card try was spent" [ "$(local_tp --json status | json_field token.cardTriesLeft)" = 3 ]
expect_code "the card is free again: the token verifies" 0 local_tp verify --method token <<<123456
stop_sim
finish
