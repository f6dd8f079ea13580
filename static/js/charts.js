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
    try {
      JSON.parse(block.textContent);
    } catch (e) {
      el.textContent = 'This chart could not be read.';
      return;
    }
    var chart = echarts.init(el, null, { renderer: 'canvas' });
    var width = -1;
    // The option is fitted to the chart's width again whenever that
    // changes: a phone turned, a window resized, a tab shown.
    function fit() {
      var now = el.clientWidth || contentWidth();
      if (now !== width) {
        width = now;
        var option = JSON.parse(block.textContent);
        el.style.height = '';
        fitWidth(option, el, now);
        chart.setOption(option, true);
      }
      chart.resize();
    }
    fit();
    window.addEventListener('resize', fit);
  }

  function list(x) {
    return x ? (Array.isArray(x) ? x : [x]) : [];
  }

  // fitWidth makes an option readable at el's width, a phone's included,
  // where ECharts would clip, page or overlap: a value axis's labels, a
  // value axis's title, which ECharts
  // centres over the axis line at the chart's left edge ("ne to train
  // (s)"), starts at the line instead; a title or subtitle wider than the
  // chart wraps; a legend wraps onto as many lines as its items need
  // rather than paging them. The plot moves down or up by the lines added
  // and the chart grows by them, so that the plot keeps its height.
  function fitWidth(option, el, width) {
    list(option.yAxis).forEach(function (axis) {
      if (axis.type === 'value' || axis.type === 'log') {
        // A value's label sits on its grid line instead of across it: the
        // lowest, across the plot's bottom edge, met the horizontal
        // axis's labels below it wherever a tick fell near the plot's
        // left edge ("1" over "12:00").
        axis.axisLabel = Object.assign({ verticalAlign: 'bottom' }, axis.axisLabel);
      }
    });
    list(option.yAxis).forEach(function (axis) {
      if (axis.name && (!axis.nameLocation || axis.nameLocation === 'end')) {
        axis.nameTextStyle = Object.assign({ align: 'left' }, axis.nameTextStyle);
      }
    });
    var grid = list(option.grid)[0];
    var grown = 0;
    var title = list(option.title)[0];
    if (title && grid) {
      // The plot starts below the title's last line with room for a value
      // axis's title above it (ECharts puts it nameGap, 15 px, over the
      // plot): its default 60 px top put that axis title over the subtitle.
      var titleLines = title.text ? 1 + wrap(title, 'text', 'bold 18px sans-serif', width) : 0;
      var subLines = title.subtext ? 1 + wrap(title, 'subtext', '12px sans-serif', width) : 0;
      title.textStyle = Object.assign({ lineHeight: 24 }, title.textStyle);
      title.subtextStyle = Object.assign({ lineHeight: 16 }, title.subtextStyle);
      var titleBottom = 5 + titleLines * 24 + (subLines ? 10 + subLines * 16 : 0);
      var named = list(option.yAxis).some(function (axis) {
        return axis.name && (!axis.nameLocation || axis.nameLocation === 'end');
      });
      var before = parseInt(grid.top, 10) || 60;
      var top = Math.max(before, titleBottom + (named ? 15 + 14 + 6 : 10));
      grid.top = top;
      grown += top - before;
    }
    var legend = list(option.legend)[0];
    if (legend && legend.show !== false) {
      legend.type = 'plain';
      var below = (legendLines(option, width) - 1) * 22;
      if (below > 0 && grid && legend.bottom !== undefined) {
        grid.bottom = (parseInt(grid.bottom, 10) || 60) + below;
        grown += below;
      }
    }
    if (grown > 0) {
      el.style.height = (parseFloat(getComputedStyle(el).height) + grown) + 'px';
    }
  }

  // wrap breaks o[key] into lines of at most width pixels in font, at
  // spaces, and says how many lines it added.
  function wrap(o, key, font, width) {
    if (!o[key]) {
      return 0;
    }
    var words = String(o[key]).split(' ');
    var lines = [words.shift()];
    words.forEach(function (w) {
      var next = lines[lines.length - 1] + ' ' + w;
      if (textWidth(next, font) > width - 10) {
        lines.push(w);
      } else {
        lines[lines.length - 1] = next;
      }
    });
    o[key] = lines.join('\n');
    return lines.length - 1;
  }

  var measure = null;

  function textWidth(text, font) {
    measure = measure || document.createElement('canvas').getContext('2d');
    measure.font = font;
    return measure.measureText(text).width;
  }

  // contentWidth is the width of the page's text, which a chart in a
  // hidden tab will take once shown (it has no width of its own then).
  function contentWidth() {
    var main = document.querySelector('main') || document.body;
    var style = getComputedStyle(main);
    return main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  }

  // legendLines is how many lines a legend's items take in width pixels,
  // as ECharts lays them out: a 25 px mark, 5 px, the name in 12 px text,
  // 10 px between items, 5 px of padding each side.
  function legendLines(option, width) {
    var seen = {};
    var lines = 1;
    var x = 0;
    list(option.series).forEach(function (s) {
      if (!s.name || seen[s.name]) {
        return;
      }
      seen[s.name] = true;
      var w = 25 + 5 + textWidth(s.name, '12px sans-serif');
      if (x > 0 && x + w > width - 10) {
        lines++;
        x = 0;
      }
      x += w + 10;
    });
    return lines;
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
