#!/usr/bin/env python3
"""Compares the RCP checks each round's package checker failed with the ones
`d5list check --mlperf` fails, tree by tree, on the outputs of
scripts/mlperf-speed.sh.

    scripts/mlperf-rcp-compare.py OUT [D5LIST TREES]

OUT is mlperf-speed.sh's output folder: the checker's cold logs
(OUT/logs/package_checker-cold-<tree>.txt) are read, and d5list's JSON of
the same run (OUT/logs/d5list-cold-<tree>.txt), or, where D5LIST and TREES
are given, that binary's answer on each tree of TREES now. Prints each tree
whose failed RCP checks differ, and how many agree.
"""
import collections
import glob
import json
import os
import re
import subprocess
import sys


def checker_failures(log):
    return collections.Counter(m.strip().rstrip('.') for m in re.findall(r'RCP Test Failed: ([^\n]*)', log))


def d5list_failures(report):
    return collections.Counter(b['rcp']['message'].strip().rstrip('.')
                               for b in report['benchmarks'] if b.get('rcp') and not b['rcp']['passed'])


def main():
    if len(sys.argv) not in (2, 4):
        sys.exit(__doc__)
    out = sys.argv[1]
    agree = total = 0
    for path in sorted(glob.glob(os.path.join(out, 'logs', 'package_checker-cold-*.txt'))):
        name = os.path.basename(path)[len('package_checker-cold-'):-len('.txt')]
        round_, org = name.split('_', 1)
        tree = f'{round_}/{org}'
        log = open(path, errors='replace').read()
        if 'Traceback' in log:
            continue  # the checker stopped: nothing to compare
        if len(sys.argv) == 4:
            answer = subprocess.run([sys.argv[2], 'check', '--mlperf', '--round', round_[1:], '--json',
                                     os.path.join(sys.argv[3], tree)], capture_output=True, text=True).stdout
        else:
            answer = open(os.path.join(out, 'logs', f'd5list-cold-{name}.txt'), errors='replace').read()
        total += 1
        try:
            mine = d5list_failures(json.loads(answer))
        except (ValueError, KeyError) as e:
            print('NO REPORT', tree, e)
            continue
        theirs = checker_failures(log)
        if mine == theirs:
            agree += 1
        else:
            print('DIFF', tree, 'checker:', dict(theirs), 'd5list:', dict(mine))
    print(agree, 'of', total, 'trees: the same failed RCP checks')


if __name__ == '__main__':
    main()
