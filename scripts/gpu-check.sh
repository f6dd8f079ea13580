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
# The GPU host needs no Go. Where it has no bubblewrap, BIN may hold a
# bwrap binary and the libraries it links (ldd bwrap): they are installed
# under /usr/local for the run.
set -eu
bin=$(cd "$1" && pwd)

nvidia-smi -L
python3 -c 'import sys, torch; print(sys.executable, "torch", torch.__version__, "CUDA", torch.version.cuda, "GPU available:", torch.cuda.is_available())'
if ! command -v bwrap >/dev/null && [ -x "$bin/bwrap" ]; then
	for lib in "$bin"/*.so.*; do
		name=$(basename "$lib")
		ldconfig -p | grep -q "$name" || cp "$lib" /usr/local/lib/
	done
	ldconfig
	cp "$bin/bwrap" /usr/local/bin/bwrap
fi
command -v bwrap || echo "no bwrap: the sandboxed checks skip"
# The runner caps each job in a cgroup of its own; as root, where this
# shell's cgroup was given no pids controller (a container's or VM's
# agent), it moves to a fresh one with memory and pids, as systemd-run
# --scope -p Delegate=yes would give it.
here=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
if [ "$(id -u)" = 0 ] && ! grep -qw pids "$here/cgroup.controllers" 2>/dev/null; then
	echo "+memory +pids" >/sys/fs/cgroup/cgroup.subtree_control
	# Fresh each time: the runner's job cgroups below an earlier one keep
	# it from holding processes of its own.
	mine=/sys/fs/cgroup/d5-gpu-check-$$
	mkdir "$mine"
	echo $$ >"$mine/cgroup.procs"
	echo "moved to $mine: $(cat "$mine/cgroup.controllers")"
fi

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
