'use strict'
// monotonic-get-set: monotonic-lua's broken twin, on the same clock: GET the window's count, then
// SET it one higher (PX to the window's end). Two instances that both GET before either SETs
// are both admitted on one count.
const { start } = require('../../../../limiters/js/lib/runner')

const { redis, policy, key, answer } = start({ promises: ['fixed-window'] })

const startedAt = Date.now()
const startedHr = process.hrtime.bigint()
const now = () => startedAt + Number((process.hrtime.bigint() - startedHr) / 1_000_000n)

async function check(identity) {
  const at = now()
  const windowMs = policy.window * 1000
  const end = (Math.floor(at / windowMs) + 1) * windowMs
  const counter = key(identity, end)
  const count = Number((await redis.get(counter)) ?? 0)
  if (count >= policy.limit) return { allowed: false, now: at / 1000 }
  await redis.set(counter, count + 1, 'PX', Math.max(end - at, 1))
  return { allowed: true, now: at / 1000 }
}

answer(check)
