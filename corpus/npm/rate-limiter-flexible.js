'use strict'
// rate-limiter-flexible's RateLimiterRedis: consume(identity) resolves when a point is left and
// rejects with a RateLimiterRes when none is. Its duration is the key's EXPIRE, set by the first
// hit: a fixed window anchored at its first hit, in whole seconds.
const { load, start } = require('./lib/release')

const { RateLimiterRedis } = load('rate-limiter-flexible')
const { redis, policy, answer } = start({ promises: ['fixed-window:anchor=first'], wholeWindow: true })

const limiter = new RateLimiterRedis({ storeClient: redis, points: policy.limit, duration: policy.window })

answer((identity) =>
  limiter.consume(identity).then(
    () => ({ allowed: true }),
    (refusal) => {
      if (refusal instanceof Error) throw refusal // Redis failed; a refusal is a RateLimiterRes
      return { allowed: false }
    },
  ),
)
