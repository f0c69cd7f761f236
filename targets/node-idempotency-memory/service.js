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

const {Idempotency, IdempotencyError} = require('@node-idempotency/core');
const {MemoryStorageAdapter} = require('@node-idempotency/storage-adapter-memory');
const {serve} = require('../lib/effect-service');

const storage = new MemoryStorageAdapter();
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
    // undefined means it let it run.
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

serve({
  target: process.env.TARGET || 'node-idempotency-memory',
  library: '@node-idempotency/core 1.0.11 (storage-adapter-memory 1.0.2)',
  deliver,
});
