package limiters;

import java.net.URI;
import java.time.Duration;
import org.redisson.Redisson;
import org.redisson.api.RRateLimiter;
import org.redisson.api.RateType;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * Redisson's RRateLimiter (org.redisson:redisson): at most {@code limit} permits per
 * {@code window} for all clients together (RateType.OVERALL; policy
 * {@code sliding-window:limit=N,window=S}). One Lua script keeps the permits given in a sorted
 * set scored by the time each was given, and the permits left in a counter: each acquisition
 * first returns to the counter those older than the window, so it is a sliding log. Atomic, but
 * the time is an argument, the client's System.currentTimeMillis(): a copy whose clock runs ahead
 * returns permits to the counter before their window has passed and over-admits; one behind keeps
 * them too long and rejects while the window has room. Each check sets the rate if the key has
 * none (trySetRate: HSETNX), then acquires; the keys live two windows past the last acquisition,
 * so a copy stalled that long between the two finds them gone, and tryAcquire throws
 * ("RateLimiter is not initialized"), answered as an error.
 */
final class RedissonRateLimiter implements Main.Limiter {
    private final RedissonClient redisson;
    private final long limit;
    private final Duration window;

    RedissonRateLimiter(String url, Policy policy) {
        limit = policy.whole("limit");
        window = Duration.ofMillis(Math.round(policy.positive("window") * 1000));
        if (window.toMillis() < 1) {
            throw Main.refuse("RRateLimiter's interval is whole milliseconds, got \"" + policy.spec() + "\"");
        }
        URI uri = URI.create(url);
        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
        config.setThreads(1);
        config.setNettyThreads(2);
        var server = config.useSingleServer()
                .setAddress(uri.getScheme() + "://" + uri.getHost() + ":" + (uri.getPort() < 0 ? 6379 : uri.getPort()))
                .setConnectionMinimumIdleSize(1)
                .setConnectionPoolSize(2)
                .setSubscriptionConnectionMinimumIdleSize(0)
                .setSubscriptionConnectionPoolSize(1);
        String path = uri.getPath() == null ? "" : uri.getPath().replace("/", "");
        if (!path.isEmpty()) {
            server.setDatabase(Integer.parseInt(path));
        }
        if (uri.getUserInfo() != null) {
            String[] user = uri.getUserInfo().split(":", 2);
            if (user.length == 2) {
                if (!user[0].isEmpty()) {
                    server.setUsername(user[0]);
                }
                server.setPassword(user[1]);
            } else {
                server.setPassword(user[0]);
            }
        }
        redisson = Redisson.create(config);
    }

    @Override
    public Main.Decision check(String identity, long cost) {
        RRateLimiter limiter = redisson.getRateLimiter("ratelimit:{" + identity + "}:redisson");
        limiter.trySetRate(RateType.OVERALL, limit, window, window.multipliedBy(2));
        long now = System.currentTimeMillis(); // what tryAcquire reads, a moment later, to decide
        return new Main.Decision(limiter.tryAcquire(cost), now);
    }

    @Override
    public void close() {
        redisson.shutdown(0, 1, java.util.concurrent.TimeUnit.SECONDS);
    }
}
