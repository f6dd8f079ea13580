#!/usr/bin/python3
"""Records what one source of mlcommons/logging says of the published trees.

usage: record.py LOGGING_SRC OUT.json TREE... [--ruleset X.Y.Z] [--tag TAG]

LOGGING_SRC is a folder holding mlperf_logging (a tag exported with git
archive); each TREE is an organisation tree v<round>/<Org>. OUT.json gets,
per organisation, the schema of recorded/v<round>.json: the package checker
on the whole tree and on each benchmark folder alone, each result file's
compliance, each system description, and the result summarizer's rows.
The ruleset defaults to the round of the tree's folder (v2.1 -> 2.1.0).

Every tool runs in a child process of its own (`record.py --worker ...`)
with LOGGING_SRC first on sys.path, on a copy of the tree in a temporary
folder; the folder's name is replaced by /tmp/record in every message so
that two recordings of the same trees compare equal.

The tags differ in their entry points; the worker adapts:
- package checker: check_training_package(folder, ruleset, quiet, werror
  [, rcp_bypass, rcp_bert_train_samples]) in 0.7.1 and 1.0.0, which print
  and raise 'Found too many errors ...' to refuse (recorded as refused, the
  exception as its error); (folder, usage, ruleset, ..., log_output) from
  1.1.0, which logs ERROR lines and 'FOUND NO ERRORS' (seed_checker_bypass
  from 4.1.0). The RCP message and the seed verdict are taken from the
  checkers' own return values (RCP_Checker._check_directory, or
  rcp_checker.check_directory where the tag has it; SeedChecker.check_seeds),
  since 1.0.0 prints no message for a passed RCP check.
- compliance: make_checker(ruleset, quiet, werror) with '<ruleset>/common.yaml'
  in 0.7.1 and 1.0.0, make_checker(usage, ruleset, quiet, werror) with
  'training_<ruleset>/common.yaml' from 1.1.0; the verdict is check_file's,
  the messages and warnings the checker's own lists (first line of each).
- system descriptions: check_training_system_desc(file, ruleset) in 0.7.1 and
  1.0.0, check_system_desc(file, usage, ruleset) from 1.1.0.
- result summarizer: summarize_results(folder, ruleset) in 0.7.1 and 1.0.0,
  which print a CSV with two decimals: the scores are taken from
  _compute_olympic_average as it returns, attributed to the folder of the
  last file _read_mlperf_score read; from 1.1.0 summarize_results(folder,
  usage, ruleset), whose scores are taken from _compute_strong_scaling_scores
  as it returns (a pair from 4.1.0 on). Where summarize_results raises, the
  summary is recorded as stopped with the exception and no rows.
"""
import contextlib
import glob
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

PLACEHOLDER = '/tmp/record'


def stop_text(e):
    return '{}: {}'.format(type(e).__name__, e)


def first_line(s):
    return str(s).split('\n')[0]


# ---------------------------------------------------------------- worker side

def old_api(ml):
    """0.7.1 and 1.0.0 have no usage argument."""
    import inspect
    from mlperf_logging.compliance_checker import mlp_compliance
    return 'usage' not in inspect.signature(mlp_compliance.make_checker).parameters


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.INFO)
        self.records = []

    def emit(self, record):
        self.records.append((record.levelno, record.getMessage()))


