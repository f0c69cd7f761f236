'use strict';
// AWS Powertools idempotency in a payment service (./payments.js), as a team
// writes it outside Lambda, whatever its persistence layer: makeIdempotent()
// around the function that charges the provider, the record keyed by the
// request's Idempotency-Key, kept IDEMPOTENCY_TTL_S seconds
// (expiresAfterSeconds).
//
// Payload validation is left off, as Powertools leaves it by default: with
// payloadValidationJmesPath set, the CachePersistenceLayer of 2.35.0 writes
// the COMPLETED record without the payload's hash, so every replay of the
// same payment is refused as a mismatch (IdempotencyValidationError). The key
// with another payment is therefore answered with the first one's.
//
// POST /payments answers 201 with the payment when it charged, 200 with the
// stored payment when Powertools replayed it (the config's responseHook marks
// a replay), 409 while the key's record is in progress, 502 when the provider
// failed (Powertools then deletes the record), 503 when the persistence layer
// failed.
//
// No Lambda context is registered (a plain Node.js server has none), so a
// record in progress carries no in-progress expiry. With
// LAMBDA_FUNCTION_TIMEOUT_MS set, the service registers the context a Lambda
// function of that timeout gets at the start of an invocation
// (config.registerLambdaContext): Powertools then writes each record in
// progress with an in-progress expiry of the writer's Date.now() plus the
// time that remains, and a reader takes the record over once its own
// Date.now() is past it.

const {
  makeIdempotent,
  IdempotencyConfig,
  IdempotencyAlreadyInProgressError,
  IdempotencyUnknownError,
} = require('@aws-lambda-powertools/idempotency');
const {paymentOf, charge, requireKey} = require('./payments');

// The function timeout of LAMBDA_FUNCTION_TIMEOUT_MS in ms, or null when unset.
function functionTimeoutMs() {
  const text = process.env.LAMBDA_FUNCTION_TIMEOUT_MS;
  if (text === undefined || text === '') return null;
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms < 1) throw new Error(`LAMBDA_FUNCTION_TIMEOUT_MS is not a whole number of ms: ${text}`);
  return ms;
}

// Adds POST /payments to `app`, its charge made idempotent in `persistenceStore`.
function addPaymentsRoute(app, persistenceStore, {providerUrl, ttlS}) {
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'idempotencyKey',
    expiresAfterSeconds: ttlS,
    responseHook: (response) => ({...response, replayed: true}),
  });
  const timeoutMs = functionTimeoutMs();
  if (timeoutMs !== null) config.registerLambdaContext({getRemainingTimeInMillis: () => timeoutMs});
  const chargeOnce = makeIdempotent(
    async ({payment}) => ({payment, provider: await charge(providerUrl, payment)}),
    {persistenceStore, config},
  );
  app.post('/payments', requireKey, async (req, res) => {
    const payment = paymentOf(req.body);
    if (!payment) return res.status(400).json({error: 'bad_request'});
    try {
      const done = await chargeOnce({idempotencyKey: req.get('Idempotency-Key'), payment});
      res.status(done.replayed ? 200 : 201).json({...done.payment, status: 'succeeded', provider: done.provider});
    } catch (error) {
      if (error instanceof IdempotencyAlreadyInProgressError) return res.status(409).json({error: 'request_in_progress'});
      const status = error instanceof IdempotencyUnknownError ? 503 : 502;
      res.status(status).json({error: status === 503 ? 'idempotency_store_failed' : 'provider_failed',
                               detail: String(error.message)});
    }
  });
}

module.exports = {addPaymentsRoute};
