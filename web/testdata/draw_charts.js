// Run by TestChartsDrawInECharts: node draw_charts.js ECHARTS_JS CHARTS_JS PAGE_BLOCKS_JSON
// 1. Runs static/js/charts.js against a minimal DOM with a recording
//    echarts stand-in, to see that it finds every [data-chart] element and
//    hands it the parsed options of the block it names.
// 2. Gives the same options to the real ECharts (server-side SVG renderer)
//    and reports what it drew, so that a malformed option shows.
'use strict';
const fs = require('fs');
const vm = require('vm');

const [echartsPath, chartsPath, blocksPath] = process.argv.slice(2);
const blocks = JSON.parse(fs.readFileSync(blocksPath, 'utf8')); // [{id, options_id, text}]

const elements = blocks.map((b) => ({ id: b.id, attrs: { 'data-chart': b.options_id }, getAttribute(n) { return this.attrs[n]; }, textContent: '',
  clientWidth: 800, style: {} }));
const scripts = Object.fromEntries(blocks.map((b) => [b.options_id, { textContent: b.text }]));
const calls = [];
const sandbox = {
  JSON,
  document: {
    readyState: 'complete',
    querySelectorAll(sel) { return sel === '[data-chart]' ? elements : []; },
    getElementById(id) { return scripts[id] || null; },
    // charts.js measures legend names to fit them to the chart's width.
    createElement() { return { getContext() { return { measureText(t) { return { width: 7 * t.length }; } }; } }; },
  },
  getComputedStyle() { return { height: '400px' }; },
  window: { addEventListener() {} },
  echarts: { init(el) { return { setOption(o) { calls.push({ id: el.id, option: o }); }, resize() {} }; } },
};
vm.runInNewContext(fs.readFileSync(chartsPath, 'utf8'), sandbox, { filename: 'charts.js' });

const echarts = require(echartsPath);
const drawn = calls.map(({ id, option }) => {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width: 800, height: 400 });
  chart.setOption(option);
  const svg = chart.renderToSVGString();
  chart.dispose();
  return { id, series: option.series.length, svg };
});
process.stdout.write(JSON.stringify(drawn));
