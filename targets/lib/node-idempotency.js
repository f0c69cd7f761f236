'use strict';
// @node-idempotency/core 1.0.11 around the effect, whatever the storage
// adapter: onRequest() before the effect, onResponse() after it, the record
// keyed by the request's Idempotency-Key (the core's default header,
// "idempotency-key") and kept for the request's X-Idempotency-TTL
// (options.cacheTTLMS, per request). The adapter decides where the records
// live and whose clock expires them (each target's service.js says).

const {Idempotency, IdempotencyError} = require('@node-idempotency/core');

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

// The `deliver` of effect-service.js over `storage`.
function nodeIdempotencyDeliver(storage) {
  const idempotency = new Idempotency(storage);
  return async function deliver(request) {
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
  };
}

module.exports = {nodeIdempotencyDeliver};
