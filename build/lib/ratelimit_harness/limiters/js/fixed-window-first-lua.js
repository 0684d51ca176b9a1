'use strict'
// fixed-window-first-lua: Part 7's Lua check-and-increment, keyed by the identity alone. The
// window is the key's TTL, set by the first admission and run out on the server's clock: a
// fixed window anchored at its first admission (fixed-window:anchor=first), atomic (correct).
const { start } = require('./lib/runner')

const { redis, policy, key, answer } = start({
  promises: ['fixed-window:anchor=first'],
  wholeWindow: true,
})

// KEYS[1] the counter; ARGV limit, window (seconds)
// returns 1 when allowed (and counted), 0 when over the limit
const script = `
  local current = redis.call('GET', KEYS[1])
  if current and tonumber(current) >= tonumber(ARGV[1]) then
    return 0   -- over limit
  end
  local new_val = redis.call('INCR', KEYS[1])
  if new_val == 1 then
    redis.call('EXPIRE', KEYS[1], ARGV[2])
  end
  return 1   -- allowed
`

async function luaRateLimit(userId, limit, windowSeconds) {
  const allowed = await redis.eval(script, 1, key(userId), limit, windowSeconds)
  return { allowed: allowed === 1 }
}

answer((identity) => luaRateLimit(identity, policy.limit, policy.window))