def worker_package(tree, ruleset):
    import mlperf_logging
    from mlperf_logging.package_checker import package_checker as pc
    import importlib
    try:
        sc = importlib.import_module('mlperf_logging.package_checker.seed_checker')
    except ImportError:  # 0.7.1 has no seed checker
        sc = None
    try:
        rc = importlib.import_module('mlperf_logging.rcp_checker.rcp_checker')
    except ImportError:  # nor an RCP checker
        rc = None
    old = old_api(mlperf_logging)
    out = {'errors': [], 'skipped': [], 'seeds_failed': False}
    rcps = []

    if sc is not None:
        orig_seeds = sc.SeedChecker.check_seeds

        def check_seeds(self, *a, **k):
            ok = orig_seeds(self, *a, **k)
            if not ok:
                out['seeds_failed'] = True
            return ok
        sc.SeedChecker.check_seeds = check_seeds
    if rc is None:
        pass
    elif hasattr(rc, 'check_directory'):
        orig_dir = rc.check_directory

        def check_directory(*a, **k):
            res = orig_dir(*a, **k)
            rcps.append((res[0], res[1]))
            return res
        rc.check_directory = check_directory
    elif hasattr(rc, 'RCP_Checker'):
        orig_cd = rc.RCP_Checker._check_directory

        def _check_directory(self, *a, **k):
            res = orig_cd(self, *a, **k)
            rcps.append((res[0], res[1]))
            return res
        rc.RCP_Checker._check_directory = _check_directory

    cap = Capture()
    root = logging.getLogger()
    root.handlers[:] = [cap]
    root.setLevel(logging.INFO)
    stdout = io.StringIO()
    stop = None
    refused_by_exception = None
    try:
        with contextlib.redirect_stdout(stdout):
            if old:
                import inspect
                n = len(inspect.signature(pc.check_training_package).parameters)
                args = [tree, ruleset, False, False]
                if n >= 6:
                    args += [False, False]
                pc.check_training_package(*args)
            else:
                import inspect
                params = inspect.signature(pc.check_training_package).parameters
                args = [tree, 'training', ruleset, False, False, False, False]
                if 'seed_checker_bypass' in params:
                    args.append(False)
                args.append(os.path.join(os.path.dirname(tree), 'package_checker.log'))
                pc.check_training_package(*args)
    except Exception as e:
        if str(e).startswith('Found too many errors'):
            refused_by_exception = str(e)
        else:
            stop = stop_text(e)
    printed = stdout.getvalue().splitlines()
    for level, msg in cap.records:
        if level >= logging.ERROR:
            out['errors'].append(first_line(msg.strip()))
        m = re.match(r'\s*Skipping benchmark: (\S+)', msg)
        if m:
            out['skipped'].append(m.group(1))
    for line in printed:
        if line.startswith('ERROR: '):
            out['errors'].append(line[len('ERROR: '):].strip())
        m = re.match(r'Skipping benchmark: (\S+)', line)
        if m:
            out['skipped'].append(m.group(1))
    if refused_by_exception:
        out['errors'].append(refused_by_exception)
    if stop:
        out['outcome'] = 'stopped'
        out['stop'] = stop
    elif refused_by_exception:
        out['outcome'] = 'refused'
    elif old:
        out['outcome'] = 'accepted'
    else:
        found = any('FOUND NO ERRORS' in m for _, m in cap.records)
        out['outcome'] = 'accepted' if found else 'refused'
    if rcps:
        out['rcp'] = rcps[-1][1]
        out['rcp_passed'] = bool(rcps[-1][0])
    return out


def worker_summary(tree, ruleset):
    import mlperf_logging
    from mlperf_logging.result_summarizer import result_summarizer as rs
    old = old_api(mlperf_logging)
    captured = {}  # system folder -> (desc, scores)
    order = []
    if old:
        last = {}
        orig_read = rs._read_mlperf_score
        orig_avg = rs._compute_olympic_average

        def _read_mlperf_score(result_file, *a, **k):
            parts = result_file.split('/')
            last['system'], last['benchmark'] = parts[-3], rs._benchmark_alias(parts[-2])
            return orig_read(result_file, *a, **k)

        def _compute_olympic_average(*a, **k):
            v = orig_avg(*a, **k)
            if last:
                captured.setdefault(last['system'], {})[last['benchmark']] = v
            return v
        rs._read_mlperf_score = _read_mlperf_score
        rs._compute_olympic_average = _compute_olympic_average
    else:
        orig = rs._compute_strong_scaling_scores

        def _compute_strong_scaling_scores(desc, system_folder, *a, **k):
            res = orig(desc, system_folder, *a, **k)
            scores = res[0] if isinstance(res, tuple) else res
            captured[os.path.basename(system_folder)] = dict(scores)
            order.append(os.path.basename(system_folder))
            return res
        rs._compute_strong_scaling_scores = _compute_strong_scaling_scores
    stdout = io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout):
            if old:
                rs.summarize_results(tree, ruleset)
            else:
                rs.summarize_results(tree, 'training', ruleset)
    except Exception as e:
        return {'outcome': 'stopped', 'stop': stop_text(e)}
    if old:
        names = [n for n in dir(rs) if n.startswith('_ALLOWED_BENCHMARKS')]
        allowed = []
        key = '_ALLOWED_BENCHMARKS_V' + ruleset.replace('.', '')[:2]
        if hasattr(rs, key):
            allowed = list(getattr(rs, key))
        elif names:
            allowed = list(getattr(rs, names[-1]))
    rows = []
    for system, scores in sorted(captured.items()):
        if not old and len(scores) == 0:
            continue
        with open(os.path.join(tree, 'systems', system + '.json')) as f:
            desc = json.load(f)
        if old:
            scores = {b: scores.get(b) for b in allowed} | scores
        row = {
            'system': system,
            'system_name': rs._pretty_system_name(desc),
            'division': desc.get('division'),
            'availability': desc.get('status'),
            'accelerators_count': int(desc['accelerators_per_node']) * int(desc['number_of_nodes']),
            'host_processors_count': int(desc['host_processors_per_node']) * int(desc['number_of_nodes']),
            'scores': {},
        }
        for b, v in scores.items():
            try:
                v = None if v is None or v != v else float(v)
            except (TypeError, ValueError):
                v = None
            row['scores'][b] = v
        rows.append(row)
    return {'outcome': 'ok', 'rows': rows}


