'use strict'
// sliding-counter-mget-incr: Part 4's weighted counter as written. MGET both windows, decide
// in the app, then INCR and EXPIRE in a pipeline: instances that read the same counts all admit.
const { start } = require('./lib/runner')

const { redis, policy, key, answer } = start({ promises: ['sliding-counter'], wholeWindow: true })

async function slidingWindowCounter(userId, limit, windowSeconds) {
  const now = Date.now() / 1000
  const currentWindowStart = Math.floor(now / windowSeconds) * windowSeconds
  const prevWindowStart = currentWindowStart - windowSeconds

  const currentKey = key(userId, currentWindowStart)
  const prevKey = key(userId, prevWindowStart)

  const [currentCount, prevCount] = await redis.mget(currentKey, prevKey)

  const elapsed = (now - currentWindowStart) / windowSeconds // 0.0 to 1.0
  const estimate = (parseInt(currentCount) || 0) + (parseInt(prevCount) || 0) * (1 - elapsed)

  if (estimate >= limit) {
    return { allowed: false, remaining: 0 }
  }

  // Allow — increment current window
  const pipeline = redis.pipeline()
  pipeline.incr(currentKey)
  pipeline.expire(currentKey, windowSeconds * 2) // keep for 2 windows
  await pipeline.exec()

  return { allowed: true, remaining: Math.floor(limit - estimate - 1) }
}

answer((identity) => slidingWindowCounter(identity, policy.limit, policy.window))
