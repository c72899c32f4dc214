'use strict';

const { createLogger } = require('./logger');

/**
 * Runs `job()` (which may return a promise) and logs its start and outcome under the logger
 * `jobs.<name>`. Resolves with the job's result; a failure is logged and rethrown.
 */
async function runJob(name, job, { level = 'info', sink } = {}) {
  const log = createLogger(`jobs.${name}`, level, sink);
  log.debug('starting');
  const started = Date.now();
  try {
    const result = await job();
    log.info('finished', { ms: Date.now() - started });
    return result;
  } catch (err) {
    log.error('failed', { error: err.message });
    throw err;
  }
}

module.exports = { runJob };
