'use strict';
// @node-idempotency/core in a payment service (./payments.js), as its README
// sets it up, whatever its storage adapter: onRequest() before the charge,
// onResponse() after it, the record keyed by method, path and the request's
// Idempotency-Key and fingerprinted by its body, kept IDEMPOTENCY_TTL_S
// seconds (the cacheTTLMS option).
//
// A key whose record is complete is answered with the response stored for it
// (the same status and body: a replay is 201 with the first payment, as the
// charge was); a key whose first request is in progress is 409, the key with
// another body 422. A failed charge is stored as the key's response too (502),
// as the README's onResponse({error}) does, so its replays fail alike.

const {Idempotency, IdempotencyError, IdempotencyErrorCodes} = require('@node-idempotency/core');
const {paymentOf, charge, requireKey} = require('./payments');

const kRefusals = {
  [IdempotencyErrorCodes.REQUEST_IN_PROGRESS]: 409,
  [IdempotencyErrorCodes.IDEMPOTENCY_FINGERPRINT_MISSMATCH]: 422,
};

// The response to store for `payment`: the charge's, or its failure's.
async function charged(providerUrl, payment) {
  try {
    const provider = await charge(providerUrl, payment);
    return {body: {...payment, status: 'succeeded', provider}, additional: {status: 201}};
  } catch (error) {
    return {body: {error: 'provider_failed', detail: String(error.message)}, additional: {status: 502}};
  }
}

// Adds POST /payments to `app`, its records in `storage`.
function addPaymentsRoute(app, storage, {providerUrl, ttlS}) {
  const idempotency = new Idempotency(storage, {cacheTTLMS: ttlS * 1000});
  app.post('/payments', requireKey, async (req, res) => {
    const payment = paymentOf(req.body);
    if (!payment) return res.status(400).json({error: 'bad_request'});
    const request = {method: req.method, path: req.path, headers: req.headers, body: req.body};
    try {
      const stored = await idempotency.onRequest(request);
      if (stored) return res.status(stored.additional.status).json(stored.body);
    } catch (error) {
      if (!(error instanceof IdempotencyError)) throw error;
      return res.status(kRefusals[error.code] || 400).json({error: error.code, detail: error.message});
    }
    const response = await charged(providerUrl, payment);
    await idempotency.onResponse(request, response);
    res.status(response.additional.status).json(response.body);
  });
}

module.exports = {addPaymentsRoute};
