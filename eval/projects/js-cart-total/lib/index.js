'use strict';

const { Cart } = require('./cart');
const { parseCoupon, applyCoupon } = require('./coupons');
const { formatCents } = require('./money');

module.exports = { Cart, parseCoupon, applyCoupon, formatCents };
