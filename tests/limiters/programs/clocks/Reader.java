// Answers each line of stdin with the time it reads: the time of day in milliseconds since the
// epoch, and the monotonic nanoseconds since its first line. Run as `java Reader.java`.
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class Reader {
  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    Long first = null;
    while (in.readLine() != null) {
      long now = System.currentTimeMillis(), monotonic = System.nanoTime();
      if (first == null) first = monotonic;
      System.out.println(now + " " + (monotonic - first));
      System.out.flush();
    }
  }
}
