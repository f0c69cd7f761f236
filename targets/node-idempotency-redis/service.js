'use strict';
// A payment service (../lib/payments.js) with @node-idempotency/core
// (../lib/node-idempotency.js) and its Redis storage adapter on $REDIS_URL:
// the records written with SET key value [NX] PX ttl, in progress and again
// complete, so Redis's clock expires them; the service reads no clock.

const {RedisStorageAdapter} = require('@node-idempotency/storage-adapter-redis');
const {settings, paymentApp, serve} = require('../lib/payments');
const {addPaymentsRoute} = require('../lib/node-idempotency');

const config = settings();
// The adapter makes its own client from these options; connect() before use.
const storage = new RedisStorageAdapter({url: process.env.REDIS_URL});
const app = paymentApp();
addPaymentsRoute(app, storage, config);
storage.connect().then(() => serve(app, process.env.TARGET || 'node-idempotency-redis', config));
