'use strict'
// fixed-window-incr-expire: Part 2's counter. INCR, then EXPIRE when the count is 1.
// Two commands: an instance that dies between them leaves a counter that never expires.
const { start } = require('./lib/runner')

const { redis, policy, key, answer } = start({ promises: ['fixed-window'], wholeWindow: true })

async function fixedWindowRateLimit(userId, limit, windowSeconds) {
  const now = Math.floor(Date.now() / 1000)
  const windowStart = Math.floor(now / windowSeconds) * windowSeconds
  const windowKey = key(userId, windowStart)

  const count = await redis.incr(windowKey) // atomic increment, returns new value

  if (count === 1) {
    // First request in this window — set expiry
    await redis.expire(windowKey, windowSeconds)
  }

  if (count > limit) {
    return { allowed: false, remaining: 0 }
  }

  return { allowed: true, remaining: limit - count }
}

answer((identity) => fixedWindowRateLimit(identity, policy.limit, policy.window))
