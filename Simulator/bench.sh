#!/usr/bin/env bash
# bench.sh: how much of an APDU's round trip through pcscd + vpcd the simulated card itself takes, and the
# wall time of `gpg --card-status`.
#
# Runs inside Simulator/pcscd-sandbox (re-executes itself there). Builds Simulator/bench/pcsc-rtt.c, starts
# tokenpin-sim --stats on the first sandbox port, sends GET DATA 6E (a 240-byte answer) and GET DATA C4
# COUNT times each over one PC/SC connection, then times gpg --card-status RUNS times.
# Usage: sudo Simulator/bench.sh [COUNT (default 1000)] [RUNS (default 5)]

set -euo pipefail
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ "${TOKENPIN_SANDBOX:-}" != 1 ]]; then exec "$script_dir/pcscd-sandbox" -- "$0" "$@"; fi

count=${1:-1000}
runs=${2:-5}
work=$(mktemp -d /tmp/tokenpin-bench.XXXXXX)
sim_pid=""
cleanup() {
    GNUPGHOME=$work/gnupg gpgconf --kill all 2>/dev/null || true
    [[ -n "$sim_pid" ]] && { kill -TERM "$sim_pid" 2>/dev/null; wait "$sim_pid" 2>/dev/null; } || true
    rm -rf "$work"
}
trap cleanup EXIT

cc -O2 -o "$work/pcsc-rtt" "$script_dir/bench/pcsc-rtt.c" $(pkg-config --cflags --libs libpcsclite)
port=${TOKENPIN_VPCD_PORTS%%,*}
reader=${TOKENPIN_READERS%%|*}

start_card() {
    "$TOKENPIN_SIM_BIN" --state "$work/card.json" --port "$port" --stats 2>"$work/sim-$1.log" &
    sim_pid=$!
    for _ in $(seq 50); do opensc-tool --list-readers 2>/dev/null | grep -q "Yes .*$reader" && return; sleep 0.1; done
    echo "error: the card did not appear" >&2; exit 1
}
stop_card() {
    kill -TERM "$sim_pid"
    wait "$sim_pid" 2>/dev/null || true
    sim_pid=""
    grep "^stats:" "$work/sim-$1.log" || { echo "(no stats; log:)"; cat "$work/sim-$1.log"; }
    # pcscd notices the pulled card at its next presence poll; wait, so the next "Yes" is the next card.
    for _ in $(seq 50); do opensc-tool --list-readers 2>/dev/null | grep -q "Yes .*$reader" || return 0; sleep 0.1; done
}

echo "== one APDU through libpcsclite -> pcscd -> vpcd -> tokenpin-sim ($count round trips each)"
for apdu in 00CA006E00 00CA00C400; do
    start_card "$apdu"
    echo "GET DATA ${apdu:4:4}: host $("$work/pcsc-rtt" "$reader" "$count" "$apdu")"
    echo "GET DATA ${apdu:4:4}: card $(stop_card "$apdu")"
done

echo "== gpg --card-status ($runs runs, first run includes starting gpg-agent and scdaemon)"
export GNUPGHOME=$work/gnupg
mkdir -m 700 "$GNUPGHOME"
printf 'disable-ccid\npcsc-driver %s\nreader-port %s\n' "${TOKENPIN_PCSC_DRIVER:-/usr/lib/x86_64-linux-gnu/libpcsclite.so.1}" \
    "$reader" >"$GNUPGHOME/scdaemon.conf"
start_card gpg
times=()
for ((run = 0; run < runs; run++)); do
    begin=$(date +%s%N)
    gpg --card-status >"$work/card-status.txt" 2>&1 || { echo "error: gpg --card-status failed:" >&2; cat "$work/card-status.txt" >&2; exit 1; }
    end=$(date +%s%N)
    times+=($(((end - begin) / 1000000)))
    # A cold start every run: a new scdaemon opens the reader and reads the card again.
    gpgconf --kill all
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
echo "gpg --card-status wall time ms (cold scdaemon each run): ${times[*]}; median ${sorted[$((runs / 2))]}"
echo "gpg --card-status card: $(stop_card gpg)"
