'use strict'
// What every program here shares: its start (policy, Redis, key names) and the line protocol.
//
// Environment:
//   REDIS_URL           the Redis to use (the race explorer gives each instance its own proxy)
//   RATELIMIT_POLICY    the policy spec, as lib/policy.js reads it
//   RATELIMIT_INSTANCE  this instance's number, 0..K-1 (it names the instance on stderr)
// Protocol: one request per line on stdin, an identity (`identity cost` for a request that costs
// more than 1; a give-back, `refund identity cost`, is answered with an error: nothing is given
// back here); one answer per line on stdout, in order: `allowed`
// or `rejected` when the limiter tells nothing more, else a JSON object with `allowed` and what
// else it tells (`remaining`, `limit`, `reset_at`, `retry_after`, `now`). A check that throws
// (an error reply, a lost connection) answers `{"error": message}`, which is no decision, and
// says so on stderr. At EOF on stdin the connection is closed and the program exits 0.
// Bad input (no REDIS_URL; a policy that does not parse, or one the program does not enforce):
// one line on stderr, exit code 2.

const path = require('node:path')
const readline = require('node:readline')
const { parse, PolicyError } = require('./policy')

const PREFIX = 'ratelimit'
const FIELDS = ['allowed', 'remaining', 'limit', 'reset_at', 'retry_after', 'now']

// promises: the policies the program enforces (`fixed-window`, `fixed-window:anchor=first`...);
// wholeWindow: the window goes to EXPIRE or SET EX, which take whole seconds, so it must be one;
// Redis: the ioredis to connect with (a program beside its own node_modules passes none; a
// wrapper of a released library passes the ioredis that release is installed with);
// options: ioredis' options (`commandTimeout`, say), none by default.
// Returns { redis, policy, key, answer }:
//   key(identity, ...parts)  `ratelimit:{identity}:program.js:params[:part...]`: the braces are
//                            a Cluster hash tag (an identity's keys share a slot), the program
//                            and the policy's parameters keep limiters and policies apart
//   answer(check)            answers stdin's requests with `await check(identity[, cost])`, a decision
//                            `{ allowed, remaining?, ... }`, one at a time, until EOF
function start({ promises, wholeWindow = false, Redis = require('ioredis'), options = {} }) {
  const program = path.basename(require.main.filename)
  const name = `${program}[${process.env.RATELIMIT_INSTANCE ?? '-'}]`
  const policy = policyOrExit(name, promises, wholeWindow)
  if (!process.env.REDIS_URL) refuse(name, 'REDIS_URL is not set')
  const redis = new Redis(process.env.REDIS_URL, options)
  const key = (identity, ...parts) =>
    [PREFIX, `{${identity}}`, program, policy.params, ...parts].join(':')
  const answer = (check) => answerLines(name, redis, check)
  return { redis, policy, key, answer }
}

function policyOrExit(name, promises, wholeWindow) {
  const spec = process.env.RATELIMIT_POLICY
  if (!spec) refuse(name, 'RATELIMIT_POLICY is not set')
  let policy
  try {
    policy = parse(spec)
  } catch (error) {
    if (!(error instanceof PolicyError)) throw error
    refuse(name, error.message)
  }
  if (!promises.includes(policy.promise)) {
    refuse(name, `enforces ${promises.join(' or ')} policies, not ${policy.promise}`)
  }
  if (wholeWindow && !Number.isInteger(policy.window)) {
    refuse(name, `the window goes to EXPIRE, which takes whole seconds; got ${policy.window}`)
  }
  return policy
}

function refuse(name, why) {
  process.stderr.write(`${name}: ${why}\n`)
  process.exit(2)
}

async function answerLines(name, redis, check) {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  for await (const line of lines) {
    // a give-back (`refund identity cost`, three words): these programs give nothing back
    const answer = /^refund \S+ [0-9]+$/.test(line)
      ? JSON.stringify({ error: 'this program gives nothing back' })
      : await answerOne(name, check, ...request(line))
    process.stdout.write(`${answer}\n`)
  }
  redis.disconnect() // nothing is in flight: every check was awaited
}

// A line's request: [identity], or [identity, cost] for `identity cost`, a request that costs
// cost units of the budget (sent only when the cost is more than 1)
function request(line) {
  const weighted = /^(.+) ([0-9]+)$/.exec(line)
  return weighted && Number(weighted[2]) > 1 ? [weighted[1], Number(weighted[2])] : [line]
}

async function answerOne(name, check, identity, cost) {
  try {
    return encode(await (cost === undefined ? check(identity) : check(identity, cost)))
  } catch (error) {
    process.stderr.write(`${name}: check(${identity}) failed: ${error.message}\n`)
    return JSON.stringify({ error: String(error.message) })
  }
}

function encode(decision) {
  const told = FIELDS.filter((field) => decision[field] !== undefined)
  if (told.length === 1 && told[0] === 'allowed') return decision.allowed ? 'allowed' : 'rejected'
  return JSON.stringify(Object.fromEntries(told.map((field) => [field, decision[field]])))
}

module.exports = { start }
