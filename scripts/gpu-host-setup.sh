# Sourced by the scripts run on a borrowed GPU host (gpu-check.sh): gives
# this shell what the process executor needs where the host lacks it.
# Where there is no bubblewrap, the folder $1 may hold a bwrap binary and
# the libraries it links (ldd bwrap): they are installed under /usr/local.
# shellcheck shell=sh
if ! command -v bwrap >/dev/null && [ -x "$1/bwrap" ]; then
	for lib in "$1"/*.so.*; do
		name=$(basename "$lib")
		ldconfig -p | grep -q "$name" || cp "$lib" /usr/local/lib/
	done
	ldconfig
	cp "$1/bwrap" /usr/local/bin/bwrap
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
	mine=/sys/fs/cgroup/d5-gpu-host-$$
	mkdir "$mine"
	echo $$ >"$mine/cgroup.procs"
	echo "moved to $mine: $(cat "$mine/cgroup.controllers")"
fi

