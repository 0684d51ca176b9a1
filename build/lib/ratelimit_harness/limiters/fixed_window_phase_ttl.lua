-- Fixed window shifted by the identity's phase, as fixed_window.lua with an origin, but its key's
-- TTL runs to the end of the unshifted window, the one aligned to the epoch (broken): the key
-- dies inside the identity's window, and the next request finds a fresh count.
-- KEYS[1]  hash of the identity: w = index of its window, n = requests admitted in it
-- ARGV[1] limit, ARGV[2] window, ARGV[3] now, ARGV[4] origin: as fixed_window.lua's
-- returns  {allowed 0|1, remaining, reset_after_us, retry_after_us, now_us}
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_us(ARGV[3])
local index = math.floor((now - tonumber(ARGV[4])) / window)
local ends_in = (index + 1) * window + tonumber(ARGV[4]) - now

if tonumber(redis.call('HGET', KEYS[1], 'w')) ~= index then
  redis.call('HSET', KEYS[1], 'w', index, 'n', 0)
  redis.call('PEXPIRE', KEYS[1], math.ceil((window - now % window) / 1000))
end
local admitted = redis.call('HINCRBY', KEYS[1], 'n', 1)
if admitted > limit then
  redis.call('HINCRBY', KEYS[1], 'n', -1)
  return {0, 0, ends_in, ends_in, now}
end
return {1, limit - admitted, ends_in, 0, now}
