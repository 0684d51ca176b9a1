'use strict'
// sliding-log-pipeline: Part 3's sorted-set log as written. A pipeline (no transaction) of
// ZREMRANGEBYSCORE, ZADD, ZCARD, EXPIRE; over the limit it "undoes" the add with ZREM of a
// freshly drawn random member, never the one added: refused requests stay in the log.
const { start } = require('./lib/runner')

const { redis, policy, key, answer } = start({ promises: ['sliding-window'] })

async function slidingWindowLog(userId, limit, windowMs) {
  const now = Date.now()
  const windowStart = now - windowMs
  const logKey = key(userId)

  // Pipeline: multiple commands sent together, one round-trip
  const pipeline = redis.pipeline()
  pipeline.zremrangebyscore(logKey, 0, windowStart) // remove old entries
  pipeline.zadd(logKey, now, `${now}-${Math.random()}`) // add this request
  pipeline.zcard(logKey) // count requests in window
  pipeline.expire(logKey, Math.ceil(windowMs / 1000)) // auto-cleanup

  const results = await pipeline.exec()
  const count = results[2][1] // result of ZCARD

  if (count > limit) {
    // Undo the add — we rejected this request
    await redis.zrem(logKey, `${now}-${Math.random()}`)
    return { allowed: false, remaining: 0 }
  }

  return { allowed: true, remaining: limit - count }
}

answer((identity) => slidingWindowLog(identity, policy.limit, policy.window * 1000))
