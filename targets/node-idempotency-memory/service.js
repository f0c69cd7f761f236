'use strict';
// A payment service (../lib/payments.js) with @node-idempotency/core
// (../lib/node-idempotency.js) and its in-memory storage adapter: the records
// in a Map in this process (each instance has its own; a restart forgets
// them), each with its deadline, new Date() + TTL, which get() compares with
// new Date() when the record is read: the instance's clock decides, lazily.

const {MemoryStorageAdapter} = require('@node-idempotency/storage-adapter-memory');
const {settings, paymentApp, serve} = require('../lib/payments');
const {addPaymentsRoute} = require('../lib/node-idempotency');

const config = settings();
const app = paymentApp();
addPaymentsRoute(app, new MemoryStorageAdapter(), config);
serve(app, process.env.TARGET || 'node-idempotency-memory', config);
