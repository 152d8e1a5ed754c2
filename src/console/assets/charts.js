// Stacked bars per day, drawn as SVG with DOM calls (no inline style: the CSP holds), readable at
// 20 clients: the top clients by total and "the rest" stacked, each with its total in the legend.
import { h } from '/console/views.js';

const SVG = 'http://www.w3.org/2000/svg';
/** Series colours with at least 3:1 contrast on white (WCAG 1.4.11); the rest in grey. */
export const COLOURS = ['#0b57d0', '#b3261e', '#146c2e', '#7d3c98', '#8a5300', '#00677f'];
export const REST_COLOUR = '#5f6b76';
const WIDTH = 640;
const HEIGHT = 200;
const LEFT = 48;
const BOTTOM = 20;
/** Room for one date label ("27 Nov" at 11 px) and a gap, in pixels. */
const DAY_LABEL_WIDTH = 52;

function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  for (const child of children) element.append(child);
  return element;
}

/**
 * `byKey`: Map key → per-day values; the `top` keys with the largest totals keep their own series,
 * the others are summed into "the rest". Returns [{ label, keys, values, total, colour }], `keys`
 * the keys each series adds up.
 */
export function topAndRest(byKey, days, top = COLOURS.length - 1) {
  const ranked = [...byKey]
    .map(([label, values]) => ({ label, values, total: values.reduce((a, b) => a + b, 0) }))
    .filter((series) => series.total > 0)
    .sort((a, b) => b.total - a.total || a.label.localeCompare(b.label));
  const kept = ranked.slice(0, top).map((series, i) => ({ ...series, keys: [series.label], colour: COLOURS[i] }));
  const others = ranked.slice(top);
  if (others.length > 0) {
    const values = days.map((_, d) => others.reduce((sum, series) => sum + series.values[d], 0));
    kept.push({
      label: `the rest (${others.length} clients)`,
      keys: others.map((series) => series.label),
      values,
      total: values.reduce((a, b) => a + b, 0),
      colour: REST_COLOUR,
    });
  }
  return kept;
}

/**
 * A stacked bar chart: `days` (civil dates), `series` from topAndRest, `dayLabel(day)` for the axis,
 * `valueText(n, keys, d)` for the tooltips and the legend's totals (the series' keys; `d` the day's
 * index, undefined for all days), `tickText(n)` for the axis (short), `unit` its unit (`units per day`).
 * role=img with a summary; the
 * legend is the text alternative. A day of more than one stack has its total in each tooltip.
 */
export function stackedBars({ days, series, dayLabel, valueText, tickText = valueText, unit, summary, id }) {
  const totals = days.map((_, d) => series.reduce((sum, s) => sum + s.values[d], 0));
  const max = Math.max(1, ...totals);
  const chart = svg('svg', { class: 'bars', role: 'img', 'aria-label': summary, preserveAspectRatio: 'none' });
  const allKeys = series.flatMap((s) => s.keys);
  // Drawn at the width it is shown at (one user unit a CSS pixel), so that labels keep their
  // size on a phone instead of being squeezed with the bars; redrawn when that width changes.
  const draw = (width) => {
    const slot = (width - LEFT) / days.length;
    const plotHeight = HEIGHT - BOTTOM;
    chart.setAttribute('viewBox', `0 0 ${width} ${HEIGHT}`);
    chart.replaceChildren(
      svg('line', { x1: LEFT, x2: width, y1: plotHeight, y2: plotHeight, class: 'axis' }),
      svg('text', { x: LEFT - 4, y: 10, class: 'tick', 'text-anchor': 'end' }, tickText(max)),
      // The axis's unit beside its top figure, inside the plot (the bars stop 12 below the top).
      svg('text', { x: LEFT + 4, y: 10, class: 'tick unit', 'text-anchor': 'start' }, unit),
      svg('text', { x: LEFT - 4, y: plotHeight, class: 'tick', 'text-anchor': 'end' }, '0'),
    );
    // A date every week, and the last day's; a weekly one too close to the last is left out.
    const labelEvery = Math.max(7, Math.ceil(DAY_LABEL_WIDTH / slot));
    const labelled = (d) =>
      d === days.length - 1 || (d % labelEvery === 0 && (days.length - 1 - d) * slot >= DAY_LABEL_WIDTH);
    days.forEach((day, d) => {
      const stacks = series.filter((s) => s.values[d] > 0).length;
      const dayTotal = stacks > 1 ? `\n${dayLabel(day)}, all: ${valueText(totals[d], allKeys, d)}` : '';
      let base = plotHeight;
      for (const s of series) {
        const height = (s.values[d] / max) * (plotHeight - 12);
        if (height <= 0) continue;
        base -= height;
        chart.append(
          svg(
            'rect',
            { x: LEFT + d * slot + slot * 0.15, y: base, width: slot * 0.7, height, fill: s.colour },
            svg('title', {}, `${dayLabel(day)}, ${s.label}: ${valueText(s.values[d], s.keys, d)}${dayTotal}`),
          ),
        );
      }
      if (labelled(d))
        chart.append(
          svg(
            'text',
            {
              x: d === days.length - 1 ? width - 2 : LEFT + d * slot + slot / 2,
              y: HEIGHT - 4,
              class: 'tick',
              'text-anchor': d === days.length - 1 ? 'end' : 'middle',
            },
            dayLabel(day),
          ),
        );
    });
  };
  draw(WIDTH);
  new ResizeObserver(([entry]) => {
    const width = Math.round(entry.contentRect.width);
    if (width > LEFT && String(width) !== chart.viewBox.baseVal.width.toString()) draw(width);
  }).observe(chart);
  const legend = h(
    'ul',
    { className: 'legend', 'aria-label': `Totals: ${summary}` },
    series.map((s) => {
      const swatch = h('span', { className: 'swatch', 'aria-hidden': 'true' });
      swatch.style.background = s.colour;
      return h('li', { 'data-series': s.label }, swatch, `${s.label}: ${valueText(s.total, s.keys)}`);
    }),
  );
  return h('figure', { className: 'chart', id }, chart, legend);
}
