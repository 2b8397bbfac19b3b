#!/bin/bash
# The embedder default's benches beside LLFree's own on a lent many-core machine, as one
# short run: interleaved rounds, each bench of ours then LLFree's, one table at the end.
#
#   PAGELAB=path/to/stripped/pagelab [LLFREE_BENCH=path/to/llfree/bench] .dev/bench16.sh
#
# Both binaries are built elsewhere and carried over (this script builds nothing). Without
# LLFREE_BENCH only ours runs. Knobs (environment): THREADS ("1 2 4 8 16"), MEM_GIB (16),
# ROUNDS (3), OUT (a results folder; $OUT on the device machine). The table goes to stdout
# and to $OUT/bench16.md; the raw outputs stay in $OUT/raw.
set -euo pipefail
PAGELAB=${PAGELAB:?set PAGELAB to a pagelab binary}
THREADS=${THREADS:-1 2 4 8 16}
MEM_GIB=${MEM_GIB:-16}
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-bench16-out}
RAW="$OUT/raw"
mkdir -p "$RAW"
max=$(echo $THREADS | tr ' ' '\n' | sort -n | tail -1)
ours_x=$(for t in $THREADS; do printf -- '-x %s ' "$t"; done)
nproc > "$OUT/cpus.txt"
for round in $(seq "$ROUNDS"); do
  for spec in "bulk 0" "bulk 9" "rand 0" "repeat 0"; do
    set -- $spec
    "$PAGELAB" bench "$1" --order "$2" --threads-max "$max" $ours_x --memory-gib "$MEM_GIB" \
      --iterations 2 > "$RAW/ours-$1-$2-$round.txt" 2>&1
    if [ -n "${LLFREE_BENCH:-}" ]; then
      "$LLFREE_BENCH" "$1" LLFree $ours_x -t "$max" -s "$2" -m "$MEM_GIB" -i 2 \
        -o "$RAW/llfree-$1-$2-$round.csv" > /dev/null 2>&1 || echo "llfree $1 $2 failed" >&2
    fi
  done
done
python3 - "$RAW" "$THREADS" > "$OUT/bench16.md" <<'PY'
import csv, glob, re, statistics as st, sys
raw, threads = sys.argv[1], sys.argv[2].split()
def ours(bench, order, x):
    rows = []
    for path in glob.glob(f"{raw}/ours-{bench}-{order}-*.txt"):
        for line in open(path):
            words = line.split()
            if len(words) > 5 and words[0] == bench and words[4] == x:
                rows.append([float(v) for v in re.findall(r"(\d+\.\d+) \[", line)])
    return [st.median(r[i] for r in rows) for i in range(len(rows[0]))] if rows else None
def llfree(bench, order, x):
    rounds = []
    for path in glob.glob(f"{raw}/llfree-{bench}-{order}-*.csv"):
        rows = [r for r in csv.DictReader(open(path)) if r["x"] == x]
        if rows:
            rounds.append((st.median(float(r["get_avg"]) for r in rows), st.median(float(r["put_avg"]) for r in rows)))
    return (st.median(r[0] for r in rounds), st.median(r[1] for r in rounds)) if rounds else None
print("| bench | threads | ours alloc / free (pair) | LLFree get / put (pair) | alloc: ours / LLFree | free: ours / LLFree |")
print("|---|---|---|---|---|---|")
for bench, order in (("bulk", 0), ("bulk", 9), ("rand", 0), ("repeat", 0)):
    for x in threads:
        o, l = ours(bench, order, x), llfree(bench, order, x)
        if o is None:
            continue
        mine = f"{o[0]:.1f}" if bench == "repeat" else f"{o[0]:.1f} / {o[1]:.1f}"
        theirs = "-" if l is None else (f"{l[0]:.0f}" if bench == "repeat" else f"{l[0]:.0f} / {l[1]:.0f}")
        alloc = "-" if l is None else f"{o[0] / l[0]:.2f}"
        free = "-" if l is None or bench == "repeat" else f"{o[1] / l[1]:.2f}"
        print(f"| {bench} {order} | {x} | {mine} | {theirs} | {alloc} | {free} |")
PY
cat "$OUT/bench16.md"
