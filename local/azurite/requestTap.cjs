/**
 * The request tap: loaded into Azurite's process (`node --require requestTap.cjs azurite.js`) when a caller wants to
 * count the storage requests that arrive (StartAzuriteOptions.onRequest; local/testing/callCounter.ts). Each request
 * is reported to the parent over the IPC channel as it arrives, before anything (the keyless gate, Azurite) answers
 * it: { tap: 'storage', port, method, url }. The port says which service (blob, queue, table) it reached; the path
 * says the account and the resource. Messages on one channel arrive in order, so a marker request the parent sends
 * itself is a barrier: once its message is in, every request that arrived before it is counted.
 * Plain JavaScript: it runs inside Azurite, before any TypeScript tooling.
 */
'use strict';
const http = require('node:http');
const https = require('node:https');

function tap(mod) {
  const createServer = mod.createServer;
  mod.createServer = function tappedCreateServer(...args) {
    const server = createServer.apply(this, args);
    const emit = server.emit;
    server.emit = function tappedEmit(event, req) {
      if (event === 'request' && typeof process.send === 'function' && process.connected) {
        const address = server.address();
        process.send({
          tap: 'storage',
          port: address && typeof address === 'object' ? address.port : 0,
          method: req.method,
          url: req.url,
          userAgent: req.headers['user-agent'] || '',
        });
      }
      return emit.apply(this, arguments);
    };
    return server;
  };
}

tap(http);
tap(https);
