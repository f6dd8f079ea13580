// The MLPerf check page: the chosen archive is posted to
// /api/v1/mlperf/check with the session's CSRF token, and the report is
// shown as `d5list check --mlperf` prints it. For one benchmark's folder:
// the verdict, the score, each file's compliance with its problems (file
// and line), and the reasons. For a submission tree: the verdict, each
// system description's and each benchmark folder's, and the summary table.
(function () {
  'use strict';

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function where(r) {
    if (!r.file) { return ''; }
    return r.line > 0 ? r.file + ':' + r.line : r.file;
  }

  function reasonList(list, testid) {
    var ul = el('ul', { 'data-testid': testid });
    (list || []).forEach(function (r) {
      var li = el('li', { 'data-code': r.code });
      li.appendChild(el('code', {}, where(r)));
      li.appendChild(document.createTextNode(' ' + r.code + ': ' + r.message));
      ul.appendChild(li);
    });
    return ul;
  }

  function table(testid, heads) {
    var t = el('table', { 'data-testid': testid });
    var tr = el('tr');
    heads.forEach(function (h) { tr.appendChild(el('th', {}, h)); });
    t.appendChild(tr);
    return t;
  }

  function row(t, attrs, cells) {
    var tr = el('tr', attrs);
    cells.forEach(function (c) { tr.appendChild(el('td', {}, c)); });
    t.appendChild(tr);
    return tr;
  }

  // reasonRow adds a row of reasons under the row they belong to.
  function reasonRow(t, list, testid, colspan) {
    if (!list || !list.length) { return; }
    var td = el('td', { colspan: String(colspan) });
    td.appendChild(reasonList(list, testid));
    var tr = el('tr');
    tr.appendChild(td);
    t.appendChild(tr);
  }

  function wrapped(t) {
    var wrap = el('div', { 'class': 'table-wrap' });
    wrap.appendChild(t);
    return wrap;
  }

  function minutes(m) { return m === null || m === undefined ? '-' : m.toFixed(3); }

  function showTree(result, rep) {
    result.textContent = '';
    result.appendChild(el('p', { 'class': rep.accepted ? 'notice' : 'form-error', 'data-testid': 'mlperf-verdict', 'data-accepted': String(rep.accepted) },
      (rep.accepted ? 'Accepted' : "Refused: MLPerf's package checker would not accept this submission tree") +
      ' (MLPerf Training ' + rep.round + ', ' + rep.organization + ': ' + rep.systems.length + ' system descriptions, ' + rep.benchmarks.length + ' benchmark folders).'));
    result.appendChild(el('p', { 'class': 'muted', 'data-testid': 'mlperf-judged-by' }, 'Judged by the rules of ' + rep.rules + '.'));
    var systems = table('mlperf-systems', ['system description', 'system', 'division', 'status', 'verdict']);
    rep.systems.forEach(function (s) {
      row(systems, { 'data-testid': 'mlperf-system', 'data-accepted': String(s.accepted) },
        [s.file, s.system_name, s.division, s.status, s.accepted ? 'accepted' : 'refused']);
      reasonRow(systems, s.reasons, 'mlperf-reasons', 5);
    });
    result.appendChild(wrapped(systems));
    var benches = table('mlperf-benchmarks', ['folder', 'division', 'files failing', 'RCP', 'minutes', 'verdict']);
    rep.benchmarks.forEach(function (b) {
      var failing = b.runs.filter(function (r) { return !r.compliant; }).length + ' of ' + b.runs.length;
      row(benches, { 'data-testid': 'mlperf-benchmark', 'data-folder': b.folder, 'data-accepted': String(b.accepted) },
        [b.folder, b.division, failing, b.rcp ? b.rcp.message : '-', minutes(b.minutes), b.accepted ? 'accepted' : 'refused']);
      reasonRow(benches, b.reasons, 'mlperf-reasons', 6);
    });
    result.appendChild(wrapped(benches));
    var cols = [];
    rep.benchmarks.forEach(function (b) { if (cols.indexOf(b.benchmark) < 0) { cols.push(b.benchmark); } });
    var summary = table('mlperf-summary', ['system', 'division', 'accelerators'].concat(cols));
    rep.summary.forEach(function (r) {
      row(summary, { 'data-testid': 'mlperf-summary-row', 'data-system': r.system },
        [r.system_name, r.division, r.accelerators_count === null ? '-' : String(r.accelerators_count)].concat(cols.map(function (c) {
          return minutes(r.scores[c]) + ((r.refused || []).indexOf(c) >= 0 ? ' (refused)' : '');
        })));
    });
    result.appendChild(el('h2', {}, 'Summary, minutes'));
    result.appendChild(rep.summary.length ? wrapped(summary)
      : el('p', { 'data-testid': 'mlperf-summary' }, "None: MLCommons' result summarizer publishes none for this tree."));
    if (rep.summary.some(function (r) { return (r.refused || []).length > 0; })) {
      result.appendChild(el('p', { 'class': 'muted', 'data-testid': 'mlperf-refused-scores' },
        "(refused): the package checker refuses the folder; the score is the one MLCommons' result summarizer computes all the same, not a compliant result."));
    }
    if (rep.reasons.length) { result.appendChild(reasonList(rep.reasons, 'mlperf-reasons')); }
    if (rep.warnings.length) { result.appendChild(reasonList(rep.warnings, 'mlperf-warnings')); }
  }

  function show(result, rep) {
    if (Array.isArray(rep.benchmarks)) {
      showTree(result, rep);
      return;
    }
    result.textContent = '';
    var verdict = el('p', { 'class': rep.accepted ? 'notice' : 'form-error', 'data-testid': 'mlperf-verdict', 'data-accepted': String(rep.accepted) },
      (rep.accepted ? 'Accepted' : "Refused: MLPerf's package checker would not accept this folder") +
      ' (MLPerf Training ' + rep.round + ', ' + rep.benchmark + ', ' + rep.division + ' division).');
    result.appendChild(verdict);
    result.appendChild(el('p', { 'class': 'muted', 'data-testid': 'mlperf-judged-by' }, 'Judged by the rules of ' + rep.rules + '.'));
    var score = rep.minutes === null || rep.minutes === undefined
      ? 'No valid score: ' + (rep.score.note || '')
      : 'Score: ' + rep.minutes.toFixed(3) + ' minutes' + (rep.scaling_factor !== 1 ? ' (RCP scaling ' + rep.scaling_factor.toFixed(4) + ')' : '') +
        (rep.accepted ? '' : ": the one MLCommons' result summarizer computes for this refused folder, not a compliant result");
    result.appendChild(el('p', { 'data-testid': 'mlperf-score' }, score));
    var runs = table('mlperf-runs', ['file', 'seed', 'status', 'seconds', 'compliant']);
    rep.runs.forEach(function (r) {
      row(runs, { 'data-testid': 'mlperf-run', 'data-compliant': String(r.compliant) },
        [r.file, String(r.seed), r.status, r.seconds.toFixed(3), r.compliant ? 'SUCCESS' : 'FAILED']);
      reasonRow(runs, r.problems, 'mlperf-problems', 5);
    });
    result.appendChild(wrapped(runs));
    if (rep.reasons && rep.reasons.length) { result.appendChild(reasonList(rep.reasons, 'mlperf-reasons')); }
    if (rep.warnings && rep.warnings.length) { result.appendChild(reasonList(rep.warnings, 'mlperf-warnings')); }
  }

  function start() {
    var form = document.getElementById('mlperf-form');
    if (!form) { return; }
    var input = document.getElementById('mlperf-file');
    var button = document.getElementById('mlperf-submit');
    var round = document.getElementById('mlperf-round');
    var rules = document.getElementById('mlperf-rules');
    var result = document.getElementById('mlperf-result');
    var meta = document.querySelector('meta[name="csrf-token"]');
    var maxBytes = parseInt(form.getAttribute('data-max-bytes'), 10) || 0;
    input.addEventListener('change', function () {
      var f = input.files[0];
      result.textContent = '';
      Array.prototype.forEach.call(round.options, function (o) { o.disabled = false; });
      button.disabled = !f || (maxBytes > 0 && f.size > maxBytes);
      if (f && maxBytes > 0 && f.size > maxBytes) {
        result.appendChild(el('p', { 'class': 'form-error', 'data-testid': 'mlperf-error' }, 'The archive is larger than the limit of ' + maxBytes + ' bytes.'));
      }
    });
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var f = input.files[0];
      if (!f) { return; }
      button.disabled = true;
      result.textContent = '';
      var query = [];
      if (round.value) { query.push('round=' + encodeURIComponent(round.value)); }
      if (rules.value) { query.push('rules=' + encodeURIComponent(rules.value)); }
      var url = form.getAttribute('data-endpoint') + (query.length ? '?' + query.join('&') : '');
      var headers = { 'Content-Type': f.name.toLowerCase().endsWith('.zip') ? 'application/zip' : 'application/gzip' };
      if (meta) { headers['X-CSRF-Token'] = meta.getAttribute('content'); }
      fetch(url, { method: 'POST', body: f, headers: headers, credentials: 'same-origin' })
        .then(function (resp) { return resp.json().then(function (body) { return { ok: resp.ok, body: body }; }); })
        .then(function (res) {
          if (res.ok) {
            show(result, res.body);
            return;
          }
          var e = res.body.error || {};
          result.textContent = '';
          var offered = (e.reasons || []).filter(function (r) { return r.code === 'mlperf_round'; }).map(function (r) { return r.message; });
          if (offered.length) {
            // The round cannot be told from the archive: the select
            // offers only the rounds that fit it, and asks for one.
            Array.prototype.forEach.call(round.options, function (o) { o.disabled = o.value !== '' && offered.indexOf(o.value) < 0; });
            result.appendChild(el('p', { 'class': 'form-error', 'data-testid': 'mlperf-error' }, 'The round cannot be told from the archive: choose it above (' + offered.join(', ') + ') and check again.'));
            round.focus();
            return;
          }
          result.appendChild(el('p', { 'class': 'form-error', 'data-testid': 'mlperf-error' }, e.message || 'The check failed.'));
          result.appendChild(reasonList(e.reasons, 'mlperf-reasons'));
        })
        .catch(function (err) {
          result.textContent = '';
          result.appendChild(el('p', { 'class': 'form-error', 'data-testid': 'mlperf-error' }, String(err)));
        })
        .then(function () { button.disabled = false; });
    });
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
}());
