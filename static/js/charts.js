// Draws every chart on the page. A chart is an element with a data-chart
// attribute naming a <script type="application/json"> block that holds its
// ECharts option, written by the server; keeping the option out of inline
// code lets the pages run under script-src 'self'.
(function () {
  'use strict';

  function drawAll() {
    if (typeof echarts === 'undefined') {
      return;
    }
    var nodes = document.querySelectorAll('[data-chart]');
    for (var i = 0; i < nodes.length; i++) {
      draw(nodes[i]);
    }
  }

  function draw(el) {
    var block = document.getElementById(el.getAttribute('data-chart'));
    if (!block) {
      return;
    }
    var option;
    try {
      option = JSON.parse(block.textContent);
    } catch (e) {
      el.textContent = 'This chart could not be read.';
      return;
    }
    var chart = echarts.init(el, null, { renderer: 'canvas' });
    chart.setOption(option);
    window.addEventListener('resize', function () { chart.resize(); });
  }

  // submission.js redraws after swapping in a verdict without a reload.
  window.d5list = window.d5list || {};
  window.d5list.drawCharts = drawAll;

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', drawAll);
  } else {
    drawAll();
  }
})();
