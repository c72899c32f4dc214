'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { formatCurrency, padColumns } = require('../lib/formatting');

test('formats known currencies with their symbol', () => {
  assert.strictEqual(formatCurrency(1250), '€12.50');
  assert.strictEqual(formatCurrency(5, 'USD'), '$0.05');
  assert.strictEqual(formatCurrency(-300, 'GBP'), '-£3.00');
});

test('formats other currencies by code', () => {
  assert.strictEqual(formatCurrency(990, 'CHF'), '9.90 CHF');
});

test('pads columns to the width', () => {
  assert.strictEqual(padColumns('Tea', '€2.00', 12), 'Tea    €2.00');
  assert.strictEqual(padColumns('Card', '€9.00', 14, '.'), 'Card ....€9.00');
});

test('cuts a long label', () => {
  assert.strictEqual(padColumns('Cinnamon bun', '€3.10', 12), 'Cinna… €3.10');
});
