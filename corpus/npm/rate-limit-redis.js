'use strict'
// rate-limit-redis (express-rate-limit's Redis store) 4.2 and later: RedisStore.increment, as
// express-rate-limit calls it, which refuses when totalHits > limit. The window is the key's PX,
// set by the first hit: a fixed window anchored at its first hit.
const { load, start } = require('./lib/release')

const { RedisStore } = load('rate-limit-redis')
const { redis, policy, answer } = start({ promises: ['fixed-window:anchor=first'] })

// made at the first request: init loads the script, which must not be in flight at an EOF
let store
function storeOnce() {
  if (!store) {
    store = new RedisStore({ sendCommand: (command, ...args) => redis.call(command, ...args) })
    store.init({ windowMs: policy.window * 1000 })
  }
  return store
}

answer(async (identity) => ({
  allowed: (await storeOnce().increment(identity)).totalHits <= policy.limit,
}))
