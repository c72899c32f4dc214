'use strict';

const { formatPrice, padColumns, WIDTH } = require('./format');

/**
 * The text of a receipt: `{ number, lines: [{ name, qty, price }], currency }`, prices in cents.
 */
function renderReceipt(receipt) {
  const currency = receipt.currency || 'EUR';
  const out = [`Receipt #${receipt.number}`, '-'.repeat(WIDTH)];
  let total = 0;
  for (const line of receipt.lines) {
    const amount = line.qty * line.price;
    total += amount;
    const label = line.qty > 1 ? `${line.qty} x ${line.name}` : line.name;
    out.push(padColumns(label, formatPrice(amount, currency)));
  }
  out.push('-'.repeat(WIDTH));
  out.push(padColumns('TOTAL', formatPrice(total, currency)));
  return out.join('\n') + '\n';
}

module.exports = { renderReceipt };
