#!/bin/sh
# The checks only a host with an NVIDIA GPU can run: the sandbox reaches
# the job's GPU (nvidia-smi inside it), each job gets its own share, and
# the CIFAR-10 example trains on the GPU through the process executor and
# is verified end to end by a portal and a GPU runner.
# CI has no GPU; run this on one, from the repository's root:
#
#   CGO_ENABLED=0 go test -c -o BIN/runner.test ./runner
#   CGO_ENABLED=0 go test -c -o BIN/examples.test ./examples
#   CGO_ENABLED=0 go test -c -o BIN/d5list.test ./cmd/d5list
#   scripts/gpu-check.sh BIN
#
# The GPU host needs no Go; gpu-host-setup.sh gives it bubblewrap and a
# cgroup for the runner's caps where it has none.
set -eu
bin=$(cd "$1" && pwd)

nvidia-smi -L
python3 -c 'import sys, torch; print(sys.executable, "torch", torch.__version__, "CUDA", torch.version.cuda, "GPU available:", torch.cuda.is_available())'
. "$(dirname "$0")/gpu-host-setup.sh" "$bin"

# check PACKAGE TESTS: the tests of one package's binary, where BIN has it.
status=0
check() {
	[ -x "$bin/$(basename "$1").test" ] || { echo "no $bin/$(basename "$1").test: $1 not checked"; return; }
	(cd "$1" && "$bin/$(basename "$1").test" -test.run "$2" -test.count=1 -test.v) || status=1
}
check runner 'GPU|NVIDIA'
check examples TestSyntheticSmoke
check cmd/d5list TestGPUExampleEndToEnd
exit $status
