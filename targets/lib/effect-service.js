'use strict';
// The part every Node.js target shares: the effect service skewbench drives
// (docs/targets.md, "The effect service"). A target wraps one idempotency
// library around one effect; this module keeps the effect's store and speaks
// the protocol:
//
//   POST /effects         X-Operation-Id, Idempotency-Key, X-Idempotency-TTL;
//                         the library decides; 200 {delivery: applied |
//                         deduplicated, ...snapshot}; a library refusal is 409
//                         {error, detail, ...snapshot}; any other failure (its
//                         store unreachable) is 503, which skewbench reads as
//                         an infrastructure error. X-Drop-Ack: 1 commits, then
//                         closes the connection without answering.
//   GET  /status/{op}     the operation's snapshot: status, effect_count,
//                         post_requests, ack_drops, evaluation_time, boot_id.
//   GET  /health          status ok, boot_id, clock "system", wall_clock_s.
//
// The store is an append-only file of JSON lines ($STATE_DB): one "effect"
// row each time the library lets the effect run, one "post" row for each POST
// the library answered (applied or deduplicated). Every instance of a target
// appends to the same file (O_APPEND: a short line is written whole), so the
// counts are the service's, whichever instance is asked, and they survive a
// restart of an instance or of the library's store. Every time here is the
// process's own wall clock (Date.now()), which skewbench drives.

const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');

const bootId = crypto.randomBytes(16).toString('hex');

// The errors by which a library refuses a request, rather than fails: a
// record still in progress, a key reused with another body. A target may
// also mark one with `error.refusal = true`.
const kRefusals = new Set([
  'IdempotencyAlreadyInProgressError',  // Powertools
  'IdempotencyValidationError',         // Powertools: payload does not match the record
  'IdempotencyError',                   // @node-idempotency/core (in progress, fingerprint mismatch)
]);

function isRefusal(error) {
  return Boolean(error) && (error.refusal === true || kRefusals.has(error.name) ||
                            kRefusals.has(error.constructor && error.constructor.name));
}

function nowS() {
  return Math.floor(Date.now() / 1000);
}

class Ledger {
  constructor(path) {
    if (!path) throw new Error('STATE_DB (the effect ledger file) is not set');
    this.path = path;
    fs.appendFileSync(this.path, '');
  }

  append(row) {
    fs.appendFileSync(this.path, JSON.stringify(row) + '\n');
  }

  rows(operationId) {
    return fs
      .readFileSync(this.path, 'utf8')
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line))
      .filter((row) => row.operation_id === operationId);
  }

  snapshot(operationId, evaluationS) {
    const rows = this.rows(operationId);
    const effects = rows.filter((row) => row.row === 'effect');
    const posts = rows.filter((row) => row.row === 'post');
    const count = effects.length;
    return {
      operation_id: operationId,
      evaluation_time: evaluationS,
      status: count === 0 ? 'absent' : count === 1 ? 'committed' : 'conflict',
      effect_count: count,
      effects: effects.map((row) => ({
        operation_id: row.operation_id,
        idempotency_key: row.idempotency_key,
        created_at: row.at_s,
        instance: row.instance,
      })),
      post_requests: posts.length,
      ack_drops: posts.filter((row) => row.drop_ack).length,
      boot_id: bootId,
    };
  }
}

function reply(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text)});
  res.end(text);
}

function header(req, name) {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

// The POST as a target's `deliver` sees it. `effect()` writes the effect row;
// the library calls it when it lets the operation run.
function postRequest(req, body, ledger, evaluationS) {
  const operationId = header(req, 'X-Operation-Id');
  const key = header(req, 'Idempotency-Key');
  const ttl = header(req, 'X-Idempotency-TTL');
  const request = {
    operationId,
    key,
    ttlS: ttl === undefined ? Number(process.env.DEFAULT_TTL_SECONDS || 60) : Number(ttl),
    body,
    headers: req.headers,
    applied: false,
    effect() {
      request.applied = true;
      ledger.append({row: 'effect', operation_id: operationId, idempotency_key: key, at_s: nowS(), instance: bootId});
      return {operation_id: operationId, idempotency_key: key};
    },
  };
  if (!operationId || !key || !Number.isInteger(request.ttlS) || request.ttlS < 1) {
    return {error: 'X-Operation-Id, Idempotency-Key and a positive integer X-Idempotency-TTL are required'};
  }
  request.evaluationS = evaluationS;
  return request;
}

// Runs one POST through the target's `deliver(request)`, which resolves when
// the library has answered (and rejects with the library's error when it
// refuses the request).
async function handlePost(req, res, ledger, deliver) {
  const evaluationS = nowS();
  const request = postRequest(req, await readBody(req), ledger, evaluationS);
  if (request.error) return reply(res, 400, {error: 'invalid_request', detail: request.error});
  const dropAck = header(req, 'X-Drop-Ack') === '1';
  try {
    await deliver(request);
  } catch (error) {
    return reply(res, isRefusal(error) ? 409 : 503, {
      error: error.name || 'library_error',
      detail: String(error.message || error),
      ...ledger.snapshot(request.operationId, evaluationS),
    });
  }
  ledger.append({row: 'post', operation_id: request.operationId, idempotency_key: request.key, at_s: evaluationS,
                 drop_ack: dropAck, applied: request.applied, instance: bootId});
  if (dropAck) return res.socket.destroy();
  reply(res, 200, {
    delivery: request.applied ? 'applied' : 'deduplicated',
    idempotency_key: request.key,
    ttl_seconds: request.ttlS,
    ...ledger.snapshot(request.operationId, evaluationS),
  });
}

// Starts the effect service of a target: `deliver(request)` wraps the library
// around `request.effect()`; `library` names it in /health. Listens on $HOST
// (default 127.0.0.1) and $PORT.
function serve({target, library, deliver}) {
  const ledger = new Ledger(process.env.STATE_DB);
  const server = http.createServer((req, res) => {
    const path = req.url.split('?')[0];
    const fail = (error) => reply(res, 500, {error: 'internal', detail: String(error && error.stack || error)});
    if (req.method === 'GET' && path === '/health') {
      return reply(res, 200, {status: 'ok', service: target, library, boot_id: bootId, pid: process.pid,
                              clock: 'system', wall_clock_s: nowS()});
    }
    if (req.method === 'GET' && path.startsWith('/status/')) {
      return reply(res, 200, ledger.snapshot(decodeURIComponent(path.slice('/status/'.length)), nowS()));
    }
    if (req.method === 'POST' && path === '/effects') return handlePost(req, res, ledger, deliver).catch(fail);
    reply(res, 404, {error: 'not_found', detail: `${req.method} ${path} is not part of this service`});
  });
  server.keepAliveTimeout = 10000;
  server.on('connection', (socket) => socket.setNoDelay(true));
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  server.listen(Number(process.env.PORT || 8080), process.env.HOST || '127.0.0.1', () => {
    process.stderr.write(`${target}: listening on ${process.env.HOST || '127.0.0.1'}:${server.address().port}\n`);
  });
  return server;
}

module.exports = {serve, Ledger, reply, header, readBody, nowS, bootId};
