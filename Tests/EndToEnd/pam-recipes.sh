#!/usr/bin/env bash
# Every PAM recipe in docs/pam.md and pam_tokenpin(8), as the page prints it, run with pamtester: each block after a
# `recipe: NAME` marker (`<!-- recipe: NAME -->` in Markdown, `; recipe: NAME` in scdoc) becomes a PAM service that
# loads the built module by absolute path on a private tokenpind. Each runs for a user with a PIN, a user without a
# record, root (with a password of the test's own, in a private mount namespace with an overlay on /etc) and with
# the daemon stopped; no recipe may lock out root or the unenrolled, or let in someone with neither secret.
if [ "${1:-}" != --inside ]; then
    [ "$(id -u)" = 0 ] || { echo "pam-recipes.sh needs root (a mount namespace, users, PAM files)"; exit 1; }
    exec unshare -m --propagation private -- bash "$0" --inside
fi
# /etc is an overlay of this namespace's own (on a tmpfs), so that root's test password, the test users and the
# PAM services exist only here, and no other process's rewrite of /etc/shadow can undo them.
OVERLAY=$(mktemp -d /tmp/tokenpin-recipes.XXXXXX)
mount -t tmpfs tmpfs "$OVERLAY" && mkdir "$OVERLAY/upper" "$OVERLAY/work" \
    && mount -t overlay overlay -o "lowerdir=/etc,upperdir=$OVERLAY/upper,workdir=$OVERLAY/work" /etc \
    || { echo "cannot put an overlay over /etc"; exit 1; }
. "$(dirname "$0")/lib.sh"
command -v pamtester >/dev/null || { echo "pamtester is not installed"; exit 1; }
if [ ! -f "$PAM_MODULE" ]; then make -C "$ROOT" -s pam >/dev/null || { echo "cannot build the PAM module"; exit 1; }; fi

