#!/usr/bin/env bash
# Supervisor of one detached emulated container (started by `docker run -d`): it is the container's process-group
# leader and its recorded pid. It runs the container's command, forwards TERM/INT/HUP to it, and when the command
# ends records its exit status and swaps in the "exited" container record prepared by `docker run`.
# With setpriv's parent-death signal, killing only this pid (SIGKILL included) also ends the command.
exit_file="$SUPERVISE_EXIT_FILE"
done_record="$SUPERVISE_DONE_RECORD"
record="$SUPERVISE_RECORD"
unset SUPERVISE_EXIT_FILE SUPERVISE_DONE_RECORD SUPERVISE_RECORD
if command -v setpriv >/dev/null 2>&1; then
  setpriv --pdeathsig KILL -- "$@" &
else
  "$@" &
fi
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
trap 'kill -HUP "$child" 2>/dev/null' HUP
while kill -0 "$child" 2>/dev/null; do
  wait "$child"
done
wait "$child"
rc=$?
printf '%s\n' "$rc" >"$exit_file.tmp" && mv -f "$exit_file.tmp" "$exit_file"
# No ssh connection reaches a container that has ended (the ssh launcher finds running ones by this file).
rm -f "${record%/*}/ssh.sh"
[ -f "$done_record" ] && mv -f "$done_record" "$record" 2>/dev/null
exit "$rc"
