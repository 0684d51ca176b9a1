'use strict'
// monotonic-lua: a fixed window in one Lua script, correct, whose `now` is Date.now() read once
// at start plus process.hrtime() since (a monotonic clock), as released limiters keep time to
// stay steady when the wall clock is set back. Its clock follows virtual time only where the
// monotonic clock does too. Each command has a timeout (a timer of Node's), as in many apps.
const { start } = require('../../../../limiters/js/lib/runner')

const { redis, policy, key, answer } = start({
  promises: ['fixed-window'],
  options: { commandTimeout: 5000 },
})

const startedAt = Date.now()
const startedHr = process.hrtime.bigint()
const now = () => startedAt + Number((process.hrtime.bigint() - startedHr) / 1_000_000n)

// KEYS[1] the window's counter; ARGV: limit, the window's end (ms since the epoch), now (ms)
const SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIREAT', KEYS[1], ARGV[2]) end
return count`

async function check(identity) {
  const at = now()
  const windowMs = policy.window * 1000
  const end = (Math.floor(at / windowMs) + 1) * windowMs
  const count = await redis.eval(SCRIPT, 1, key(identity, end), policy.limit, end, at)
  return { allowed: count <= policy.limit, now: at / 1000 }
}

answer(check)
