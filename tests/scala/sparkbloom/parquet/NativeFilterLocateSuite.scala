package sparkbloom.parquet

import scala.util.Random

import org.apache.parquet.hadoop.util.HadoopInputFile
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.hash.PlainHash
import sparkbloom.parquet.ParquetFixtures._
import sparkbloom.sbbf.InvalidBloomFilterException

/**
 * `NativeFilterReader.locate` (read time: validate the header, then read only the 32-byte blocks a probe needs)
 * accepts and rejects exactly the filters `NativeFilterReader.read` (harvest: the whole bitset) does, and its
 * answers equal the whole filter's, on every chunk of every fixture written by parquet-mr, parquet-rs and DuckDB.
 */
class NativeFilterLocateSuite extends AnyFunSuite {
  private val files = Seq("parquet-testing/data_index_bloom_encoding_stats.parquet",
    "parquet-testing/data_index_bloom_encoding_with_length.parquet", "duckdb/bloom_filter_bad_numbytes.parquet",
    "duckdb/bloom_filter_bad_length_range.parquet", "duckdb/bloom_filter_short_numbytes.parquet",
    "duckdb/multi_bloom_a.parquet", "duckdb/multi_bloom_b.parquet", "duckdb/multi_bloom_c.parquet")

  test("locate accepts, rejects and answers exactly as reading the whole filter") {
    val rng = new Random(13)
    var compared, rejected, accepted = 0
    for (f <- files; c <- chunks(f) if c.meta.getBloomFilterOffset >= 0) {
      val file = HadoopInputFile.fromPath(path(f), conf)
      val in = file.newStream()
      try {
        val whole = try Right(NativeFilterReader.read(in, file.getLength, c.meta).get)
        catch { case e: InvalidBloomFilterException => Left(e) }
        val located = try Right(NativeFilterReader.locate(in, file.getLength, c.meta.getBloomFilterOffset,
            NativeFilterReader.storedLength(c.meta)))
        catch { case e: InvalidBloomFilterException => Left(e) }
        assert(whole.isLeft == located.isLeft, s"$f row group ${c.rowGroup} ${c.column}: $whole vs $located")
        (whole, located) match {
          case (Right(w), Right(l)) =>
            accepted += 1
            assert(l.numBlocks * 32 == w.numBytes)
            for (_ <- 0 until 2000) {
              val hs = Array.fill(1 + rng.nextInt(3))(rng.nextLong())
              assert(l.mightContainAny(hs) == w.mightContainAny(hs), s"$f ${c.column} ${hs.mkString(",")}")
              compared += 1
            }
            // and every value the filter holds: the hashes of set bits are not known, so probe values the
            // fixture documents (DuckDB's r column holds multiples of 10 written as INT64)
            if (c.column == "r") for (v <- 0L until 1000L by 10L) {
              val h = PlainHash.int64(v)
              assert(l.mightContainAny(Array(h)) == w.mightContain(h))
            }
          case _ => rejected += 1
        }
      } finally in.close()
    }
    info(s"$accepted filters accepted by both, $rejected rejected by both, $compared probes compared")
    assert(accepted >= 5 && rejected >= 2 && compared >= 10000)
  }
}
