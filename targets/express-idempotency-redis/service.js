'use strict';
// A payment service (../lib/payments.js) with express-idempotency
// (../lib/express-idempotency.js) and express-idempotency-redis-adapter: the
// records in Redis at $REDIS_URL, each written with SET key value EX ttl (the
// adapter's `ttl`, IDEMPOTENCY_TTL_S), on the request and again on the
// response, so Redis's clock expires them.
//
// The adapter is given a client of the service's own (connectionInstance, an
// option its README lists), one that logs its errors. With connectionConfig,
// as the README's example sets it up, the adapter makes a client with no
// 'error' listener, and the first error (Redis restarting) ends the process:
// measured as an ERROR in 016-store-restart. It calls only get, set(key,
// value, {EX}) and del, which @redis/client 6 takes as its own 1.x did.

const RedisAdapter = require('express-idempotency-redis-adapter').default;
const {createClient} = require('@redis/client');
const {settings, paymentApp, serve} = require('../lib/payments');
const {addPaymentsRoute} = require('../lib/express-idempotency');

const config = settings();
const client = createClient({url: process.env.REDIS_URL});
client.on('error', (error) => process.stderr.write(`redis: ${error.message}\n`));
const adapter = new RedisAdapter({connectionInstance: client, ttl: config.ttlS});
const app = paymentApp(() => client.isReady);
addPaymentsRoute(app, adapter, config);
client.connect().then(() => serve(app, process.env.TARGET || 'express-idempotency-redis', config));
