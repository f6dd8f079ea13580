// While a submission has no verdict, follows it without reloading: the
// status badge, the job's state, place in line and attempt, and (for the
// submitter and organisers) the re-run's log tail. It listens to the
// page's Server-Sent Events stream, and polls the JSON API where the
// browser has no EventSource. Once the verdict is in, the page's main part
// is fetched again and swapped in, with its charts.
(function () {
  'use strict';

  var POLL_MS = 1500;
  var MAX_LOG_LINES = 500;

  function words(status) { return status.replace(/_/g, ' '); }

  function start() {
    var el = document.querySelector('[data-poll-url]');
    if (!el || !window.fetch) {
      return;
    }
    var shown = el.getAttribute('data-status');
    var jobLine = document.querySelector('[data-testid="job-state"]');
    if (!jobLine) {
      jobLine = document.createElement('p');
      jobLine.className = 'muted';
      jobLine.setAttribute('data-testid', 'job-state');
      jobLine.setAttribute('aria-live', 'polite');
      var pending = document.querySelector('[data-testid="pending"]');
      if (pending && pending.parentNode) {
        pending.parentNode.insertBefore(jobLine, pending.nextSibling);
      }
    }
    var logTail = document.querySelector('[data-testid="log-tail"]');
    var finished = false;

    function showJob(st) {
      var text = '';
      if (st.job_state) {
        text = 'Job: ' + words(st.job_state);
        if (st.queue_position > 0) { text += ', number ' + st.queue_position + ' in line'; }
        if (st.attempt > 0) { text += ', attempt ' + st.attempt + (st.max_attempts ? ' of ' + st.max_attempts : ''); }
      }
      jobLine.textContent = text;
    }

    function showStatus(st) {
      if (st.status === shown) { return; }
      shown = st.status;
      el.setAttribute('data-status', st.status);
      var badge = document.querySelector('[data-testid="status-badge"]');
      if (badge) {
        badge.textContent = words(st.status);
        badge.className = 'badge status-' + st.status;
      }
    }

    function appendLines(lines) {
      if (!logTail || !lines || !lines.length) { return; }
      var last = Number(logTail.getAttribute('data-last-seq') || '0');
      lines.forEach(function (l) {
        if (l.seq <= last) { return; }
        last = l.seq;
        var span = document.createElement('span');
        span.className = 'log-line log-' + l.stream;
        span.setAttribute('data-testid', 'log-line');
        span.setAttribute('data-seq', String(l.seq));
        span.textContent = l.text + '\n';
        logTail.appendChild(span);
      });
      logTail.setAttribute('data-last-seq', String(last));
      while (logTail.childNodes.length > MAX_LOG_LINES) {
        logTail.removeChild(logTail.firstChild);
      }
    }

    // swapMain replaces the page's main part with the server's rendering
    // of the verdict and redraws its charts.
    function swapMain() {
      if (finished) { return; }
      finished = true;
      fetch(window.location.pathname, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
        .then(function (resp) { return resp.ok ? resp.text() : null; })
        .then(function (html) {
          if (!html) { return; }
          var doc = new DOMParser().parseFromString(html, 'text/html');
          var fresh = doc.getElementById('main');
          var main = document.getElementById('main');
          if (!fresh || !main) { return; }
          main.replaceChildren.apply(main, Array.prototype.slice.call(fresh.childNodes).map(function (n) {
            return document.importNode(n, true);
          }));
          if (window.d5list && window.d5list.drawCharts) { window.d5list.drawCharts(); }
        });
    }

    function onState(st) {
      showJob(st);
      showStatus(st);
      if (st.final) { swapMain(); }
    }

    function poll() {
      fetch(el.getAttribute('data-poll-url'), { headers: { Accept: 'application/json' }, credentials: 'same-origin' })
        .then(function (resp) { return resp.ok ? resp.json() : null; })
        .then(function (sub) {
          if (!sub) {
            setTimeout(poll, POLL_MS * 2);
            return;
          }
          onState(sub);
          if (!sub.final) { setTimeout(poll, POLL_MS); }
        })
        .catch(function () { setTimeout(poll, POLL_MS * 2); });
    }

    var eventsURL = el.getAttribute('data-events-url');
    if (!eventsURL || !window.EventSource) {
      poll();
      return;
    }
    var after = logTail ? logTail.getAttribute('data-last-seq') : '0';
    var source = new EventSource(eventsURL + '?after=' + encodeURIComponent(after || '0'), { withCredentials: true });
    function parse(ev) {
      try { return JSON.parse(ev.data); } catch (e) { return null; }
    }
    source.addEventListener('state', function (ev) {
      var st = parse(ev);
      if (st) { onState(st); }
    });
    source.addEventListener('log', function (ev) { appendLines(parse(ev)); });
    source.addEventListener('end', function (ev) {
      source.close();
      var st = parse(ev);
      if (st) { onState(st); } else { swapMain(); }
    });
    // EventSource reconnects by itself (resuming after the last line);
    // a stream the server refuses outright falls back to polling.
    source.onerror = function () {
      if (source.readyState === EventSource.CLOSED && !finished) { poll(); }
    };
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();
