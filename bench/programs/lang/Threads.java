// lang-threads in Java: the same task in every language (see README in this directory).
//   java -cp DIR Threads TASK THREADS UNITS  ->  ANSWER <checksum> <units>  and  TIME <seconds>
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class Threads {
  static final long M = 1000003;

  static long unitCpu(long i) {
    long h = i;
    for (int k = 0; k < 200; k++) h = (h * 31 + k) % M;
    String s = String.valueOf(h).repeat(3);
    return (h + s.length()) % M;
  }

  static long unitAlloc(long i) {
    List<String> lst = new ArrayList<>();
    for (int k = 0; k < 100; k++) lst.add(String.valueOf(i + k));
    Map<String, Integer> d = new HashMap<>();
    for (String s : lst) d.put(s, s.length());
    long t = 0;
    for (int v : d.values()) t += v;
    return (t + lst.size()) % M;
  }

  public static void main(String[] args) throws InterruptedException {
    final boolean cpu = args[0].equals("cpu");
    final int n = Integer.parseInt(args[1]);
    final long units = Long.parseLong(args[2]);
    final long[] sums = new long[n];
    Thread[] ts = new Thread[n];
    long t0 = System.nanoTime();
    for (int t = 0; t < n; t++) {
      final int me = t;
      ts[t] = new Thread(() -> {
        long s = 0;
        for (long i = me; i < units; i += n) s += cpu ? unitCpu(i) : unitAlloc(i);
        sums[me] = s;
      });
      ts[t].start();
    }
    long total = 0;
    for (int t = 0; t < n; t++) {
      ts[t].join();
      total += sums[t];
    }
    double elapsed = (System.nanoTime() - t0) / 1e9;
    System.out.println("ANSWER " + (total % (1L << 31)) + " " + units);
    System.out.printf("TIME %.6f%n", elapsed);
  }
}