def worker_files(tree, ruleset):
    import mlperf_logging
    from mlperf_logging.compliance_checker import mlp_compliance as mc
    old = old_api(mlperf_logging)
    files = {}
    for path in sorted(glob.glob(os.path.join(tree, 'results', '*', '*', 'result_*.txt'))):
        parts = path.split('/')
        key = parts[-3] + '/' + parts[-2] + '/' + parts[-1]
        if old:
            checker = mc.make_checker(ruleset, False, False)
            config = '{}/common.yaml'.format(ruleset)
        else:
            checker = mc.make_checker('training', ruleset, False, False)
            config = 'training_{}/common.yaml'.format(ruleset)
        v = {}
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                valid = checker.check_file(path, config)
            v['valid'] = bool(valid)
        except Exception as e:
            v['valid'] = False
            v['stop'] = stop_text(e)
        v['messages'] = [first_line(m) for m in list(checker.overwritable.values()) + list(checker.not_overwritable)]
        v['warnings'] = [first_line(m) for m in checker.warnings.values()]
        files[key] = v
    systems = {}
    from mlperf_logging.system_desc_checker import system_desc_checker as sd
    for path in sorted(glob.glob(os.path.join(tree, 'systems', '*.json'))):
        v = {}
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                if hasattr(sd, 'check_system_desc'):
                    res = sd.check_system_desc(path, 'training', ruleset)
                else:
                    res = sd.check_training_system_desc(path, ruleset)
            v['valid'] = bool(res[0])
        except Exception as e:
            v['valid'] = False
            v['stop'] = stop_text(e)
        systems[os.path.basename(path)] = v
    return {'files': files, 'systems': systems}


def worker(kind, tree, ruleset):
    logging.getLogger().handlers[:] = []
    fn = {'package': worker_package, 'summary': worker_summary, 'files': worker_files}[kind]
    try:
        res = fn(tree, ruleset)
    except Exception as e:
        traceback.print_exc(file=sys.stderr)
        res = {'outcome': 'stopped', 'stop': stop_text(e), 'errors': []}
    sys.__stdout__.write('\n@@RESULT@@' + json.dumps(res) + '\n')


# ---------------------------------------------------------------- parent side

def run_worker(src, kind, tree, ruleset, tmp):
    env = dict(os.environ, PYTHONPATH=src, PYTHONDONTWRITEBYTECODE='1')
    # cwd: 1.0.0's RCP checker opens its rcps_*.json relative to it
    p = subprocess.run([sys.executable, os.path.abspath(__file__), '--worker', kind, tree, ruleset],
                       cwd=src, env=env, capture_output=True, text=True, timeout=3600)
    marker = p.stdout.rfind('@@RESULT@@')
    if marker < 0:
        tail = (p.stderr.strip().splitlines() or ['exit status %d' % p.returncode])[-1]
        return {'outcome': 'stopped', 'stop': tail, 'errors': []}
    return json.loads(p.stdout[marker + len('@@RESULT@@'):].splitlines()[0])


