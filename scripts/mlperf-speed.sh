#!/usr/bin/env bash
# Times `d5list check --mlperf` against the package checker of each round's
# own mlcommons/logging release, tree by tree, cold and warm, side by side
# in one run. Prints one TSV line per measurement and a markdown table.
#
#   scripts/mlperf-speed.sh LOGGING D5LIST TREES [OUT]
#
# LOGGING holds one export of mlcommons/logging per release tag, named by
#   the tag (git --git-dir=... archive TAG | tar -x -C LOGGING/TAG); each
#   round's tag is the release: field of verifier/mlperf_rounds/.
# D5LIST is a built binary (go build -o D5LIST ./cmd/d5list).
# TREES holds published organisation trees as vX.Y/<organisation>/{results,
#   systems} (copied out of mlcommons/training_results_vX.Y).
# OUT (default ./mlperf-speed) receives the tools' outputs and times.tsv.
#
# Cold: the page cache is dropped before each run (as root: sync, then
# /proc/sys/vm/drop_caches), so each tool pays for reading its own program,
# libraries and the tree from disk. Warm: the same command again at once.
# The package checker writes scaling.json into the tree it checks, so it
# runs on a copy of each tree and d5list on another.
set -euo pipefail

logging=$(realpath "$1")
d5list=$(realpath "$2")
trees=$(realpath "$3")
out=${4:-mlperf-speed}
repo=$(cd "$(dirname "$0")/.." && pwd)
python=/usr/bin/python3

if [[ $(id -u) != 0 ]]; then
	echo "mlperf-speed: dropping the page cache needs root" >&2
	exit 2
fi
mkdir -p "$out"
out=$(realpath "$out")
rm -rf "$out/py" "$out/go"
cp -a "$trees" "$out/py"
cp -a "$trees" "$out/go"
times=$out/times.tsv
printf 'tree\tresult_files\tMB\ttool\tcache\tseconds\tverdict\n' >"$times"

# CHECKER_TAG, where set, is the mlcommons/logging source to time instead
# of each round's release (for round 3.1, whose tag 3.1.0-rc3 stops on
# every tree: CHECKER_TAG=7bbf792, today's).
release_of() { # round -> tag
	if [[ -n ${CHECKER_TAG:-} ]]; then
		echo "$CHECKER_TAG"
		return
	fi
	sed -n 's/^release: "\(.*\)"$/\1/p' "$repo/verifier/mlperf_rounds/training_$1.0.yaml"
}

now() { date +%s.%N; }

# run TOOL CACHE TREE ROUND TAG: one timed run, appended to times.tsv.
run() {
	local tool=$1 cache=$2 tree=$3 round=$4 tag=$5 log start end verdict
	log="$out/logs/$tool-$cache-${tree//\//_}.txt"
	mkdir -p "$out/logs"
	if [[ $cache == cold ]]; then
		sync
		echo 3 >/proc/sys/vm/drop_caches
	fi
	# The package checker runs from the release's own folder, as its tools
	# expect (1.0.0 reads its RCP files relative to the working folder),
	# and writes package_checker.log there.
	rm -f "$logging/$tag/package_checker.log"
	start=$(now)
	if [[ $tool == package_checker ]]; then
		(cd "$logging/$tag" && "$python" -m mlperf_logging.package_checker "$out/py/$tree" training "$round.0") >"$log" 2>&1 || true
		end=$(now)
		if grep -q "Found too many errors in logging" "$log"; then
			verdict=refused # 1.0.0 refuses by raising this
		elif grep -q "Traceback" "$log"; then
			verdict=stopped
		elif grep -qs "FOUND NO ERRORS" "$log" "$logging/$tag/package_checker.log"; then
			verdict=accepted
		elif [[ $tag == 0.7.1 || $tag == 1.0.0 ]]; then
			verdict=accepted # these releases print no verdict; they stop on an error
		else
			verdict=refused
		fi
	else
		"$d5list" check --mlperf --round "$round" --json "$out/go/$tree" >"$log" 2>&1 || true
		end=$(now)
		if grep -q -m1 '^  "accepted": true' "$log"; then
			verdict=accepted
		else
			verdict=refused
		fi
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tree" "$files" "$mb" "$tool" "$cache" \
		"$(echo "$end - $start" | bc)" "$verdict" >>"$times"
}

for dir in "$trees"/v*/*/; do
	tree=${dir#"$trees"/}
	tree=${tree%/}
	round=${tree%%/*}
	round=${round#v}
	tag=$(release_of "$round")
	if [[ -z $tag ]]; then
		echo "mlperf-speed: round $round has no release of mlcommons/logging; skipped" >&2
		continue
	fi
	files=$(find "$dir" -name 'result_*.txt' | wc -l)
	mb=$(du -sm "$dir" | cut -f1)
	# Warm right after cold, before the other tool's cold run drops the
	# cache again.
	for tool in package_checker d5list; do
		run "$tool" cold "$tree" "$round" "$tag"
		run "$tool" warm "$tree" "$round" "$tag"
	done
	echo "mlperf-speed: $tree done" >&2
done

# One row a tree: each tool's time cold and warm, and their ratios.
awk -F'\t' 'NR > 1 {
	key = $1; t[key, $4, $5] = $6; v[key, $4] = $7; files[key] = $2; mb[key] = $3
	if (!(key in seen)) { seen[key] = 1; order[++n] = key }
}
END {
	print "| tree | result files | MB | package checker cold | d5list cold | ratio cold | package checker warm | d5list warm | ratio warm | verdicts (checker, d5list) |"
	print "|---|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= n; i++) {
		k = order[i]
		pc = t[k, "package_checker", "cold"]; dc = t[k, "d5list", "cold"]
		pw = t[k, "package_checker", "warm"]; dw = t[k, "d5list", "warm"]
		printf "| %s | %d | %d | %.2f s | %.3f s | %.0fx | %.2f s | %.3f s | %.0fx | %s, %s |\n", k, files[k], mb[k], pc, dc, pc / dc, pw, dw, pw / dw, v[k, "package_checker"], v[k, "d5list"]
	}
}' "$times"
