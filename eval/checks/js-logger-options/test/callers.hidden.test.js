'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { requestLogger, runJob } = require('../lib');
const { memorySink, fakeResponse } = require('./helpers');

test('request logger honours its level', () => {
  const sink = memorySink();
  const middleware = requestLogger({ sink, level: 'warn', now: () => 0 });
  for (const status of [200, 500]) {
    const res = fakeResponse(status);
    middleware({ method: 'POST', url: '/pay' }, res, () => {});
    res.finish();
  }
  assert.deepStrictEqual(sink.entries.map((e) => [e.logger, e.status]), [['http', 500]]);
});

test('request logger can be renamed', () => {
  const sink = memorySink();
  const res = fakeResponse(204);
  requestLogger({ name: 'api', sink, now: () => 0 })({ method: 'GET', url: '/' }, res, () => {});
  res.finish();
  assert.strictEqual(sink.entries[0].logger, 'api');
});

test('job logger at debug logs the start', async () => {
  const sink = memorySink();
  await runJob('backup', () => 'done', { sink, level: 'debug' });
  assert.deepStrictEqual(sink.entries.map((e) => [e.logger, e.msg]), [
    ['jobs.backup', 'starting'],
    ['jobs.backup', 'finished'],
  ]);
});
