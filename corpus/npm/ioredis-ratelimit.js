'use strict'
// ioredis-ratelimit in binary mode, keyed per identity by a function: limit(identity) resolves
// when the call is admitted and rejects with a 429 error when not. It keeps a sorted set of the
// app's Date.now() stamps: a sliding log of the last window.
const { load, start } = require('./lib/release')

const RateLimiter = load('ioredis-ratelimit')
const { redis, policy, answer } = start({ promises: ['sliding-window'] })

const limit = RateLimiter({
  client: redis,
  key: (identity) => `ioredis-ratelimit:{${identity}}`,
  limit: policy.limit,
  duration: policy.window * 1000,
  mode: 'binary',
})

answer((identity) =>
  limit(identity).then(
    () => ({ allowed: true }),
    (error) => {
      if (error.status === 429) return { allowed: false }
      throw error
    },
  ),
)
