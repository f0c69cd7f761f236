'use strict';
// express-idempotency 1.0.6 as an Express 5 middleware, with its default
// data adapter (InMemoryDataAdapter: an array in this process). The record
// of a key is never expired: the library has no clock and no TTL (it keeps a
// record until the process ends, or deletes it when the answer is not 2xx),
// so X-Idempotency-TTL is read and reported but decides nothing. See app.js
// for how the middleware is wired into the effect service.

const {IdempotencyService} = require('express-idempotency');
const {serveExpress} = require('./app');

// What idempotency() makes (dist/middleware/idempotency.js): one service, and
// so one in-memory store, whatever the request's TTL.
const service = new IdempotencyService();

serveExpress({
  target: process.env.TARGET || 'express-idempotency',
  library: 'express-idempotency 1.0.6 (in-memory data adapter, express 5.3.0)',
  idempotencyFor: () => service,
});
