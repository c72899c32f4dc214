'use strict';

const { createLogger, LEVELS } = require('./logger');
const { requestLogger } = require('./http');
const { runJob } = require('./jobs');

module.exports = { createLogger, LEVELS, requestLogger, runJob };
