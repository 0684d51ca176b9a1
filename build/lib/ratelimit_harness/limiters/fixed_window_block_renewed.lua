-- fixed_window_block.lua with the block kept as a key of its own, set again by every refusal
-- (broken): an identity that retries inside each block is never let back.
-- KEYS[1]  counter of the identity's window
-- KEYS[2]  the identity's block: present while it is blocked
-- ARGV[1] limit, ARGV[2] window, ARGV[3] now, ARGV[4] block: as fixed_window_block.lua's
-- returns  as fixed_window_block.lua's
local limit = tonumber(ARGV[1])
local now = now_us(ARGV[3])
local block = math.ceil(tonumber(ARGV[4]) / 1000)

if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[2], block)
  return {0, 0, block * 1000, block * 1000, now}
end
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) / 1000))
end
if count > limit then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], '1', 'PX', block)
  return {0, 0, block * 1000, block * 1000, now}
end
return {1, limit - count, redis.call('PTTL', KEYS[1]) * 1000, 0, now}
