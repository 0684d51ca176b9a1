'use strict'
// exists-then-incrby: SET key 0 NX EX window, then a cache's incr as EXISTS and, in a second
// round trip, INCRBY (SET key 1 EX window when EXISTS says 0). The twin of
// tests/limiters/shapes.py exists_then_incrby. If the key expires between EXISTS and INCRBY,
// INCRBY makes a new key with no TTL: an immortal key.
const { start } = require('../../../../limiters/js/lib/runner')

const { redis, policy, key, answer } = start({
  promises: ['fixed-window:anchor=first'],
  wholeWindow: true,
})

async function check(identity) {
  const counter = key(identity)
  await redis.set(counter, 0, 'EX', policy.window, 'NX')
  let count = 1
  if ((await redis.exists(counter)) === 1) {
    count = await redis.incrby(counter, 1)
  } else {
    await redis.set(counter, 1, 'EX', policy.window)
  }
  return { allowed: count <= policy.limit }
}

answer(check)
