'use strict'
// @fastify/rate-limit 8's RedisStore (store/RedisStore.js), as the plug-in calls it without
// continueExceeding or a ban: incr(identity, callback, max, ban) answers the count, and the
// plug-in refuses when it is over max. The window is the key's PX, set by the first hit: a fixed
// window anchored there. 8.0 takes (redis, key, timeWindow, continueExceeding) and no max; 8.1
// takes (redis, timeWindow, continueExceeding, key).
const { load, start } = require('./lib/release')

const RedisStore = load('@fastify/rate-limit/store/RedisStore')
const { version } = load('@fastify/rate-limit/package.json')
const { redis, policy, answer } = start({ promises: ['fixed-window:anchor=first'] })

const KEY = 'fastify-rate-limit-'
const NO_BAN = -1
const windowMs = policy.window * 1000
const store = version.startsWith('8.0.')
  ? new RedisStore(redis, KEY, windowMs, false)
  : new RedisStore(redis, windowMs, false, KEY)

const increment = (identity) =>
  new Promise((done, fail) =>
    store.incr(identity, (error, hits) => (error ? fail(error) : done(hits)), policy.limit, NO_BAN),
  )

// 8.0 sends its PEXPIRE from incr's callback, just before the answer, and does not wait for it:
// the race explorer holds it as a step of this request all the same (docs/explorer.md, "A limiter
// in any language"), so a crash before it reaches Redis leaves the counter with no TTL.
answer(async (identity) => {
  const { current } = await increment(identity)
  return { allowed: current <= policy.limit }
})
