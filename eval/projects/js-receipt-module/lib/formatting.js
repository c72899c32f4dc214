'use strict';

/** Characters per printed line. */
const WIDTH = 40;

const SYMBOLS = { EUR: '€', USD: '$', GBP: '£' };

/** "€12.50" from 1250 cents; other currencies by code, as in "12.50 CHF". */
function formatCurrency(cents, currency = 'EUR') {
  if (!Number.isInteger(cents)) {
    throw new TypeError(`amount must be a whole number of cents, got ${cents}`);
  }
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  const amount = `${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
  const symbol = SYMBOLS[currency];
  return symbol ? `${sign}${symbol}${amount}` : `${sign}${amount} ${currency}`;
}

/** `left` and `right` on one line of `width` characters, with dots or spaces between. */
function padColumns(left, right, width = WIDTH, fill = ' ') {
  const room = width - right.length - 1;
  const text = left.length > room ? left.slice(0, room - 1) + '…' : left;
  return text + ' ' + fill.repeat(Math.max(0, room - text.length)) + right;
}

module.exports = { formatCurrency, padColumns, WIDTH };
