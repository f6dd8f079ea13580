// Tabs between a board's ranking and its charts: one shows at a time, the
// charts a click from the top of the page however long its rows. The tab
// follows the address's #ranking or #charts, so that the "Charts" link in
// the rule line and a shared link open the charts. Without this script
// the tabs stay hidden and both sections show.
(function () {
  'use strict';

  function init() {
    var nav = document.querySelector('[data-testid="board-tabs"]');
    if (!nav) {
      return;
    }
    var tabs = nav.querySelectorAll('[data-tab]');
    var panels = {};
    for (var i = 0; i < tabs.length; i++) {
      var name = tabs[i].getAttribute('data-tab');
      panels[name] = document.getElementById(name);
      if (!panels[name]) {
        return;
      }
    }

    function show(name) {
      if (!panels[name]) {
        name = 'ranking';
      }
      for (var i = 0; i < tabs.length; i++) {
        var tab = tabs[i].getAttribute('data-tab');
        var on = tab === name;
        panels[tab].hidden = !on;
        tabs[i].setAttribute('aria-selected', on ? 'true' : 'false');
        tabs[i].classList.toggle('active', on);
      }
      // A chart drawn while its tab was hidden had no size of its own:
      // charts.js fits and measures every chart again on a resize.
      if (name === 'charts') {
        window.dispatchEvent(new Event('resize'));
      }
    }

    nav.addEventListener('click', function (e) {
      var a = e.target.closest('[data-tab]');
      if (!a) {
        return;
      }
      e.preventDefault();
      history.replaceState(null, '', '#' + a.getAttribute('data-tab'));
      show(a.getAttribute('data-tab'));
    });
    window.addEventListener('hashchange', function () {
      // Only the tabs' own names choose a tab: another anchor (the rules
      // folded above) leaves the one shown.
      var name = location.hash.slice(1);
      if (panels[name]) {
        show(name);
      }
    });
    nav.hidden = false;
    show(location.hash.slice(1));
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', init);
  } else {
    init();
  }
})();
