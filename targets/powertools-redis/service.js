'use strict';
// @aws-lambda-powertools/idempotency with its CachePersistenceLayer on Redis,
// outside Lambda: makeIdempotent() around the effect, the record keyed by the
// request's Idempotency-Key, kept for the request's X-Idempotency-TTL.
// $REDIS_URL names the store.

const {makeIdempotent, IdempotencyConfig} = require('@aws-lambda-powertools/idempotency');
const {CachePersistenceLayer} = require('@aws-lambda-powertools/idempotency/cache');
const {createClient} = require('@redis/client');
const {serve} = require('../lib/effect-service');

const client = createClient({url: process.env.REDIS_URL});
client.on('error', (error) => process.stderr.write(`redis: ${error.message}\n`));
const connected = client.connect();

// One idempotent function per TTL: Powertools fixes the TTL in its config.
const byTtl = new Map();
function idempotentEffect(ttlS) {
  if (!byTtl.has(ttlS)) {
    const config = new IdempotencyConfig({expiresAfterSeconds: ttlS, eventKeyJmesPath: 'key'});
    const persistenceStore = new CachePersistenceLayer({client});
    byTtl.set(ttlS, makeIdempotent(async (event, _context) => event.request.effect(), {persistenceStore, config}));
  }
  return byTtl.get(ttlS);
}

// A Lambda context, as Powertools asks of one: it bounds how long a record
// may stay in progress.
const context = {getRemainingTimeInMillis: () => 30000, functionName: 'skewbench-effect', awsRequestId: 'local'};

serve({
  target: process.env.TARGET || 'powertools-redis',
  library: '@aws-lambda-powertools/idempotency 2.35.0 (CachePersistenceLayer, @redis/client 6.3.1)',
  async deliver(request) {
    await connected;
    // `request` rides along in the event; only `key` is hashed into the record's key.
    const event = {key: request.key, operation_id: request.operationId};
    Object.defineProperty(event, 'request', {value: request, enumerable: false});
    await idempotentEffect(request.ttlS)(event, context);
  },
});
