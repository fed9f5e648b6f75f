package sparkbloom.bench

import java.util.concurrent.TimeUnit

import org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter
import org.openjdk.jmh.annotations._

import sparkbloom.sbbf.Sbbf

/** An empty filter of `bytes` in implementation `impl`, and 2^20 random hashes to insert into it. */
@State(Scope.Benchmark)
class EmptyFilter {
  @Param(Array("16384", "524288", "134217728")) var bytes: Int = _
  @Param(Array("vector", "scalar", "parquet")) var impl: String = _
  var ours: Sbbf = _
  var parquet: BlockSplitBloomFilter = _
  val hashes: Array[Long] = Workload.randomHashes(Workload.Queries)

  @Setup(Level.Trial) def setup(): Unit =
    Filters.emptyVerified(bytes, impl, hashes) match {
      case Left(s) => ours = s
      case Right(p) => parquet = p
    }
}

/** A filter of `bytes` holding keys `[0, bytes * 8 / 10.5)`, and the hit, miss and mixed query sets. */
@State(Scope.Benchmark)
class FilledFilter {
  @Param(Array("16384", "524288", "134217728")) var bytes: Int = _
  @Param(Array("vector", "scalar", "parquet")) var impl: String = _
  var ours: Sbbf = _
  var parquet: BlockSplitBloomFilter = _
  var hits, misses, mixed: Array[Long] = _
  val out = new Array[Boolean](Workload.Queries)

  @Setup(Level.Trial) def setup(): Unit = {
    val n = Workload.valuesFor(bytes)
    hits = Workload.hits(n); misses = Workload.misses(n); mixed = Workload.mixed(n)
    val t = Workload.timed(s"fill $bytes-byte filters with $n keys")(Filters.filled(bytes, 0, n))
    Workload.timed("compare the three implementations' answers to 3 x 2^20 queries") {
      Filters.verifyAnswers(t, hits, allPresent = true)
      Filters.verifyAnswers(t, misses)
      Filters.verifyAnswers(t, mixed)
    }
    if (impl == Workload.Parquet) parquet = t.parquet else ours = t.ours(impl)
  }

  def checkAll(queries: Array[Long]): Unit =
    if (parquet ne null) Filters.parquetCheckAll(parquet, queries, out) else ours.mightContainAll(queries, out)
}

/**
 * The filter's own operations on pre-computed hashes, ns per hash. Every method handles 2^20 hashes per
 * call; the filter size decides where the bitset lives (16 KiB: L1, 512 KiB: L2, 128 MiB: memory).
 */
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(2) @Warmup(iterations = 3, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
class SbbfBench {
  @Benchmark @OperationsPerInvocation(Workload.Queries)
  def insert(s: EmptyFilter): Unit =
    if (s.parquet ne null) Filters.parquetInsertAll(s.parquet, s.hashes) else s.ours.insertAll(s.hashes)

  @Benchmark @OperationsPerInvocation(Workload.Queries)
  def checkHits(s: FilledFilter): Unit = s.checkAll(s.hits)

  @Benchmark @OperationsPerInvocation(Workload.Queries)
  def checkMisses(s: FilledFilter): Unit = s.checkAll(s.misses)

  @Benchmark @OperationsPerInvocation(Workload.Queries)
  def checkMixed(s: FilledFilter): Unit = s.checkAll(s.mixed)
}
