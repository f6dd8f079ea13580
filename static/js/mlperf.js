// The MLPerf check page: the chosen archive is posted to
// /api/v1/mlperf/check with the session's CSRF token, and the report is
// shown as `d5list check --mlperf` prints it: the verdict, the score, each
// file's compliance with its problems (file and line), and the reasons.
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

  function show(result, rep) {
    result.textContent = '';
    var verdict = el('p', { 'class': rep.accepted ? 'notice' : 'form-error', 'data-testid': 'mlperf-verdict', 'data-accepted': String(rep.accepted) },
      (rep.accepted ? 'Accepted' : "Refused: MLPerf's package checker would not accept this folder") +
      ' (MLPerf Training ' + rep.round + ', ' + rep.benchmark + ', ' + rep.division + ' division).');
    result.appendChild(verdict);
    var score = rep.minutes === null || rep.minutes === undefined
      ? 'No valid score: ' + (rep.score.note || '')
      : 'Score: ' + rep.minutes.toFixed(3) + ' minutes' + (rep.scaling_factor !== 1 ? ' (RCP scaling ' + rep.scaling_factor.toFixed(4) + ')' : '');
    result.appendChild(el('p', { 'data-testid': 'mlperf-score' }, score));
    var table = el('table', { 'data-testid': 'mlperf-runs' });
    var head = el('tr');
    ['file', 'seed', 'status', 'seconds', 'compliant'].forEach(function (h) { head.appendChild(el('th', {}, h)); });
    table.appendChild(head);
    rep.runs.forEach(function (r) {
      var tr = el('tr', { 'data-testid': 'mlperf-run', 'data-compliant': String(r.compliant) });
      [r.file, String(r.seed), r.status, r.seconds.toFixed(3), r.compliant ? 'SUCCESS' : 'FAILED'].forEach(function (v) { tr.appendChild(el('td', {}, v)); });
      table.appendChild(tr);
      if (r.problems && r.problems.length) {
        var td = el('td', { colspan: '5' });
        td.appendChild(reasonList(r.problems, 'mlperf-problems'));
        var row = el('tr');
        row.appendChild(td);
        table.appendChild(row);
      }
    });
    var wrap = el('div', { 'class': 'table-wrap' });
    wrap.appendChild(table);
    result.appendChild(wrap);
    if (rep.reasons && rep.reasons.length) { result.appendChild(reasonList(rep.reasons, 'mlperf-reasons')); }
    if (rep.warnings && rep.warnings.length) { result.appendChild(reasonList(rep.warnings, 'mlperf-warnings')); }
  }

  function start() {
    var form = document.getElementById('mlperf-form');
    if (!form) { return; }
    var input = document.getElementById('mlperf-file');
    var button = document.getElementById('mlperf-submit');
    var round = document.getElementById('mlperf-round');
    var result = document.getElementById('mlperf-result');
    var meta = document.querySelector('meta[name="csrf-token"]');
    var maxBytes = parseInt(form.getAttribute('data-max-bytes'), 10) || 0;
    input.addEventListener('change', function () {
      var f = input.files[0];
      result.textContent = '';
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
      var url = form.getAttribute('data-endpoint') + (round.value ? '?round=' + encodeURIComponent(round.value) : '');
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
