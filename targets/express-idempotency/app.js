'use strict';
// The effect service of ../lib/effect-service.js, served by Express 5 with
// express-idempotency as the middleware of POST /effects. Shared by the
// express-idempotency targets; each one says which IdempotencyService (that
// is, which data adapter) serves a request.
//
// The routes, JSON bodies, ledger rows, X-Drop-Ack handling and 409 on a
// library refusal are those of lib/effect-service.js; its Ledger, reply,
// header, nowS and bootId are reused. Only handlePost is written anew here,
// because the library is a middleware and answers some POSTs itself:
//
//   1. `start` checks the headers (400 as effect-service.js does) and makes
//      res.send the one place a POST the library let through is answered:
//      it appends the "post" row, then closes the connection (X-Drop-Ack: 1)
//      or answers 200 with a snapshot of the ledger.
//   2. express.json() parses the body (the library's intent validator
//      compares it with the first request's; skewbench resends the same).
//   3. The library (node_modules/express-idempotency/dist/services/
//      idempotencyService.js, provideMiddlewareFunction):
//      - new key: stores the request, hooks res.send to store the response
//        the handler sends, calls next() -> `effect` runs the effect.
//      - key with a stored response: replays it itself
//        (res.status(...).send(storedBody)) and calls next() anyway; `effect`
//        sees isHit(req) and does nothing more.
//      - key still in progress, or the same key for another request
//        (url, method, query or body differ): next(error) -> 409 here.
//   4. `effect` appends the "effect" row and sends what the library stores:
//      the effect's result only, no counts and no "delivery". The library
//      would replay that stored body as is; res.send (step 1) ignores the
//      body it is given and builds the answer when it is sent, from the
//      ledger, with "applied" when this request ran the effect and
//      "deduplicated" when the library replayed. So a replayed answer carries
//      this request's counts, not the first answer's.

const express = require('express');
const {Ledger, reply, header, nowS, bootId} = require('../lib/effect-service');

// The header the library sets on a request it found a record for
// (idempotencyService.js: HIT_HEADER 'x-hit'); isHit(req) reads it back.
const HIT_HEADER = 'x-hit';

// Starts the effect service: `idempotencyFor(ttlS)` gives the
// IdempotencyService that decides a request with that X-Idempotency-TTL;
// `ready` (optional) is awaited before the library is asked; `library` names
// it in /health. Listens on $HOST (default 127.0.0.1) and $PORT.
function serveExpress({target, library, idempotencyFor, ready}) {
  const ledger = new Ledger(process.env.STATE_DB);
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('case sensitive routing', true);
  app.set('strict routing', true);

  app.use((req, res, next) => {
    if (req.method !== 'GET') return next();
    const path = req.url.split('?')[0];
    if (path === '/health') {
      return reply(res, 200, {status: 'ok', service: target, library, boot_id: bootId, pid: process.pid,
                              clock: 'system', wall_clock_s: nowS()});
    }
    if (path.startsWith('/status/')) {
      return reply(res, 200, ledger.snapshot(decodeURIComponent(path.slice('/status/'.length)), nowS()));
    }
    next();
  });

  // 1. The POST as effect-service.js reads it, and its one way out.
  function start(req, res, next) {
    const evaluationS = nowS();
    const operationId = header(req, 'X-Operation-Id');
    const key = header(req, 'Idempotency-Key');
    const ttl = header(req, 'X-Idempotency-TTL');
    const ttlS = ttl === undefined ? Number(process.env.DEFAULT_TTL_SECONDS || 60) : Number(ttl);
    if (!operationId || !key || !Number.isInteger(ttlS) || ttlS < 1) {
      return reply(res, 400, {error: 'invalid_request',
                              detail: 'X-Operation-Id, Idempotency-Key and a positive integer X-Idempotency-TTL are required'});
    }
    // Only the library may mark a request as a hit.
    delete req.headers[HIT_HEADER];
    const request = {operationId, key, ttlS, evaluationS, dropAck: header(req, 'X-Drop-Ack') === '1',
                     applied: false, answered: false};
    res.locals.request = request;
    // Installed before the library's hook, which wraps it: on a new key the
    // library stores the body `effect` sends, then calls this. The body
    // (stored or replayed) is not the answer: the answer is built here.
    res.send = () => {
      if (request.answered) return res;
      request.answered = true;
      ledger.append({row: 'post', operation_id: operationId, idempotency_key: key, at_s: evaluationS,
                     drop_ack: request.dropAck, applied: request.applied, instance: bootId});
      if (request.dropAck) {
        res.socket.destroy();
        return res;
      }
      reply(res, 200, {
        delivery: request.applied ? 'applied' : 'deduplicated',
        idempotency_key: key,
        ttl_seconds: ttlS,
        ...ledger.snapshot(operationId, evaluationS),
      });
      return res;
    };
    next();
  }

  // 3. The library. An error it passes to next() is a refusal (a request in
  // progress, a key misused): 409, as effect-service.js answers one. What it
  // throws (its data adapter's: Redis unreachable) is a failure: 500, which
  // skewbench reads as an infrastructure error, never as the library's answer.
  async function viaLibrary(req, res, next) {
    const refused = (error) => {
      res.locals.refusal = error;
      next(error);
    };
    try {
      await ready;
      const service = idempotencyFor(res.locals.request.ttlS);
      res.locals.service = service;
      await service.provideMiddlewareFunction(req, res, (error) => (error ? refused(error) : next()));
    } catch (error) {
      next(error);
    }
  }

  // 4. The effect, when the library lets the request through.
  function effect(req, res) {
    const request = res.locals.request;
    // A hit: the library has replayed already (through res.send above, so
    // the answer is "deduplicated") and called next() all the same.
    if (res.locals.service.isHit(req)) return;
    request.applied = true;
    ledger.append({row: 'effect', operation_id: request.operationId, idempotency_key: request.key,
                   at_s: nowS(), instance: bootId});
    // What the library stores for the key and replays on a hit.
    res.send({operation_id: request.operationId, idempotency_key: request.key});
  }

  app.post('/effects', start, express.json(), viaLibrary, effect);

  app.use((req, res) => {
    const path = req.url.split('?')[0];
    reply(res, 404, {error: 'not_found', detail: `${req.method} ${path} is not part of this service`});
  });

  app.use((error, req, res, _next) => {
    if (res.headersSent || (res.socket && res.socket.destroyed)) return;
    const request = res.locals.request;
    if (request && error === res.locals.refusal) {
      return reply(res, 409, {
        error: (error && error.name) || 'library_error',
        detail: String((error && error.message) || error),
        ...ledger.snapshot(request.operationId, request.evaluationS),
      });
    }
    if (error && error.type === 'entity.parse.failed') {
      return reply(res, 400, {error: 'invalid_request', detail: String(error.message)});
    }
    reply(res, 500, {error: 'internal', detail: String((error && error.stack) || error)});
  });

  const server = app.listen(Number(process.env.PORT || 8080), process.env.HOST || '127.0.0.1', (error) => {
    if (error) throw error;
    process.stderr.write(`${target}: listening on ${process.env.HOST || '127.0.0.1'}:${server.address().port}\n`);
  });
  server.keepAliveTimeout = 10000;
  server.on('connection', (socket) => socket.setNoDelay(true));
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return server;
}

module.exports = {serveExpress};
