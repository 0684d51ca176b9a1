package limiters;

import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.TimeMeter;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;

/**
 * bucket4j (com.bucket4j:bucket4j_jdk17-lettuce) on Lettuce: a token bucket of {@code capacity}
 * refilled greedily at {@code rate} per second (policy {@code token-bucket:capacity=C,rate=R}),
 * kept in one Redis key per identity by bucket4j's compare-and-swap proxy manager: GET the
 * bucket's state, refill and consume it in the client, then a Lua script SETs the new state only
 * if the key still holds the old one (else it tries again). Atomic, but it decides by the
 * client's clock (bucket4j's client clock, milliseconds as its default): a copy whose clock runs
 * ahead refills tokens the others have not earned yet and over-admits; one behind finds the last
 * refill in its future and refills nothing, rejecting while a token is due. The key's TTL (time
 * to refill the bucket, plus ten seconds) is reckoned on that clock too.
 */
final class Bucket4jTokenBucket implements Main.Limiter {
    private final RedisClient client;
    private final StatefulRedisConnection<String, byte[]> connection;
    private final ProxyManager<String> buckets;
    private final BucketConfiguration configuration;
    private final ReadClock clock = new ReadClock();

    Bucket4jTokenBucket(String url, Policy policy) {
        long capacity = policy.whole("capacity");
        double rate = policy.positive("rate");
        // a greedy refill of `capacity` tokens per capacity/rate seconds is `rate` per second, continuously
        Duration refill = Duration.ofNanos(Math.round(capacity * 1e9 / rate));
        configuration = BucketConfiguration.builder()
                .addLimit(limit -> limit.capacity(capacity).refillGreedy(capacity, refill))
                .build();
        client = RedisClient.create(url);
        connection = client.connect(RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE));
        buckets = Bucket4jLettuce.casBasedBuilder(connection)
                .clientClock(clock)
                .expirationAfterWrite(
                        ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ofSeconds(10)))
                .build();
    }

    @Override
    public Main.Decision check(String identity, long cost) {
        clock.last = 0;
        boolean allowed = buckets.getProxy("ratelimit:{" + identity + "}:bucket4j", () -> configuration)
                .tryConsume(cost);
        long now = clock.last != 0 ? clock.last : System.currentTimeMillis();
        return new Main.Decision(allowed, now);
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }

    /**
     * bucket4j's own default clock (System.currentTimeMillis, in nanoseconds), remembering the
     * last instant it gave: the one the decision was made by (after any compare-and-swap retry).
     */
    private static final class ReadClock implements TimeMeter {
        volatile long last;

        @Override
        public long currentTimeNanos() {
            last = System.currentTimeMillis();
            return last * 1_000_000L;
        }

        @Override
        public boolean isWallClockBased() {
            return true;
        }
    }
}
