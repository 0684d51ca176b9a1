'use strict'
// rate-limiter-flexible's RateLimiterRedis with blockDuration: the request that finds no point
// left is refused, and the key is then set to block the identity for blockDuration seconds, in
// a second round trip (RateLimiterStoreAbstract._block, an upsert that forces the expiry).
const { load, start } = require('./lib/release')

const { RateLimiterRedis } = load('rate-limiter-flexible')
const { redis, policy, answer } = start({ promises: ['fixed-window:anchor=first'], wholeWindow: true })

const limiter = new RateLimiterRedis({
  storeClient: redis,
  points: policy.limit,
  duration: policy.window,
  blockDuration: policy.block,
})

answer((identity) =>
  limiter.consume(identity).then(
    () => ({ allowed: true }),
    (refusal) => {
      if (refusal instanceof Error) throw refusal // Redis failed; a refusal is a RateLimiterRes
      return { allowed: false }
    },
  ),
)
