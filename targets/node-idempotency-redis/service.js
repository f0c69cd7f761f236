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

const {Idempotency, IdempotencyError} = require('@node-idempotency/core');
const {RedisStorageAdapter} = require('@node-idempotency/storage-adapter-redis');
const {serve} = require('../lib/effect-service');

// The adapter makes its own client (redis 4.7.1, @redis/client 1.6.1) from
// RedisClientOptions and must be connected before the first command.
const storage = new RedisStorageAdapter({url: process.env.REDIS_URL});
const idempotency = new Idempotency(storage);

// The request as the core sees it: it finds the key among `headers` (Node's
// are lower case), fingerprints `body` (the parsed JSON, else the raw text),
// and builds the record's key from method, path and the Idempotency-Key.
function idempotencyRequest(request) {
  let body;
  try {
    body = JSON.parse(request.body);
  } catch (_error) {
    body = request.body;
  }
  return {method: 'POST', path: '/effects', headers: request.headers, body: body || undefined,
          options: {cacheTTLMS: request.ttlS * 1000}};
}

async function deliver(request) {
  const req = idempotencyRequest(request);
  try {
    // A stored response means the library deduplicated the request;
    // undefined means it let it run (it has written the IN_PROGRESS record).
    const cached = await idempotency.onRequest(req);
    if (cached !== undefined) return;
    const body = request.effect();
    // The stored response must be truthy: onRequest returns it as is, and
    // undefined would read as "run it".
    await idempotency.onResponse(req, {body, additional: {statusCode: 200}});
  } catch (error) {
    // In progress, fingerprint mismatch, key too long: effect-service.js
    // answers 409 with error.name (the library leaves it "Error").
    if (error instanceof IdempotencyError) {
      error.name = 'IdempotencyError';
      error.message = `${error.code}: ${error.message}`;
    }
    throw error;
  }
}

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
