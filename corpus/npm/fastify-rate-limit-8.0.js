'use strict'
// @fastify/rate-limit 8.0's RedisStore (store/RedisStore.js), as the plug-in calls it without
// continueExceeding: incr(identity, callback) answers the count, and the plug-in refuses when it
// is over max. The window is the key's PX, set by the first hit: a fixed window anchored there.
const { load, start } = require('./lib/release')

const RedisStore = load('@fastify/rate-limit/store/RedisStore')
const { redis, policy, answer } = start({ promises: ['fixed-window:anchor=first'] })

const store = new RedisStore(redis, 'fastify-rate-limit-', policy.window * 1000, false)

const increment = (identity) =>
  new Promise((done, fail) => store.incr(identity, (error, hits) => (error ? fail(error) : done(hits))))

answer(async (identity) => ({ allowed: (await increment(identity)).current <= policy.limit }))
