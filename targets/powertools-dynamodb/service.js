'use strict';
// A payment service (../lib/payments.js) with AWS Powertools idempotency
// (../lib/powertools.js) on its DynamoDBPersistenceLayer: the records in a
// DynamoDB table, here dynalite on 127.0.0.1:$STORE_PORT (./store.js creates
// the table, partition key `id`, before its port opens).
//
// Whose clock: Powertools computes a record's `expiration` (now + TTL) from
// this process's Date.now() and sends its `:now` for the conditional write;
// dynalite only evaluates the condition, and nothing removes an expired item
// (dynalite has no TTL): the next write replaces it.

// Nothing here may reach beyond 127.0.0.1: explicit endpoint, region and
// credentials (no credential chain, so no instance metadata), which is off too.
process.env.AWS_EC2_METADATA_DISABLED = 'true';

const {DynamoDBPersistenceLayer} = require('@aws-lambda-powertools/idempotency/dynamodb');
const {DynamoDBClient} = require('@aws-sdk/client-dynamodb');
const {settings, paymentApp, serve} = require('../lib/payments');
const {addPaymentsRoute} = require('../lib/powertools');

const config = settings();
const storePort = Number(process.env.STORE_PORT);
if (!Number.isInteger(storePort) || storePort < 1) throw new Error('STORE_PORT (the port of the dynalite store) is not set');
const client = new DynamoDBClient({
  endpoint: `http://127.0.0.1:${storePort}`,
  region: 'us-east-1',
  credentials: {accessKeyId: 'skewbench', secretAccessKey: 'skewbench'},
});

// The table store.js creates.
const tableName = process.env.IDEMPOTENCY_TABLE || 'skewbench-idempotency';
const app = paymentApp();
addPaymentsRoute(app, new DynamoDBPersistenceLayer({tableName, awsSdkV3Client: client}), config);
serve(app, process.env.TARGET || 'powertools-dynamodb', config);
