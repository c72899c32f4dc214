'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { runJob } = require('../lib');
const { memorySink } = require('./helpers');

test('logs a finished job and returns its result', async () => {
  const sink = memorySink();
  const result = await runJob('reindex', async () => 42, { sink });
  assert.strictEqual(result, 42);
  assert.deepStrictEqual(sink.entries.map((e) => [e.logger, e.msg]), [['jobs.reindex', 'finished']]);
});

test('logs and rethrows a failed job', async () => {
  const sink = memorySink();
  await assert.rejects(runJob('sync', () => Promise.reject(new Error('timeout')), { sink, level: 'debug' }), /timeout/);
  assert.deepStrictEqual(sink.entries.map((e) => e.msg), ['starting', 'failed']);
  assert.strictEqual(sink.entries[1].error, 'timeout');
});
