'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { createLogger } = require('../lib');
const { memorySink } = require('./helpers');

test('createLogger takes an options object', () => {
  const sink = memorySink();
  const log = createLogger({ name: 'billing', level: 'info', sink });
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

test('level defaults to info', () => {
  const sink = memorySink();
  const log = createLogger({ name: 'billing', sink });
  assert.strictEqual(log.level, 'info');
  log.debug('hidden');
  log.info('shown');
  assert.deepStrictEqual(sink.entries.map((e) => e.msg), ['shown']);
});

test('child loggers with options keep level and sink', () => {
  const sink = memorySink();
  const child = createLogger({ name: 'billing', level: 'warn', sink }).child('stripe');
  child.info('hidden');
  child.warn('slow');
  assert.deepStrictEqual(sink.entries.map((e) => [e.logger, e.msg]), [['billing.stripe', 'slow']]);
});

test('options are validated', () => {
  assert.throws(() => createLogger({ name: 'x', level: 'verbose', sink: memorySink() }), RangeError);
  assert.throws(() => createLogger({ level: 'info', sink: memorySink() }), TypeError);
});
