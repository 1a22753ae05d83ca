# Sourced by the real-client suites (real-clients.sh, piv-clients.sh) once they run inside
# Simulator/pcscd-sandbox: counters and checks, a work directory removed at exit, and the simulated card in the
# sandbox's first reader. Set `suite` (names the work directory) before sourcing; define `suite_cleanup` for
# more to do at exit. End with `finish`.

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok - $1"; }
fail() { failed=$((failed + 1)); echo "not ok - $1"; [[ -n "${2:-}" ]] && sed 's/^/    # /' <<<"$2"; }
check() {  # check NAME OUTPUT PATTERN: passes when OUTPUT matches the extended regex PATTERN
    if grep -Eq -- "$3" <<<"$2"; then pass "$1"; else fail "$1" "$2"; fi
}
# finish: the summary line, and the exit status (non-zero when anything failed).
finish() {
    echo "$passed passed, $failed failed"
    [[ $failed -eq 0 ]]
}

work=$(mktemp -d "/tmp/tokenpin-$suite.XXXXXX")
sim_pid=""
stop_card() {
    if [[ -n "$sim_pid" ]]; then kill -TERM "$sim_pid" 2>/dev/null; wait "$sim_pid" 2>/dev/null; sim_pid=""; fi
}
# pcscd notices a pulled card at its next presence poll; wait for that so a later "Yes" is the new card.
wait_for_removal() {
    for _ in $(seq 50); do
        opensc-tool --list-readers 2>/dev/null | grep -q "Yes .*$reader" || return 0
        sleep 0.1
    done
    return 1
}
cleanup() {
    if declare -F suite_cleanup >/dev/null; then suite_cleanup; fi
    stop_card
    rm -rf "$work"
}
trap cleanup EXIT

port=${TOKENPIN_VPCD_PORTS%%,*}
reader=${TOKENPIN_READERS%%|*}
serial=${TOKENPIN_TEST_SERIAL:-0C0FFEE5}
state=$work/card.json

# insert_card [TOKENPIN-SIM ARGS...]: tokenpin-sim on the first port with `state`, once pcscd sees the card.
insert_card() {
    "$TOKENPIN_SIM_BIN" --state "$state" --port "$port" --serial "$serial" "$@" 2>>"$work/tokenpin-sim.log" &
    sim_pid=$!
    for _ in $(seq 50); do
        opensc-tool --list-readers 2>/dev/null | grep -q "Yes .*$reader" && return 0
        sleep 0.1
    done
    return 1
}
