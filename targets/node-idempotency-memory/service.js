'use strict';
// @node-idempotency/core 1.0.11 (the Idempotency class) with
// @node-idempotency/storage-adapter-memory 1.0.2: the records live in a Map in
// this process (each instance has its own, and a restart forgets them).
// onRequest() before the effect, onResponse() after it, the record keyed by
// the request's Idempotency-Key (the core's default header, "idempotency-key")
// and kept for the request's X-Idempotency-TTL (options.cacheTTLMS).
//
// Expiry: the adapter stores an absolute deadline, new Date() + ttl ms, with
// each record (storage-adapter-memory/dist/adapter-memory.js, lines 49-60) and
// compares it with new Date() when the record is read (get, lines 71-80):
// lazily, on the process's wall clock (Date.now(), which skewbench fakes), no
// timer. The COMPLETE write restarts the deadline at the time of the response.

const {MemoryStorageAdapter} = require('@node-idempotency/storage-adapter-memory');
const {serve} = require('../lib/effect-service');
const {nodeIdempotencyDeliver} = require('../lib/node-idempotency');

const storage = new MemoryStorageAdapter();
const deliver = nodeIdempotencyDeliver(storage);

serve({
  target: process.env.TARGET || 'node-idempotency-memory',
  library: '@node-idempotency/core 1.0.11 (storage-adapter-memory 1.0.2)',
  deliver,
});
