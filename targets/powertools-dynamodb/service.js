'use strict';
// @aws-lambda-powertools/idempotency with its DynamoDBPersistenceLayer on a
// local dynalite (DynamoDB on LevelDB; ./store.js), outside Lambda:
// makeIdempotent() around the effect, the record keyed by the request's
// Idempotency-Key, kept for the request's X-Idempotency-TTL.
// $STORE_PORT names dynalite's port on 127.0.0.1.
//
// The table (partition key `id`, string) is created by store.js before its
// port opens, so this service creates nothing (see store.js for why).
//
// Whose clock: every time Powertools judges here is this process's Date.now():
// the record's `expiration` (now + TTL, in s) and `in_progress_expiration`
// (now + getRemainingTimeInMillis(), in ms) are computed here, and the PutItem
// condition compares them with `:now` / `:now_in_millis`, also sent from here;
// dynalite only evaluates the condition. Nothing expires a record in the store
// (dynalite has no TTL): an expired record is overwritten by the next PutItem.

// Nothing here may reach beyond 127.0.0.1: explicit region, endpoint and
// credentials (no credential chain, so no IMDS), and IMDS disabled anyway.
process.env.AWS_EC2_METADATA_DISABLED = 'true';

const {makeIdempotent, IdempotencyConfig} = require('@aws-lambda-powertools/idempotency');
const {DynamoDBPersistenceLayer} = require('@aws-lambda-powertools/idempotency/dynamodb');
const {DynamoDBClient} = require('@aws-sdk/client-dynamodb');
const {serve} = require('../lib/effect-service');

const TABLE_NAME = process.env.IDEMPOTENCY_TABLE || 'skewbench-idempotency';
const storePort = Number(process.env.STORE_PORT);
if (!Number.isInteger(storePort) || storePort < 1) {
  throw new Error('STORE_PORT (the port of the dynalite store) is not set');
}

const client = new DynamoDBClient({
  endpoint: `http://127.0.0.1:${storePort}`,
  region: 'us-east-1',
  credentials: {accessKeyId: 'skewbench', secretAccessKey: 'skewbench'},
});

// One idempotent function per TTL: Powertools fixes the TTL in its config.
const byTtl = new Map();
function idempotentEffect(ttlS) {
  if (!byTtl.has(ttlS)) {
    const config = new IdempotencyConfig({expiresAfterSeconds: ttlS, eventKeyJmesPath: 'key'});
    const persistenceStore = new DynamoDBPersistenceLayer({tableName: TABLE_NAME, awsSdkV3Client: client});
    byTtl.set(ttlS, makeIdempotent(async (event, _context) => event.request.effect(), {persistenceStore, config}));
  }
  return byTtl.get(ttlS);
}

// A Lambda context, as Powertools asks of one: it bounds how long a record
// may stay in progress.
const context = {getRemainingTimeInMillis: () => 30000, functionName: 'skewbench-effect', awsRequestId: 'local'};

serve({
  target: process.env.TARGET || 'powertools-dynamodb',
  library: '@aws-lambda-powertools/idempotency 2.35.0 (DynamoDBPersistenceLayer, @aws-sdk/client-dynamodb 3.1169.0, dynalite 4.0.0)',
  async deliver(request) {
    // `request` rides along in the event; only `key` is hashed into the record's key.
    const event = {key: request.key, operation_id: request.operationId};
    Object.defineProperty(event, 'request', {value: request, enumerable: false});
    await idempotentEffect(request.ttlS)(event, context);
  },
});
