-- Fixed window started by the identity's first admission after its last window ended, as a key's
-- TTL keeps it (the window most released limiters have), one atomic script on the server's clock.
-- KEYS[1]  hash of the identity: s = when its window started, microseconds; n = admitted in it
-- ARGV[1]  limit (requests per window)
-- ARGV[2]  window length, microseconds
-- ARGV[3]  now, microseconds since the epoch; empty to read the server's TIME
-- returns  {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us}
-- The window is [s, s + window): a request at s + window or later starts the next one (a clock
-- stepped back stays in the window it left). The key lives one window from its start (PEXPIRE
-- when the count is 1); its start is kept too, so the window ends on the clock that decides,
-- whichever clock expires the key.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = now_us(ARGV[3])

local state = redis.call('HMGET', KEYS[1], 's', 'n')
local start = tonumber(state[1])
if start and now < start + window then
  local count = tonumber(state[2])
  local reset_after = start + window - now
  if count >= limit then
    return {0, 0, reset_after, reset_after, now}
  end
  redis.call('HINCRBY', KEYS[1], 'n', '1')
  return {1, limit - count - 1, reset_after, 0, now}
end
redis.call('HSET', KEYS[1], 's', now, 'n', '1')
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return {1, limit - 1, window, 0, now}
