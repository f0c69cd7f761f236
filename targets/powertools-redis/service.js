'use strict';
// A payment service (../lib/payments.js) with AWS Powertools idempotency
// (../lib/powertools.js) on its CachePersistenceLayer: the records in Redis,
// at $REDIS_URL.

const {CachePersistenceLayer} = require('@aws-lambda-powertools/idempotency/cache');
const {createClient} = require('@redis/client');
const {settings, paymentApp, serve} = require('../lib/payments');
const {addPaymentsRoute} = require('../lib/powertools');

const config = settings();
const client = createClient({url: process.env.REDIS_URL});
client.on('error', (error) => process.stderr.write(`redis: ${error.message}\n`));

const app = paymentApp(() => client.isReady);
addPaymentsRoute(app, new CachePersistenceLayer({client}), config);
client.connect().then(() => serve(app, process.env.TARGET || 'powertools-redis', config));
