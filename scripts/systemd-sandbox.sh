# A real systemd in a private PID, mount and network namespace over an
# overlay of / (writes go to a scratch folder; the machine's own / is never
# touched): what scripts/test-systemd and scripts/test-package boot. Sourced.
#
#   sandbox_prepare NAME   skip (exit 0) where namespaces cannot be made; make
#                          the scratch folder $B and a trap that powers the
#                          sandbox off and removes $B (unless KEEP_SANDBOX is
#                          set, to look around after a failure)
#   (files put into $B/upper before the boot are in the sandbox's /)
#   sandbox_boot           boot; $pid is its systemd, running once it returns
#   inside COMMAND...      run a command in the sandbox
#   check WHAT COMMAND...  count a failed check in $failures; say ok or FAIL
#   wait_for SECONDS COMMAND...  true once COMMAND succeeds, false at the deadline

sandbox_prepare() {
    sandbox_name=$1
    if [ "$(id -u)" != 0 ] || ! unshare --pid --fork --mount --net --uts --ipc true 2>/dev/null; then
        echo "$sandbox_name: SKIPPED: this machine cannot create the namespaces a systemd sandbox needs (needs root and unshare)"
        exit 0
    fi
    [ -x /lib/systemd/systemd ] || { echo "$sandbox_name: FAIL: /lib/systemd/systemd is missing (scripts/setup installs it)"; exit 1; }
    B="$PWD/.build/$sandbox_name-sandbox.$$"
    mkdir -p "$B/upper" "$B/work" "$B/merged"
    failures=0
    pid=""
    trap sandbox_cleanup EXIT
}

sandbox_cleanup() {
    if [ -n "${KEEP_SANDBOX:-}" ]; then
        echo "$sandbox_name: KEEP_SANDBOX is set: sandbox left running (nsenter -t $pid -a -r -w ...); remove $B after poweroff (kill -s SIGRTMIN+4 $pid)"
        return
    fi
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -s SIGRTMIN+4 "$pid"  # clean poweroff
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null
    fi
    rm -rf "$B"
}

check() {  # check "what" command...
    local what="$1"; shift
    if "$@"; then echo "$sandbox_name: ok: $what"; else echo "$sandbox_name: FAIL: $what"; failures=$((failures + 1)); fi
}

wait_for() {  # wait_for SECONDS command...: true once command succeeds
    local deadline=$((SECONDS + $1)); shift
    while [ $SECONDS -lt $deadline ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
    "$@" >/dev/null 2>&1
}

inside() { nsenter -t "$pid" -a -r -w "$@"; }

sandbox_boot() {
    cat > "$B/boot.sh" <<BOOT
#!/bin/sh
set -e
mount -t overlay overlay -o lowerdir=/,upperdir=$B/upper,workdir=$B/work $B/merged
for d in tmp run var/tmp; do mount -t tmpfs tmpfs $B/merged/\$d; done
mount --rbind /sys $B/merged/sys
mount --rbind /dev $B/merged/dev
# Shared propagation, as on a booted system: systemd moves credential
# mounts into place through it.
mount --make-rshared $B/merged
cd $B/merged && exec chroot . /bin/sh -c 'mount -t proc proc /proc; exec /lib/systemd/systemd --system --unit=multi-user.target'
BOOT
    chmod +x "$B/boot.sh"
    setsid unshare --pid --fork --mount --propagation private --net --uts --ipc "$B/boot.sh" >"$B/boot.log" 2>&1 </dev/null &
    for _ in $(seq 100); do
        pid=$(ps -eo pid,args | awk '$2 == "/lib/systemd/systemd" && $3 == "--system" {print $1}' | while read -r p; do
            [ "$(readlink "/proc/$p/root")" = "$B/merged" ] && echo "$p"; done | head -1)
        [ -n "$pid" ] && break
        sleep 0.1
    done
    [ -n "$pid" ] || { echo "$sandbox_name: FAIL: systemd did not start"; cat "$B/boot.log"; exit 1; }
    wait_for 60 sh -c "nsenter -t $pid -a -r -w systemctl is-system-running | grep -Eq 'running|degraded'"
    echo "$sandbox_name: sandbox systemd is pid $pid ($(inside systemctl is-system-running))"
}
