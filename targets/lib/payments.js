'use strict';
// What the Node.js library targets' payment services share, none of it
// idempotency: their settings, the payment a request carries, the call that
// charges it at the payment provider, and the Express app and server around
// the route. Each target's service.js puts its library around the charge.
//
// The service, as a team writes it:
//   POST /payments   Idempotency-Key header, JSON {"order_id", "amount"}:
//                    charges the order once at the provider (POST
//                    $PAYMENT_PROVIDER_URL/charges, {"reference": order_id,
//                    "amount"}) and answers 201 with the payment; what a
//                    replay, a request still in progress or a key reused with
//                    another body answer is the library's (each target.json
//                    lists them); 400 for a request without a key or payment,
//                    502 when the provider fails.
//   GET  /healthz    200 once it listens (and its store is connected).
// Settings from the environment: PORT, HOST (127.0.0.1), PAYMENT_PROVIDER_URL
// and IDEMPOTENCY_TTL_S, the seconds an idempotency record lives.

const express = require('express');

function setting(name, fallback) {
  const value = process.env[name] ?? fallback;
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}

function settings() {
  const port = Number(setting('PORT'));
  const ttlS = Number(setting('IDEMPOTENCY_TTL_S', '60'));
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`PORT is not a port: ${process.env.PORT}`);
  if (!Number.isInteger(ttlS) || ttlS < 1) throw new Error(`IDEMPOTENCY_TTL_S is not a whole number of seconds: ${ttlS}`);
  return {port, host: setting('HOST', '127.0.0.1'), providerUrl: setting('PAYMENT_PROVIDER_URL').replace(/\/$/, ''), ttlS};
}

// The payment of a request's JSON body, or null when it is not one.
function paymentOf(body) {
  const orderId = body && body.order_id;
  const amount = Number(body && body.amount);
  if (typeof orderId !== 'string' || orderId === '' || !Number.isInteger(amount) || amount < 1) return null;
  return {order_id: orderId, amount};
}

// Charges `payment` at the provider; resolves to its answer, rejects when it
// fails.
async function charge(providerUrl, payment) {
  const answer = await fetch(`${providerUrl}/charges`, {
    method: 'POST',
    headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({reference: payment.order_id, amount: payment.amount}),
    signal: AbortSignal.timeout(30000),
  });
  const text = await answer.text();
  if (!answer.ok) throw new Error(`the provider answered ${answer.status}: ${text.slice(0, 200)}`);
  return text ? JSON.parse(text) : {};
}

// The app with its JSON body parser and GET /healthz; `isReady()` (optional)
// says whether the store is connected.
function paymentApp(isReady = () => true) {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(express.json());
  app.get('/healthz', (req, res) => (isReady() ? res.json({ok: true}) : res.status(503).json({ok: false})));
  return app;
}

// 400 for a POST without an Idempotency-Key: every library here would
// otherwise let it run without a record.
function requireKey(req, res, next) {
  if (!req.get('Idempotency-Key')) return res.status(400).json({error: 'idempotency_key_required'});
  next();
}

// Listens as `name`; SIGTERM and SIGINT close the server and exit.
function serve(app, name, {port, host}) {
  app.use((error, req, res, _next) => {
    const status = error.status || error.statusCode || 500;
    res.status(status).json({error: status === 400 ? 'bad_request' : 'internal', detail: String(error.message)});
  });
  const server = app.listen(port, host, (error) => {
    if (error) throw error;
    process.stderr.write(`${name}: listening on ${host}:${port}\n`);
  });
  server.on('connection', (socket) => socket.setNoDelay(true));
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return server;
}

module.exports = {settings, paymentOf, charge, paymentApp, requireKey, serve};
