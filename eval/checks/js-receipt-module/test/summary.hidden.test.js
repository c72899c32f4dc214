'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { renderSummary, renderReceipt } = require('../lib');

test('summary totals each payment method', () => {
  const text = renderSummary('2024-05-02', [
    { method: 'card', total: 930 },
    { method: 'cash', total: 250 },
    { method: 'card', total: 1200 },
  ]);
  assert.strictEqual(
    text,
    [
      'Summary 2024-05-02',
      'card .............................€21.30',
      'cash ..............................€2.50',
      '3 sales                           €23.80',
      '',
    ].join('\n'),
  );
});

test('receipt in another currency', () => {
  const text = renderReceipt({ number: 7, currency: 'CHF', lines: [{ name: 'Tea', qty: 3, price: 420 }] });
  assert.match(text, /3 x Tea +12\.60 CHF\n/);
  assert.match(text, /TOTAL +12\.60 CHF\n$/);
});
