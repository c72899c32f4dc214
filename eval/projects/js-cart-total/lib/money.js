'use strict';

/** "$12.50" from 1250; negative amounts as "-$3.00". */
function formatCents(cents) {
  if (!Number.isInteger(cents)) {
    throw new TypeError(`amount must be a whole number of cents, got ${cents}`);
  }
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  const dollars = Math.floor(abs / 100).toLocaleString('en-US');
  const rest = String(abs % 100).padStart(2, '0');
  return `${sign}$${dollars}.${rest}`;
}

module.exports = { formatCents };
