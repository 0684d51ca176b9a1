-- Sliding window counter (Part 4), atomic: two fixed-window counts weighted by elapsed time.
-- estimate = current + previous * (1 - elapsed fraction of the current window);
-- a request is admitted when estimate < limit, and then counted in the current window.
-- KEYS[1]  hash of the identity: w = current window index, cur = its count, prev = the
--          count of window w - 1
-- ARGV[1]  limit
-- ARGV[2]  window length, microseconds
-- ARGV[3]  now, microseconds since the epoch; empty to read the server's TIME
-- returns  {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us}
-- The key's TTL is set when window w starts and runs to the end of window w + 1, after which
-- its counts weigh nothing, so a request in the same window only counts itself (HINCRBY keeps
-- the TTL).
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = now_us(ARGV[3])

local index = math.floor(now / window)
local start = index * window
local state = redis.call('HMGET', KEYS[1], 'w', 'cur', 'prev')
local stored = tonumber(state[1])
local cur, prev, prev_text = 0, 0, '0'
if stored == index then
  cur, prev = tonumber(state[2]), tonumber(state[3])
elseif stored == index - 1 then
  prev, prev_text = tonumber(state[2]), state[2]
end

local estimate = cur + prev * (1 - (now - start) / window)
if estimate >= limit then
  -- the estimate falls below limit once enough of the previous window has slid out
  local retry
  if cur < limit then
    retry = start + window * (1 - (limit - cur) / prev) - now
  else
    retry = start + window + window * (1 - limit / cur) - now
  end
  return {0, 0, start + 2 * window - now, math.ceil(retry), now}
end
if stored == index then
  redis.call('HINCRBY', KEYS[1], 'cur', '1')
else
  redis.call('HSET', KEYS[1], 'w', index, 'cur', '1', 'prev', prev_text)
  redis.call('PEXPIRE', KEYS[1], math.ceil((start + 2 * window - now) / 1000))
end
return {1, math.floor(limit - estimate - 1), start + 2 * window - now, 0, now}
