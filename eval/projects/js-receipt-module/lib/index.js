'use strict';

const { renderReceipt } = require('./receipt');
const { renderSummary } = require('./summary');
const { formatCurrency, padColumns, WIDTH } = require('./formatting');

module.exports = { renderReceipt, renderSummary, formatCurrency, padColumns, WIDTH };