def scrub(v, tmp):
    if isinstance(v, str):
        return v.replace(tmp, PLACEHOLDER)
    if isinstance(v, list):
        return [scrub(x, tmp) for x in v]
    if isinstance(v, dict):
        return {scrub(k, tmp): scrub(x, tmp) for k, x in v.items()}
    return v


def read_scaling(folder):
    try:
        with open(os.path.join(folder, 'scaling.json')) as f:
            return json.load(f).get('scaling_factor')
    except (OSError, ValueError, AttributeError):
        return None


def record_tree(src, tree, ruleset):
    tmp = tempfile.mkdtemp()
    try:
        whole = os.path.join(tmp, 'whole')
        shutil.copytree(tree, whole)
        rec = {'ruleset': ruleset}
        rec['package_checker'] = run_worker(src, 'package', whole, ruleset, tmp)
        rec['summary'] = run_worker(src, 'summary', whole, ruleset, tmp)
        fs = run_worker(src, 'files', whole, ruleset, tmp)
        rec['systems'] = fs.get('systems', {})
        files = fs.get('files', {})
        rec['benchmarks'] = {}
        for bdir in sorted(glob.glob(os.path.join(tree, 'results', '*', '*'))):
            if not os.path.isdir(bdir):
                continue
            system, bench = bdir.split('/')[-2], bdir.split('/')[-1]
            one = os.path.join(tmp, 'one-{}-{}'.format(system, bench))
            os.makedirs(os.path.join(one, 'systems'))
            os.makedirs(os.path.join(one, 'results', system))
            desc = os.path.join(tree, 'systems', system + '.json')
            if os.path.exists(desc):
                shutil.copy(desc, os.path.join(one, 'systems'))
            params = os.path.join(tree, 'results', system, 'package_checker_params')
            if os.path.exists(params):
                shutil.copy(params, os.path.join(one, 'results', system))
            shutil.copytree(bdir, os.path.join(one, 'results', system, bench))
            b = run_worker(src, 'package', one, ruleset, tmp)
            s = run_worker(src, 'summary', one, ruleset, tmp)
            b['minutes'] = None
            if s.get('outcome') == 'ok':
                for row in s['rows']:
                    if row['system'] == system:
                        b['minutes'] = row['scores'].get(bench)
                        if b['minutes'] is None:
                            # the summarizer's column may be an alias (0.7.1)
                            vals = [v for v in row['scores'].values() if v is not None]
                            if len(vals) == 1:
                                b['minutes'] = vals[0]
            else:
                b['summary_stop'] = s.get('stop')
            b['scaling'] = read_scaling(os.path.join(one, 'results', system, bench))
            prefix = system + '/' + bench + '/'
            b['files'] = {k[len(prefix):]: v for k, v in files.items() if k.startswith(prefix)}
            rec['benchmarks'][system + '/' + bench] = b
        return scrub(rec, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    if len(argv) >= 2 and argv[1] == '--worker':
        sys.path.insert(0, os.environ['PYTHONPATH'])
        worker(argv[2], argv[3], argv[4])
        return
    args = argv[1:]
    ruleset = tag = None
    if '--ruleset' in args:
        i = args.index('--ruleset')
        ruleset = args[i + 1]
        del args[i:i + 2]
    if '--tag' in args:
        i = args.index('--tag')
        tag = args[i + 1]
        del args[i:i + 2]
    if len(args) < 3:
        sys.exit(__doc__)
    src, out, trees = os.path.abspath(args[0]), args[1], args[2:]
    rec = {}
    if os.path.exists(out):
        with open(out) as f:
            rec = json.load(f)
    for tree in trees:
        tree = tree.rstrip('/')
        rnd = os.path.basename(os.path.dirname(os.path.abspath(tree)))
        rs = ruleset or re.sub(r'^v', '', rnd) + '.0'
        print('recording', tree, 'under', rs, file=sys.stderr)
        t = record_tree(src, os.path.abspath(tree), rs)
        if tag:
            t['tag'] = tag
        rec[os.path.basename(tree)] = t
        with open(out, 'w') as f:
            json.dump(rec, f, indent=1, sort_keys=True)
            f.write('\n')


if __name__ == '__main__':
    main(sys.argv)
