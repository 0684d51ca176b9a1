'use strict'
// token-bucket-client-clock: Part 5's Lua as written. Atomic, but `now` is the instance's
// Date.now(): a clock ahead, or a reading that reaches Redis late, refills tokens never earned.
const { start } = require('./lib/runner')

const { redis, policy, key, answer } = start({ promises: ['token-bucket'] })

// KEYS[1] the bucket, a hash: tokens, last_refill (seconds)
// ARGV    capacity, refill rate (tokens a second), now (seconds, the caller's clock)
// returns 1 when allowed, 0 when rejected
const luaScript = `
    local key = KEYS[1]
    local capacity = tonumber(ARGV[1])
    local refill_rate = tonumber(ARGV[2])
    local now = tonumber(ARGV[3])

    local bucket = redis.call('HMGET', key, 'tokens', 'last_refill')
    local tokens = tonumber(bucket[1]) or capacity
    local last_refill = tonumber(bucket[2]) or now

    -- Calculate tokens to add since last refill
    local elapsed = now - last_refill
    local new_tokens = math.min(capacity, tokens + elapsed * refill_rate)

    if new_tokens < 1 then
      -- Not enough tokens
      redis.call('HMSET', key, 'tokens', new_tokens, 'last_refill', now)
      redis.call('EXPIRE', key, math.ceil(capacity / refill_rate) + 1)
      return 0   -- rejected
    end

    -- Consume one token
    redis.call('HMSET', key, 'tokens', new_tokens - 1, 'last_refill', now)
    redis.call('EXPIRE', key, math.ceil(capacity / refill_rate) + 1)
    return 1   -- allowed
  `

async function tokenBucket(userId, capacity, refillRate) {
  // refillRate = tokens per second
  const bucketKey = key(userId)
  const now = Date.now() / 1000

  const result = await redis.eval(luaScript, 1, bucketKey, capacity, refillRate, now)
  return { allowed: result === 1 }
}

answer((identity) => tokenBucket(identity, policy.capacity, policy.rate))
