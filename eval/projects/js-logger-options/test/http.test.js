'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { requestLogger } = require('../lib');
const { memorySink, fakeResponse } = require('./helpers');

test('logs each finished request by status', () => {
  const sink = memorySink();
  let clock = 1000;
  const middleware = requestLogger({ sink, now: () => clock });
  for (const status of [200, 404, 503]) {
    const res = fakeResponse(status);
    middleware({ method: 'GET', url: '/health' }, res, () => {});
    clock += 5;
    res.finish();
  }
  assert.deepStrictEqual(
    sink.entries.map((e) => [e.logger, e.level, e.status, e.ms]),
    [
      ['http', 'info', 200, 5],
      ['http', 'warn', 404, 5],
      ['http', 'error', 503, 5],
    ],
  );
});
