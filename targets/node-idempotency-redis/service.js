'use strict';
// @node-idempotency/core 1.0.11 (the Idempotency class) with
// @node-idempotency/storage-adapter-redis 1.0.2 on $REDIS_URL, outside any
// framework: onRequest() before the effect, onResponse() after it, the record
// keyed by the request's Idempotency-Key (the core's default header,
// "idempotency-key") and kept for the request's X-Idempotency-TTL
// (options.cacheTTLMS, per request).
//
// Expiry: the adapter writes both the IN_PROGRESS record (setIfNotExists) and
// the COMPLETE record (set) with SET key value [NX] PX ttl
// (storage-adapter-redis/dist/adapter-redis.js, lines 23-35), so Redis expires
// the key by its own clock; the service's clock plays no part in it. The
// COMPLETE write restarts the TTL at the time of the response.

const {RedisStorageAdapter} = require('@node-idempotency/storage-adapter-redis');
const {serve} = require('../lib/effect-service');
const {nodeIdempotencyDeliver} = require('../lib/node-idempotency');

// The adapter makes its own client (redis 4.7.1, @redis/client 1.6.1) from
// RedisClientOptions and must be connected before the first command.
const storage = new RedisStorageAdapter({url: process.env.REDIS_URL});
const deliver = nodeIdempotencyDeliver(storage);

storage.connect().then(
  () => serve({
    target: process.env.TARGET || 'node-idempotency-redis',
    library: '@node-idempotency/core 1.0.11 (storage-adapter-redis 1.0.2, redis 4.7.1)',
    deliver,
  }),
  (error) => {
    process.stderr.write(`node-idempotency-redis: cannot connect to ${process.env.REDIS_URL}: ${error.message}\n`);
    process.exit(1);
  },
);
