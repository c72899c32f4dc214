'use strict';

const { createLogger } = require('./logger');

/**
 * Middleware `(req, res, next)` that logs each finished request: method, path, status and
 * duration. Server errors are logged at `error`, client errors at `warn`.
 */
function requestLogger(options = {}) {
  const log = createLogger(options.name || 'http', options.level, options.sink);
  const now = options.now || (() => Date.now());
  return function logRequest(req, res, next) {
    const started = now();
    res.on('finish', () => {
      const fields = { method: req.method, path: req.url, status: res.statusCode, ms: now() - started };
      if (res.statusCode >= 500) log.error('request failed', fields);
      else if (res.statusCode >= 400) log.warn('request rejected', fields);
      else log.info('request', fields);
    });
    next();
  };
}

module.exports = { requestLogger };
