#!/usr/bin/env bash
# fuzz.sh -- run every fuzz target of the module for FUZZTIME each (default
# 20s). Fuzz targets are found by name (func FuzzXxx in *_test.go); go test
# -fuzz takes one target of one package at a time. Some targets need a
# database: `make fuzz` runs this under scripts/testdb.sh. Every target runs
# even when one fails; the exit status says whether any did.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-20s}
found=0
failed=()
while IFS= read -r file; do
	dir=./$(dirname "$file")
	for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
		found=$((found + 1))
		echo "fuzz: $dir $target for $fuzztime"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$dir" || failed+=("$dir $target")
	done
done < <(grep -rlE '^func Fuzz[A-Za-z0-9_]+\(' --include='*_test.go' . | sed 's|^\./||' | sort)
echo "fuzz: ran $found targets, ${#failed[@]} failed"
for f in "${failed[@]}"; do echo "fuzz: FAILED $f"; done
[ ${#failed[@]} -eq 0 ]
