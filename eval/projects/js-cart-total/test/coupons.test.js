'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { parseCoupon, applyCoupon } = require('../lib/coupons');

test('parses percent and fixed coupons', () => {
  assert.deepStrictEqual(parseCoupon('save15'), { code: 'SAVE15', kind: 'percent', value: 15 });
  assert.deepStrictEqual(parseCoupon('OFF5'), { code: 'OFF5', kind: 'fixed', value: 500 });
});

test('rejects unknown and out-of-range codes', () => {
  assert.strictEqual(parseCoupon('FREE'), null);
  assert.strictEqual(parseCoupon('SAVE95'), null);
  assert.strictEqual(parseCoupon('OFF0'), null);
});

test('applies a coupon to an amount', () => {
  assert.strictEqual(applyCoupon(2000, parseCoupon('SAVE25')), 1500);
  assert.strictEqual(applyCoupon(2000, parseCoupon('OFF5')), 1500);
  assert.strictEqual(applyCoupon(2000, null), 2000);
});
