'use strict';
// express-idempotency in a payment service (./payments.js), as its README sets
// it up, whatever its data adapter: the middleware in front of the POST
// /payments handler, which returns at once when the middleware found the
// key's record (isHit) and charges the provider otherwise.
//
// The middleware answers a key it holds a response for itself, with that
// response as it was first sent (the same status, headers and body): a
// replay is 201 with the first payment, as the charge was. While the key's
// first request is in progress it answers 409, and for the key with another
// request (body, URL, method or query) 417, through the error handler. It
// keeps a response only when it is 2xx: a failed charge (502) leaves no
// record.

const {idempotency, getSharedIdempotencyService} = require('express-idempotency');
const {paymentOf, charge, requireKey} = require('./payments');

// Adds POST /payments to `app`, with the middleware's records in
// `dataAdapter` (its in-memory adapter when undefined).
function addPaymentsRoute(app, dataAdapter, {providerUrl}) {
  app.post('/payments', requireKey, idempotency({dataAdapter}), async (req, res) => {
    if (getSharedIdempotencyService().isHit(req)) return;  // answered from the record
    const payment = paymentOf(req.body);
    if (!payment) return res.status(400).json({error: 'bad_request'});
    try {
      const provider = await charge(providerUrl, payment);
      res.status(201).json({...payment, status: 'succeeded', provider});
    } catch (error) {
      res.status(502).json({error: 'provider_failed', detail: String(error.message)});
    }
  });
  // The middleware's refusals: it sets the status, then passes an error.
  app.use((error, req, res, next) => {
    if (res.statusCode !== 409 && res.statusCode !== 417) return next(error);
    res.json({error: String(error.message)});
  });
}

module.exports = {addPaymentsRoute};
