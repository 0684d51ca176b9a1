'use strict'
// token-bucket-client-clock: Part 5's Lua as written. Atomic, but `now` is the instance's
// Date.now(): a clock ahead, or a reading that reaches Redis late, refills tokens never earned.
const fs = require('fs')
const path = require('path')
const { start } = require('./lib/runner')

const { redis, policy, key, answer } = start({ promises: ['token-bucket'] })

// Part 5's script, word for word: the very file the Python twin runs (KEYS[1] the bucket, a
// hash of tokens and last_refill; ARGV capacity, refill rate, now in seconds on the caller's
// clock; 1 when allowed, 0 when rejected)
const luaScript = fs.readFileSync(path.join(__dirname, '..', 'token_bucket_client_clock.lua'), 'utf8')

async function tokenBucket(userId, capacity, refillRate) {
  // refillRate = tokens per second
  const bucketKey = key(userId)
  const now = Date.now() / 1000

  const result = await redis.eval(luaScript, 1, bucketKey, capacity, refillRate, now)
  return { allowed: result === 1 }
}

answer((identity) => tokenBucket(identity, policy.capacity, policy.rate))
