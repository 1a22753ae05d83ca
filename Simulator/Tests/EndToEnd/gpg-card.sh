# gpg-card.sh: GnuPG set up to use a card in a pcscd reader, and gpg --card-edit driven by a script.
# Sourced by the real-client checks and the token benchmark.

# gpg_card_setup GNUPGHOME READER: a private GNUPGHOME whose scdaemon talks to pcscd (not its own CCID
# driver), uses READER, and whose agent allows the loopback pinentry.
gpg_card_setup() {
    export GNUPGHOME=$1
    mkdir -p "$GNUPGHOME"
    chmod 700 "$GNUPGHOME"
    cat >"$GNUPGHOME/scdaemon.conf" <<CONF
disable-ccid
pcsc-driver ${TOKENPIN_PCSC_DRIVER:-/usr/lib/x86_64-linux-gnu/libpcsclite.so.1}
reader-port $2
CONF
    echo allow-loopback-pinentry >"$GNUPGHOME/gpg-agent.conf"
}

# gpg --card-edit driven like a person at the keyboard: each prompt gpg announces on its status channel
# (GET_LINE / GET_HIDDEN / GET_BOOL keyword) is answered with the first unused "keyword=answer" argument
# for that keyword; a cardedit.prompt without one gets "quit". PINs travel on the command channel
# (loopback pinentry), never in argv of gpg. Prints gpg's status lines and messages.
card_edit() { gpg_dialog --card-edit -- "$@"; }
# gpg_dialog GPG-ARGS... -- ANSWERS...: the same for any interactive gpg command (--edit-key FPR).
gpg_dialog() {
    local -a command=() keys=() values=() used=()
    while [[ $# -gt 0 && "$1" != "--" ]]; do command+=("$1"); shift; done
    shift
    local pair index
    for pair in "$@"; do keys+=("${pair%%=*}"); values+=("${pair#*=}"); used+=(0); done
    coproc GPG { gpg --no-tty --pinentry-mode loopback --command-fd 0 --status-fd 1 "${command[@]}" 2>&1; }
    # Our own copies of the coprocess's pipes: bash unsets GPG (and closes its descriptors) as soon as gpg
    # exits, and reading ${GPG[0]} then would abort the script under `set -u`.
    local pid=$GPG_PID prompts=0 line keyword answer from_gpg to_gpg
    exec {from_gpg}<&"${GPG[0]}" {to_gpg}>&"${GPG[1]}"
    while IFS= read -r -t 60 line <&"$from_gpg"; do
        echo "$line"
        [[ "$line" =~ ^\[GNUPG:\]\ GET_(LINE|HIDDEN|BOOL)\ (.*)$ ]] || continue
        keyword=${BASH_REMATCH[2]}
        prompts=$((prompts + 1))
        if ((prompts > 40)); then echo "card_edit: gpg keeps prompting ($keyword); giving up"; kill "$pid"; break; fi
        answer=""
        [[ "$keyword" == cardedit.prompt ]] && answer=quit
        [[ "$keyword" == cardutil.change_pin.menu ]] && answer=q
        [[ "$keyword" == keyedit.prompt ]] && answer=save
        [[ "$keyword" == keyedit.save.okay ]] && answer=y
        for index in "${!keys[@]}"; do
            if [[ "${used[$index]}" == 0 && "${keys[$index]}" == "$keyword" ]]; then
                answer=${values[$index]}
                used[$index]=1
                break
            fi
        done
        echo "$answer" >&"$to_gpg"
    done
    exec {from_gpg}<&- {to_gpg}>&-
    wait "$pid" 2>/dev/null
}
