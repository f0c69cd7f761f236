#include "targets/template.hpp"

#include <string_view>

#include "targets/target.hpp"

namespace skewbench::targets {
namespace {

// NAME is the target's name. Kept valid as printed: a unit test reads it as a
// target file.
constexpr std::string_view kTemplate = R"(// target.json of NAME: a service of its own wire under skewbench's series.
// Save it as <targets folder>/NAME/target.json, change every line marked
// CHANGE, then run from skewbench's folder (which holds the series,
// scenarios/targets/):
//   skewbench targets NAME --targets-dir <targets folder> --out findings
// docs/targets.md ("Put your own service under the series") explains each field.
// Comments (// and /* */) are allowed in this file.
{
  "schema_version": 2,
  "name": "NAME",  // the name of this file's folder
  "description": "CHANGE: what the service is and how it judges a key's expiry, in a sentence",
  "library": "CHANGE: its language, framework and store, with versions",
  "install": "CHANGE: how to install what it needs, e.g. apt-get install python3 libfaketime",
  // Commands that must be on PATH; an entry holding '/' is a file relative to
  // this folder. Checked before anything starts.
  "needs": ["python3", "./app.py"],  // CHANGE

  "service": {
    "wire": "own",
    // One instance of the service, run with /bin/sh. skewbench fills in:
    //   {port}        the port it must listen on, on 127.0.0.1
    //   {sink_url}    the base URL of its provider (the payment processor, the
    //                 mailer): skewbench's effect sink, which counts the
    //                 effects. The service appends its own path
    //                 ({sink_url}/charges) and passes the operation id
    //                 (see "sink" below).
    //   {ttl_s}       the TTL of its idempotency records ("ttl_s" below)
    //   {state_db}    a file every instance of the run shares (a SQLite file)
    //   {target_dir}  this folder
    // and, with a "store" (below), {store_port} and {store_dir}. The instance
    // also gets PORT, HOST and STATE_DB in its environment.
    "command": "python3 {target_dir}/app.py --port {port} --provider-url {sink_url} --ttl {ttl_s}",  // CHANGE
    // More environment; values may hold {sink_url}, {ttl_s}, {target_dir},
    // {store_port} and {store_dir}.
    "env": {},
    // When an instance is ready: a GET of this path answers 2xx; or
    // {"tcp_port": true}, the port accepts a connection; or
    // {"log_line": "listening"}, a line of its output holds that text.
    "ready": {"http_get": "/healthz"},  // CHANGE
    // How long an instance may take to be ready, at its start and after each
    // restart (a JVM under libfaketime can take 10 s).
    "ready_timeout_s": 10,
    // The TTL it is configured with: the scenarios of scenarios/targets/ are
    // written for 60 s, and a scenario of another TTL is refused.
    "ttl_s": 60,
    // How an instance is stopped: this signal to its process group, SIGKILL
    // after grace_s. How the restart scenario restarts it: "kill" (a crash)
    // or "graceful" (stopped as above first, as a deploy does).
    "stop": {"signal": "SIGTERM", "grace_s": 5},
    "restart": "kill"
  },

  // The request a scenario's POST becomes. Path, header values and body may
  // hold {operation_id} (the same for every attempt at one operation),
  // {idempotency_key} (sent in key_header; a new one when a scenario's client
  // mints a new key) and {amount} (1000). A body written as JSON is sent as
  // its text.
  "request": {
    "method": "POST",
    "path": "/payments",  // CHANGE
    "key_header": "Idempotency-Key",
    "headers": {"Content-Type": "application/json"},
    "body": {"order_id": "{operation_id}", "amount": "{amount}"}  // CHANGE
  },

  // How its answer reads: "applied" (it performed the effect now),
  // "replayed" (it answered from its record), "applied_or_replayed" (a
  // replay that is the first answer as it was sent, the same status and
  // body: the sink tells which), "refused_in_progress", "refused_mismatch"
  // (the key was reused with another body) or "error".
  // A status not listed is an error. To read a string field of the answer
  // (first, then the status when the field or its value is not listed; the
  // status rules may then be left out):
  //   "json_pointer": "/outcome", "values": {"created": "applied", "replayed": "replayed"}
  "answer": {
    "status": {"201": "applied", "200": "replayed", "409": "refused_in_progress", "422": "refused_mismatch"}  // CHANGE
  },

  // Where the service's call to {sink_url} carries the operation id, which
  // it has from the request above (the order id it passes its provider as a
  // reference): {"json_pointer": "/reference"} into the call's JSON body,
  // {"header": "X-Order-Id"}, or {"path_segment": 1} (0 is the first segment
  // after {sink_url}: /charges/<id> is segment 1).
  "sink": {"operation_id": {"json_pointer": "/reference"}}  // CHANGE

  // A store of its own that skewbench starts, restarts (016-store-restart)
  // and puts on a clock of its own (a database server), e.g.
  //   , "store": {"name": "postgres", "command": "sh {target_dir}/store.sh {store_port} {store_dir}",
  //               "ready": {"command": "pg_isready -q -h 127.0.0.1 -p {store_port}"}}
  // examples/services/python-postgres/ holds one; without a store, the
  // 016-store-restart row is n/a.
}
)";

}  // namespace

std::string target_template(const std::string& name) {
  if (!is_target_name(name)) {
    throw TargetFileError("\"" + name + "\" is not a target's name: it must match " + std::string(kTargetNamePattern) +
                          " (it is its folder's name)");
  }
  std::string out(kTemplate);
  for (auto at = out.find("NAME"); at != std::string::npos; at = out.find("NAME", at + name.size())) {
    out.replace(at, 4, name);
  }
  return out;
}

}  // namespace skewbench::targets
