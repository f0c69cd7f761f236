#!/usr/bin/env bash
# ctest -L targets: a service skewbench has never seen, put under the series
# the way docs/targets.md ("Put your own service under the series") says,
# from the template `skewbench targets init` prints.
#
#   check_init.sh SKEWBENCH SOURCE_DIR
#
# 1. targets init refuses a name that cannot be a folder's (exit 2).
# 2. The template as printed is read as a target file, and the run stops at
#    what it names as needed and is missing (exit 2, naming it).
# 3. The template with its lines changed for the Node.js mail service
#    tests/targets/newcomer/mailer.js, comments kept, is the target.json
#    docs/targets.md shows for it; with it the whole series runs, every row
#    as tests/targets/newcomer/findings.md says, and every evidence folder
#    verifies. docs/targets.md shows that table.
# 4. The check can fail: with a sink rule that reads the wrong path segment,
#    a row is an ERROR (exit 3) naming the call the sink took.
set -euo pipefail
skewbench=${1:?usage: check_init.sh SKEWBENCH SOURCE_DIR}
source_dir=${2:?usage: check_init.sh SKEWBENCH SOURCE_DIR}
cd "$source_dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
newcomer=tests/targets/newcomer

run_expecting 2 "$scratch/bad-name.txt" "targets init Mailer" "is not a target's name" -- targets init Mailer

mkdir -p "$scratch/mine/mailer"
cp "$newcomer/mailer.js" "$scratch/mine/mailer/"
"$skewbench" targets init mailer >"$scratch/mine/mailer/target.json"
run_expecting 2 "$scratch/as-printed.txt" "the template as printed" \
  "target mailer needs .*/mine/mailer/app.py, which is missing" -- \
  targets --targets-dir "$scratch/mine" --out "$scratch/as-printed" -q
echo "ok: the template is read as printed, and names what it needs"

# The lines a user changes, as docs/targets.md shows them.
python3 - "$scratch/mine/mailer/target.json" <<'PY'
import json, re, sys
path = sys.argv[1]
text = open(path).read()
changes = [
    ('"CHANGE: what the service is and how it judges a key\'s expiry, in a sentence"',
     '"The mail service: Node.js, records in memory, expiry by the instance\'s Date.now()"'),
    ('"CHANGE: its language, framework and store, with versions"', '"Node.js 20 (node:http, fetch)"'),
    ('"CHANGE: how to install what it needs, e.g. apt-get install python3 libfaketime"',
     '"apt-get install nodejs libfaketime"'),
    ('["python3", "./app.py"]', '["node", "./mailer.js"]'),
    ('"python3 {target_dir}/app.py --port {port} --provider-url {sink_url} --ttl {ttl_s}"',
     '"node {target_dir}/mailer.js"'),
    ('"env": {}', '"env": {"MAIL_PROVIDER_URL": "{sink_url}", "RECORD_TTL_S": "{ttl_s}"}'),
    ('{"http_get": "/healthz"},  // CHANGE', '{"log_line": "mailer listening"},'),
    ('"path": "/payments"', '"path": "/v1/messages"'),
    ('"key_header": "Idempotency-Key"', '"key_header": "X-Request-Id"'),
    ('{"order_id": "{operation_id}", "amount": "{amount}"}', '{"message_id": "{operation_id}", "to": "ops@example.com"}'),
    ('"status": {"201": "applied", "200": "replayed", "409": "refused_in_progress", "422": "refused_mismatch"}',
     '"json_pointer": "/result",\n    "values": {"queued": "applied", "duplicate": "replayed", '
     '"in_flight": "refused_in_progress", "mismatch": "refused_mismatch"}'),
    ('"sink": {"operation_id": {"json_pointer": "/reference"}}', '"sink": {"operation_id": {"path_segment": 1}}'),
]
for old, new in changes:
    if text.count(old) != 1:
        sys.exit(f"FAIL: the template does not hold {old} once")
    text = text.replace(old, new)
open(path, "w").write(text)

def without_comments(text):
    out, i, in_string = [], 0, False
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            i = text.find("\n", i) - 1
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 1
        else:
            out.append(c)
        i += 1
    return "".join(out)

changed = json.loads(without_comments(text))
docs = open("docs/targets.md").read()
section = docs[docs.index("## Put your own service under the series"):]
shown = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))
if changed != shown:
    sys.exit(f"FAIL: the template as changed is not the target.json docs/targets.md shows:\n{changed}\n{shown}")
rows = [line for line in open("tests/targets/newcomer/findings.md") if line.startswith("| mailer |")]
for row in rows:
    verdict_cells = "|".join(row.split("|")[:7])
    if verdict_cells not in section:
        sys.exit(f"FAIL: docs/targets.md does not show the mailer's row {verdict_cells}")
print(f"ok: the changed template is the target.json docs/targets.md shows, with its {len(rows)} rows")
PY

code=0
"$skewbench" targets mailer --targets-dir "$scratch/mine" --out "$scratch/held" -q \
  --expect "$newcomer/findings.md" >"$scratch/held.txt" 2>&1 || code=$?
if [[ $code -ne 0 ]]; then
  cat "$scratch/held.txt"
  echo "FAIL: the mail service's rows are not as $newcomer/findings.md says (exit $code)"
  exit 1
fi
for folder in "$scratch/held"/*/; do
  "$skewbench" verify "$folder" >/dev/null || { echo "FAIL: $folder does not verify"; exit 1; }
done
echo "ok: the mail service runs the series from the changed template, every row as $newcomer/findings.md says"

sed -i 's/"path_segment": 1/"path_segment": 0/' "$scratch/mine/mailer/target.json"
run_expecting 3 "$scratch/wrong-rule.txt" "a wrong sink rule" \
  "ERROR" "the sink's calls while it was in flight: PUT /messages/" "operation id read: \"messages\"" -- \
  targets mailer --targets-dir "$scratch/mine" --out "$scratch/wrong-rule" -q \
  --scenarios scenarios/targets/015-same-key-after-lost-ack.json
echo "ok: a sink rule that reads the wrong segment is an ERROR naming the call the sink took"
