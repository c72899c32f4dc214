'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { Cart, parseCoupon } = require('../lib');

function threeItems() {
  return new Cart().addItem('MUG-01', 1000).addItem('TEE-M', 2000).addItem('CAP', 3000);
}

test('percent coupon takes the percentage off the whole order once', () => {
  assert.strictEqual(threeItems().total(parseCoupon('SAVE10')), 5400);
});

test('fixed coupon is taken off the order once', () => {
  assert.strictEqual(threeItems().total(parseCoupon('OFF5')), 5500);
});

test('coupon larger than a multi-item order gives zero', () => {
  const cart = new Cart().addItem('PIN', 200).addItem('STICKER', 300);
  assert.strictEqual(cart.total(parseCoupon('OFF20')), 0);
});

test('multi-item total without a coupon is unchanged', () => {
  assert.strictEqual(threeItems().total(), 6000);
});

test('percent coupon result is rounded to whole cents', () => {
  const cart = new Cart().addItem('PEN', 333).addItem('PAD', 333);
  assert.strictEqual(cart.total(parseCoupon('SAVE15')), 566);
});
