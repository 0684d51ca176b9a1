package limiters;

import java.util.HashMap;
import java.util.Map;

/**
 * RATELIMIT_POLICY's one policy of one kind, as limiters/policy.py spells it
 * ({@code token-bucket:capacity=5,rate=2.5}, {@code sliding-window:limit=5,window=2}): its numbers by name.
 */
record Policy(String spec, Map<String, Double> numbers) {

    static Policy parse(String spec, String kind) {
        String[] parts = spec.split(":", 2);
        if (!parts[0].equals(kind) || spec.contains("+")) {
            throw Main.refuse("enforces " + kind + " policies, not \"" + spec + "\"");
        }
        Map<String, Double> numbers = new HashMap<>();
        for (String param : parts.length > 1 ? parts[1].split(",") : new String[0]) {
            String[] named = param.trim().split("=", 2);
            if (named[0].equals("count") && named.length > 1 && named[1].equals("admissions")) {
                continue; // the default: a refused request is not counted, as neither limiter counts it
            }
            try {
                numbers.put(named[0], Double.parseDouble(named.length > 1 ? named[1] : ""));
            } catch (NumberFormatException error) {
                throw Main.refuse("bad parameter \"" + param + "\" in \"" + spec + "\"");
            }
        }
        return new Policy(spec, numbers);
    }

    /** The number named {@code name}, which must be given and positive. */
    double positive(String name) {
        Double value = numbers.get(name);
        if (value == null || !(value > 0) || value.isInfinite()) {
            throw Main.refuse("needs a positive " + name + " in \"" + spec + "\"");
        }
        return value;
    }

    /** The whole number named {@code name}, which must be given and positive. */
    long whole(String name) {
        double value = positive(name);
        if (value != Math.rint(value)) {
            throw Main.refuse(name + " must be a whole number in \"" + spec + "\"");
        }
        return (long) value;
    }
}
