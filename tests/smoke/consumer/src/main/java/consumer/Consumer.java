package consumer;

import net.openhft.hashing.LongHashFunction;
import sparkbloom.hash.PlainHash;
import sparkbloom.sbbf.Sbbf;

/**
 * Uses sparkbloom's Split Block Bloom Filter from plain Java, with no Spark on the classpath: hashes as Parquet does
 * (xxHash64 of the PLAIN encoding), fills a filter sized for 1000 values at fpp 0.01, checks every inserted value is
 * found and counts false positives among 10000 others. Prints one line, CONSUMER key=value ..., for the smoke test.
 */
public final class Consumer {
  public static void main(String[] args) {
    // zero-allocation-hashing, resolved transitively from sparkbloom's POM, agrees with sparkbloom's hash of an INT64.
    boolean hashAgrees = PlainHash.int64(42L) == LongHashFunction.xx(0).hashLong(42L);
    Sbbf filter = Sbbf.forNdv(1000L, 0.01, Sbbf.forNdv$default$3());
    for (long i = 0; i < 1000; i++) filter.insert(PlainHash.int64(i));
    int missing = 0;
    for (long i = 0; i < 1000; i++) if (!filter.mightContain(PlainHash.int64(i))) missing++;
    int falsePositives = 0;
    for (long i = 1000; i < 11000; i++) if (filter.mightContain(PlainHash.int64(i))) falsePositives++;
    System.out.println("CONSUMER hashAgrees=" + hashAgrees + " numBytes=" + filter.numBytes() + " missing=" + missing
        + " falsePositives=" + falsePositives + " kernel=" + filter.kernelName());
  }
}
