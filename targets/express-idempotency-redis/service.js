'use strict';
// express-idempotency 1.0.6 as an Express 5 middleware, with the data
// adapter of express-idempotency-redis-adapter 1.0.8 on $REDIS_URL. The
// adapter stores a key's record with SET key json EX ttl (on the request,
// and again on the response), so Redis expires it by its own key TTL, fixed
// per adapter: one adapter (and IdempotencyService) per X-Idempotency-TTL,
// all on one Redis client and so on the same keys. See
// ../express-idempotency/app.js for how the middleware is wired into the
// effect service.

const {IdempotencyService} = require('express-idempotency');
const RedisAdapter = require('express-idempotency-redis-adapter').default;
const {createClient} = require('@redis/client');
const {serveExpress} = require('../express-idempotency/app');

// The adapter accepts a client of its own (connectionInstance); it only calls
// get, set(key, value, {EX}) and del, which @redis/client 6 still takes.
const client = createClient({url: process.env.REDIS_URL});
client.on('error', (error) => process.stderr.write(`redis: ${error.message}\n`));
const connected = client.connect();

const byTtl = new Map();
function idempotencyFor(ttlS) {
  if (!byTtl.has(ttlS)) {
    const dataAdapter = new RedisAdapter({connectionInstance: client, ttl: ttlS});
    byTtl.set(ttlS, new IdempotencyService({dataAdapter}));
  }
  return byTtl.get(ttlS);
}

serveExpress({
  target: process.env.TARGET || 'express-idempotency-redis',
  library: 'express-idempotency 1.0.6 (express-idempotency-redis-adapter 1.0.8, @redis/client 6.3.1, express 5.3.0)',
  idempotencyFor,
  ready: connected,
});
