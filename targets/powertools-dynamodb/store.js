'use strict';
// The store of the powertools-dynamodb target: a dynalite server (DynamoDB
// on LevelDB, in Node) on 127.0.0.1:$STORE_PORT, keeping its data in the
// LevelDB folder $STORE_DIR, so that the idempotency records survive a
// restart of this process.
//
// The idempotency table is created here, on every start, before the port
// opens: dynalite's request handler is first served on a private ephemeral
// port, CreateTable goes there (ResourceInUseException - the table is already
// in $STORE_DIR - is fine), and only once the table is ACTIVE does the server
// listen on $STORE_PORT. So whoever sees $STORE_PORT open also sees the table,
// and the service instances create nothing: several of them starting at once
// cannot race each other, nor reach the store between its listen and its
// CreateTable, nor find the table missing after the store restarts.
//
// dynalite implements no TTL (DescribeTimeToLive always answers DISABLED and
// there is no UpdateTimeToLive): it never removes an expired record. Powertools
// does not need it to: its PutItem condition (`expiration < :now`) lets an
// expired record be overwritten, :now being the caller's clock.
//
// Nothing is printed on stdout; a line on stderr says where it listens.

const fs = require('node:fs');
const http = require('node:http');
const dynalite = require('dynalite');
const {DynamoDBClient, CreateTableCommand, DescribeTableCommand} = require('@aws-sdk/client-dynamodb');

const TABLE_NAME = process.env.IDEMPOTENCY_TABLE || 'skewbench-idempotency';
const HOST = '127.0.0.1';
const port = Number(process.env.STORE_PORT);
const dir = process.env.STORE_DIR;

function log(message) {
  process.stderr.write(`powertools-dynamodb store: ${message}\n`);
}

if (!Number.isInteger(port) || port < 1) {
  log('STORE_PORT (the port to listen on) is not set');
  process.exit(2);
}
if (!dir) {
  log('STORE_DIR (the LevelDB folder) is not set');
  process.exit(2);
}
fs.mkdirSync(dir, {recursive: true});

// createTableMs/updateTableMs 0: a new table is ACTIVE at once.
const server = dynalite({path: dir, createTableMs: 0, updateTableMs: 0, deleteTableMs: 0});

function listen(target, listenPort) {
  return new Promise((resolve, reject) => {
    target.once('error', reject);
    target.listen(listenPort, HOST, () => {
      target.removeListener('error', reject);
      resolve(target.address().port);
    });
  });
}

// Powertools' DynamoDBPersistenceLayer by default: partition key `id` (S), no
// sort key; `expiration`, `status`, `in_progress_expiration`, `data` and
// `validation` are plain attributes it writes itself.
async function ensureTable(endpointPort) {
  const client = new DynamoDBClient({
    endpoint: `http://${HOST}:${endpointPort}`,
    region: 'us-east-1',
    credentials: {accessKeyId: 'skewbench', secretAccessKey: 'skewbench'},
    maxAttempts: 1,
  });
  try {
    await client.send(new CreateTableCommand({
      TableName: TABLE_NAME,
      AttributeDefinitions: [{AttributeName: 'id', AttributeType: 'S'}],
      KeySchema: [{AttributeName: 'id', KeyType: 'HASH'}],
      BillingMode: 'PAY_PER_REQUEST',
    }));
    log(`created table ${TABLE_NAME}`);
  } catch (error) {
    if (error.name !== 'ResourceInUseException') throw error;
    log(`table ${TABLE_NAME} exists`);
  }
  for (let attempt = 0; ; attempt++) {
    const {Table} = await client.send(new DescribeTableCommand({TableName: TABLE_NAME}));
    if (Table.TableStatus === 'ACTIVE') break;
    if (attempt >= 100) throw new Error(`table ${TABLE_NAME} is still ${Table.TableStatus}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  client.destroy();
}

let stopping = false;
function stop(signal) {
  if (stopping) return;
  stopping = true;
  log(`${signal}: closing`);
  // A hard stop if the graceful close (which waits for LevelDB) hangs.
  setTimeout(() => process.exit(1), 10000).unref();
  if (!server.listening) process.exit(0);
  // dynalite's close stops the HTTP server, then closes LevelDB.
  server.close((error) => {
    if (error) log(`close: ${error.message}`);
    process.exit(error ? 1 : 0);
  });
  // Kept-alive client connections would hold the HTTP close open.
  server.closeAllConnections();
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));

async function main() {
  // The same dynalite (same LevelDB) behind a private, ephemeral port, for the
  // CreateTable only. A plain http.Server: closing it leaves the LevelDB open.
  const [handler] = server.listeners('request');
  const bootstrap = http.createServer(handler);
  const bootstrapPort = await listen(bootstrap, 0);
  try {
    await ensureTable(bootstrapPort);
  } finally {
    bootstrap.closeAllConnections();
    await new Promise((resolve) => bootstrap.close(resolve));
  }
  if (stopping) return;
  await listen(server, port);
  log(`dynalite listening on ${HOST}:${port}, data in ${dir}, table ${TABLE_NAME}`);
}

main().catch((error) => {
  log(`failed to start: ${error && error.stack || error}`);
  process.exit(1);
});
