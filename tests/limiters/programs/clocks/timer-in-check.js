'use strict'
// timer-in-check: waits 50 ms on a timer inside each check, then counts in one script. Its timers
// run on the schedule's time, which stands still inside a request: the timer never fires.
const { start } = require('../../../../limiters/js/lib/runner')

const { redis, policy, key, answer } = start({ promises: ['fixed-window'] })
const COUNT = "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n"

async function check(identity) {
  await new Promise((resolve) => setTimeout(resolve, 50))
  const count = await redis.eval(COUNT, 1, key(identity), policy.window * 1000)
  return { allowed: count <= policy.limit }
}

answer(check)
