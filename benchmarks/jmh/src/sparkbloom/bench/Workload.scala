package sparkbloom.bench

import java.util.SplittableRandom

import sparkbloom.hash.PlainHash
import sparkbloom.sbbf.Kernel

/**
 * What every benchmark feeds the filters: the values of a unique long key, hashed as Parquet hashes an
 * INT64 column (xxHash64 of the 8 little-endian bytes). A filter of `b` bytes holds keys `[0, n)` with
 * `n = b * 8 / 10.5` (10.5 bits per value, about 1% FPP for an SBBF); keys `>= n` are absent.
 *
 * Query sets have [[Queries]] = 2^20 entries in random order, so no branch predictor can learn them.
 * Misses are 2^20 distinct absent keys; hits are drawn (with replacement) from the inserted keys, so a
 * 16 KiB filter, which holds only 12,483 keys, sees each of them many times, in random order.
 */
object Workload {
  final val Queries = 1048576
  final val BitsPerValue = 10.5
  final val Seed = 20260522L

  /** The three implementations under test, as JMH's `impl` parameter names them. */
  final val Vector = "vector"
  final val Scalar = "scalar"
  final val Parquet = "parquet"

  def kernel(impl: String): Kernel = impl match {
    case Scalar => Kernel.scalar
    case Vector => Kernel.vector.getOrElse(throw new IllegalStateException(
          "the Vector API kernel is not usable: run with --add-modules=jdk.incubator.vector on a CPU with 256-bit " +
            "vectors"))
    case other => throw new IllegalArgumentException(s"not one of our kernels: $other")
  }

  def valuesFor(numBytes: Int): Int = math.round(numBytes * 8.0 / BitsPerValue).toInt

  def keyHash(key: Long): Long = PlainHash.int64(key)

  /** Calls `sink` with the hashes of keys `[from, until)` in chunks, without materialising them all. */
  def forEachChunk(from: Long, until: Long)(sink: (Array[Long], Int) => Unit): Unit = {
    val chunk = new Array[Long](65536)
    var k = from
    while (k < until) {
      val len = math.min(chunk.length.toLong, until - k).toInt
      var i = 0
      while (i < len) { chunk(i) = keyHash(k + i); i += 1 }
      sink(chunk, len)
      k += len
    }
  }

  /** Hashes of random inserted keys (`[0, n)`). */
  def hits(n: Int, seed: Long = Seed): Array[Long] = {
    val rnd = new SplittableRandom(seed)
    Array.fill(Queries)(keyHash(rnd.nextInt(n).toLong))
  }

  /** Hashes of distinct absent keys, starting at `n`. */
  def misses(n: Int): Array[Long] = Array.tabulate(Queries)(i => keyHash(n.toLong + i))

  /** A random 50/50 mix: each entry is a random inserted key or a distinct absent one (after the misses above). */
  def mixed(n: Int, seed: Long = Seed + 1): Array[Long] = {
    val rnd = new SplittableRandom(seed)
    Array.tabulate(Queries)(i =>
      if (rnd.nextBoolean()) keyHash(rnd.nextInt(n).toLong) else keyHash(n.toLong + Queries + i))
  }

  /** Random hashes, for inserting into an empty filter. */
  def randomHashes(count: Int, seed: Long = Seed + 2): Array[Long] = {
    val rnd = new SplittableRandom(seed)
    Array.fill(count)(rnd.nextLong())
  }

  /** Random ASCII (hex digit) strings of `len` bytes, distinct with overwhelming probability. */
  def strings(count: Int, len: Int, seed: Long = Seed + 3): Array[Array[Byte]] = {
    val rnd = new SplittableRandom(seed)
    val hex = "0123456789abcdef".getBytes("US-ASCII")
    Array.fill(count)(Array.fill(len)(hex(rnd.nextInt(16))))
  }

  /** Runs `body`, printing how long it took (JMH shows a fork's output), so slow setups are visible. */
  def timed[T](what: String)(body: => T): T = {
    val t0 = System.nanoTime()
    val r = body
    println(f"[setup] $what: ${(System.nanoTime() - t0) / 1e9}%.1f s")
    r
  }

  def check(ok: Boolean, what: => String): Unit =
    if (!ok) throw new IllegalStateException(s"verification failed: $what")
}
