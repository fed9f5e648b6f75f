package sparkbloom.parquet

import java.io.File
import java.nio.file.Files

import scala.util.Try

import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile

import sparkbloom.TestSupport
import sparkbloom.shims.ParquetCompat
import sparkbloom.testing.SparkSessionSuite

/**
 * A harvest reads a file's footer and the filters before it in one read (Footers.readTail, TailStream). Whatever it
 * returns must be what parquet-java's own footer read and a plain stream give, for other writers' files, corrupt
 * ones and Spark's own; and it must step aside (None) for every file it cannot read exactly.
 */
class TailReadSuite extends SparkSessionSuite {
  private val conf = ParquetFixtures.conf

  /** Every fact the index takes from a footer, per row group and column, as comparable values. */
  private def facts(f: FooterInfo): Seq[Any] = {
    val columns = f.schema.getFields.toArray.map(_.asInstanceOf[org.apache.parquet.schema.Type].getName).toSeq
    Seq(f.rowGroups, f.fileLength, f.schema, f.createdBy, f.keyValueMetadata) ++
      (for (rg <- f.rowGroups.indices; c <- columns) yield f.chunk(rg, c).map(ch =>
        (ch.column, ch.encoding, ch.nullCount, ch.bloomOffset, ch.bloomLength, ch.encrypted,
          ch.meta.getTotalSize, ch.meta.getValueCount, stats(ch.meta.getEncodingStats), ch.meta.getEncodings)))
  }

  private def stats(e: org.apache.parquet.column.EncodingStats): Any = Option(e).map { e =>
    import scala.jdk.CollectionConverters._
    (e.getDictionaryEncodings.asScala.toSeq.map(x => x -> e.getNumDictionaryPagesEncodedAs(x)),
      e.getDataEncodings.asScala.toSeq.map(x => x -> e.getNumDataPagesEncodedAs(x)))
  }

  /** A filter read through `in`, or the class of the error that refused it. */
  private def filterOrError(in: org.apache.parquet.io.SeekableInputStream, length: Long, ch: ChunkInfo): Any =
    Try(NativeFilterReader.read(in, length, ch.bloomOffset.get, ch.bloomLength).toBytes.toSeq)
      .fold(e => e.getClass.getName, identity)

  /** Checks readTail against parquet-java on one file: same footer facts, same filters (or the same refusals). */
  private def sameAsParquetJava(path: Path, prefetch: Boolean): Int = {
    val length = new File(path.toUri).length()
    val expected = Footers.read(conf, path)
    val (md, tail) = Footers.readTail(conf, path, length).getOrElse(fail(s"no tail read for $path"))
    try {
      val got = Footers.fromMetadata(md, length)
      assert(facts(got) == facts(expected), path)
      assert(facts(Footers.read(conf, path, length)) == facts(expected), path)
      val filters = for (rg <- got.rowGroups.indices; c <- got.schema.getFields.toArray.toSeq;
        name = c.asInstanceOf[org.apache.parquet.schema.Type].getName;
        ch <- got.chunk(rg, name) if ch.bloomOffset.isDefined) yield ch
      if (prefetch && filters.nonEmpty) tail.prefetchFrom(filters.map(_.bloomOffset.get).min, 4 << 20)
      val plain = HadoopInputFile.fromPath(path, conf).newStream()
      try filters.foreach(ch =>
          assert(filterOrError(tail, length, ch) == filterOrError(plain, length, ch), s"$path ${ch.column}"))
      finally plain.close()
      filters.size
    } finally tail.close()
  }

