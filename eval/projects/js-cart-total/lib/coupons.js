'use strict';

/**
 * Reads a coupon code: `SAVE<n>` is n percent off (1-90), `OFF<n>` is n dollars off.
 * Returns null for a code that is not a coupon.
 */
function parseCoupon(code) {
  const match = /^(SAVE|OFF)(\d{1,4})$/.exec(String(code).trim().toUpperCase());
  if (!match) return null;
  const value = Number(match[2]);
  if (match[1] === 'SAVE') {
    if (value < 1 || value > 90) return null;
    return { code: match[0], kind: 'percent', value };
  }
  if (value < 1) return null;
  return { code: match[0], kind: 'fixed', value: value * 100 };
}

/** The amount (in cents) after the coupon; never below zero. */
function applyCoupon(amount, coupon) {
  if (!coupon) return amount;
  const discounted =
    coupon.kind === 'percent' ? amount * (1 - coupon.value / 100) : amount - coupon.value;
  return Math.max(0, discounted);
}

module.exports = { parseCoupon, applyCoupon };
