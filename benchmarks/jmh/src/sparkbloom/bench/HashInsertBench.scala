package sparkbloom.bench

import java.util.concurrent.TimeUnit

import org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter
import org.apache.parquet.io.api.Binary
import org.openjdk.jmh.annotations._

import sparkbloom.hash.PlainHash
import sparkbloom.sbbf.Sbbf

/**
 * The filter a column's values go into: `bytes` in implementation `impl`, verified like [[EmptyFilter]].
 * Two sizes only (in cache and beyond it) to keep the run short; the 512 KiB case adds nothing here.
 */
@State(Scope.Benchmark)
class ColumnFilter {
  @Param(Array("16384", "134217728")) var bytes: Int = _
  @Param(Array("vector", "scalar", "parquet")) var impl: String = _
  var ours: Sbbf = _
  var parquet: BlockSplitBloomFilter = _

  @Setup(Level.Trial) def setup(): Unit =
    Filters.emptyVerified(bytes, impl, Workload.randomHashes(Workload.Queries)) match {
      case Left(s) => ours = s
      case Right(p) => parquet = p
    }
}

/** 2^20 random long values; our hash of each must equal parquet-java's. */
@State(Scope.Benchmark)
class LongValues {
  val values: Array[Long] = Workload.randomHashes(HashInsertBench.Longs, Workload.Seed + 10)
  val buffer = new Array[Long](1024)

  @Setup(Level.Trial) def verify(): Unit = {
    val p = new BlockSplitBloomFilter(32)
    values.foreach(v => Workload.check(PlainHash.int64(v) == p.hash(v), s"hash of $v differs from parquet-java's"))
  }
}

/** 2^18 random strings of `len` ASCII bytes, as byte arrays (ours) and ready `Binary`s (parquet-java). */
@State(Scope.Benchmark)
class StringValues {
  @Param(Array("8", "16", "32")) var len: Int = _
  var bytes: Array[Array[Byte]] = _
  var binaries: Array[Binary] = _

  @Setup(Level.Trial) def setup(): Unit = {
    bytes = Workload.strings(HashInsertBench.Strings, len)
    binaries = bytes.map(b => Binary.fromConstantByteArray(b))
    val p = new BlockSplitBloomFilter(32)
    var i = 0
    while (i < bytes.length) {
      Workload.check(PlainHash.bytes(bytes(i)) == p.hash(binaries(i)), s"hash of string $i differs from parquet-java's")
      i += 1
    }
  }
}

/**
 * Hash then insert, value by value, ns per value: what building a filter from a column costs. parquet-java
 * gets each string as a ready `Binary`; the insert half is verified bit-identical by [[ColumnFilter]].
 */
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(2) @Warmup(iterations = 3, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
class HashInsertBench {
  @Benchmark @OperationsPerInvocation(HashInsertBench.Longs)
  def hashInsertLong(f: ColumnFilter, v: LongValues): Unit = {
    val xs = v.values
    var i = 0
    if (f.parquet ne null) { val p = f.parquet; while (i < xs.length) { p.insertHash(p.hash(xs(i))); i += 1 } }
    else { val s = f.ours; while (i < xs.length) { s.insert(PlainHash.int64(xs(i))); i += 1 } }
  }

  /**
   * As [[hashInsertLong]], but hashing 1,024 values into a buffer before inserting them, as a batch
   * (ours: `insertAll`): hashing no longer sits between two inserts, so more of their cache misses overlap.
   */
  @Benchmark @OperationsPerInvocation(HashInsertBench.Longs)
  def hashBatchInsertLong(f: ColumnFilter, v: LongValues): Unit = {
    val xs = v.values; val buf = v.buffer
    var from = 0
    while (from < xs.length) {
      val n = math.min(buf.length, xs.length - from)
      var i = 0
      if (f.parquet ne null) {
        val p = f.parquet
        while (i < n) { buf(i) = p.hash(xs(from + i)); i += 1 }
        i = 0
        while (i < n) { p.insertHash(buf(i)); i += 1 }
      } else {
        while (i < n) { buf(i) = PlainHash.int64(xs(from + i)); i += 1 }
        f.ours.insertAll(buf, 0, n)
      }
      from += n
    }
  }

  @Benchmark @OperationsPerInvocation(HashInsertBench.Strings)
  def hashInsertString(f: ColumnFilter, v: StringValues): Unit = {
    var i = 0
    if (f.parquet ne null) {
      val p = f.parquet; val xs = v.binaries
      while (i < xs.length) { p.insertHash(p.hash(xs(i))); i += 1 }
    } else {
      val s = f.ours; val xs = v.bytes
      while (i < xs.length) { s.insert(PlainHash.bytes(xs(i))); i += 1 }
    }
  }
}

object HashInsertBench {
  final val Longs = 1048576
  final val Strings = 262144
}
