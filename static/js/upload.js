// The upload page: a bundle, or the files of a submission folder, chosen by
// drag and drop or a file picker, is posted to the API with XMLHttpRequest, whose upload progress events feed
// the progress bar (fetch has none). The session cookie authenticates the
// request and the page's CSRF token goes in X-CSRF-Token. The server's
// check results are shown inline, each naming its file and line.
(function () {
  'use strict';

  function fmtBytes(n) {
    if (n < 1024) { return n + ' B'; }
    if (n < 1048576) { return (n / 1024).toFixed(1) + ' KiB'; }
    return (n / 1048576).toFixed(1) + ' MiB';
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function start() {
    var form = document.getElementById('upload-form');
    if (!form) { return; }
    var input = document.getElementById('bundle-file');
    var zone = document.getElementById('dropzone');
    var button = document.getElementById('upload-submit');
    var chosenText = document.getElementById('chosen');
    var wrap = document.getElementById('progress-wrap');
    var bar = document.getElementById('progress');
    var barText = document.getElementById('progress-text');
    var result = document.getElementById('upload-result');
    var meta = document.querySelector('meta[name="csrf-token"]');
    var folderInput = document.getElementById('folder-files');
    var maxBytes = parseInt(form.getAttribute('data-max-bytes'), 10) || 0;
    var file = null;    // a bundle
    var folder = null;  // or a folder's files: [{file, path}], paths inside the folder

    function chosen(label, size) {
      result.textContent = '';
      chosenText.textContent = label + ' (' + fmtBytes(size) + ')';
      if (maxBytes && size > maxBytes) {
        showError('too_large', 'The upload is ' + fmtBytes(size) + '; the limit is ' + fmtBytes(maxBytes) + '.', []);
        button.disabled = true;
        return;
      }
      button.disabled = false;
    }

    function choose(f) {
      file = f || null;
      folder = null;
      if (!file) {
        chosenText.textContent = '';
        button.disabled = true;
        return;
      }
      chosen(file.name, file.size);
    }

    // chooseFolder takes files with paths that start with the folder's own
    // name ("mysub/results/result_0.txt") and keeps the part inside it.
    function chooseFolder(items) {
      file = null;
      folder = null;
      if (!items.length) { choose(null); return; }
      var top = items[0].path.split('/')[0];
      var shared = items.every(function (it) { return it.path.indexOf(top + '/') === 0; });
      folder = items.map(function (it) {
        return { file: it.file, path: shared ? it.path.slice(top.length + 1) : it.path };
      }).filter(function (it) { return !/(^|\/)\.git(\/|$)/.test(it.path); });
      var size = folder.reduce(function (n, it) { return n + it.file.size; }, 0);
      chosen((shared ? top : 'folder') + ': ' + folder.length + ' files', size);
    }

    // readEntries walks a dropped folder (the File System entries API).
    function readEntries(entry, prefix, out, done) {
      if (entry.isFile) {
        entry.file(function (f) { out.push({ file: f, path: prefix + entry.name }); done(); }, done);
        return;
      }
      var reader = entry.createReader();
      var children = [];
      (function more() {
        reader.readEntries(function (batch) {
          if (batch.length) { children = children.concat(batch); more(); return; }
          var left = children.length;
          if (!left) { done(); return; }
          children.forEach(function (c) {
            readEntries(c, prefix + entry.name + '/', out, function () { if (--left === 0) { done(); } });
          });
        }, done);
      })();
    }

    function showError(code, message, reasons) {
      result.textContent = '';
      var box = el('div', { 'class': 'form-error', 'role': 'alert', 'data-testid': 'upload-error', 'data-code': code });
      box.appendChild(el('p', { 'data-testid': 'upload-error-message' }, message));
      if (reasons && reasons.length) {
        var ul = el('ul', { 'class': 'reasons', 'data-testid': 'reasons' });
        reasons.forEach(function (r) {
          var li = el('li', { 'data-testid': 'reason', 'data-code': r.code });
          li.appendChild(el('code', { 'data-testid': 'reason-code' }, r.code));
          li.appendChild(document.createTextNode(' '));
          li.appendChild(el('span', { 'data-testid': 'reason-message' }, r.message));
          if (r.file) {
            var where = r.file + (r.line ? ':' + r.line : '');
            li.appendChild(document.createTextNode(' '));
            li.appendChild(el('span', { 'class': 'muted', 'data-testid': 'reason-where' }, '(' + where + ')'));
          }
          ul.appendChild(li);
        });
        box.appendChild(ul);
      }
      result.appendChild(box);
    }

    input.addEventListener('change', function () { choose(input.files[0]); });
    if (folderInput) {
      folderInput.addEventListener('change', function () {
        chooseFolder(Array.prototype.map.call(folderInput.files, function (f) {
          return { file: f, path: f.webkitRelativePath || f.name };
        }));
      });
    }
    ['dragenter', 'dragover'].forEach(function (t) {
      zone.addEventListener(t, function (e) { e.preventDefault(); zone.classList.add('over'); });
    });
    ['dragleave', 'drop'].forEach(function (t) {
      zone.addEventListener(t, function (e) { e.preventDefault(); zone.classList.remove('over'); });
    });
    zone.addEventListener('drop', function (e) {
      var dt = e.dataTransfer;
      if (!dt) { return; }
      var entry = dt.items && dt.items.length && dt.items[0].webkitGetAsEntry ? dt.items[0].webkitGetAsEntry() : null;
      if (entry && entry.isDirectory) {
        var items = [];
        readEntries(entry, '', items, function () { chooseFolder(items); });
        return;
      }
      if (dt.files.length) { choose(dt.files[0]); }
    });

    form.addEventListener('submit', function (e) {
      e.preventDefault();
      if (!file && !folder) { return; }
      button.disabled = true;
      wrap.hidden = false;
      bar.value = 0;
      barText.textContent = '0%';
      var data = new FormData();
      if (folder) {
        folder.forEach(function (it) { data.append('files', it.file, it.path); });
      } else {
        data.append('bundle', file, file.name);
      }
      var xhr = new XMLHttpRequest();
      xhr.open('POST', form.getAttribute('data-endpoint'));
      xhr.setRequestHeader('Accept', 'application/json');
      if (meta) { xhr.setRequestHeader('X-CSRF-Token', meta.getAttribute('content')); }
      xhr.upload.addEventListener('progress', function (ev) {
        if (!ev.lengthComputable) { return; }
        var pct = Math.round(100 * ev.loaded / ev.total);
        bar.value = pct;
        barText.textContent = fmtBytes(ev.loaded) + ' / ' + fmtBytes(ev.total) + ' (' + pct + '%)';
      });
      xhr.addEventListener('load', function () {
        var body = null;
        try { body = JSON.parse(xhr.responseText); } catch (err) { body = null; }
        if ((xhr.status === 201 || xhr.status === 200) && body && body.url) {
          // 200: files uploaded before; their entry says so.
          var url = body.repeated ? body.url + '?repeated=1' : body.url;
          bar.value = 100;
          result.textContent = '';
          var ok = el('p', { 'class': 'notice', 'data-testid': 'upload-ok' },
            body.repeated ? body.message + ' Opening it… ' : 'Accepted as submission #' + body.id + '; opening it… ');
          ok.appendChild(el('a', { href: url }, body.url));
          result.appendChild(ok);
          window.location.assign(url);
          return;
        }
        var err = (body && body.error) || { code: 'error', message: 'The upload failed (HTTP ' + xhr.status + ').', reasons: [] };
        showError(err.code, err.message, err.reasons);
        button.disabled = false;
      });
      xhr.addEventListener('error', function () {
        showError('network', 'The upload was interrupted; check the connection and try again.', []);
        button.disabled = false;
      });
      xhr.send(data);
    });
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();
