'use strict';

const { formatPrice, padColumns } = require('./format');

/**
 * The end-of-day summary: sales per payment method and the day's total.
 * `sales` is a list of `{ method, total }` (cents).
 */
function renderSummary(date, sales, currency = 'EUR') {
  const byMethod = new Map();
  for (const sale of sales) {
    byMethod.set(sale.method, (byMethod.get(sale.method) || 0) + sale.total);
  }
  const out = [`Summary ${date}`];
  for (const [method, total] of [...byMethod].sort(([a], [b]) => a.localeCompare(b))) {
    out.push(padColumns(method, formatPrice(total, currency), undefined, '.'));
  }
  const day = sales.reduce((sum, sale) => sum + sale.total, 0);
  out.push(padColumns(`${sales.length} sales`, formatPrice(day, currency)));
  return out.join('\n') + '\n';
}

module.exports = { renderSummary };
