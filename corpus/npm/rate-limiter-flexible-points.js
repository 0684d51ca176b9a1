'use strict'
// rate-limiter-flexible's RateLimiterRedis, consume(identity, points): a request that costs n
// points. Its Lua script adds the points with INCRBY before it knows whether they fit, and keeps
// them when they do not: what it counts is attempts, not admissions.
const { load, start } = require('./lib/release')

const { RateLimiterRedis } = load('rate-limiter-flexible')
const { redis, policy, answer } = start({ promises: ['fixed-window:anchor=first'], wholeWindow: true })

const limiter = new RateLimiterRedis({ storeClient: redis, points: policy.limit, duration: policy.window })

answer((identity, cost = 1) =>
  limiter.consume(identity, cost).then(
    () => ({ allowed: true }),
    (refusal) => {
      if (refusal instanceof Error) throw refusal // Redis failed; a refusal is a RateLimiterRes
      return { allowed: false }
    },
  ),
)
