'use strict'
// rate-limiter-flexible's RateLimiterRedis: consume(identity, points) resolves when the points
// fit and rejects with a RateLimiterRes when they do not. Its duration is the key's EXPIRE, set
// by the first hit: a fixed window anchored at its first hit, in whole seconds. A policy's
// block=B is its blockDuration; a request that costs n asks for n points.
const { load, start } = require('./lib/release')

const { RateLimiterRedis } = load('rate-limiter-flexible')
const { redis, policy, answer } = start({ promises: ['fixed-window:anchor=first'], wholeWindow: true })

const limiter = new RateLimiterRedis({
  storeClient: redis,
  points: policy.limit,
  duration: policy.window,
  blockDuration: policy.block ?? 0,
})

answer((identity, cost = 1) =>
  limiter.consume(identity, cost).then(
    () => ({ allowed: true }),
    (refusal) => {
      if (refusal instanceof Error) throw refusal // Redis failed; a refusal is a RateLimiterRes
      return { allowed: false }
    },
  ),
)
