-- Several aligned fixed windows at once ("10 a second and 1,000 an hour"), atomic and on the
-- server's clock: a request is admitted only if every window has room, and then counts in
-- every one. Each limit's hash is fixed_window.lua's.
-- KEYS[1], KEYS[2]   hash of the identity for each limit: w = index of its window, n = admitted
-- ARGV[1], ARGV[2]   the first limit: requests per window, window length in microseconds; then
--                    each further limit's two (ARGV[2i-1], ARGV[2i] for limit i)
-- ARGV[2n+1]         now, microseconds since the epoch; empty to read the server's TIME
-- returns            {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us, 0, binding}
--                    for the limit with the least room, the binding one (its place, from 1):
--                    a refusal waits the longest of the full ones' waits
local now = now_us(ARGV[#ARGV])
local counts, indexes, resets = {}, {}, {}
local remaining, reset_after, retry_after, binding = math.huge, 0, 0, 1
for i = 1, #KEYS do
  local limit, window = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  indexes[i] = math.floor(now / window)
  resets[i] = (indexes[i] + 1) * window - now
  local state = redis.call('HMGET', KEYS[i], 'w', 'n')
  counts[i] = tonumber(state[1]) == indexes[i] and tonumber(state[2]) or 0
  if counts[i] >= limit then
    retry_after = math.max(retry_after, resets[i])
  end
  if limit - counts[i] < remaining then
    remaining, reset_after, binding = limit - counts[i], resets[i], i
  end
end
if retry_after > 0 then
  return {0, 0, reset_after, retry_after, now, 0, binding}
end
for i = 1, #KEYS do
  if counts[i] > 0 then
    redis.call('HINCRBY', KEYS[i], 'n', '1')
  else
    redis.call('HSET', KEYS[i], 'w', indexes[i], 'n', '1')
    redis.call('PEXPIRE', KEYS[i], math.ceil(resets[i] / 1000))
  end
end
return {1, remaining - 1, reset_after, 0, now, 0, binding}
