// While a submission has no verdict, asks the API for it every few
// seconds and shows each change in place: the status badge, the job's
// state and place in line, and the findings. Once the verdict is in, the
// page's main part is fetched again and swapped in, with its charts, so
// the page never reloads.
(function () {
  'use strict';

  var INTERVAL_MS = 1500;

  function words(status) { return status.replace(/_/g, ' '); }

  function start() {
    var el = document.querySelector('[data-poll-url]');
    if (!el || !window.fetch) {
      return;
    }
    var url = el.getAttribute('data-poll-url');
    var shown = el.getAttribute('data-status');
    var jobLine = document.createElement('p');
    jobLine.className = 'muted';
    jobLine.setAttribute('data-testid', 'job-state');
    jobLine.setAttribute('aria-live', 'polite');
    var pending = document.querySelector('[data-testid="pending"]');
    if (pending && pending.parentNode) {
      pending.parentNode.insertBefore(jobLine, pending.nextSibling);
    }

    function showJob(sub) {
      var text = '';
      if (sub.job_state) {
        text = 'Job: ' + words(sub.job_state);
        if (sub.queue_position > 0) { text += ', number ' + sub.queue_position + ' in line'; }
        if (sub.attempt > 0) { text += ', attempt ' + sub.attempt + (sub.max_attempts ? ' of ' + sub.max_attempts : ''); }
      }
      jobLine.textContent = text;
    }

    function showStatus(sub) {
      el.setAttribute('data-status', sub.status);
      var badge = document.querySelector('[data-testid="status-badge"]');
      if (badge) {
        badge.textContent = words(sub.status);
        badge.className = 'badge status-' + sub.status;
      }
    }

    // swapMain replaces the page's main part with the server's rendering
    // of the verdict and redraws its charts.
    function swapMain() {
      return fetch(window.location.pathname, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
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

    function poll() {
      fetch(url, { headers: { Accept: 'application/json' }, credentials: 'same-origin' })
        .then(function (resp) { return resp.ok ? resp.json() : null; })
        .then(function (sub) {
          if (!sub) {
            setTimeout(poll, INTERVAL_MS * 2);
            return;
          }
          showJob(sub);
          if (sub.status !== shown) {
            shown = sub.status;
            showStatus(sub);
          }
          if (sub.final) {
            swapMain();
            return;
          }
          setTimeout(poll, INTERVAL_MS);
        })
        .catch(function () { setTimeout(poll, INTERVAL_MS * 2); });
    }
    poll();
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();
