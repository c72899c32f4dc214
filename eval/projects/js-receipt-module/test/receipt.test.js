'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { renderReceipt } = require('../lib');

test('receipt lists each line and the total', () => {
  const text = renderReceipt({
    number: 1042,
    lines: [
      { name: 'Flat white', qty: 2, price: 340 },
      { name: 'Croissant', qty: 1, price: 250 },
    ],
  });
  const lines = text.split('\n');
  assert.strictEqual(lines[0], 'Receipt #1042');
  assert.strictEqual(lines[2], '2 x Flat white                     €6.80');
  assert.strictEqual(lines[3], 'Croissant                          €2.50');
  assert.strictEqual(lines[5], 'TOTAL                              €9.30');
});
