'use strict'
// A small HTTP service of a user's own, for `ratelimit-harness load --service`: GET /api/* limited
// per API key (the X-API-Key header) by a fixed window, answering 200 or 429 with the rate-limit
// headers; any other path is 404. It reads what `load --service` gives each copy: PORT, REDIS_URL,
// RATELIMIT_POLICY (a fixed-window spec) and RATELIMIT_INSTANCE.
//
//   node limiters/js/service/server.js lua       INCR and PEXPIRE in one Lua script: correct
//   node limiters/js/service/server.js get-set   GET, compare, SET PX: Part 7's "WRONG" one; two
//                                                requests that GET the same count both pass
//
// Bad input (an unknown limiter, a missing variable, a policy that is not a fixed window): one
// line on stderr, exit code 2.
const http = require('node:http')
const Redis = require('ioredis')
const { parse, PolicyError } = require('../lib/policy')

const name = `server.js[${process.env.RATELIMIT_INSTANCE ?? '-'}]`

function refuse(message) {
  process.stderr.write(`${name}: ${message}\n`)
  process.exit(2)
}

// INCR the window's counter and give it its expiry, as one step: nothing can come between.
const INCREMENT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`

const LIMITERS = {
  lua: async (redis, key, limit, windowMs) => redis.eval(INCREMENT, 1, key, windowMs),
  'get-set': async (redis, key, limit, windowMs) => {
    const count = Number((await redis.get(key)) ?? 0)
    if (count >= limit) return count + 1 // refused: nothing written
    await redis.set(key, count + 1, 'PX', windowMs)
    return count + 1
  },
}

function settings() {
  const counting = LIMITERS[process.argv[2]]
  if (!counting) refuse(`which limiter? one of ${Object.keys(LIMITERS).join(', ')}`)
  for (const variable of ['PORT', 'REDIS_URL', 'RATELIMIT_POLICY']) {
    if (!process.env[variable]) refuse(`${variable} is not set`)
  }
  let policy
  try {
    policy = parse(process.env.RATELIMIT_POLICY)
  } catch (error) {
    if (error instanceof PolicyError) refuse(error.message)
    throw error
  }
  if (policy.promise !== 'fixed-window') refuse(`limits by a fixed window, not ${policy.promise}`)
  return { counting, policy, port: Number(process.env.PORT) }
}

function main() {
  const { counting, policy, port } = settings()
  const redis = new Redis(process.env.REDIS_URL)
  const windowMs = Math.round(policy.window * 1000)

  async function limited(request, response) {
    const identity = request.headers['x-api-key'] ?? request.socket.remoteAddress
    const now = Date.now()
    const windowEnd = (Math.floor(now / windowMs) + 1) * windowMs
    const key = `service:${identity}:${windowEnd}`
    const count = await counting(redis, key, policy.limit, windowMs)
    const headers = {
      'Content-Type': 'application/json',
      'X-RateLimit-Limit': String(policy.limit),
      'X-RateLimit-Remaining': String(Math.max(0, policy.limit - count)),
    }
    if (count > policy.limit) {
      headers['Retry-After'] = String(Math.ceil((windowEnd - now) / 1000))
      response.writeHead(429, headers).end('{"error":"rate_limit_exceeded"}')
    } else {
      response.writeHead(200, headers).end('{"ok":true}')
    }
  }

  const server = http.createServer((request, response) => {
    if (request.method !== 'GET' || !request.url.startsWith('/api/')) {
      response.writeHead(404).end()
      return
    }
    limited(request, response).catch((error) => {
      process.stderr.write(`${name}: ${error.message}\n`)
      response.writeHead(503).end('{"error":"limiter_failed"}')
    })
  })
  server.listen(port, '127.0.0.1')
  process.on('SIGTERM', () => {
    server.close(() => redis.quit().finally(() => process.exit(0)))
    server.closeAllConnections()
  })
}

main()
