#!/usr/bin/env bash
# Runs a command and stops it as soon as its parent goes away for any reason, SIGKILL
# included: the parent holds the write end of our stdin, and end-of-file on it means the
# parent is gone. A SIGTERM or SIGINT to this script is passed on to the command.
exec 3<&0
"$@" </dev/null 3<&- &
child=$!
stop() {
  kill -TERM "$child" 2>/dev/null
  wait "$child"
  exit $?
}
trap stop TERM INT
{ cat <&3 >/dev/null; kill -TERM $$ 2>/dev/null; } &
watcher=$!
wait "$child"
rc=$?
kill "$watcher" 2>/dev/null
exit $rc
