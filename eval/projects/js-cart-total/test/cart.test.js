'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { Cart, parseCoupon } = require('../lib');

test('subtotal adds every line', () => {
  const cart = new Cart().addItem('MUG-01', 1250, 2).addItem('TEE-M', 1900);
  assert.strictEqual(cart.subtotal(), 4400);
  assert.strictEqual(cart.itemCount, 3);
});

test('adding the same sku again raises its quantity', () => {
  const cart = new Cart().addItem('MUG-01', 1250).addItem('MUG-01', 1250, 2);
  assert.strictEqual(cart.lines.get('MUG-01').qty, 3);
});

test('total without a coupon is the subtotal', () => {
  const cart = new Cart().addItem('MUG-01', 1250, 2).addItem('TEE-M', 1900);
  assert.strictEqual(cart.total(), 4400);
});

test('percent coupon on a single item', () => {
  const cart = new Cart().addItem('MUG-01', 1250, 2);
  assert.strictEqual(cart.total(parseCoupon('SAVE10')), 2250);
});

test('fixed coupon never goes below zero', () => {
  const cart = new Cart().addItem('STICKER', 300);
  assert.strictEqual(cart.total(parseCoupon('OFF5')), 0);
});

test('removing an item', () => {
  const cart = new Cart().addItem('MUG-01', 1250).addItem('TEE-M', 1900).removeItem('MUG-01');
  assert.strictEqual(cart.total(), 1900);
});

test('bad prices and quantities are refused', () => {
  assert.throws(() => new Cart().addItem('X', 9.99), RangeError);
  assert.throws(() => new Cart().addItem('X', 100, 0), RangeError);
});
