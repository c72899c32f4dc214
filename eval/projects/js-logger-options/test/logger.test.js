'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { createLogger } = require('../lib');
const { memorySink } = require('./helpers');

test('writes entries at or above its level', () => {
  const sink = memorySink();
  const log = createLogger('billing', 'info', sink);
  log.debug('hidden');
  log.info('invoice sent', { invoice: 'INV-7' });
  log.error('card declined');
  assert.deepStrictEqual(
    sink.entries.map((e) => [e.level, e.logger, e.msg]),
    [
      ['info', 'billing', 'invoice sent'],
      ['error', 'billing', 'card declined'],
    ],
  );
  assert.strictEqual(sink.entries[0].invoice, 'INV-7');
});

test('child loggers extend the name and keep the sink', () => {
  const sink = memorySink();
  createLogger('billing', 'warn', sink).child('stripe').warn('slow');
  assert.strictEqual(sink.entries[0].logger, 'billing.stripe');
});

test('refuses unknown levels and missing names', () => {
  assert.throws(() => createLogger('x', 'verbose', memorySink()), RangeError);
  assert.throws(() => createLogger('', 'info', memorySink()), TypeError);
});