# recipes FILE MARKER: prints PAGE:NAME<TAB>line for every line of every block after a marker line.
recipes() {
    awk -v marker="$2" -v page="$(basename "$1")" '
        index($0, marker) == 1 { name = substr($0, length(marker) + 1); sub(/ *-->.*$/, "", name); sub(/ +$/, "", name); want = 1; next }
        want && /^```$/ { if (inside) { inside = 0; want = 0 } else { inside = 1 }; next }
        inside { print page ":" name "\t" $0 }
    ' "$1"
}
{
    recipes "$ROOT/docs/pam.md" "<!-- recipe: "
    recipes "$ROOT/docs/man/pam_tokenpin.8.scd" "; recipe: "
} > "$WORK/recipes"
# What each recipe must do, case by case (ok: logged in; fail: refused):
#   pin: the PIN · enter: Enter, then the password · wrongpin: a wrong PIN, then the password · pinpass: the PIN,
#   then the password · typed: the password at the PIN prompt · neither: a wrong PIN and a wrong password
declare -A WANT=(
    [pin-or-password]="pin=ok enter=ok wrongpin=ok pinpass=ok typed=ok neither=fail"
    [require-pin]="pin=ok enter=fail wrongpin=fail pinpass=ok typed=fail neither=fail"
    [pin-and-password]="pin=fail enter=fail wrongpin=fail pinpass=ok typed=fail neither=fail"
    [sudo-only]="pin=ok enter=ok wrongpin=ok pinpass=ok typed=ok neither=fail"
    [authselect]="pin=ok enter=ok wrongpin=ok pinpass=ok typed=ok neither=fail"
)
NAMES=$(cut -f1 "$WORK/recipes" | sort -u)
check "the docs hold recipes ($(echo $NAMES))" test -n "$NAMES"
for name in $NAMES; do
    check "recipe $name: the suite knows what it must do" test -n "${WANT[${name#*:}]:-}"
done
for name in "${!WANT[@]}"; do
    check "recipe $name: still in docs/pam.md" grep -q "^pam.md:$name	" "$WORK/recipes"
done
check "pam_tokenpin(8) holds recipes the suite runs" grep -q "^pam_tokenpin.8.scd:" "$WORK/recipes"

start_daemon || exit 1
new_user ALICE && new_user NOPIN || { echo "cannot create users"; exit 1; }
PIN=482916
client --user "$ALICE" enrol < <(printf '%s\n%s\n' $PIN $PIN) >/dev/null
# Root's password, in this namespace's /etc only.
ROOT_PASSWORD="Root-$RANDOM-pw"
printf 'root:%s\n' "$ROOT_PASSWORD" | chpasswd || { echo "cannot give root a test password"; exit 1; }
trap 'cleanup; umount /etc; umount "$OVERLAY"; rmdir "$OVERLAY"' EXIT
check "root has no tokenpin record here" [ "$(client --user root status | json_field enrolled)" = False ]

# service NAME: a PAM service holding recipe NAME, the module by path on this daemon; its name in SERVICE.
service() {
    local lines=() line
    while IFS= read -r line; do
        lines+=("${line//pam_tokenpin.so/$PAM_MODULE socket=$SOCKET timeout=10}")
    done < <(awk -F'\t' -v name="$1" '$1 == name { print substr($0, length(name) + 2) }' "$WORK/recipes")
    pam_service SERVICE "${lines[@]}" "account required pam_permit.so"
}
# attempt SERVICE USER LINES...: pamtester with LINES as the conversation's answers; exit 0 when logged in.
attempt() {
    local service=$1 user=$2; shift 2
    printf '%s\n' "$@" | pamtester "$service" "$user" authenticate >"$WORK/out" 2>&1
}
expect() {  # expect WANT NAME SERVICE USER LINES...
    local want=$1 name=$2; shift 2
    attempt "$@"
    local got=$?
    if { [ "$want" = ok ] && [ "$got" = 0 ]; } || { [ "$want" = fail ] && [ "$got" != 0 ]; }; then ok "$name"
    else not_ok "$name (wanted $want, exit $got: $(tr '\n' ' ' < "$WORK/out" | head -c 300))"; fi
}

for name in $NAMES; do
    [ -n "${WANT[${name#*:}]:-}" ] || continue
    service "$name" || { not_ok "recipe $name: cannot write its service"; continue; }
    declare -A want=()
    for pair in ${WANT[${name#*:}]}; do want[${pair%%=*}]=${pair#*=}; done
    password=$(password_of "$ALICE")
    expect "${want[pin]}" "$name: a PIN user, the PIN" "$SERVICE" "$ALICE" $PIN
    expect "${want[enter]}" "$name: a PIN user, Enter then the password" "$SERVICE" "$ALICE" "" "$password"
    expect "${want[wrongpin]}" "$name: a PIN user, a wrong PIN then the password" "$SERVICE" "$ALICE" 000000 "$password"
    expect "${want[pinpass]}" "$name: a PIN user, the PIN then the password" "$SERVICE" "$ALICE" $PIN "$password"
    expect "${want[typed]}" "$name: a PIN user, the password at the PIN prompt" "$SERVICE" "$ALICE" "$password" "$password"
    expect "${want[neither]}" "$name: a PIN user, a wrong PIN and a wrong password" "$SERVICE" "$ALICE" 000000 wrong wrong
    # Whatever the recipe, the PIN counter never locks in this run: a right PIN restores it.
    client --user "$ALICE" verify < <(echo $PIN) >/dev/null
    expect ok "$name: no record, the password" "$SERVICE" "$NOPIN" "$(password_of "$NOPIN")"
    expect fail "$name: no record, a wrong password" "$SERVICE" "$NOPIN" wrong wrong
    expect ok "$name: root, the password" "$SERVICE" root "$ROOT_PASSWORD"
    expect fail "$name: root, a wrong password" "$SERVICE" root wrong wrong
    stop_daemon
    expect ok "$name: tokenpind stopped, a PIN user's password" "$SERVICE" "$ALICE" "$password"
    expect ok "$name: tokenpind stopped, root's password" "$SERVICE" root "$ROOT_PASSWORD"
    expect fail "$name: tokenpind stopped, a wrong password" "$SERVICE" "$ALICE" wrong wrong
    start_daemon || exit 1
    unset want
done
finish
