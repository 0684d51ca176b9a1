'use strict'
// naive-get-set: Part 7's "WRONG" limiter. GET the count, compare, SET count + 1 EX window.
// Two instances that GET the same count both admit; each SET EX restarts the window.
const { start } = require('./lib/runner')

const { redis, policy, key, answer } = start({ promises: ['fixed-window'], wholeWindow: true })

// WRONG — has a race condition
async function naiveRateLimit(userId, limit, windowSeconds) {
  const counterKey = key(userId)
  const count = parseInt(await redis.get(counterKey)) || 0 // Step 1: read

  if (count >= limit) return { allowed: false } // Step 2: check

  await redis.set(counterKey, count + 1, 'EX', windowSeconds) // Step 3: write
  return { allowed: true }
}

answer((identity) => naiveRateLimit(identity, policy.limit, policy.window))
