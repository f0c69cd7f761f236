// A mail service as a team writes it, not as skewbench's examples do: Node.js
// with no package, its own route and answers, and its records in memory.
//
// POST /v1/messages with an X-Request-Id header and {"message_id", "to"}
// sends the message once through a mail provider (PUT
// $MAIL_PROVIDER_URL/messages/<message_id>) and answers 202
// {"result": "queued"}. The same X-Request-Id again, while its record lives
// (RECORD_TTL_S seconds by the instance's Date.now()), answers 200
// {"result": "duplicate"}; 409 {"result": "in_flight"} while the first is
// being sent; 422 {"result": "mismatch"} for another body. Prints
// "mailer listening on PORT" once it listens.
'use strict';

const http = require('node:http');
const crypto = require('node:crypto');

const port = Number(process.env.PORT);
const provider = process.env.MAIL_PROVIDER_URL;
const ttlMs = Number(process.env.RECORD_TTL_S) * 1000;
const records = new Map();  // request id -> {digest, state, answer, expiresAt}

function answer(res, status, result) {
  res.writeHead(status, {'Content-Type': 'application/json'});
  res.end(JSON.stringify({result}));
}

async function send(message) {
  const reply = await fetch(`${provider}/messages/${encodeURIComponent(message.message_id)}`, {
    method: 'PUT',
    headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({to: message.to}),
  });
  if (!reply.ok) throw new Error(`provider answered ${reply.status}`);
}

async function handle(req, res, body) {
  const id = req.headers['x-request-id'];
  if (req.method !== 'POST' || req.url !== '/v1/messages' || !id) return answer(res, 404, 'not_found');
  const digest = crypto.createHash('sha256').update(body).digest('hex');
  const now = Date.now();
  const record = records.get(id);
  if (record && record.expiresAt > now) {
    if (record.digest !== digest) return answer(res, 422, 'mismatch');
    if (record.state === 'sending') return answer(res, 409, 'in_flight');
    return answer(res, 200, 'duplicate');
  }
  records.set(id, {digest, state: 'sending', expiresAt: now + ttlMs});
  try {
    await send(JSON.parse(body));
  } catch (error) {
    records.delete(id);
    return answer(res, 502, 'provider_failed');
  }
  records.get(id).state = 'sent';
  return answer(res, 202, 'queued');
}

http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => handle(req, res, Buffer.concat(chunks).toString()));
}).listen(port, '127.0.0.1', () => console.log(`mailer listening on ${port}`));
