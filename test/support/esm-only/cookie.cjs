// Jest 29's module loader refuses require() of an ES module, and 'cookie' ships ESM only while a
// CommonJS dependency require()s it. Node itself can (require(esm), Node >= 20.19), so this stand-in
// hands the require() to Node: the package runs as published, nothing is compiled or written.
module.exports = require('node:module').createRequire(__filename)('cookie');
