// While a submission has no verdict, follows it without reloading: the
// status badge, the job's state, place in line and attempt, and (for the
// submitter and organisers) the re-run's progress, a bar per run, and its
// raw log tail. It listens to the page's Server-Sent Events stream, and
// polls the JSON API where the browser has no EventSource. Once the verdict is in, the page's main part
// is fetched again and swapped in, with its charts. A verdict the viewer
// may not see (a discrepancy or failure no organiser has published) ends
// the stream with a neutral "ended" state, and the API and the page answer
// 404 from then on: the page then says the verdict is not public and stops.
(function () {
  'use strict';

  var POLL_MS = 1500;
  // Polls that fail for another reason (the portal restarting, a proxy's
  // 502) are retried, further apart each time, and given up after these.
  var MAX_POLL_MS = 30000;
  var MAX_POLL_FAILURES = 20;
  var MAX_LOG_LINES = 500;
  var NOT_PUBLIC = 'The verification ended; its verdict is not public until an organiser publishes it.';

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
    var source = null;

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

    // showProgress swaps in the re-run's progress section as the server
    // rendered it anew: the same markup the page was served with.
    function showProgress(progress) {
      var section = document.querySelector('[data-testid="rerun-progress"]');
      if (!section || !progress || typeof progress.html !== 'string') { return; }
      var fresh = new DOMParser().parseFromString(progress.html, 'text/html').querySelector('[data-testid="rerun-progress"]');
      if (fresh) { section.replaceWith(document.importNode(fresh, true)); }
    }

    // stop ends the following for good and says why in the pending line.
    function stop(message, status) {
      finished = true;
      if (source) { source.close(); }
      el.removeAttribute('data-poll-url');
      el.removeAttribute('data-events-url');
      if (status) {
        showStatus({ status: status });
      }
      jobLine.textContent = '';
      var pending = document.querySelector('[data-testid="pending"]');
      if (pending) {
        pending.textContent = message;
        pending.setAttribute('role', 'status');
      }
    }

    // notPublic is the end of an entry whose verdict the viewer may not
    // see: there is nothing to fetch, so nothing is retried.
    function notPublic(message) {
      if (message) {
        // The stream's message is a clause; the page shows a sentence.
        message = message.charAt(0).toUpperCase() + message.slice(1);
        if (!/[.!?]$/.test(message)) { message += '.'; }
      }
      stop(message || NOT_PUBLIC, 'ended');
      var badge = document.querySelector('[data-testid="status-badge"]');
      if (badge) { badge.textContent = 'verdict not public'; }
    }

    // swapMain replaces the page's main part with the server's rendering
    // of the verdict and redraws its charts.
    function swapMain() {
      if (finished) { return; }
      finished = true;
      fetch(window.location.pathname, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
        .then(function (resp) {
          if (resp.status === 404) {
            notPublic();
            return null;
          }
          if (!resp.ok) {
            stop('The verdict is in; reload the page to see it.');
            return null;
          }
          return resp.text();
        })
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
        })
        .catch(function () {
          // The connection dropped on the last fetch: say so rather than
          // leave the page waiting.
          stop('The verdict is in; reload the page to see it.');
        });
    }

    function onState(st) {
      if (st.status === 'ended') {
        notPublic(st.message);
        return;
      }
      showJob(st);
      showStatus(st);
      if (st.final) { swapMain(); }
    }

    var pollURL = el.getAttribute('data-poll-url');
    var failures = 0;
    function retry() {
      failures++;
      if (failures >= MAX_POLL_FAILURES) {
        stop('The portal has not answered for a while; reload the page to follow this submission.');
        return;
      }
      setTimeout(poll, Math.min(POLL_MS * Math.pow(2, failures), MAX_POLL_MS));
    }
    function poll() {
      if (finished) { return; }
      fetch(pollURL, { headers: { Accept: 'application/json' }, credentials: 'same-origin' })
        .then(function (resp) {
          // The page was shown to this viewer, so a 404 now is a verdict
          // it may not see; asking again would only get 404 again.
          if (resp.status === 404) {
            notPublic();
            return null;
          }
          if (!resp.ok) {
            retry();
            return null;
          }
          return resp.json();
        })
        .then(function (sub) {
          if (!sub || finished) { return; }
          failures = 0;
          onState(sub);
          if (!sub.final) { setTimeout(poll, POLL_MS); }
        })
        .catch(retry);
    }

    var eventsURL = el.getAttribute('data-events-url');
    if (!eventsURL || !window.EventSource) {
      poll();
      return;
    }
    var after = logTail ? logTail.getAttribute('data-last-seq') : '0';
    source = new EventSource(eventsURL + '?after=' + encodeURIComponent(after || '0'), { withCredentials: true });
    function parse(ev) {
      try { return JSON.parse(ev.data); } catch (e) { return null; }
    }
    source.addEventListener('state', function (ev) {
      var st = parse(ev);
      if (st) { onState(st); }
    });
    source.addEventListener('log', function (ev) { appendLines(parse(ev)); });
    source.addEventListener('progress', function (ev) { showProgress(parse(ev)); });
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
