'use strict';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 };

/**
 * A logger called `name` that writes entries at `level` or above to `sink` (anything with a
 * `write(string)` method), one JSON object per line.
 */
function createLogger(name, level = 'info', sink = process.stderr) {
  if (typeof name !== 'string' || name === '') {
    throw new TypeError('a logger needs a name');
  }
  if (!(level in LEVELS)) {
    throw new RangeError(`unknown log level "${level}"`);
  }
  const threshold = LEVELS[level];
  const clock = () => new Date().toISOString();

  function log(entryLevel, msg, fields = {}) {
    if (LEVELS[entryLevel] < threshold) return false;
    const entry = { time: clock(), level: entryLevel, logger: name, msg, ...fields };
    sink.write(JSON.stringify(entry) + '\n');
    return true;
  }

  return {
    name,
    level,
    debug: (msg, fields) => log('debug', msg, fields),
    info: (msg, fields) => log('info', msg, fields),
    warn: (msg, fields) => log('warn', msg, fields),
    error: (msg, fields) => log('error', msg, fields),
    child: (suffix) => createLogger(`${name}.${suffix}`, level, sink),
  };
}

module.exports = { createLogger, LEVELS };
