package sparkbloom.bench

import java.util.SplittableRandom
import java.util.concurrent.TimeUnit

import org.openjdk.jmh.annotations._

/**
 * Two 128 MiB int arrays (the largest SBBF Parquet allows): one holding a single random cycle through all
 * of its slots, for pointer chasing, and one to read and write at 2^20 random 32-byte-block offsets.
 */
@State(Scope.Benchmark)
class RandomTable {
  val ints: Int = FloorBench.TableBytes / 4
  val cycle: Array[Int] = new Array[Int](ints)
  val table: Array[Int] = new Array[Int](ints)
  val blockStarts: Array[Int] = new Array[Int](Workload.Queries)
  var at = 0

  @Setup(Level.Trial) def setup(): Unit = {
    val rnd = new SplittableRandom(Workload.Seed + 30)
    // Sattolo's shuffle: a uniformly random permutation made of one cycle, so the chase visits every slot.
    var i = 0
    while (i < ints) { cycle(i) = i; i += 1 }
    i = ints - 1
    while (i > 0) { val j = rnd.nextInt(i); val t = cycle(i); cycle(i) = cycle(j); cycle(j) = t; i -= 1 }
    i = 0
    while (i < ints) { table(i) = rnd.nextInt(); i += 1 }
    i = 0
    while (i < blockStarts.length) { blockStarts(i) = rnd.nextInt(ints / 8 - 1) * 8; i += 1 }
  }
}

/**
 * The machine's random-access floor over 128 MiB, ns per access, to compare the beyond-cache filter with:
 * dependent loads (latency: each address needs the previous load), independent loads of one int, and the
 * exact memory pattern of a check (read a random 32-byte block) and of an insert (read-modify-write it).
 */
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(2) @Warmup(iterations = 3, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
class FloorBench {
  @Benchmark @OperationsPerInvocation(Workload.Queries)
  def dependentLoad(t: RandomTable): Int = {
    val c = t.cycle; var i = t.at; var k = 0
    while (k < Workload.Queries) { i = c(i); k += 1 }
    t.at = i
    i
  }

  @Benchmark @OperationsPerInvocation(Workload.Queries)
  def independentLoad(t: RandomTable): Int = {
    val a = t.table; val idx = t.blockStarts; var s = 0; var k = 0
    while (k < idx.length) { s += a(idx(k)); k += 1 }
    s
  }

  @Benchmark @OperationsPerInvocation(Workload.Queries)
  def independentBlockLoad(t: RandomTable): Int = {
    val a = t.table; val idx = t.blockStarts; var s = 0; var k = 0
    while (k < idx.length) {
      val b = idx(k)
      s += a(b) | a(b + 1) | a(b + 2) | a(b + 3) | a(b + 4) | a(b + 5) | a(b + 6) | a(b + 7)
      k += 1
    }
    s
  }

  /**
   * As [[independentBlockLoad]] but every block shifted by 16 bytes, so it lies inside one 64-byte cache
   * line. A 128 MiB array is a G1 humongous object starting on a region boundary and its elements start 16
   * bytes after it, so SBBF blocks (at multiples of 32 bytes from element 0) straddle two lines half the time.
   */
  @Benchmark @OperationsPerInvocation(Workload.Queries)
  def independentBlockLoadOneLine(t: RandomTable): Int = {
    val a = t.table; val idx = t.blockStarts; var s = 0; var k = 0
    while (k < idx.length) {
      val b = idx(k) + 4
      s += a(b) | a(b + 1) | a(b + 2) | a(b + 3) | a(b + 4) | a(b + 5) | a(b + 6) | a(b + 7)
      k += 1
    }
    s
  }

  @Benchmark @OperationsPerInvocation(Workload.Queries)
  def independentBlockRmw(t: RandomTable): Unit = {
    val a = t.table; val idx = t.blockStarts; var k = 0
    while (k < idx.length) {
      val b = idx(k); val m = 1 << (k & 31)
      a(b) |= m; a(b + 1) |= m; a(b + 2) |= m; a(b + 3) |= m; a(b + 4) |= m; a(b + 5) |= m; a(b + 6) |= m; a(b + 7) |= m
      k += 1
    }
  }
}

object FloorBench {
  final val TableBytes = 134217728
}
