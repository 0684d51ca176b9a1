'use strict'
// fixed-window-setnx-incr: Part 7's "robust" fix. SET key 0 NX EX window, then INCR.
// Still two commands: a key that expires between them is recreated by INCR, with no TTL.
const { start } = require('./lib/runner')

const { redis, policy, key, answer } = start({ promises: ['fixed-window'], wholeWindow: true })

async function robustRateLimit(userId, limit, windowSeconds) {
  const window = Math.floor(Date.now() / 1000 / windowSeconds)
  const windowKey = key(userId, window)

  // Single atomic command: SET key 0 NX EX windowSeconds
  // NX = only if not exists. Sets initial value with TTL in one command.
  await redis.set(windowKey, 0, 'NX', 'EX', windowSeconds)

  // Now increment — key definitely has TTL set
  const count = await redis.incr(windowKey)

  return { allowed: count <= limit, remaining: Math.max(0, limit - count) }
}

answer((identity) => robustRateLimit(identity, policy.limit, policy.window))
