#!/bin/sh
# Prints a `go test -run` pattern that matches every test calling
# slowtest.Require, so that CI runs exactly the tests `go test ./...` skips:
#   D5LIST_SLOW=1 go test -p 1 -count=1 -timeout 45m -run "$(scripts/slow-tests.sh)" ./...
set -eu
cd "$(dirname "$0")/.."
names=$(git ls-files '*_test.go' | xargs awk '
  /^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name) }
  /slowtest\.Require\(/ && name != "" { print name }
' | sort -u | paste -sd '|' -)
if [ -z "$names" ]; then
  echo "scripts/slow-tests.sh: no test calls slowtest.Require" >&2
  exit 1
fi
printf '^(%s)$\n' "$names"
