'use strict'
// compare-and-set: WATCH key, GET key; refuse at the limit; else MULTI, INCR (and EXPIRE when
// the count was 0), EXEC. A failed EXEC (null: another client wrote the key) is tried once
// more; a second failure refuses. The twin of tests/limiters/shapes.py compare_and_set: another
// instance that writes before each of the two EXECs makes this one refuse far below the limit.
const { start } = require('../../../../limiters/js/lib/runner')

const { redis, policy, key, answer } = start({
  promises: ['fixed-window:anchor=first'],
  wholeWindow: true,
})

// true or false: decided; null: EXEC failed
async function attempt(counter) {
  await redis.watch(counter)
  const count = Number(await redis.get(counter)) || 0
  if (count >= policy.limit) {
    await redis.unwatch()
    return false
  }
  const transaction = redis.multi().incr(counter)
  if (count === 0) transaction.expire(counter, policy.window)
  return (await transaction.exec()) === null ? null : true
}

async function check(identity) {
  const counter = key(identity)
  for (let tries = 0; tries < 2; tries++) {
    const decided = await attempt(counter)
    if (decided !== null) return { allowed: decided }
  }
  return { allowed: false }
}

answer(check)
