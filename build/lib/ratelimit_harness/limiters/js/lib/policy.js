'use strict'
// A policy spec as limiters/policy.py writes it: `kind:name=value,...`, for example
// `fixed-window:limit=5,window=2` or `token-bucket:capacity=5,rate=2.5`; windows in seconds,
// rates per second. A fixed window may add `anchor=aligned` (the default) or `anchor=first`; a
// fixed or sliding window `count=admissions` (the default) or `count=attempts`, which changes
// what a verdict counts, not the promise a program enforces; a fixed window `block=B`, seconds an
// identity is refused once over its limit.
//
// parse(spec) -> { kind, limit, window, capacity, rate, anchor, promise, params }
//   promise  the kind, with its anchor when not the default (`fixed-window:anchor=first`)
//   params   every parameter as `name=value,...`, exact, for key names
// Throws PolicyError on a spec that does not parse.

const KINDS = {
  'fixed-window': ['limit', 'window'],
  'sliding-window': ['limit', 'window'],
  'sliding-counter': ['limit', 'window'],
  'token-bucket': ['capacity', 'rate'],
  gcra: ['capacity', 'rate'],
  'leaky-bucket': ['rate', 'capacity'],
}
const INTEGERS = new Set(['limit', 'capacity'])
const ANCHORS = ['aligned', 'first']
const COUNTS = ['admissions', 'attempts']

class PolicyError extends Error {}

function parse(spec) {
  const [kind, ...rest] = String(spec).trim().split(':')
  const names = KINDS[kind]
  if (!names) throw new PolicyError(`unknown policy kind ${JSON.stringify(kind)} in ${JSON.stringify(spec)}`)
  const policy = { kind, anchor: ANCHORS[0], count: COUNTS[0] }
  for (const item of rest.join(':').split(',').filter((text) => text.trim())) {
    const [name, text] = item.split('=').map((part) => part.trim())
    if (text === undefined) throw new PolicyError(`expected name=value, got ${JSON.stringify(item.trim())} in ${JSON.stringify(spec)}`)
    if (kind === 'fixed-window' && name === 'anchor' && ANCHORS.includes(text)) {
      policy.anchor = text
    } else if (kind === 'fixed-window' && name === 'block' && !('block' in policy)) {
      policy.block = number(name, text, spec)
    } else if (kind.endsWith('-window') && kind !== 'sliding-counter' && name === 'count' && COUNTS.includes(text)) {
      policy.count = text
    } else if (names.includes(name) && !(name in policy)) {
      policy[name] = number(name, text, spec)
    } else {
      throw new PolicyError(`${kind} takes ${names.join(', ')}; got ${JSON.stringify(item)} in ${JSON.stringify(spec)}`)
    }
  }
  const missing = names.filter((name) => !(name in policy))
  if (missing.length) throw new PolicyError(`${kind} needs ${missing.join(', ')} in ${JSON.stringify(spec)}`)
  const anchored = policy.anchor === ANCHORS[0] ? [] : [`anchor=${policy.anchor}`]
  policy.promise = [kind, ...anchored].join(':')
  const counted = policy.count === COUNTS[0] ? [] : [`count=${policy.count}`]
  const blocked = 'block' in policy ? [`block=${policy.block}`] : []
  policy.params = [...names.map((name) => `${name}=${policy[name]}`), ...blocked, ...anchored, ...counted].join(',')
  return policy
}

function number(name, text, spec) {
  const value = Number(text)
  const whole = !INTEGERS.has(name) || Number.isInteger(value)
  if (text === '' || !whole || !(value > 0) || !Number.isFinite(value)) {
    const wanted = INTEGERS.has(name) ? 'a positive whole number' : 'a positive number'
    throw new PolicyError(`${name} must be ${wanted}, got ${JSON.stringify(text)} in ${JSON.stringify(spec)}`)
  }
  return value
}

module.exports = { parse, PolicyError }
