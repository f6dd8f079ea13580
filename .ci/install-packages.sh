#!/usr/bin/env bash
# Installs the system packages the runner tests use: bubblewrap (the
# process executor's sandbox), slurm-wlm + munge (the Slurm executor's
# single-node cluster, started by runner/testdata/slurm/start.sh), and
# Debian's CPU PyTorch and scikit-learn (with the UCI digits inside) for
# /usr/bin/python3, which the PyTorch examples' end-to-end tests re-run.
# Skipped when everything is already installed.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v slurmctld >/dev/null 2>&1 || [ -x /usr/sbin/slurmctld ] || need+=(slurm-wlm)
command -v munged >/dev/null 2>&1 || [ -x /usr/sbin/munged ] || need+=(munge)
command -v prlimit >/dev/null 2>&1 || need+=(util-linux)
/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || need+=(python3-torch)
/usr/bin/python3 -c 'import sklearn' >/dev/null 2>&1 || need+=(python3-sklearn)
if [ ${#need[@]} -eq 0 ]; then
  echo "runner test packages already installed"
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "installing ${need[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
