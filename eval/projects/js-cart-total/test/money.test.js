'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { formatCents } = require('../lib/money');

test('formats cents as dollars', () => {
  assert.strictEqual(formatCents(1250), '$12.50');
  assert.strictEqual(formatCents(5), '$0.05');
  assert.strictEqual(formatCents(123456789), '$1,234,567.89');
});

test('formats negative amounts', () => {
  assert.strictEqual(formatCents(-300), '-$3.00');
});

test('rejects fractional cents', () => {
  assert.throws(() => formatCents(1.5), TypeError);
});
