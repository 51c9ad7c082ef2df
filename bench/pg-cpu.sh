# Sourced by the bench scripts: the CPU ticks of one database's backends only. Counting every process of the
# postgres user also counted other databases' backends (a test run, another benchmark) and other servers on the
# machine. Shared server processes (WAL writer, checkpointer, autovacuum) are left out, and so is a backend that
# exited within the window (the server's pools keep theirs). Needs the server on this machine (/proc).
# db_ticks DB: "pid:ticks" for each backend connected to DB now.
db_ticks() {
  psql -Atq -d "$1" -c "SELECT pid FROM pg_stat_activity WHERE datname = '$1' AND pid <> pg_backend_pid()" \
    | while read -r pid; do awk -v p="$pid" '{print p ":" $14 + $15}' "/proc/$pid/stat" 2>/dev/null || true; done \
    | tr '\n' ' '
}
# ticks_between "BEFORE" "AFTER": the ticks the backends in AFTER spent since BEFORE (all of them for a newcomer).
ticks_between() {
  python3 -c '
import sys
before = dict(e.split(":") for e in sys.argv[1].split())
print(sum(int(t) - int(before.get(p, 0)) for p, t in (e.split(":") for e in sys.argv[2].split())))' "$1" "$2"
}
