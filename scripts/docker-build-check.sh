#!/usr/bin/env bash
# CI has no Docker engine. This builds the binary the Dockerfile builds, by
# the same steps and flags (read from the Dockerfile itself, so the two
# cannot drift), checks that it is statically linked and runs, and checks
# the Dockerfile's syntax: known instructions, stage names, COPY --from
# references, and the pieces the image promises (non-root USER, VOLUME
# /data, EXPOSE 8080, a HEALTHCHECK that the binary answers).
# With a Docker engine present, `docker build --check` is run as well.
set -euo pipefail
cd "$(dirname "$0")/.."
df=Dockerfile
fail() { echo "docker-build-check: $*" >&2; exit 1; }

# Join continuation lines, drop comments and blank lines.
instructions=$(sed -e 's/\r$//' "$df" | awk '
  /^[[:space:]]*#/ { next }
  { line = line $0 }
  /\\$/ { sub(/\\$/, "", line); next }
  { if (line ~ /[^[:space:]]/) print line; line = "" }')

known=" FROM RUN CMD LABEL EXPOSE ENV ADD COPY ENTRYPOINT VOLUME USER WORKDIR ARG ONBUILD STOPSIGNAL HEALTHCHECK SHELL MAINTAINER "
stages=" "
n=0
while IFS= read -r line; do
  n=$((n+1))
  kw=$(echo "$line" | awk '{print toupper($1)}')
  [[ "$known" == *" $kw "* ]] || fail "$df: instruction $n: unknown instruction '$kw'"
  if [ "$n" = 1 ] && [ "$kw" != FROM ] && [ "$kw" != ARG ]; then fail "$df: the first instruction must be FROM, got $kw"; fi
  case "$kw" in
    FROM)
      # FROM image [AS name]
      set -- $line
      [ $# = 2 ] || { [ $# = 4 ] && [ "$(echo "$3" | tr a-z A-Z)" = AS ]; } || fail "$df: '$line': want FROM IMAGE [AS NAME]"
      [ $# = 4 ] && stages="$stages$4 " ;;
    COPY)
      from=$(echo "$line" | grep -oE -- '--from=[^ ]+' | cut -d= -f2 || true)
      if [ -n "$from" ] && [[ "$stages" != *" $from "* ]]; then fail "$df: '$line': no earlier stage named '$from'"; fi ;;
  esac
done <<< "$instructions"

grep -qE '^USER +[^0r]' <<< "$instructions" || fail "$df: the final image must set a non-root USER"
grep -qE '^VOLUME +/data' <<< "$instructions" || fail "$df: VOLUME /data is missing"
grep -qE '^EXPOSE +8080' <<< "$instructions" || fail "$df: EXPOSE 8080 is missing"
grep -qE '^HEALTHCHECK .*healthcheck' <<< "$instructions" || fail "$df: HEALTHCHECK must run d5list healthcheck"
echo "docker-build-check: $df: $n instructions, stages:$stages- syntax ok"

# The build step, taken from the Dockerfile: the same flags, cgo off.
build=$(grep -E '^RUN go build ' <<< "$instructions" | head -1 | sed -e 's/^RUN //')
[ -n "$build" ] || fail "$df: no 'RUN go build' step"
grep -qE '^ENV CGO_ENABLED=0' <<< "$instructions" || fail "$df: the build stage must set CGO_ENABLED=0"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
build=${build//\/out\/d5list/$out/d5list}
echo "docker-build-check: CGO_ENABLED=0 $build"
env CGO_ENABLED=0 bash -c "$build"

bin="$out/d5list"
if command -v file >/dev/null; then
  desc=$(file "$bin")
  echo "docker-build-check: $desc"
  grep -qE 'statically linked|static-pie linked' <<< "$desc" || fail "$bin is not statically linked: $desc"
else
  # ldd says "not a dynamic executable" (exit 1) for a static binary.
  if ldd "$bin" >/dev/null 2>&1; then fail "$bin is dynamically linked: $(ldd "$bin")"; fi
  echo "docker-build-check: ldd: not a dynamic executable"
fi
"$bin" help >/dev/null || fail "the built binary does not run"
"$bin" healthcheck --url http://127.0.0.1:1/healthz --timeout 1s >/dev/null 2>&1 && fail "healthcheck succeeded against a closed port"

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  docker build --check . || fail "docker build --check failed"
fi
echo "docker-build-check: ok"
