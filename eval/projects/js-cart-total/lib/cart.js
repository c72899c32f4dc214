'use strict';

const { applyCoupon } = require('./coupons');

class Cart {
  constructor() {
    /** sku -> { sku, price, qty } */
    this.lines = new Map();
  }

  addItem(sku, price, qty = 1) {
    if (!Number.isInteger(price) || price < 0) {
      throw new RangeError(`price of ${sku} must be a whole number of cents`);
    }
    if (!Number.isInteger(qty) || qty < 1) {
      throw new RangeError(`quantity of ${sku} must be a positive whole number`);
    }
    const line = this.lines.get(sku);
    if (line) {
      line.qty += qty;
    } else {
      this.lines.set(sku, { sku, price, qty });
    }
    return this;
  }

  removeItem(sku) {
    this.lines.delete(sku);
    return this;
  }

  get itemCount() {
    let count = 0;
    for (const line of this.lines.values()) count += line.qty;
    return count;
  }

  subtotal() {
    let subtotal = 0;
    for (const line of this.lines.values()) subtotal += line.price * line.qty;
    return subtotal;
  }

  /** The amount to charge, in cents, after the coupon (if any). */
  total(coupon = null) {
    let total = 0;
    for (const line of this.lines.values()) {
      total += line.price * line.qty;
      total = applyCoupon(total, coupon);
    }
    return Math.round(total);
  }
}

module.exports = { Cart };
