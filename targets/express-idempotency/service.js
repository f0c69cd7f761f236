'use strict';
// A payment service (../lib/payments.js) with express-idempotency
// (../lib/express-idempotency.js) and its default data adapter, an array in
// this process's memory. The library has no TTL and reads no clock: a record
// lives until the process ends (each instance has its own).

const {settings, paymentApp, serve} = require('../lib/payments');
const {addPaymentsRoute} = require('../lib/express-idempotency');

const config = settings();
const app = paymentApp();
addPaymentsRoute(app, undefined, config);
serve(app, process.env.TARGET || 'express-idempotency', config);