  test("other writers' files, corrupt filters included: the same footer and filters as parquet-java's read") {
    val files = Seq("parquet-testing/data_index_bloom_encoding_stats.parquet",
      "parquet-testing/data_index_bloom_encoding_with_length.parquet", "duckdb/multi_bloom_a.parquet",
      "duckdb/multi_bloom_b.parquet", "duckdb/multi_bloom_c.parquet", "duckdb/bloom_filter_short_numbytes.parquet",
      "duckdb/bloom_filter_bad_numbytes.parquet", "duckdb/bloom_filter_bad_length_range.parquet")
    val read = for (f <- files; prefetch <- Seq(false, true))
      yield sameAsParquetJava(new Path(TestSupport.fixture(f).toURI), prefetch)
    // parquet-java 1.13 (Spark 3.5) cannot read bloom_filter_length: there filters are taken from parquet-java's own
    // writer (parquet-mr) only (Footers), so the footers of parquet-rs's and DuckDB's files list none.
    def byParquetJava(f: String): Boolean = {
      val r = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(TestSupport.fixture(f).toURI), conf))
      try r.getFooter.getFileMetaData.getCreatedBy.startsWith("parquet-mr")
      finally r.close()
    }
    val listed = for (f <- files; _ <- Seq(false, true)) yield ParquetCompat.storedLengthReadable || byParquetJava(f)
    assert(read.map(_ > 0) == listed, files.flatMap(f => Seq(f, f)).zip(read))
  }

  test("Spark's files with filters larger than the tail, several row groups: the same, read in and out of memory") {
    val dir = tempDir("tail") + "/t"
    spark.range(0, 60000, 1, 2).selectExpr("id", "uuid() AS u", "CAST(id % 7 AS STRING) AS c")
      .write.option("parquet.bloom.filter.enabled", "true").option("parquet.block.size", "262144")
      .option("parquet.bloom.filter.expected.ndv#u", "100000").parquet(dir)
    val parts = new File(dir).listFiles().filter(_.getName.endsWith(".parquet"))
    assert(parts.nonEmpty)
    for (p <- parts; prefetch <- Seq(false, true)) {
      val path = new Path(p.toURI)
      val footer = Footers.read(conf, path)
      assert(footer.rowGroups.size > 1, s"$p has ${footer.rowGroups.size} row group(s)")
      // The filters of u alone outgrow the bytes read with the footer.
      // (Their stored lengths; parquet-java 1.13, Spark 3.5's, writes none: there their headers' sizes.)
      assert(footer.rowGroups.indices.flatMap(rg => footer.chunk(rg, "u")).map(ch =>
        ch.bloomLength.getOrElse(NativeFilterReader.read(conf, path, ch.bloomOffset.get, None).numBytes)).sum >
        Footers.TailBytes)
      assert(sameAsParquetJava(path, prefetch) >= footer.rowGroups.size * 2)
    }
  }

  test("a file it cannot read exactly gets None: a wrong listed length, not Parquet, an encrypted footer") {
    val f = TestSupport.fixture("parquet-testing/data_index_bloom_encoding_with_length.parquet")
    val path = new Path(f.toURI)
    assert(Footers.readTail(conf, path, f.length()).isDefined)
    // A length that is not the file's (a file replaced since it was listed): no footer is taken from the wrong end.
    Seq(f.length() - 1, f.length() - 100, f.length() + 1, 11L, 0L).foreach { n =>
      assert(Footers.readTail(conf, path, n).isEmpty, n)
      // read with a length: parquet-java's footer instead, never one taken from the wrong end
      assert(facts(Footers.read(conf, path, n)) == facts(Footers.read(conf, path)), n)
    }
    val junk = new File(tempDir("junk"), "junk.parquet")
    Files.write(junk.toPath, Array.fill[Byte](5000)(7.toByte))
    assert(Footers.readTail(conf, new Path(junk.toURI), junk.length()).isEmpty)
    assert(Footers.readTail(conf, new Path(junk.toURI + "-missing"), 5000L).isEmpty)
    val shared = sys.props.getOrElse("sparkbloom.shared", "../shared")
    val enc = new File(shared, "fixtures/parquet-testing/encrypt_columns_and_footer_bloom_filter.parquet.encrypted")
    assume(enc.exists(), s"fixture $enc is missing")
    assert(Footers.readTail(conf, new Path(enc.toURI), enc.length()).isEmpty)
  }
}
