-- Prelude of every server-time script (prepended when the script is loaded).
-- now_us(arg): the instant to decide at, in microseconds since the epoch: arg when the caller
-- gives one (a virtual clock), else the server's own TIME.
local function now_us(arg)
  local given = tonumber(arg)
  if given then
    return given
  end
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

