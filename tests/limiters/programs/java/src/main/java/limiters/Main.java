package limiters;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * The harness's line protocol for a limiter that is a Java program: {@code java -jar
 * target/limiters.jar NAME} picks the limiter by NAME, reads its policy from RATELIMIT_POLICY and
 * its Redis from REDIS_URL, and answers each identity on stdin (an identity, or an identity, a
 * space and its cost) with one JSON line on stdout, in order, until stdin ends. A check that
 * fails answers its error on one line (not a decision: the harness counts it as one); a
 * give-back line ({@code refund IDENTITY COST}) is answered as such an error, since neither
 * limiter gives back.
 */
public final class Main {
    private Main() {}

    /** One limiter: a decision for one request, with the instant it read from its own clock. */
    public interface Limiter extends AutoCloseable {
        Decision check(String identity, long cost) throws Exception;

        @Override
        void close();
    }

    /** One answer. {@code nowMillis} is the instant the program read from its clock to decide. */
    public record Decision(boolean allowed, long nowMillis) {
        String json() {
            return String.format(Locale.ROOT, "{\"allowed\": %b, \"now\": %.3f}", allowed, nowMillis / 1000.0);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            refuse("usage: java -jar limiters.jar bucket4j|redisson");
        }
        String url = System.getenv("REDIS_URL");
        if (url == null || url.isEmpty()) {
            refuse("REDIS_URL is not set");
        }
        String spec = System.getenv().getOrDefault("RATELIMIT_POLICY", "");
        Limiter limiter = switch (args[0]) {
            case "bucket4j" -> new Bucket4jTokenBucket(url, Policy.parse(spec, "token-bucket"));
            case "redisson" -> new RedissonRateLimiter(url, Policy.parse(spec, "sliding-window"));
            default -> throw refuse("no limiter named " + args[0] + " (bucket4j or redisson)");
        };
        try (limiter) {
            serve(limiter);
        }
        System.exit(0); // a client's non-daemon threads must not outlive the input
    }

    static void serve(Limiter limiter) throws Exception {
        var in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        var out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] words = line.split(" ");
            String answer;
            try {
                if (words.length == 3 && words[0].equals("refund")) {
                    answer = "error: " + limiterName(limiter) + " gives nothing back";
                } else if (words.length == 2 && words[1].matches("[1-9][0-9]{0,17}")) {
                    answer = limiter.check(words[0], Long.parseLong(words[1])).json();
                } else {
                    answer = limiter.check(line, 1).json();
                }
            } catch (Exception error) {
                answer = "error: " + error.toString().replace('\n', ' ');
            }
            out.write(answer);
            out.newLine();
            out.flush();
        }
    }

    private static String limiterName(Limiter limiter) {
        return limiter.getClass().getSimpleName();
    }

    /** Says why on stderr and exits 2, as the protocol asks of a program that cannot start. */
    static RuntimeException refuse(String why) {
        System.err.println("limiters.jar: " + why);
        System.exit(2);
        return new IllegalStateException(why);
    }
}
