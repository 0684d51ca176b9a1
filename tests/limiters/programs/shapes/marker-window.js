'use strict'
// marker-window: a counter whose window is kept by a marker key. When GET marker finds none:
// DEL counter marker, SET counter 0 NX EX 2*window, SET marker 1 EX window. Then INCR counter. The
// twin of tests/limiters/shapes.py marker_window. With no fault, A reads the marker missing,
// B starts the window and is admitted twice, then A deletes B's window and is admitted too.
const { start } = require('../../../../limiters/js/lib/runner')

const { redis, policy, key, answer } = start({
  promises: ['fixed-window:anchor=first'],
  wholeWindow: true,
})

async function check(identity) {
  const counter = key(identity, 'counter')
  const marker = key(identity, 'marker')
  if ((await redis.get(marker)) === null) {
    await redis.del(counter, marker)
    await redis.set(counter, 0, 'NX', 'EX', 2 * policy.window)
    await redis.set(marker, 1, 'EX', policy.window)
  }
  return { allowed: (await redis.incr(counter)) <= policy.limit }
}

answer(check)
