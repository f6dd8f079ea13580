#!/usr/bin/env bash
# Portal chaos (issue 26): the real `d5list serve`, with two in-process
# runners, killed with SIGKILL at random moments while uploads stream in
# and re-runs write verdicts, KILLS times (default 100), then started
# again; after every restart nothing is half-stored (cmd/d5list
# TestPortalChaos says what is checked). Everything stays on 127.0.0.1.
# Takes about 10 minutes; run it under the shared lock on a shared machine:
#
#   flock /tmp/d5-heavy.lock scripts/portal-chaos.sh [KILLS]
set -euo pipefail
cd "$(dirname "$0")/.."
D5LIST_PORTAL_KILLS="${1:-100}" exec go test ./cmd/d5list -run '^TestPortalChaos$' -count=1 -v -timeout 60m
