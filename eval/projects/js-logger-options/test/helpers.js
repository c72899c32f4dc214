'use strict';

/** A sink that keeps what is written, parsed. */
function memorySink() {
  const entries = [];
  return {
    entries,
    write(line) {
      entries.push(JSON.parse(line));
    },
  };
}

/** Just enough of a response for the middleware: a status code and a `finish` event. */
function fakeResponse(statusCode) {
  const listeners = [];
  return {
    statusCode,
    on(event, fn) {
      if (event === 'finish') listeners.push(fn);
    },
    finish() {
      listeners.forEach((fn) => fn());
    },
  };
}

module.exports = { memorySink, fakeResponse };
